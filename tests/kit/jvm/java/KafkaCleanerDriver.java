// Runs Apache Kafka's own log cleaner (kafka-storage's Cleaner with a SkimpyOffsetMap, the class a
// broker's cleaner thread runs) on one partition directory, outside a broker, so the interop tests
// and benches/bench_cleaner.py can put kafkalog's compaction beside Kafka's on the same files.
//
// Usage:
//   java -cp <kafka jars>:<classes> KafkaCleanerDriver --dir PARTITION_DIR[,PARTITION_DIR...] [options]
//
// Options (all optional):
//   --now-ms MS             the "current time" handed to Cleaner.doClean (tombstone delete
//                           horizons) and to the cleanable-range computation (default: wall clock)
//   --map-bytes N           SkimpyOffsetMap memory (default 134217728, log.cleaner.dedupe.buffer.size
//                           with one cleaner thread)
//   --io-buffer-bytes N     size of each of the cleaner's two I/O buffers (default 262144: a broker
//                           passes log.cleaner.io.buffer.size / threads / 2)
//   --max-io-buffer-bytes N how far the buffers may grow (default 1048588, message.max.bytes)
//   --load-factor F         log.cleaner.io.buffer.load.factor (default 0.9)
//   --first-dirty OFFSET    where cleaning starts (default: the log start offset, as without a
//                           cleaner-offset-checkpoint entry)
//   --first-dirty-from-checkpoint true
//                           where cleaning starts: the partition's entry in the log dir's
//                           cleaner-offset-checkpoint (the directory's parent), read with Kafka's
//                           OffsetCheckpointFile as a broker's LogCleanerManager reads it (no entry:
//                           the log start); the entry read is echoed as "checkpoint" in the JSON
//   --config key=value      a topic config (repeatable): cleanup.policy, segment.bytes,
//                           internal.segment.bytes, delete.retention.ms, min.compaction.lag.ms, ...
//   --max-passes N          stop after N passes (default: until the cleanable range is done)
//   --rebuild-producer-state true
//                           open the log as after an unclean shutdown: segments past the recovery
//                           point (0) are recovered and, without producer snapshots, the producer
//                           state is rebuilt from the first segment, so the cleaner keeps each
//                           active producer's last batch as a broker with its snapshots would
//                           (a clean open without snapshots starts with no producers at all)
//   --read true             afterwards, read the whole log back through UnifiedLog.read and print it
//   --warmup N              the first N directories are warm-up runs (default 0)
//   --label NAME            a name echoed in the JSON
//
// One run: UnifiedLog.create on the directory (clean shutdown assumed, so no recovery), high
// watermark set to the log end offset (a leader with no followers), the cleanable range from
// LogCleanerManager.cleanableOffsets (the log start or --first-dirty up to min(last stable
// offset, active segment base, the min.compaction.lag.ms rule), which LogToClean aligns down to a
// segment base), then Cleaner.doClean passes, each starting where the previous one ended and with
// that range computed again, until nothing is left to clean (what a broker's cleaner thread does
// over several rounds, with the cleaner checkpoint in between; the dirty ratio aside). Only
// doClean is timed (System.nanoTime); opening and closing the log are not. After the close, the
// *.deleted files of the replaced segments are unlinked (a broker's scheduler does that after
// file.delete.delay.ms).
//
// With several directories (copies of one input, say), they are cleaned one after the other in
// one JVM by one Cleaner (and its offset map), like a cleaner thread; the first --warmup N of
// them are warm-up runs (marked "warmup": true).
//
// Output on stdout: one line per run starting with "cleaner-json " followed by a JSON object:
//   {"label", "run", "warmup", "dir", "first_dirty_offset", "first_uncleanable_offset", "end_offset",
//    "passes": [{"first_dirty_offset", "end_offset", "secs", "cpu_secs", "bytes_read", "bytes_written",
//                "map_bytes_read", "map_messages_read", "messages_read", "messages_written",
//                "invalid_messages_read", "buffer_utilization", "elapsed_secs", "elapsed_index_secs"}],
//    "secs", "cpu_secs", "bytes_read", "bytes_written", "messages_read", "messages_written", "map_bytes",
//    "map_slots", "heap_used_bytes", "heap_peak_bytes"}
// With --read true, after the JSON line (fields separated by single spaces, bytes as lowercase
// hex, "-" = null, "=" = empty):
//   B <baseOffset> <lastOffset> <compression> <maxTimestamp> <isControl> <count> <deleteHorizonMs|->
//   R <offset> <timestamp> <key> <value> <headerCount> [<headerKeyHex> <headerValue>]...
//   E <logStartOffset> <logEndOffset>
// Any failure ends the program with a stack trace on stderr and exit code 1.

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.checkpoint.OffsetCheckpointFile;
import org.apache.kafka.storage.internals.log.Cleaner;
import org.apache.kafka.storage.internals.log.CleanerStats;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.LogCleanerManager;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogToClean;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.SkimpyOffsetMap;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.utils.Throttler;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

import java.io.BufferedOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

public class KafkaCleanerDriver {

    static Map<String, String> flags = new HashMap<>();
    static boolean REBUILD_PRODUCER_STATE = false;
    static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    static Map<String, String> topicConfig = new HashMap<>();

    static long flagLong(String name, long dflt) {
        String v = flags.get(name);
        return v == null ? dflt : Long.parseLong(v);
    }

    static void parse(String[] argv) {
        for (int i = 0; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                System.err.println("usage: KafkaCleanerDriver --dir DIR [options] "
                    + "(see the comment at the top of KafkaCleanerDriver.java)");
                System.exit(2);
            }
            String name = argv[i].substring(2);
            if (name.equals("config")) {
                String kv = argv[i + 1];
                int eq = kv.indexOf('=');
                if (eq <= 0) throw new IllegalArgumentException("--config wants key=value, got " + kv);
                topicConfig.put(kv.substring(0, eq), kv.substring(eq + 1));
            } else {
                flags.put(name, argv[i + 1]);
            }
        }
    }

    // -- the log ----------------------------------------------------------------------------

    static UnifiedLog open(File dir, LogConfig config, KafkaScheduler scheduler, BrokerTopicStats stats)
            throws IOException {
        UnifiedLog log = UnifiedLog.create(
            dir,
            config,
            0L,                                                // log start offset (raised to the first segment)
            0L,                                                // recovery point
            scheduler,
            stats,
            Time.SYSTEM,
            900_000,                                           // transaction.max.timeout.ms default
            new ProducerStateManagerConfig(86_400_000, false), // producer.id.expiration.ms default
            600_000,                                           // producer.id.expiration.check.interval.ms default
            new LogDirFailureChannel(1),
            !REBUILD_PRODUCER_STATE,                           // last shutdown clean: no recovery

            Optional.empty());
        // A leader without followers: everything up to the log end is committed.
        log.updateHighWatermark(log.logEndOffset());
        return log;
    }

    /** LogCleanerManager.cleanableOffsets (package-private): {firstDirty, firstUncleanable}. */
    static long[] cleanableOffsets(UnifiedLog log, Optional<Long> firstDirty, long now) throws Exception {
        Method m = LogCleanerManager.class.getDeclaredMethod("cleanableOffsets", UnifiedLog.class, Optional.class, long.class);
        m.setAccessible(true);
        Object offsets = m.invoke(null, log, firstDirty, now);
        Method dirty = offsets.getClass().getDeclaredMethod("firstDirtyOffset");
        Method uncleanable = offsets.getClass().getDeclaredMethod("firstUncleanableDirtyOffset");
        dirty.setAccessible(true);
        uncleanable.setAccessible(true);
        return new long[] {(Long) dirty.invoke(offsets), (Long) uncleanable.invoke(offsets)};
    }

    static long mapBytesRead(CleanerStats stats) throws Exception {
        Field f = CleanerStats.class.getDeclaredField("mapBytesRead");
        f.setAccessible(true);
        return f.getLong(stats);
    }

    // -- one run ----------------------------------------------------------------------------

    static String runOnce(Cleaner cleaner, SkimpyOffsetMap map, int mapBytes, File dir, LogConfig config,
                          KafkaScheduler scheduler, BrokerTopicStats brokerStats, long now, String label, int run,
                          boolean warmup, boolean read, PrintStream out) throws Exception {
        UnifiedLog log = open(dir, config, scheduler, brokerStats);
        StringBuilder json = new StringBuilder();
        try {
            Optional<Long> firstDirtyFlag = flags.containsKey("first-dirty")
                ? Optional.of(Long.parseLong(flags.get("first-dirty"))) : Optional.empty();
            String checkpointJson = "";
            if (Boolean.parseBoolean(flags.getOrDefault("first-dirty-from-checkpoint", "false"))) {
                File file = new File(dir.getAbsoluteFile().getParentFile(), "cleaner-offset-checkpoint");
                Map<TopicPartition, Long> entries = new OffsetCheckpointFile(file, new LogDirFailureChannel(1)).read();
                firstDirtyFlag = Optional.ofNullable(entries.get(log.topicPartition()));
                checkpointJson = "\"checkpoint\":" + firstDirtyFlag.map(String::valueOf).orElse("null") + ",";
            }
            long[] range = cleanableOffsets(log, firstDirtyFlag, now);
            long firstDirty = range[0];
            long firstUncleanable = range[1];
            long maxPasses = flagLong("max-passes", Long.MAX_VALUE);
            List<String> passes = new ArrayList<>();
            double totalSecs = 0;
            double totalCpuSecs = 0;
            long bytesRead = 0, bytesWritten = 0, messagesRead = 0, messagesWritten = 0;
            long dirty = firstDirty;
            for (long pass = 0; pass < maxPasses; pass++) {
                // What the broker computes before each round, from the checkpoint the previous
                // round left: LogToClean aligns the first uncleanable offset down to the base of
                // the segment holding it (calculateCleanableBytes), and doClean stops there.
                long[] offsets = cleanableOffsets(log, Optional.of(dirty), now);
                LogToClean toClean = new LogToClean(log, offsets[0], offsets[1], false);
                firstUncleanable = toClean.firstUncleanableOffset();
                if (toClean.cleanableBytes() == 0 || dirty >= firstUncleanable) break;
                long cpu0 = THREADS.getCurrentThreadCpuTime();
                long t0 = System.nanoTime();
                Map.Entry<Long, CleanerStats> result = cleaner.doClean(toClean, now);
                double secs = (System.nanoTime() - t0) / 1e9;
                double cpuSecs = (THREADS.getCurrentThreadCpuTime() - cpu0) / 1e9;
                long end = result.getKey();
                CleanerStats s = result.getValue();
                totalSecs += secs;
                totalCpuSecs += cpuSecs;
                bytesRead += s.bytesRead();
                bytesWritten += s.bytesWritten();
                messagesRead += s.messagesRead();
                messagesWritten += s.messagesWritten();
                passes.add(String.format(Locale.ROOT,
                    "{\"first_dirty_offset\":%d,\"end_offset\":%d,\"secs\":%.6f,\"cpu_secs\":%.6f,\"bytes_read\":%d,"
                        + "\"bytes_written\":%d,\"map_bytes_read\":%d,\"map_messages_read\":%d,\"messages_read\":%d,"
                        + "\"messages_written\":%d,\"invalid_messages_read\":%d,\"buffer_utilization\":%.6f,"
                        + "\"elapsed_secs\":%.3f,\"elapsed_index_secs\":%.3f}",
                    dirty, end, secs, cpuSecs, s.bytesRead(), s.bytesWritten(), mapBytesRead(s), s.mapMessagesRead(),
                    s.messagesRead(), s.messagesWritten(), s.invalidMessagesRead(), s.bufferUtilization(),
                    s.elapsedSecs(), s.elapsedIndexSecs()));
                if (end <= dirty) throw new IllegalStateException("no progress: pass from " + dirty + " ended at " + end);
                dirty = end;
                if (end >= firstUncleanable) break;
            }
            long heapUsed = 0, heapPeak = 0;
            for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
                if (pool.getType() == MemoryType.HEAP) {
                    heapUsed += pool.getUsage().getUsed();
                    heapPeak += pool.getPeakUsage().getUsed();
                }
            }
            json.append(String.format(Locale.ROOT,
                "{%s\"label\":\"%s\",\"run\":%d,\"warmup\":%b,\"dir\":\"%s\",\"now_ms\":%d,\"first_dirty_offset\":%d,"
                    + "\"first_uncleanable_offset\":%d,\"end_offset\":%d,\"passes\":[%s],\"secs\":%.6f,\"cpu_secs\":%.6f,"
                    + "\"bytes_read\":%d,\"bytes_written\":%d,\"messages_read\":%d,\"messages_written\":%d,"
                    + "\"map_bytes\":%d,\"map_slots\":%d,\"heap_used_bytes\":%d,\"heap_peak_bytes\":%d}",
                checkpointJson, label.replace("\"", "'"), run, warmup, dir.getPath().replace("\\", "/").replace("\"", "'"), now,
                firstDirty, firstUncleanable, dirty, String.join(",", passes), totalSecs, totalCpuSecs, bytesRead, bytesWritten,
                messagesRead, messagesWritten, mapBytes, map.slots(), heapUsed, heapPeak));
            out.println("cleaner-json " + json);
            if (read) readAll(log, out);
        } finally {
            log.close();
            sweepDeleted(dir);
        }
        return json.toString();
    }

    // -- --read: the log through UnifiedLog.read ----------------------------------------------

    static void readAll(UnifiedLog log, PrintStream out) throws IOException {
        long offset = log.logStartOffset();
        long end = log.logEndOffset();
        while (offset < end) {
            FetchDataInfo info = log.read(offset, 1 << 20, FetchIsolation.LOG_END, true);
            long next = offset;
            for (RecordBatch batch : info.records.batches()) {
                batch.ensureValid();
                out.println("B " + batch.baseOffset() + " " + batch.lastOffset() + " " + batch.compressionType().name
                    + " " + batch.maxTimestamp() + " " + batch.isControlBatch() + " " + batch.countOrNull() + " "
                    + (batch.deleteHorizonMs().isPresent() ? Long.toString(batch.deleteHorizonMs().getAsLong()) : "-"));
                for (Record record : batch) {
                    record.ensureValid();
                    if (record.offset() < offset) continue;
                    out.println(RecordLines.recordLine(record));
                }
                next = batch.nextOffset();
            }
            if (next <= offset) throw new IllegalStateException("read at " + offset + " made no progress");
            offset = next;
        }
        out.println("E " + log.logStartOffset() + " " + log.logEndOffset());
    }

    /** What the scheduler's delayed delete (file.delete.delay.ms) would do: unlink *.deleted. */
    static void sweepDeleted(File dir) throws IOException {
        File[] files = dir.listFiles((d, name) -> name.endsWith(".deleted"));
        if (files == null) return;
        for (File f : files) Files.deleteIfExists(f.toPath());
    }

    public static void main(String[] argv) throws Exception {
        parse(argv);
        long now = flagLong("now-ms", System.currentTimeMillis());
        int mapBytes = (int) flagLong("map-bytes", 134_217_728L);
        int ioBuffer = (int) flagLong("io-buffer-bytes", 262_144L);
        int maxIoBuffer = (int) flagLong("max-io-buffer-bytes", 1_048_588L);
        double loadFactor = Double.parseDouble(flags.getOrDefault("load-factor", "0.9"));
        boolean read = Boolean.parseBoolean(flags.getOrDefault("read", "false"));
        REBUILD_PRODUCER_STATE = Boolean.parseBoolean(flags.getOrDefault("rebuild-producer-state", "false"));
        String label = flags.getOrDefault("label", "kafka");
        if (!topicConfig.containsKey("cleanup.policy")) topicConfig.put("cleanup.policy", "compact");
        LogConfig config = new LogConfig(topicConfig, topicConfig.keySet());

        SkimpyOffsetMap map = new SkimpyOffsetMap(mapBytes);
        Throttler throttler = new Throttler(Double.MAX_VALUE, 300, "cleaner-io", "bytes", Time.SYSTEM);
        Cleaner cleaner = new Cleaner(0, map, ioBuffer, maxIoBuffer, loadFactor, throttler, Time.SYSTEM,
            (TopicPartition tp) -> { });

        KafkaScheduler scheduler = new KafkaScheduler(1, true, "kafka-cleaner-driver-");
        scheduler.startup();
        BrokerTopicStats brokerStats = new BrokerTopicStats();
        PrintStream out = new PrintStream(new BufferedOutputStream(System.out, 1 << 16), false, "UTF-8");
        try {
            String dirs = flags.get("dir");
            if (dirs == null || dirs.isEmpty()) {
                System.err.println("KafkaCleanerDriver: --dir is required");
                System.exit(2);
            }
            int warmup = (int) flagLong("warmup", 0);
            String[] list = dirs.split(",");
            for (int i = 0; i < list.length; i++) {
                runOnce(cleaner, map, mapBytes, new File(list[i]), config, scheduler, brokerStats, now, label,
                    i - warmup, i < warmup, read, out);
                out.flush();
            }
        } finally {
            out.flush();
            scheduler.shutdown();
            brokerStats.close();
        }
        System.exit(0); // Kafka's metrics and scheduler threads need not be waited for
    }
}
