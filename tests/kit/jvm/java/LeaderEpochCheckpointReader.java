// Reads a partition's leader-epoch-checkpoint with Kafka's own LeaderEpochCheckpointFile and
// answers endOffsetFor with Kafka's LeaderEpochFileCache built from it, so the interop tests can
// check that kafkalog writes the file Kafka reads and that both caches answer alike.
//
// Usage: java -cp <kafka jars>:<classes> LeaderEpochCheckpointReader PARTITION_DIR LOG_END_OFFSET EPOCH...
// Output, one line each, fields separated by single spaces:
//   E <epoch> <startOffset>                          (each entry, in file order)
//   O <requestedEpoch> <epoch> <endOffset>          (endOffsetFor(requestedEpoch, LOG_END_OFFSET))
// Any exception (a malformed file) ends the program with a stack trace and exit 1.

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.checkpoint.LeaderEpochCheckpointFile;
import org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache;
import org.apache.kafka.storage.internals.log.EpochEntry;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;

import java.io.File;
import java.util.Map;

public class LeaderEpochCheckpointReader {
    public static void main(String[] args) throws Exception {
        File dir = new File(args[0]);
        long logEndOffset = Long.parseLong(args[1]);
        LeaderEpochCheckpointFile checkpoint =
            new LeaderEpochCheckpointFile(LeaderEpochCheckpointFile.newFile(dir), new LogDirFailureChannel(1));
        for (EpochEntry entry : checkpoint.read()) {
            System.out.println("E " + entry.epoch() + " " + entry.startOffset());
        }
        // The scheduler is never started: only truncations use it, and none runs here.
        LeaderEpochFileCache cache = new LeaderEpochFileCache(new TopicPartition("t", 0), checkpoint, new KafkaScheduler(1));
        for (int i = 2; i < args.length; i++) {
            int requested = Integer.parseInt(args[i]);
            Map.Entry<Integer, Long> answer = cache.endOffsetFor(requested, logEndOffset);
            System.out.println("O " + requested + " " + answer.getKey() + " " + answer.getValue());
        }
        System.out.flush();
    }
}
