// Times Apache Kafka's own storage code (the kafka-storage / kafka-clients jars on the class
// path) on a workload, so `make bench-kafka` (benches/bench_kafka.py) can print kafkalog's
// figure beside Kafka's from one run on one machine. The kafkalog half is
// benches/bench_workload.rs; both print the same line format.
//
// Usage:
//   java -cp <kafka jars>:<classes> KafkaStorageBench --workload DIR [options]
//   java -cp <kafka jars>:<classes> KafkaStorageBench --record-size N --codec none|lz4|... [--total-mib 32]
//        [--batch-bytes 16384] [options]
// options:
//   --ops append_leader,append_follower,append_segment,scan   (the default: all four)
//   --warmup-reps 2 --warmup-s 1 --reps 5   warm-up repetitions (at least that many and at least
//                                           that long, unmeasured), then measured ones; all in
//                                           this one JVM
//   --scratch DIR      parent of the per-repetition log directories (default java.io.tmpdir)
//   --log-out DIR      where the log that `scan` reads is written and kept (a partition
//                      directory, e.g. .../bench-0); default: a temporary one, removed at exit
//
// A workload directory (benches/bench_workload.rs `write`) holds producer.batches (v2 producer
// batches, base offset 0, concatenated in Kafka's own framing) and workload.properties
// (label=..., and duplicate.every=K: append_leader sends every K-th batch twice in a row, a
// producer's retry that the duplicate check answers; the batches may carry producer ids,
// epochs and sequences, idempotent producers). With parameters instead, the batches are built here with MemoryRecordsBuilder
// from the same value/key generator (so sizes match, bytes need not: different lz4 encoders).
//
// What is timed (only the appends or the scan; log creation, close with its fsyncs and directory
// removal are outside the clock), each repetition on a fresh log with Kafka's default LogConfig
// except segment.bytes=1 GiB (no roll) and retention.ms=-1:
//   append_leader    UnifiedLog.appendAsLeader(batch, leaderEpoch 0, AppendOrigin.CLIENT,
//                    RequestLocal.withThreadConfinedCaching(), VerificationGuard.SENTINEL,
//                    TV_UNKNOWN), once per producer batch: what a broker's request handler thread
//                    runs for a produce request after the ReplicaManager/Partition layers
//                    (analyzeAndValidateRecords with CRC check, LogValidator offset assignment
//                    and record validation, leader epoch cache, maybeRoll, producer state,
//                    LocalLog/LogSegment append with index maintenance, write to the page cache).
//   append_follower  UnifiedLog.appendAsFollower(batch, 0), once per batch, the batches carrying
//                    the offsets and partition leader epoch 0 a leader writes (CRC check, offset
//                    check, epoch cache, segment append; no LogValidator).
//   append_segment   LogSegment.open(dir, 0, config, Time.SYSTEM, 0, false) then
//                    LogSegment.append(lastOffset, batch) per batch of those same offset-assigned
//                    batches: the raw segment layer (indexes + FileRecords write), no log above it.
//   scan             FileRecords.open(file, false) on every .log file of the log the leader
//                    append wrote (opened once), then per repetition: batches(), ensureValid()
//                    (CRC) on each, streamingIterator(BufferSupplier.create()) over its records
//                    (decompressing as Kafka's consumer does), key() and value() read.
//
// Output, one line per measurement on stdout (throughputs: MiB of batch bytes per second, and
// records per second; best and median of the measured repetitions):
//   kafka append_leader 100B/none bytes=... records=... batches=... warmup=... reps=5 best_s=...
//     median_s=... MiB/s=... median_MiB/s=... rec/s=... median_rec/s=...       (one line)
// Anything else on stdout (Kafka's own log4j output) does not start with "kafka ".

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.FileLogInputStream;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.utils.BufferSupplier;
import org.apache.kafka.common.utils.CloseableIterator;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.server.common.RequestLocal;
import org.apache.kafka.server.common.TransactionVersion;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.log.VerificationGuard;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

import java.io.File;
import java.io.IOException;
import java.io.StringReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

public class KafkaStorageBench {
    private static final int DEFAULT_BATCH_BYTES = 16 * 1024;

    // -- the workload --------------------------------------------------------------------------

    static final class Workload {
        final String label;
        /** Producer batches (base offset 0, partition leader epoch -1), each in its own buffer. */
        final List<ByteBuffer> producer;
        /** The same batches as a leader writes them: offsets assigned, partition leader epoch 0. */
        final List<ByteBuffer> follower = new ArrayList<>();
        final long[] followerLastOffset;
        final long bytes;
        long records;
        /** appendAsLeader sends batch i twice in a row (a producer's retry) when i % n == n - 1; 0: never. */
        int duplicateEvery;

        Workload(String label, List<ByteBuffer> producer) {
            this.label = label;
            this.producer = producer;
            this.followerLastOffset = new long[producer.size()];
            long bytes = 0;
            long next = 0;
            for (int i = 0; i < producer.size(); i++) {
                ByteBuffer copy = copyOf(producer.get(i));
                MutableRecordBatch batch = MemoryRecords.readableRecords(copy).batches().iterator().next();
                batch.ensureValid();
                int count = batch.countOrNull();
                batch.setLastOffset(next + count - 1);
                batch.setPartitionLeaderEpoch(0);
                followerLastOffset[i] = batch.lastOffset();
                next = batch.nextOffset();
                records += count;
                bytes += copy.remaining();
                follower.add(copy);
            }
            this.bytes = bytes;
        }
    }

    static ByteBuffer copyOf(ByteBuffer b) {
        ByteBuffer src = b.duplicate();
        ByteBuffer out = ByteBuffer.allocate(src.remaining());
        out.put(src);
        out.flip();
        return out;
    }

    static Workload loadWorkload(Path dir) throws IOException {
        Properties props = new Properties();
        Path propsFile = dir.resolve("workload.properties");
        if (Files.exists(propsFile)) {
            props.load(new StringReader(Files.readString(propsFile, StandardCharsets.UTF_8)));
        }
        String label = props.getProperty("label", dir.getFileName().toString());
        ByteBuffer all = ByteBuffer.wrap(Files.readAllBytes(dir.resolve("producer.batches")));
        List<ByteBuffer> batches = new ArrayList<>();
        while (all.remaining() > 0) {
            if (all.remaining() < 12) throw new IOException("truncated batch header at " + all.position());
            int size = 12 + all.getInt(all.position() + 8); // base offset (8) + length (4) + length bytes
            if (size > all.remaining()) throw new IOException("truncated batch at " + all.position());
            ByteBuffer slice = all.duplicate();
            slice.limit(all.position() + size);
            batches.add(copyOf(slice));
            all.position(all.position() + size);
        }
        Workload w = new Workload(label, batches);
        w.duplicateEvery = Integer.parseInt(props.getProperty("duplicate.every", "0"));
        return w;
    }

    /** The value/key generator of benches/log_bench.rs (xorshift64, JSON-like digits). */
    static Workload generateWorkload(int recordSize, String codec, long totalBytes, int batchBytes) {
        Compression compression = Compression.of(CompressionType.forName(codec)).build();
        List<ByteBuffer> batches = new ArrayList<>();
        byte[] value = new byte[recordSize];
        long seed = 0x2545_F491_4F6C_DD1DL;
        long produced = 0;
        while (produced < totalBytes) {
            MemoryRecordsBuilder b = MemoryRecords.builder(ByteBuffer.allocate(batchBytes), compression,
                TimestampType.CREATE_TIME, 0L);
            long i = 0;
            while (b.estimatedSizeInBytes() + recordSize + 32 < batchBytes) {
                for (int off = 0; off < recordSize; off += 8) {
                    seed ^= seed << 13;
                    seed ^= seed >>> 7;
                    seed ^= seed << 17;
                    byte[] digits = String.format("\"v\":%04d", Long.remainderUnsigned(seed, 10_000))
                        .getBytes(StandardCharsets.US_ASCII);
                    System.arraycopy(digits, 0, value, off, Math.min(8, Math.min(digits.length, recordSize - off)));
                }
                byte[] key = String.format("customer-%07d", Long.remainderUnsigned(seed >>> 8, 1_000_000))
                    .getBytes(StandardCharsets.US_ASCII);
                b.append(1_700_000_000_000L + i, key, value.clone());
                i++;
            }
            ByteBuffer batch = b.build().buffer();
            produced += batch.remaining();
            batches.add(batch);
        }
        return new Workload(recordSize + "B/" + codec, batches);
    }

    // -- timing --------------------------------------------------------------------------------

    interface Rep {
        /** Prepares (untimed), returns the timed part and its untimed teardown. */
        Timed setUp() throws Exception;
    }

    interface Timed {
        void run() throws Exception;

        default void tearDown() throws Exception { }
    }

    static int warmupReps = 2;
    static double warmupSeconds = 1.0;
    static int reps = 5;
    /** Warm-up repetitions the last measure() ran. */
    static int warmupsDone;

    static double[] measure(Rep rep) throws Exception {
        long start = System.nanoTime();
        int done = 0;
        while (done < warmupReps || (System.nanoTime() - start) / 1e9 < warmupSeconds) {
            once(rep);
            done++;
        }
        warmupsDone = done;
        double[] secs = new double[reps];
        for (int i = 0; i < reps; i++) secs[i] = once(rep);
        return secs;
    }

    static double once(Rep rep) throws Exception {
        Timed t = rep.setUp();
        long t0 = System.nanoTime();
        t.run();
        long elapsed = System.nanoTime() - t0;
        t.tearDown();
        return elapsed / 1e9;
    }

    static void report(String op, Workload w, double[] secs) {
        Arrays.sort(secs);
        int n = secs.length;
        double best = secs[0];
        double median = n % 2 == 1 ? secs[n / 2] : (secs[n / 2 - 1] + secs[n / 2]) / 2;
        double mib = w.bytes / (double) (1 << 20);
        System.out.printf("kafka %s %s bytes=%d records=%d batches=%d warmup=%d reps=%d best_s=%.6f median_s=%.6f "
                + "MiB/s=%.1f median_MiB/s=%.1f rec/s=%.0f median_rec/s=%.0f%n",
            op, w.label, w.bytes, w.records, w.producer.size(), warmupsDone, n, best, median,
            mib / best, mib / median, w.records / best, w.records / median);
        System.out.flush();
    }

    // -- Kafka's log ---------------------------------------------------------------------------

    static final LogConfig CONFIG = new LogConfig(Map.of("segment.bytes", "1073741824", "retention.ms", "-1"));
    static KafkaScheduler scheduler;
    static BrokerTopicStats brokerTopicStats;
    static LogDirFailureChannel logDirFailureChannel = new LogDirFailureChannel(10);

    static UnifiedLog createLog(File dir) throws IOException {
        return UnifiedLog.create(
            dir,
            CONFIG,
            0L,                                           // log start offset
            0L,                                           // recovery point
            scheduler,
            brokerTopicStats,
            Time.SYSTEM,
            900_000,                                      // transaction.max.timeout.ms default
            new ProducerStateManagerConfig(86_400_000, false), // producer.id.expiration.ms default
            600_000,                                      // producer.id.expiration.check.interval.ms default
            logDirFailureChannel,
            true,                                         // last shutdown clean: no recovery
            Optional.empty());
    }

    static File freshPartitionDir(Path scratch) throws IOException {
        return Files.createTempDirectory(scratch, "kafka-bench-").resolve("bench-0").toFile();
    }

    static void removeParent(File partitionDir) throws IOException {
        Utils.delete(partitionDir.getParentFile());
    }

    /** Copies `src` buffers into `dst` buffers of the same sizes (no allocation), rewound. */
    static void restore(List<ByteBuffer> src, List<ByteBuffer> dst) {
        for (int i = 0; i < src.size(); i++) {
            ByteBuffer d = dst.get(i);
            d.clear();
            d.put(src.get(i).duplicate());
            d.flip();
        }
    }

    /**
     * One leader append per batch; when {@code retries} is set, batch i with a retry buffer
     * (every duplicate.every-th) is sent again right after it from that buffer, which holds the
     * producer's original bytes (the leader rewrote the first copy's offsets in place).
     */
    static void appendAsLeader(UnifiedLog log, List<ByteBuffer> batches, RequestLocal requestLocal,
                               List<ByteBuffer> retries) {
        for (int i = 0; i < batches.size(); i++) {
            log.appendAsLeader(MemoryRecords.readableRecords(batches.get(i)), 0, AppendOrigin.CLIENT, requestLocal,
                VerificationGuard.SENTINEL, TransactionVersion.TV_UNKNOWN);
            ByteBuffer retry = retries == null ? null : retries.get(i);
            if (retry != null) {
                log.appendAsLeader(MemoryRecords.readableRecords(retry), 0, AppendOrigin.CLIENT, requestLocal,
                    VerificationGuard.SENTINEL, TransactionVersion.TV_UNKNOWN);
            }
        }
    }

    /** A buffer per batch that is sent twice (null for the others), allocated once. */
    static List<ByteBuffer> retryBuffers(Workload w) {
        if (w.duplicateEvery <= 0) return null;
        List<ByteBuffer> out = new ArrayList<>();
        for (int i = 0; i < w.producer.size(); i++) {
            boolean retried = i % w.duplicateEvery == w.duplicateEvery - 1;
            out.add(retried ? ByteBuffer.allocate(w.producer.get(i).remaining()) : null);
        }
        return out;
    }

    /** Copies the producer's original bytes into the retry buffers, rewound. */
    static void restoreRetries(Workload w, List<ByteBuffer> retries) {
        if (retries == null) return;
        for (int i = 0; i < retries.size(); i++) {
            ByteBuffer d = retries.get(i);
            if (d == null) continue;
            d.clear();
            d.put(w.producer.get(i).duplicate());
            d.flip();
        }
    }

    static void checkEnd(UnifiedLog log, Workload w) {
        if (log.logEndOffset() != w.records) {
            throw new IllegalStateException("log end offset " + log.logEndOffset() + ", expected " + w.records);
        }
    }

    static void appendLeader(Workload w, Path scratch) throws Exception {
        List<ByteBuffer> work = new ArrayList<>();
        for (ByteBuffer b : w.producer) work.add(ByteBuffer.allocate(b.remaining()));
        List<ByteBuffer> retries = retryBuffers(w);
        RequestLocal requestLocal = RequestLocal.withThreadConfinedCaching();
        report("append_leader", w, measure(() -> {
            File dir = freshPartitionDir(scratch);
            UnifiedLog log = createLog(dir);
            restore(w.producer, work); // the leader rewrites offsets and epochs in place
            restoreRetries(w, retries);
            return new Timed() {
                public void run() {
                    appendAsLeader(log, work, requestLocal, retries);
                }

                public void tearDown() throws IOException {
                    checkEnd(log, w);
                    log.close();
                    removeParent(dir);
                }
            };
        }));
    }

    static void appendFollower(Workload w, Path scratch) throws Exception {
        report("append_follower", w, measure(() -> {
            File dir = freshPartitionDir(scratch);
            UnifiedLog log = createLog(dir);
            List<MemoryRecords> records = new ArrayList<>();
            for (ByteBuffer b : w.follower) records.add(MemoryRecords.readableRecords(b.duplicate()));
            return new Timed() {
                public void run() {
                    for (MemoryRecords r : records) log.appendAsFollower(r, 0);
                }

                public void tearDown() throws IOException {
                    checkEnd(log, w);
                    log.close();
                    removeParent(dir);
                }
            };
        }));
    }

    static void appendSegment(Workload w, Path scratch) throws Exception {
        report("append_segment", w, measure(() -> {
            File dir = freshPartitionDir(scratch);
            Files.createDirectories(dir.toPath());
            LogSegment segment = LogSegment.open(dir, 0L, CONFIG, Time.SYSTEM, 0, false);
            List<MemoryRecords> records = new ArrayList<>();
            for (ByteBuffer b : w.follower) records.add(MemoryRecords.readableRecords(b.duplicate()));
            return new Timed() {
                public void run() throws IOException {
                    for (int i = 0; i < records.size(); i++) segment.append(w.followerLastOffset[i], records.get(i));
                }

                public void tearDown() throws IOException {
                    if (segment.size() != w.bytes) {
                        throw new IllegalStateException("segment holds " + segment.size() + " bytes, expected " + w.bytes);
                    }
                    segment.close();
                    removeParent(dir);
                }
            };
        }));
    }

    static void scan(Workload w, File logOut) throws Exception {
        if (logOut.exists()) Utils.delete(logOut);
        UnifiedLog log = createLog(logOut);
        List<ByteBuffer> work = new ArrayList<>();
        for (ByteBuffer b : w.producer) work.add(copyOf(b));
        List<ByteBuffer> retries = retryBuffers(w);
        restoreRetries(w, retries);
        appendAsLeader(log, work, RequestLocal.withThreadConfinedCaching(), retries);
        checkEnd(log, w);
        log.close();

        File[] files = logOut.listFiles((d, name) -> name.endsWith(".log"));
        Arrays.sort(files);
        List<FileRecords> segments = new ArrayList<>();
        for (File f : files) segments.add(FileRecords.open(f, false));
        BufferSupplier bufferSupplier = BufferSupplier.create();
        long[] sink = new long[1];
        Timed scanOnce = () -> {
            long n = 0;
            long touched = 0;
            for (FileRecords segment : segments) {
                for (FileLogInputStream.FileChannelRecordBatch batch : segment.batches()) {
                    batch.ensureValid();
                    try (CloseableIterator<Record> it = batch.streamingIterator(bufferSupplier)) {
                        while (it.hasNext()) {
                            Record r = it.next();
                            n++;
                            ByteBuffer k = r.key();
                            ByteBuffer v = r.value();
                            touched += (k == null ? 0 : k.remaining()) + (v == null ? 0 : v.remaining());
                        }
                    }
                }
            }
            if (n != w.records) throw new IllegalStateException("scanned " + n + " records, expected " + w.records);
            sink[0] += touched;
        };
        report("scan", w, measure(() -> scanOnce));
        for (FileRecords segment : segments) segment.close();
        if (sink[0] == 42) System.err.println(); // keep the JIT from dropping the key/value reads
    }

    // -- main ----------------------------------------------------------------------------------

    public static void main(String[] argv) throws Exception {
        Map<String, String> flags = new HashMap<>();
        for (int i = 0; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                System.err.println("usage: KafkaStorageBench --workload DIR | --record-size N --codec C [options]"
                    + " (see the comment at the top of KafkaStorageBench.java)");
                System.exit(2);
            }
            flags.put(argv[i].substring(2), argv[i + 1]);
        }
        warmupReps = Integer.parseInt(flags.getOrDefault("warmup-reps", "2"));
        warmupSeconds = Double.parseDouble(flags.getOrDefault("warmup-s", "1"));
        reps = Math.max(1, Integer.parseInt(flags.getOrDefault("reps", "5")));
        Path scratch = Path.of(flags.getOrDefault("scratch", System.getProperty("java.io.tmpdir")));
        Files.createDirectories(scratch);

        Workload w;
        if (flags.containsKey("workload")) {
            w = loadWorkload(Path.of(flags.get("workload")));
        } else if (flags.containsKey("record-size")) {
            w = generateWorkload(Integer.parseInt(flags.get("record-size")), flags.getOrDefault("codec", "none"),
                Long.parseLong(flags.getOrDefault("total-mib", "32")) << 20,
                Integer.parseInt(flags.getOrDefault("batch-bytes", String.valueOf(DEFAULT_BATCH_BYTES))));
        } else {
            System.err.println("KafkaStorageBench: --workload DIR or --record-size N is required");
            System.exit(2);
            return;
        }

        boolean keepLog = flags.containsKey("log-out");
        File logOut = keepLog ? new File(flags.get("log-out")) : freshPartitionDir(scratch);
        scheduler = new KafkaScheduler(1, true, "kafka-storage-bench-");
        scheduler.startup();
        brokerTopicStats = new BrokerTopicStats();
        try {
            for (String op : flags.getOrDefault("ops", "append_leader,append_follower,append_segment,scan").split(",")) {
                switch (op.trim()) {
                    case "append_leader": appendLeader(w, scratch); break;
                    case "append_follower": appendFollower(w, scratch); break;
                    case "append_segment": appendSegment(w, scratch); break;
                    case "scan": scan(w, logOut); break;
                    case "": break;
                    default: throw new IllegalArgumentException("unknown op " + op);
                }
            }
        } finally {
            if (!keepLog) removeParent(logOut);
            scheduler.shutdown();
            brokerTopicStats.close();
        }
    }
}
