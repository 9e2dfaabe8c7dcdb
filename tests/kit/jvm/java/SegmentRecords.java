// Prints every batch and record of Kafka .log segment files as Kafka's own record classes
// decode them (kafka-clients' FileRecords; CRC checked with ensureValid), so the interop
// tests can compare exact bytes, which DumpLogSegments' text output cannot show.
//
// Usage: java -cp <kafka jars>:<classes> SegmentRecords FILE.log...
// Output, one line each, fields separated by single spaces, bytes as lowercase hex ("-" = null,
// "" shown as "=" for an empty array):
//   F <path>
//   B <position> <baseOffset> <lastOffset> <magic> <compression> <timestampType> <maxTimestamp>
//     <isControl> <isTransactional> <producerId> <producerEpoch> <baseSequence>
//     <partitionLeaderEpoch> <sizeInBytes>          (one line)
//   R <offset> <timestamp> <key> <value> <headerCount> [<headerKeyHex> <headerValue>]...
//   T <trailingBytes>
// Any exception (bad CRC, truncated batch) ends the program with a stack trace and exit 1.

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.internal.FileLogInputStream;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.Record;

import java.io.File;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

public class SegmentRecords {
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private static String hex(byte[] bytes) {
        if (bytes.length == 0) return "=";
        char[] out = new char[bytes.length * 2];
        for (int i = 0; i < bytes.length; i++) {
            out[2 * i] = HEX[(bytes[i] >> 4) & 0xf];
            out[2 * i + 1] = HEX[bytes[i] & 0xf];
        }
        return new String(out);
    }

    private static String hex(ByteBuffer buffer) {
        if (buffer == null) return "-";
        ByteBuffer b = buffer.duplicate();
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        return hex(bytes);
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new java.io.BufferedOutputStream(System.out, 1 << 16), false, "UTF-8");
        for (String path : args) {
            File file = new File(path);
            out.println("F " + path);
            try (FileRecords records = FileRecords.open(file, false)) {
                long position = 0;
                for (FileLogInputStream.FileChannelRecordBatch batch : records.batches()) {
                    batch.ensureValid();
                    out.println("B " + position + " " + batch.baseOffset() + " " + batch.lastOffset() + " "
                        + batch.magic() + " " + batch.compressionType().name + " " + batch.timestampType() + " "
                        + batch.maxTimestamp() + " " + batch.isControlBatch() + " " + batch.isTransactional() + " "
                        + batch.producerId() + " " + batch.producerEpoch() + " " + batch.baseSequence() + " "
                        + batch.partitionLeaderEpoch() + " " + batch.sizeInBytes());
                    for (Record record : batch) {
                        record.ensureValid();
                        StringBuilder line = new StringBuilder("R ");
                        line.append(record.offset()).append(' ').append(record.timestamp()).append(' ')
                            .append(record.hasKey() ? hex(record.key()) : "-").append(' ')
                            .append(record.hasValue() ? hex(record.value()) : "-").append(' ');
                        Header[] headers = record.headers();
                        line.append(headers.length);
                        for (Header h : headers) {
                            line.append(' ').append(hex(h.key().getBytes(StandardCharsets.UTF_8)))
                                .append(' ').append(h.value() == null ? "-" : hex(h.value()));
                        }
                        out.println(line);
                    }
                    position += batch.sizeInBytes();
                }
                out.println("T " + (records.sizeInBytes() - position));
            }
        }
        out.flush();
    }
}
