import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Writes the data an exactly-once pipeline leaves in a broker, with Kafka's own producer: a
 * transactional producer (lz4) that commits two transactions of every three and aborts the
 * third, an idempotent producer (zstd) and a plain one (gzip, idempotence off), interleaved on
 * every partition. Round t, on each partition p:
 *
 * <pre>
 *   t{t}-{i}  for i in [0, perTxn)   transactional (flushed while the transaction is open)
 *   i{t}                             idempotent, acknowledged
 *   p{t}                             plain, acknowledged
 *   COMMIT, or ABORT when t % 3 == 2 (the coordinator's marker)
 * </pre>
 *
 * With {@code leaveOpen}, the last round's transaction is never ended: the producer is closed
 * without its abort-on-close, so the partitions end with an open transaction whose first offset
 * is their last stable offset (the transaction timeout is 15 minutes, Kafka's maximum default).
 * Values are the key followed by {@code "@p"}. Prints {@code done} on success.
 *
 * <p>Usage: {@code TransactionalWorkload <bootstrap> <topic> <partitions> <rounds> <perTxn>
 * <leaveOpen>}
 */
public final class TransactionalWorkload {
    private TransactionalWorkload() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        int rounds = Integer.parseInt(args[3]);
        int perTxn = Integer.parseInt(args[4]);
        boolean leaveOpen = Boolean.parseBoolean(args[5]);

        Properties txnProps = base(bootstrap, "lz4");
        txnProps.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "kafkalog-workload-" + topic);
        txnProps.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "900000");
        Properties idemProps = base(bootstrap, "zstd");
        idemProps.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        Properties plainProps = base(bootstrap, "gzip");
        plainProps.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        plainProps.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");

        KafkaProducer<byte[], byte[]> txn = new KafkaProducer<>(txnProps);
        try (KafkaProducer<byte[], byte[]> idem = new KafkaProducer<>(idemProps);
                KafkaProducer<byte[], byte[]> plain = new KafkaProducer<>(plainProps)) {
            txn.initTransactions();
            for (int t = 0; t < rounds; t++) {
                txn.beginTransaction();
                for (int i = 0; i < perTxn; i++) {
                    for (int p = 0; p < partitions; p++) {
                        txn.send(record(topic, p, "t" + t + "-" + i));
                    }
                }
                txn.flush();
                for (int p = 0; p < partitions; p++) {
                    idem.send(record(topic, p, "i" + t)).get();
                    plain.send(record(topic, p, "p" + t)).get();
                }
                boolean last = t == rounds - 1;
                if (last && leaveOpen) {
                    break;
                }
                if (t % 3 == 2) {
                    txn.abortTransaction();
                } else {
                    txn.commitTransaction();
                }
            }
        } finally {
            // A zero timeout closes without the abort a graceful close sends for an open
            // transaction; everything was flushed and acknowledged above.
            txn.close(leaveOpen ? Duration.ZERO : Duration.ofSeconds(60));
        }
        System.out.println("done");
    }

    private static Properties base(String bootstrap, String codec) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        props.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
        return props;
    }

    private static ProducerRecord<byte[], byte[]> record(String topic, int partition, String key) {
        byte[] k = key.getBytes(StandardCharsets.UTF_8);
        byte[] v = (key + "@" + partition).getBytes(StandardCharsets.UTF_8);
        return new ProducerRecord<>(topic, partition, k, v);
    }
}
