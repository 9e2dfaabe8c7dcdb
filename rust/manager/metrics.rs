//! A snapshot of the gauges Kafka registers for its log layer, under Kafka's JMX names
//! (`kafka.log:type=Log,name=Size,topic=t,partition=0`): per log (`UnifiedLog`'s
//! `NumLogSegments`, `LogStartOffset`, `LogEndOffset`, `Size`, tagged `is-future` for a future
//! log), per manager and log dir (`LogManager`'s `OfflineLogDirectoryCount`,
//! `LogDirectoryOffline`, and the recovery gauges `remainingLogsToRecover` /
//! `remainingSegmentsToRecover`, which Kafka removes once loading ends and which read 0 here
//! after start-up), and the cleaner's (`LogCleaner`, `LogCleanerManager`). Kafka keeps no
//! retention gauges in this layer, and neither does kafkalog.
//!
//! Thread-safety: `LogManager::metrics` reads the manager's state under its read lock and each
//! log's atomics; the snapshot is plain data.

use std::fmt::Write as _;

use super::log_manager::LogManager;
use crate::cleaner::log_cleaner::CleanerMetrics;
use crate::error::Result;

/// The JMX domain of every gauge here (Kafka's `kafka.log` package).
pub const GROUP: &str = "kafka.log";

/// One gauge: its MBean's `type` and `name` keys, its other keys in Kafka's order, its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gauge {
    /// The `type` key (`Log`, `LogManager`, `LogCleaner`, `LogCleanerManager`).
    pub type_name: &'static str,
    /// The `name` key (`Size`, `max-dirty-percent`, ...).
    pub name: &'static str,
    /// The other keys (`topic`, `partition`, `logDirectory`, `dir`, ...), in Kafka's order.
    pub tags: Vec<(&'static str, String)>,
    /// The value read.
    pub value: i64,
}

impl Gauge {
    fn new(type_name: &'static str, name: &'static str, tags: Vec<(&'static str, String)>, value: i64) -> Self {
        Gauge { type_name, name, tags, value }
    }

    /// The MBean name Kafka registers: `kafka.log:type=Log,name=Size,topic=t,partition=0`.
    pub fn mbean_name(&self) -> String {
        let mut out = format!("{GROUP}:type={},name={}", self.type_name, self.name);
        for (k, v) in &self.tags {
            let _ = write!(out, ",{k}={v}");
        }
        out
    }
}

/// Every gauge at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsSnapshot {
    /// The manager's clock when it was taken (ms).
    pub time_ms: i64,
    /// The gauges: logs in topic-partition order (current, then future), then the manager's,
    /// then the cleaner's.
    pub gauges: Vec<Gauge>,
}

/// `UnifiedLog`'s four gauges (Kafka's `LogMetricNames`) of one log.
fn log_gauges(out: &mut Vec<Gauge>, log: &crate::log::unified_log::UnifiedLog, future: bool) {
    let tp = log.topic_partition();
    let mut tags = vec![("topic", tp.topic.clone()), ("partition", tp.partition.to_string())];
    if future {
        tags.push(("is-future", "true".to_string()));
    }
    let values = [
        ("NumLogSegments", log.number_of_segments() as i64),
        ("LogStartOffset", log.log_start_offset()),
        ("LogEndOffset", log.log_end_offset()),
        ("Size", i64::try_from(log.size_in_bytes()).unwrap_or(i64::MAX)),
    ];
    for (name, value) in values {
        out.push(Gauge::new("Log", name, tags.clone(), value));
    }
}

/// The cleaner's gauges, as `LogCleaner` and `LogCleanerManager` register them.
fn cleaner_gauges(out: &mut Vec<Gauge>, m: &CleanerMetrics) {
    let cleaner = [
        ("max-buffer-utilization-percent", i64::from(m.max_buffer_utilization_percent)),
        ("cleaner-recopy-percent", i64::from(m.cleaner_recopy_percent)),
        ("max-clean-time-secs", i64::from(m.max_clean_time_secs)),
        ("max-compaction-delay-secs", i64::from(m.max_compaction_delay_secs)),
        ("DeadThreadCount", m.dead_thread_count as i64),
    ];
    for (name, value) in cleaner {
        out.push(Gauge::new("LogCleaner", name, Vec::new(), value));
    }
    for (dir, n) in &m.uncleanable_partitions_count {
        let tags = vec![("logDirectory", dir.display().to_string())];
        out.push(Gauge::new("LogCleanerManager", "uncleanable-partitions-count", tags, *n as i64));
    }
    for (dir, n) in &m.uncleanable_bytes {
        let tags = vec![("logDirectory", dir.display().to_string())];
        out.push(Gauge::new("LogCleanerManager", "uncleanable-bytes", tags, i64::try_from(*n).unwrap_or(i64::MAX)));
    }
    out.push(Gauge::new("LogCleanerManager", "max-dirty-percent", Vec::new(), i64::from(m.max_dirty_percent)));
    out.push(Gauge::new("LogCleanerManager", "time-since-last-run-ms", Vec::new(), m.time_since_last_run_ms));
}

impl LogManager {
    /// Every gauge Kafka registers for this manager's logs, dirs and cleaner, read now. The
    /// cleaner's are left out when the manager runs no cleaner (`log.cleaner.enable=false`),
    /// as Kafka registers none then.
    pub fn metrics(&self) -> Result<MetricsSnapshot> {
        let mut gauges = Vec::new();
        for log in self.logs()? {
            log_gauges(&mut gauges, &log, false);
        }
        for log in self.future_logs() {
            log_gauges(&mut gauges, &log, true);
        }
        let dirs = self.log_dirs();
        let offline = dirs.iter().filter(|d| !d.online).count();
        gauges.push(Gauge::new("LogManager", "OfflineLogDirectoryCount", Vec::new(), offline as i64));
        for d in &dirs {
            let tags = vec![("logDirectory", d.path.display().to_string())];
            gauges.push(Gauge::new("LogManager", "LogDirectoryOffline", tags, i64::from(!d.online)));
        }
        // Loading has ended when a manager exists: Kafka has removed these gauges by then.
        for d in &dirs {
            let dir = d.path.display().to_string();
            gauges.push(Gauge::new("LogManager", "remainingLogsToRecover", vec![("dir", dir.clone())], 0));
            let tags = vec![("dir", dir), ("threadNum", "0".to_string())];
            gauges.push(Gauge::new("LogManager", "remainingSegmentsToRecover", tags, 0));
        }
        if let Ok(cleaner) = self.cleaner_metrics() {
            cleaner_gauges(&mut gauges, &cleaner);
        }
        Ok(MetricsSnapshot { time_ms: self.clock().milliseconds(), gauges })
    }
}
