// Times Apache Kafka's own LogManager start-up (the kafka_2.13 / kafka-storage jars on the class
// path) on log dirs written by benches/bench_recovery.py, so `make bench-kafka` can print
// kafkalog's figure beside Kafka's from one run on one machine.
//
// Usage:
//   java -cp <kafka jars>:<classes> KafkaLoadBench --dirs DIR[,DIR...] --mode clean|unclean|rebuild
//        [--threads 2] [--label NAME] [--warmup-reps 1] [--reps 3]
//        [--expect-logs N] [--expect-segments N]
//
// What one repetition times: LogManager.apply(KafkaConfig, no offline dirs, an empty
// ConfigRepository, a started KafkaScheduler, Time.SYSTEM, BrokerTopicStats,
// LogDirFailureChannel) followed by LogManager.startup(no topics, isStray = false), exactly what
// a KRaft broker's BrokerServer runs: the dirs are checked and locked, meta.properties read,
// the clean-shutdown marker taken, the recovery-point and log-start checkpoints read, and every
// partition loaded by num.recovery.threads.per.data.dir threads per dir (LogLoader: segments
// opened with their indexes mapped lazily, the producer state and leader epoch cache loaded, and
// after an unclean shutdown every segment past the recovery point recovered: batches
// CRC-checked, indexes rebuilt, producer state rebuilt, producer snapshots written). The scheduled tasks and the log cleaner that
// startup() starts afterwards are started inside the clock too (Kafka does both in startup).
//
// Outside the clock: LogManager.shutdown(1) afterwards (flush, producer snapshots, checkpoints,
// the clean-shutdown marker), and, for --mode unclean, before each repetition the state a crash
// leaves: the marker deleted, every active segment's .index and .timeindex grown back to their
// preallocated segment.index.bytes (10 MiB, as the load sized them), and
// recovery-point-offset-checkpoint rewritten with 0 for every partition, so every segment is
// recovered. For --mode rebuild, before each repetition: the marker deleted and every producer
// snapshot (*.snapshot) of every partition deleted, the recovery points left as they are, so the
// load rebuilds each partition's producer state from its segments (Kafka's
// rebuildProducerState from the log start), as a broker does after losing its snapshots. Each
// repetition checks the logs and segments loaded.
//
// Output, one line per run on stdout:
//   kafka <mode> <label> logs=... segments=... bytes=... producers=... stable_end_sum=... threads=...
//     (producers: producer ids loaded; stable_end_sum: each log's first unstable offset, or its
//     log end when no transaction is open, summed; the LSO itself needs the high watermark a
//     ReplicaManager sets) warmup=... reps=... best_s=...
//     median_s=... runs_s=a,b,c                                       (one line)
// Anything else on stdout (Kafka's own log4j output) does not start with "kafka ".

import kafka.log.LogManager;
import kafka.server.KafkaConfig;

import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.ConfigRepository;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import scala.jdk.javaapi.CollectionConverters;

public class KafkaLoadBench {
    static final Pattern PARTITION_DIR = Pattern.compile("^(.+)-(\\d+)$");

    /** Every broker key a KRaft broker needs to build its KafkaConfig; nothing here listens. */
    static KafkaConfig brokerConfig(List<File> dirs, int threads) {
        Properties p = new Properties();
        p.put("process.roles", "broker");
        p.put("node.id", "1");
        p.put("controller.quorum.bootstrap.servers", "localhost:9093");
        p.put("controller.listener.names", "CONTROLLER");
        p.put("listeners", "PLAINTEXT://localhost:9092");
        p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        StringBuilder logDirs = new StringBuilder();
        for (File d : dirs) logDirs.append(logDirs.length() == 0 ? "" : ",").append(d.getAbsolutePath());
        p.put("log.dirs", logDirs.toString());
        p.put("num.recovery.threads.per.data.dir", String.valueOf(threads));
        return KafkaConfig.fromProps(p);
    }

    /**
     * What a crash leaves: no marker, and every active segment's offset and time index at their
     * preallocated size (segment.index.bytes rounded down to whole entries, as the load sized
     * them); then every recovery point 0, so every segment is recovered.
     */
    static void makeUnclean(File dir) throws IOException {
        Files.deleteIfExists(dir.toPath().resolve(".kafka_cleanshutdown"));
        List<String> lines = new ArrayList<>();
        File[] children = dir.listFiles(File::isDirectory);
        if (children == null) throw new IOException("cannot list " + dir);
        Arrays.sort(children);
        for (File child : children) {
            Matcher m = PARTITION_DIR.matcher(child.getName());
            if (!m.matches()) continue;
            lines.add(m.group(1) + " " + m.group(2) + " 0");
            String[] logs = child.list((d, name) -> name.endsWith(".log"));
            if (logs == null || logs.length == 0) continue;
            Arrays.sort(logs);
            String base = logs[logs.length - 1].substring(0, logs[logs.length - 1].length() - ".log".length());
            preallocate(new File(child, base + ".index"), 8);
            preallocate(new File(child, base + ".timeindex"), 12);
        }
        StringBuilder text = new StringBuilder("0\n").append(lines.size()).append('\n');
        for (String l : lines) text.append(l).append('\n');
        Path tmp = dir.toPath().resolve("recovery-point-offset-checkpoint.tmp");
        Files.writeString(tmp, text.toString(), StandardCharsets.UTF_8);
        Files.move(tmp, dir.toPath().resolve("recovery-point-offset-checkpoint"),
            java.nio.file.StandardCopyOption.ATOMIC_MOVE, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }

    /** The marker and every partition's producer snapshots deleted (--mode rebuild). */
    static void dropSnapshots(File dir) throws IOException {
        Files.deleteIfExists(dir.toPath().resolve(".kafka_cleanshutdown"));
        File[] children = dir.listFiles(File::isDirectory);
        if (children == null) throw new IOException("cannot list " + dir);
        for (File child : children) {
            File[] snapshots = child.listFiles((d, name) -> name.endsWith(".snapshot"));
            if (snapshots == null) continue;
            for (File f : snapshots) Files.delete(f.toPath());
        }
    }

    static final int INDEX_BYTES = 10 * 1024 * 1024; // segment.index.bytes default

    static void preallocate(File index, int entrySize) throws IOException {
        long size = INDEX_BYTES / entrySize * entrySize;
        try (RandomAccessFile f = new RandomAccessFile(index, "rw")) {
            if (f.length() < size) f.setLength(size);
        }
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> flags = new HashMap<>();
        for (int i = 0; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                System.err.println("usage: KafkaLoadBench --dirs DIR[,DIR...] --mode clean|unclean [options]"
                    + " (see the comment at the top of KafkaLoadBench.java)");
                System.exit(2);
            }
            flags.put(argv[i].substring(2), argv[i + 1]);
        }
        List<File> dirs = new ArrayList<>();
        for (String d : flags.getOrDefault("dirs", "").split(",")) if (!d.isEmpty()) dirs.add(new File(d));
        String mode = flags.getOrDefault("mode", "clean");
        if (dirs.isEmpty() || !(mode.equals("clean") || mode.equals("unclean") || mode.equals("rebuild"))) {
            System.err.println("KafkaLoadBench: --dirs and --mode clean|unclean|rebuild are required");
            System.exit(2);
        }
        int threads = Integer.parseInt(flags.getOrDefault("threads", "2"));
        int warmupReps = Integer.parseInt(flags.getOrDefault("warmup-reps", "1"));
        int reps = Math.max(1, Integer.parseInt(flags.getOrDefault("reps", "3")));
        String label = flags.getOrDefault("label", dirs.size() + "dirs");
        long expectLogs = Long.parseLong(flags.getOrDefault("expect-logs", "-1"));
        long expectSegments = Long.parseLong(flags.getOrDefault("expect-segments", "-1"));

        KafkaConfig config = brokerConfig(dirs, threads);
        ConfigRepository noOverrides = (ConfigResource resource) -> new Properties();
        KafkaScheduler scheduler = new KafkaScheduler(1, true, "kafka-scheduler-");
        scheduler.startup();
        BrokerTopicStats brokerTopicStats = new BrokerTopicStats();
        double[] secs = new double[reps];
        long logs = 0;
        long segments = 0;
        long bytes = 0;
        long producers = 0;
        long lastStable = 0;
        try {
            for (int rep = -warmupReps; rep < reps; rep++) {
                if (mode.equals("unclean")) {
                    for (File d : dirs) makeUnclean(d);
                } else if (mode.equals("rebuild")) {
                    for (File d : dirs) dropSnapshots(d);
                } else {
                    for (File d : dirs) {
                        if (!new File(d, ".kafka_cleanshutdown").exists()) {
                            throw new IllegalStateException(d + " has no clean-shutdown marker");
                        }
                    }
                }
                LogDirFailureChannel failureChannel = new LogDirFailureChannel(dirs.size());
                long t0 = System.nanoTime();
                LogManager logManager = LogManager.apply(config, CollectionConverters.asScala(new ArrayList<String>()),
                    noOverrides, scheduler, Time.SYSTEM, brokerTopicStats, failureChannel);
                logManager.startup(CollectionConverters.asScala(new HashSet<String>()), logManager.startup$default$2());
                double elapsed = (System.nanoTime() - t0) / 1e9;
                logs = 0;
                segments = 0;
                bytes = 0;
                producers = 0;
                lastStable = 0;
                for (UnifiedLog log : CollectionConverters.asJava(logManager.allLogs())) {
                    logs++;
                    segments += log.numberOfSegments();
                    bytes += log.size();
                    producers += log.producerIdCount();
                    lastStable += log.firstUnstableOffset().orElse(log.logEndOffset());
                }
                if (logManager.hasOfflineLogDirs()) throw new IllegalStateException("a log dir went offline");
                if ((expectLogs >= 0 && logs != expectLogs) || (expectSegments >= 0 && segments != expectSegments)) {
                    throw new IllegalStateException("loaded " + logs + " logs / " + segments + " segments, expected "
                        + expectLogs + " / " + expectSegments);
                }
                logManager.shutdown(1L);
                if (rep >= 0) secs[rep] = elapsed;
            }
        } finally {
            scheduler.shutdown();
            brokerTopicStats.close();
        }
        double[] sorted = secs.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        double median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
        StringBuilder runs = new StringBuilder();
        for (double s : secs) runs.append(runs.length() == 0 ? "" : ",").append(String.format("%.4f", s));
        System.out.printf("kafka %s %s logs=%d segments=%d bytes=%d producers=%d stable_end_sum=%d threads=%d "
                + "warmup=%d reps=%d best_s=%.4f median_s=%.4f runs_s=%s%n",
            mode, label, logs, segments, bytes, producers, lastStable, threads, warmupReps, reps, sorted[0], median,
            runs);
        System.out.flush();
        System.exit(0); // Kafka's metrics and scheduler threads need not be waited for
    }
}
