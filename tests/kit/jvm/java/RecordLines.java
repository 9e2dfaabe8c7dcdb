// The record lines the Java drivers print (SegmentRecords, KafkaCleanerDriver --read), in one
// place, so that kit.kafka_harness parses one format:
//   R <offset> <timestamp> <key> <value> <headerCount> [<headerKeyHex> <headerValue>]...
// bytes as lowercase hex, "-" for null, "=" for an empty array.

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.internal.Record;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

final class RecordLines {
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private RecordLines() {}

    /** Lowercase hex of {@code bytes}; "=" for an empty array. */
    static String hex(byte[] bytes) {
        if (bytes.length == 0) return "=";
        char[] out = new char[bytes.length * 2];
        for (int i = 0; i < bytes.length; i++) {
            out[2 * i] = HEX[(bytes[i] >> 4) & 0xf];
            out[2 * i + 1] = HEX[bytes[i] & 0xf];
        }
        return new String(out);
    }

    /** Lowercase hex of the buffer's remaining bytes (its position unchanged); "-" for null. */
    static String hex(ByteBuffer buffer) {
        if (buffer == null) return "-";
        ByteBuffer b = buffer.duplicate();
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        return hex(bytes);
    }

    /** The "R" line of one record (its CRC or size checked first by the caller). */
    static String recordLine(Record record) {
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
        return line.toString();
    }
}
