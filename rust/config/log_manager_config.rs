//! The broker-level configuration of a LogManager: what Kafka's `LogManager.apply`
//! (`core/.../log/LogManager.scala`) reads from `KafkaConfig`, the `log.cleaner.*` keys of
//! Kafka's `CleanerConfig`, and the broker synonym of every topic key. The synonyms give the
//! default [`LogConfig`] for topics without overrides (Kafka's
//! `new LogConfig(KafkaConfig.extractLogConfigMap)`).
//!
//! Names, types, defaults and ranges are Kafka 4.3.1's (`ServerLogConfigs`, `ServerConfigs`,
//! `CleanerConfig`, `RemoteLogManagerConfig`, `ReplicationConfigs`, `KRaftConfigs`,
//! `LogConfig.SERVER_CONFIG_DEF`), checked against the `ConfigDef`s in the 4.3.1 jars. Values
//! parse as in [`super::key_table`], the engine the three tables share. When several broker keys feed one topic key, the first one
//! set wins, in the order of Kafka's `ServerTopicConfigSynonyms`:
//! - `segment.ms`: `log.roll.ms`, else `log.roll.hours` (default 168).
//! - `segment.jitter.ms`: `log.roll.jitter.ms`, else `log.roll.jitter.hours` (default 0).
//! - `retention.ms`: `log.retention.ms`, else `log.retention.minutes`, else `log.retention.hours`
//!   (default 168). A negative result means unlimited (-1), and 0 is rejected
//!   (`KafkaConfig.logRetentionTimeMillis` and its start-up check).
//! - `flush.ms`: `log.flush.interval.ms`, else `log.flush.scheduler.interval.ms`.
//!
//! kafkalog is stricter than Kafka here:
//! - Every key must be known. Kafka ignores unknown broker keys with a warning. Here a topic key
//!   such as `retention.ms` is rejected with the broker key to use instead. Any other unknown
//!   key is rejected by name.
//! - `log.dirs` or `log.dir` is required. Kafka defaults `log.dir` to `/tmp/kafka-logs`.
//! - A directory listed twice is rejected. Paths are compared after making them absolute and
//!   dropping `.` components and repeated or trailing `/`. Kafka silently drops exact repeats,
//!   then fails at start-up on two entries with the same canonical path. Canonical paths
//!   (symlinks resolved) are the LogManager's business, at start-up.
//! - Kafka sets no range for `log.cleaner.io.buffer.load.factor` and
//!   `log.cleaner.io.max.bytes.per.second`. Bad values break the cleaner, so here the load
//!   factor must be in (0, 1] and the rate finite and positive.
//! - Kafka's `ConfigDef` accepts `log.cleaner.threads=0`, but `KafkaConfig` then divides by it
//!   and the broker does not start. [`LogManagerConfig::validate`] rejects it and says why.
//!
//! A plain value: not thread-safe to mutate; share it by cloning.

use std::fmt;
use std::io;
use std::path::PathBuf;

use super::cleaner_config::CleanerConfig;
use super::key_table::{invalid, java_trim, key, parse_int, parse_list, parse_long, Key, KeyTable, Range};
use super::log_config::LogConfig;
use crate::error::{Error, Result};

/// Broker keys that Kafka 4.0 removed. Kafka 4.x ignores them with a warning.
const REMOVED_KEYS: &[&str] =
    &["log.message.downconversion.enable", "log.message.format.version", "log.message.timestamp.difference.max.ms"];

const MINUTE_MS: i64 = 60 * 1000;
const HOUR_MS: i64 = 60 * MINUTE_MS;
const ZERO_RETENTION: &str = "must not be 0 (a negative value means unlimited retention)";

/// `cordoned.log.dirs` as given: `*` or a list of directories.
#[derive(Clone, Debug, PartialEq)]
enum Cordoned {
    All,
    Dirs(Vec<PathBuf>),
}

/// The broker keys that are resolved into `segment.ms`, `segment.jitter.ms`, `retention.ms` and
/// `flush.ms`, kept as given so that precedence does not depend on the order of `set` calls.
#[derive(Clone, Debug, PartialEq)]
struct TimeSynonyms {
    roll_ms: Option<i64>,
    roll_hours: i32,
    roll_jitter_ms: Option<i64>,
    roll_jitter_hours: i32,
    retention_ms: Option<i64>,
    retention_minutes: Option<i32>,
    retention_hours: i32,
    flush_interval_ms: Option<i64>,
    flush_scheduler_interval_ms: i64,
}

impl Default for TimeSynonyms {
    fn default() -> Self {
        Self {
            roll_ms: None,
            roll_hours: 168,
            roll_jitter_ms: None,
            roll_jitter_hours: 0,
            retention_ms: None,
            retention_minutes: None,
            retention_hours: 168,
            flush_interval_ms: None,
            flush_scheduler_interval_ms: i64::MAX,
        }
    }
}

impl TimeSynonyms {
    /// The `retention.ms` synonym that wins: its key, its value as given, and that value in ms
    /// (before negatives become -1).
    fn retention(&self) -> (&'static str, i64, i64) {
        match (self.retention_ms, self.retention_minutes) {
            (Some(ms), _) => ("log.retention.ms", ms, ms),
            (None, Some(min)) => ("log.retention.minutes", min.into(), i64::from(min) * MINUTE_MS),
            (None, None) => {
                let hours = self.retention_hours;
                ("log.retention.hours", hours.into(), i64::from(hours) * HOUR_MS)
            }
        }
    }

    /// The broker key that gave `topic_key` its value, for the four resolved topic keys.
    fn source(&self, topic_key: &str) -> Option<&'static str> {
        let pick = |first: Option<i64>, a, b| Some(if first.is_some() { a } else { b });
        match topic_key {
            "segment.ms" => pick(self.roll_ms, "log.roll.ms", "log.roll.hours"),
            "segment.jitter.ms" => pick(self.roll_jitter_ms, "log.roll.jitter.ms", "log.roll.jitter.hours"),
            "retention.ms" => Some(self.retention().0),
            "flush.ms" => pick(self.flush_interval_ms, "log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
            _ => None,
        }
    }
}

/// The broker-level configuration of a LogManager: the part of Kafka's `KafkaConfig` that
/// `LogManager` reads. Field names follow `LogManager`'s constructor.
///
/// Keys that stand alone are public fields. Setting one directly skips its range check, and
/// [`LogManagerConfig::validate`] makes the check again. Keys that feed another value (the log
/// dirs, the cordoned dirs, every topic synonym) are read through methods, so they cannot
/// disagree with [`LogManagerConfig::log_config`].
///
/// `Default` gives Kafka 4.3.1's defaults, `node.id` 1, and no log dirs, so `validate` fails
/// until a dir is given. A plain value: not thread-safe to mutate; share it by cloning.
#[derive(Clone, Debug, PartialEq)]
pub struct LogManagerConfig {
    /// `log.retention.check.interval.ms`: long, default 300000 (5 minutes), `>= 1`. How often
    /// retention runs (Kafka's `retentionCheckMs`).
    pub retention_check_ms: i64,
    /// `log.flush.offset.checkpoint.interval.ms`: int, default 60000, `>= 0`. How often
    /// `recovery-point-offset-checkpoint` is written (`flushRecoveryOffsetCheckpointMs`).
    pub flush_recovery_offset_checkpoint_ms: i32,
    /// `log.flush.start.offset.checkpoint.interval.ms`: int, default 60000, `>= 0`. How often
    /// `log-start-offset-checkpoint` is written (`flushStartOffsetCheckpointMs`).
    pub flush_start_offset_checkpoint_ms: i32,
    /// `num.recovery.threads.per.data.dir`: int, default 2, `>= 1`. Threads per log dir for
    /// recovery at start-up and flushing at shutdown (`recoveryThreadsPerDataDir`).
    pub recovery_threads_per_data_dir: i32,
    /// `log.initial.task.delay.ms`: internal long, default 30000, `>= 0`. The delay before the
    /// first run of each scheduled task (`initialTaskDelayMs`; Kafka: "for testing only").
    pub initial_task_delay_ms: i64,
    /// `log.dir.failure.timeout.ms`: long, default 30000, `>= 1`. In Kafka, a broker that
    /// cannot tell the controller about a failed log dir for this long shuts down.
    pub log_dir_failure_timeout_ms: i64,
    /// `node.id`: int, `>= 0`, written to `meta.properties`. Kafka requires it (`KRaftConfigs`
    /// gives no default); kafkalog defaults to 1.
    pub node_id: i32,
    /// `cluster.id`: kafkalog's own key. Kafka has no such broker key; it reads the cluster id
    /// from `meta.properties`, which `kafka-storage format` writes. It must be ASCII letters,
    /// digits, `-` and `_` (the alphabet of Kafka's base64 `Uuid`s), so it needs no escaping in
    /// `meta.properties`. `None`: the manager uses the id found in `meta.properties`, or
    /// generates one.
    pub cluster_id: Option<String>,
    /// The `log.cleaner.*` keys of the cleaner threads.
    pub cleaner: CleanerConfig,
    /// `producer.id.expiration.ms`: int, default 86400000 (one day), `>= 1`
    /// (`TransactionLogConfig`). The cleaner keeps the last batch of producers active within it.
    pub producer_id_expiration_ms: i32,
    /// `producer.id.expiration.check.interval.ms`: int, default 600000 (ten minutes), `>= 1`
    /// (`TransactionLogConfig`): how often the scheduler expires producer ids.
    pub producer_id_expiration_check_interval_ms: i32,
    /// `transaction.max.timeout.ms`: int, default 900000 (fifteen minutes), `>= 1`
    /// (`TransactionStateManagerConfig`): an open transaction older than this (plus five
    /// minutes) is late.
    pub transaction_max_timeout_ms: i32,
    log_dirs: Option<Vec<PathBuf>>,
    log_dir: Option<Vec<PathBuf>>,
    cordoned: Cordoned,
    times: TimeSynonyms,
    log_config: LogConfig,
}

impl Default for LogManagerConfig {
    fn default() -> Self {
        let mut config = Self {
            retention_check_ms: 5 * MINUTE_MS,
            flush_recovery_offset_checkpoint_ms: 60_000,
            flush_start_offset_checkpoint_ms: 60_000,
            recovery_threads_per_data_dir: 2,
            initial_task_delay_ms: 30_000,
            log_dir_failure_timeout_ms: 30_000,
            node_id: 1,
            cluster_id: None,
            cleaner: CleanerConfig::default(),
            producer_id_expiration_ms: 86_400_000,
            producer_id_expiration_check_interval_ms: 600_000,
            transaction_max_timeout_ms: 900_000,
            log_dirs: None,
            log_dir: None,
            cordoned: Cordoned::Dirs(Vec::new()),
            times: TimeSynonyms::default(),
            log_config: LogConfig::default(),
        };
        config.resolve_synonyms();
        config
    }
}

impl LogManagerConfig {
    /// Builds a config from `(key, value)` pairs, starting from the defaults. It applies each
    /// pair with [`LogManagerConfig::set`], then runs [`LogManagerConfig::validate`].
    ///
    /// # Errors
    /// `InvalidConfig` for an unknown key, a topic key, a value that does not parse or is out of
    /// range, or a failed cross-key check (including "no log dirs").
    pub fn from_props<'a, I: IntoIterator<Item = (&'a str, &'a str)>>(props: I) -> Result<Self> {
        let mut config = Self::default();
        for (key, value) in props {
            config.set(key, value)?;
        }
        config.validate()?;
        Ok(config)
    }

    /// Parses, checks and applies one key. On error the config is unchanged. Synonyms are
    /// resolved after each key, so the order of `set` calls does not matter. Cross-key checks
    /// are left to [`LogManagerConfig::validate`].
    ///
    /// # Errors
    /// `InvalidConfig` naming the key, the value and the rule it breaks. For a topic key, the
    /// rule names the broker key to use instead.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let Some(def) = TABLE.find(key) else {
            return Err(unknown_key(key, value));
        };
        (def.set)(self, def.name, value)?;
        if def.synonym_of.is_none() {
            self.resolve_synonyms();
        }
        Ok(())
    }

    /// The checks Kafka 4.3.1 makes at start-up (`KafkaConfig.validateValues`,
    /// `validateCordonedLogDirs`, and `LogConfig.validateBrokerLogConfigValues` in
    /// `LogManager.apply`), after re-checking every value against its key's range:
    /// - at least one log dir, from `log.dirs` or `log.dir`;
    /// - every `cordoned.log.dirs` entry is one of the log dirs;
    /// - the winning `retention.ms` synonym is not 0;
    /// - the topic defaults pass [`LogConfig::validate`]: `flush.ms >= 0` (which catches a
    ///   negative `log.flush.scheduler.interval.ms` when `log.flush.interval.ms` is not set), and
    ///   `log.cleaner.min.compaction.lag.ms <= log.cleaner.max.compaction.lag.ms`;
    /// - `log.cleaner.threads >= 1`, and more than 1 MiB of dedupe buffer per thread.
    ///
    /// # Errors
    /// `InvalidConfig` naming the broker key that gave the offending value, and the rule.
    pub fn validate(&self) -> Result<()> {
        TABLE.recheck(self, Self::default())?;
        self.validate_dirs()?;
        let (key, given, ms) = self.times.retention();
        if ms == 0 {
            return Err(invalid(key, given, ZERO_RETENTION));
        }
        self.log_config.validate().map_err(|err| self.topic_error(err))?;
        self.cleaner.validate()
    }

    /// Every key with its current value, in [`LogManagerConfig::names`] order, printed as Kafka
    /// prints it. Keys without a value are left out: `log.dirs`, `log.dir`, `cluster.id`,
    /// `internal.segment.bytes`, and the synonyms `log.roll.ms`, `log.roll.jitter.ms`,
    /// `log.retention.ms`, `log.retention.minutes` and `log.flush.interval.ms` until set.
    #[must_use]
    pub fn to_props(&self) -> Vec<(&'static str, String)> {
        TABLE.to_props(self)
    }

    /// Every key this config accepts, sorted.
    #[must_use]
    pub fn names() -> &'static [&'static str] {
        TABLE.names()
    }

    /// The log dirs (Kafka's `logDirs`): `log.dirs` if set, else `log.dir`, each absolute and
    /// without a trailing `/`. A relative path is resolved against the current directory when
    /// its key is set. Empty until one of them is set.
    #[must_use]
    pub fn log_dirs(&self) -> &[PathBuf] {
        self.log_dirs.as_deref().or(self.log_dir.as_deref()).unwrap_or_default()
    }

    /// The cordoned log dirs (Kafka's `cordonedLogDirs`, KIP-1066): new partitions are not
    /// placed in them. `cordoned.log.dirs`: list, default empty; `*` cordons every log dir.
    #[must_use]
    pub fn cordoned_log_dirs(&self) -> &[PathBuf] {
        match &self.cordoned {
            Cordoned::All => self.log_dirs(),
            Cordoned::Dirs(dirs) => dirs,
        }
    }

    /// `log.flush.scheduler.interval.ms`: long, default `i64::MAX`, any value. How often the
    /// flusher checks for logs to flush (Kafka's `flushCheckMs`). It is also the topics'
    /// `flush.ms` when `log.flush.interval.ms` is not set.
    #[must_use]
    pub fn flush_check_ms(&self) -> i64 {
        self.times.flush_scheduler_interval_ms
    }

    /// The defaults for topics without overrides, built from the broker synonyms (Kafka's
    /// `new LogConfig(KafkaConfig.extractLogConfigMap)`).
    #[must_use]
    pub fn log_config(&self) -> &LogConfig {
        &self.log_config
    }

    /// Kafka's `KafkaConfig` getters `logRollTimeMillis`, `logRollTimeJitterMillis`,
    /// `logRetentionTimeMillis` and `logFlushIntervalMs`.
    fn resolve_synonyms(&mut self) {
        let (t, c) = (&self.times, &mut self.log_config);
        c.segment_ms = t.roll_ms.unwrap_or(i64::from(t.roll_hours) * HOUR_MS);
        c.segment_jitter_ms = t.roll_jitter_ms.unwrap_or(i64::from(t.roll_jitter_hours) * HOUR_MS);
        c.retention_ms = t.retention().2.max(-1);
        c.flush_ms = t.flush_interval_ms.unwrap_or(t.flush_scheduler_interval_ms);
    }

    fn validate_dirs(&self) -> Result<()> {
        let dirs = self.log_dirs();
        if dirs.is_empty() {
            return Err(invalid("log.dirs", "", "at least one directory is required (set log.dirs or log.dir)"));
        }
        if let Cordoned::Dirs(cordoned) = &self.cordoned {
            let missing: Vec<&PathBuf> = cordoned.iter().filter(|d| !dirs.contains(d)).collect();
            if !missing.is_empty() {
                let rule =
                    format!("every entry must be a log dir (of log.dirs or log.dir); missing: {}", join(missing));
                return Err(invalid("cordoned.log.dirs", join(cordoned), rule));
            }
        }
        Ok(())
    }

    /// Renames a `LogConfig` error to the broker key that gave the value.
    fn topic_error(&self, err: Error) -> Error {
        match err {
            Error::InvalidConfig { key, value, reason } => {
                let source = self.times.source(&key).or_else(|| first_synonym(&key)).unwrap_or(&key).to_string();
                let reason =
                    if source == key { reason } else { format!("{reason} (as {key}, the default for topics)") };
                Error::InvalidConfig { key: source, value, reason }
            }
            other => other,
        }
    }
}

/// The broker key Kafka reads first for topic key `topic`, if any.
fn first_synonym(topic: &str) -> Option<&'static str> {
    let resolved = match topic {
        "segment.ms" => Some("log.roll.ms"),
        "segment.jitter.ms" => Some("log.roll.jitter.ms"),
        "retention.ms" => Some("log.retention.ms"),
        "flush.ms" => Some("log.flush.interval.ms"),
        _ => None,
    };
    resolved.or_else(|| KEYS.iter().find(|def| def.synonym_of == Some(topic)).map(|def| def.name))
}

fn unknown_key(key: &str, value: &str) -> Error {
    let rule = if let Some(broker) = first_synonym(key) {
        format!("a topic config; at broker level use {broker}")
    } else if LogConfig::names().contains(&key) {
        "a topic config with no broker-level synonym; set it per topic".to_string()
    } else if REMOVED_KEYS.contains(&key) {
        "removed in Kafka 4.0".to_string()
    } else {
        format!("unknown log manager config (known keys: {})", LogManagerConfig::names().join(", "))
    };
    invalid(key, value, rule)
}

fn renamed(err: Error, key: &str) -> Error {
    match err {
        Error::InvalidConfig { value, reason, .. } => Error::InvalidConfig { key: key.to_string(), value, reason },
        other => other,
    }
}

/// Kafka's list form of some paths.
fn join<'a>(dirs: impl IntoIterator<Item = &'a PathBuf>) -> String {
    dirs.into_iter().map(|d| d.to_string_lossy()).collect::<Vec<_>>().join(",")
}

/// A list of paths, each made absolute and normalised, none repeated; may be empty.
fn parse_paths(key: &str, raw: &str) -> Result<Vec<PathBuf>> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for item in parse_list(raw) {
        if item.is_empty() {
            return Err(invalid(key, raw, "elements must not be empty"));
        }
        let dir = absolute(&item).map_err(|e| invalid(key, raw, format!("cannot make {item:?} absolute: {e}")))?;
        if dirs.contains(&dir) {
            let rule = format!("lists {} twice (compared as absolute paths without trailing /)", dir.display());
            return Err(invalid(key, raw, rule));
        }
        dirs.push(dir);
    }
    Ok(dirs)
}

/// The absolute form of `dir`, without `.` components and repeated or trailing `/`. Symlinks and
/// `..` are left alone.
fn absolute(dir: &str) -> io::Result<PathBuf> {
    Ok(std::path::absolute(dir)?.components().collect())
}

/// `log.dirs` / `log.dir`: a non-empty list of directories.
fn parse_dirs(key: &str, raw: &str) -> Result<Option<Vec<PathBuf>>> {
    let dirs = parse_paths(key, raw)?;
    if dirs.is_empty() {
        return Err(invalid(key, raw, "must name at least one directory"));
    }
    Ok(Some(dirs))
}

fn parse_cordoned(key: &str, raw: &str) -> Result<Cordoned> {
    let items = parse_list(raw);
    if !items.iter().any(|item| item == "*") {
        return parse_paths(key, raw).map(Cordoned::Dirs);
    }
    if items.len() == 1 {
        Ok(Cordoned::All)
    } else {
        Err(invalid(key, raw, "\"*\" (every log dir) must be the only entry"))
    }
}

impl fmt::Display for Cordoned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cordoned::All => f.write_str("*"),
            Cordoned::Dirs(dirs) => f.write_str(&join(dirs)),
        }
    }
}

fn parse_cluster_id(key: &str, raw: &str) -> Result<String> {
    let id = java_trim(raw);
    if !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        Ok(id.to_string())
    } else {
        Err(invalid(key, raw, "must be non-empty ASCII letters, digits, '-' and '_' (a base64 Uuid's alphabet)"))
    }
}

/// `log.retention.ms`: any long but 0. When set it always wins, so 0 is rejected at once.
fn parse_retention_ms(key: &str, raw: &str) -> Result<i64> {
    match parse_long(key, raw, Range::Any)? {
        0 => Err(invalid(key, raw, ZERO_RETENTION)),
        ms => Ok(ms),
    }
}

/// `synonym!(broker key, topic key)`: a broker key that sets a topic key of `log_config`, with
/// the topic key's type and range (errors name the broker key).
macro_rules! synonym {
    ($name:literal, $topic:literal) => {
        Key {
            name: $name,
            set: |c: &mut LogManagerConfig, k, v| c.log_config.set($topic, v).map_err(|e| renamed(e, k)),
            get: |c| c.log_config.value($topic),
            synonym_of: Some($topic),
        }
    };
}

/// `cleaner!(key)`: a `log.cleaner.*` key of [`CleanerConfig`]'s table, kept in `cleaner`.
macro_rules! cleaner {
    ($name:literal) => {
        Key {
            name: $name,
            set: |c: &mut LogManagerConfig, k, v| c.cleaner.set(k, v),
            get: |c| c.cleaner.value($name),
            synonym_of: None,
        }
    };
}

/// Every key, sorted by name (`set` binary-searches this table).
static TABLE: KeyTable<LogManagerConfig> = KeyTable::new(&KEYS);

#[rustfmt::skip]
static KEYS: [Key<LogManagerConfig>; 55] = [
    key!("cluster.id", cluster_id, opt parse_cluster_id),
    synonym!("compression.gzip.level", "compression.gzip.level"),
    synonym!("compression.lz4.level", "compression.lz4.level"),
    synonym!("compression.type", "compression.type"),
    synonym!("compression.zstd.level", "compression.zstd.level"),
    key!("cordoned.log.dirs", cordoned, parse_cordoned),
    // kafkalog's test hook: Kafka 4.3.1 has no broker synonym for this internal topic key.
    synonym!("internal.segment.bytes", "internal.segment.bytes"),
    cleaner!("log.cleaner.backoff.ms"),
    cleaner!("log.cleaner.dedupe.buffer.size"),
    synonym!("log.cleaner.delete.retention.ms", "delete.retention.ms"),
    cleaner!("log.cleaner.enable"),
    cleaner!("log.cleaner.io.buffer.load.factor"),
    cleaner!("log.cleaner.io.buffer.size"),
    cleaner!("log.cleaner.io.max.bytes.per.second"),
    synonym!("log.cleaner.max.compaction.lag.ms", "max.compaction.lag.ms"),
    synonym!("log.cleaner.min.cleanable.ratio", "min.cleanable.dirty.ratio"),
    synonym!("log.cleaner.min.compaction.lag.ms", "min.compaction.lag.ms"),
    cleaner!("log.cleaner.threads"),
    synonym!("log.cleanup.policy", "cleanup.policy"),
    key!("log.dir", log_dir, parse_dirs, |c| c.log_dir.as_ref().map(join)),
    key!("log.dir.failure.timeout.ms", log_dir_failure_timeout_ms, long Range::AtLeast(1)),
    key!("log.dirs", log_dirs, parse_dirs, |c| c.log_dirs.as_ref().map(join)),
    synonym!("log.flush.interval.messages", "flush.messages"),
    key!("log.flush.interval.ms", times.flush_interval_ms, opt |k, v| parse_long(k, v, Range::AtLeast(0))),
    key!("log.flush.offset.checkpoint.interval.ms", flush_recovery_offset_checkpoint_ms, int Range::AtLeast(0)),
    key!("log.flush.scheduler.interval.ms", times.flush_scheduler_interval_ms, long Range::Any),
    key!("log.flush.start.offset.checkpoint.interval.ms", flush_start_offset_checkpoint_ms, int Range::AtLeast(0)),
    synonym!("log.index.interval.bytes", "index.interval.bytes"),
    synonym!("log.index.size.max.bytes", "segment.index.bytes"),
    key!("log.initial.task.delay.ms", initial_task_delay_ms, long Range::AtLeast(0)),
    synonym!("log.local.retention.bytes", "local.retention.bytes"),
    synonym!("log.local.retention.ms", "local.retention.ms"),
    synonym!("log.message.timestamp.after.max.ms", "message.timestamp.after.max.ms"),
    synonym!("log.message.timestamp.before.max.ms", "message.timestamp.before.max.ms"),
    synonym!("log.message.timestamp.type", "message.timestamp.type"),
    synonym!("log.preallocate", "preallocate"),
    synonym!("log.retention.bytes", "retention.bytes"),
    key!("log.retention.check.interval.ms", retention_check_ms, long Range::AtLeast(1)),
    key!("log.retention.hours", times.retention_hours, int Range::Any),
    key!("log.retention.minutes", times.retention_minutes, opt |k, v| parse_int(k, v, Range::Any)),
    key!("log.retention.ms", times.retention_ms, opt parse_retention_ms),
    key!("log.roll.hours", times.roll_hours, int Range::AtLeast(1)),
    key!("log.roll.jitter.hours", times.roll_jitter_hours, int Range::AtLeast(0)),
    key!("log.roll.jitter.ms", times.roll_jitter_ms, opt |k, v| parse_long(k, v, Range::AtLeast(0))),
    key!("log.roll.ms", times.roll_ms, opt |k, v| parse_long(k, v, Range::AtLeast(1))),
    synonym!("log.segment.bytes", "segment.bytes"),
    synonym!("log.segment.delete.delay.ms", "file.delete.delay.ms"),
    synonym!("message.max.bytes", "max.message.bytes"),
    synonym!("min.insync.replicas", "min.insync.replicas"),
    key!("node.id", node_id, int Range::AtLeast(0)),
    key!("num.recovery.threads.per.data.dir", recovery_threads_per_data_dir, int Range::AtLeast(1)),
    key!("producer.id.expiration.check.interval.ms", producer_id_expiration_check_interval_ms, int Range::AtLeast(1)),
    key!("producer.id.expiration.ms", producer_id_expiration_ms, int Range::AtLeast(1)),
    key!("transaction.max.timeout.ms", transaction_max_timeout_ms, int Range::AtLeast(1)),
    synonym!("unclean.leader.election.enable", "unclean.leader.election.enable"),
];

#[cfg(test)]
#[path = "log_manager_config_tests.rs"]
mod tests;
