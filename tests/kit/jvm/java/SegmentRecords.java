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

import org.apache.kafka.common.record.internal.FileLogInputStream;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.Record;

import java.io.File;
import java.io.PrintStream;

public class SegmentRecords {
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
                        out.println(RecordLines.recordLine(record));
                    }
                    position += batch.sizeInBytes();
                }
                out.println("T " + (records.sizeInBytes() - position));
            }
        }
        out.flush();
    }
}
