//! Topic-level log configuration: Kafka's `LogConfig`
//! (`storage/.../internals/log/LogConfig.java`), Kafka 4.x's key names, types, defaults and
//! valid ranges. Checked against the released Kafka 4.0.0, 4.1.0, 4.2.0 and 4.3.1 jars; where the
//! 4.x releases differ, this module follows the newest (4.3.1) and says so at the key.
//!
//! Values are parsed the way Kafka's `ConfigDef` parses them (see [`super::key_table`], the
//! engine this table shares with the broker and cleaner tables).
//! Enumerated strings (`compression.type`, `message.timestamp.type`, `cleanup.policy`
//!   elements) are case-sensitive.
//!
//! Kafka 4.0 removed `message.format.version`, `message.timestamp.difference.max.ms` and
//! `message.downconversion.enable` (see [`REMOVED_KEYS`]). Since 4.0, Kafka's `LogConfig.validate`
//! rejects them as unknown, and so does [`LogConfig::set`]. Kafka does still ignore them in topic
//! configs that were stored before the upgrade. A caller loading such old configs should drop
//! these keys first.
//!
//! Not thread-safe to mutate; a `LogConfig` is a plain value, and callers share it by cloning or
//! behind the log's lock.

#![allow(clippy::module_name_repetitions)]

use std::fmt;

use super::key_table::{
    invalid, java_double, java_trim, key, parse_double, parse_int, parse_list, Key, KeyTable, Range,
};
use crate::error::Result;
use crate::record::TimestampType;

/// Topic keys that Kafka 4.0 removed. Kafka 4.x rejects them when a topic is created or altered.
pub const REMOVED_KEYS: &[&str] =
    &["message.downconversion.enable", "message.format.version", "message.timestamp.difference.max.ms"];

/// `cleanup.policy`: a subset of {`compact`, `delete`}. Kafka 4.x accepts the empty list, which
/// means infinite retention: segments are neither deleted nor compacted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CleanupPolicy {
    compact: bool,
    delete: bool,
}

impl CleanupPolicy {
    /// `delete` (Kafka's default).
    pub const DELETE: Self = Self::new(false, true);
    /// `compact`.
    pub const COMPACT: Self = Self::new(true, false);
    /// `compact,delete`.
    pub const COMPACT_DELETE: Self = Self::new(true, true);
    /// The empty list: no cleanup at all.
    pub const NONE: Self = Self::new(false, false);

    /// A policy with the given parts.
    #[must_use]
    pub const fn new(compact: bool, delete: bool) -> Self {
        Self { compact, delete }
    }

    /// Whether the log cleaner compacts the log.
    #[must_use]
    pub const fn compact(self) -> bool {
        self.compact
    }

    /// Whether retention deletes old segments.
    #[must_use]
    pub const fn delete(self) -> bool {
        self.delete
    }

    /// Parses Kafka's list form. Kafka drops duplicate elements (with a warning) before checking
    /// them, so `delete,delete` is accepted.
    fn parse(key: &str, raw: &str) -> Result<Self> {
        let mut policy = Self::NONE;
        for item in parse_list(raw) {
            match item.as_str() {
                "compact" => policy.compact = true,
                "delete" => policy.delete = true,
                "" => return Err(invalid(key, raw, "elements must not be empty")),
                _ => {
                    let rule = format!("elements must be one of [compact, delete] (got {item:?})");
                    return Err(invalid(key, raw, rule));
                }
            }
        }
        Ok(policy)
    }
}

impl fmt::Display for CleanupPolicy {
    /// Kafka's list form, in the canonical order `compact,delete`. Kafka itself keeps the order
    /// the user wrote; the meaning is the same.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match (self.compact, self.delete) {
            (true, true) => "compact,delete",
            (true, false) => "compact",
            (false, true) => "delete",
            (false, false) => "",
        })
    }
}

/// `compression.type`: `producer` (keep what the producer sent) or a codec name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TopicCompression {
    /// Keep the producer's codec.
    Producer,
    /// Store uncompressed.
    Uncompressed,
    /// Recompress with gzip.
    Gzip,
    /// Recompress with snappy.
    Snappy,
    /// Recompress with lz4.
    Lz4,
    /// Recompress with zstd.
    Zstd,
}

impl TopicCompression {
    /// All values, in the order Kafka lists them in its validator.
    pub const ALL: [Self; 6] = [Self::Uncompressed, Self::Zstd, Self::Lz4, Self::Snappy, Self::Gzip, Self::Producer];

    /// Kafka's name, e.g. `producer` or `zstd`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Producer => "producer",
            Self::Uncompressed => "uncompressed",
            Self::Gzip => "gzip",
            Self::Snappy => "snappy",
            Self::Lz4 => "lz4",
            Self::Zstd => "zstd",
        }
    }

    /// The value named exactly `name` (case-sensitive, as in Kafka's config validator).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// Kafka's topic-level log configuration. The fields hold parsed, validated values. Setting a
/// field directly skips validation (tests use this for segments smaller than Kafka allows).
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::struct_excessive_bools)] // Kafka's keys, one field each
pub struct LogConfig {
    /// `segment.bytes`: int, default 1 GiB, `>= 1048576`. Kafka 4.0 allowed `>= 14`, and 4.1
    /// raised the minimum to 1 MiB (KIP-1030).
    pub segment_bytes: i32,
    /// `internal.segment.bytes`: internal int, no default (Kafka 4.1+, "for testing only"; Kafka
    /// sets no range, kafkalog requires `>= 14`). When set, it replaces `segment.bytes` (see
    /// [`LogConfig::segment_size`]).
    pub internal_segment_bytes: Option<i32>,
    /// `segment.ms`: long, default 7 days, `>= 1`.
    pub segment_ms: i64,
    /// `segment.jitter.ms`: long, default 0, `>= 0`.
    pub segment_jitter_ms: i64,
    /// `segment.index.bytes`: int, default 10 MiB, `>= 4`.
    pub segment_index_bytes: i32,
    /// `index.interval.bytes`: int, default 4096, `>= 0`.
    pub index_interval_bytes: i32,
    /// `flush.messages`: long, default `i64::MAX`, `>= 1`.
    pub flush_messages: i64,
    /// `flush.ms`: long, default `i64::MAX`, `>= 0`.
    pub flush_ms: i64,
    /// `retention.bytes`: long, default -1, any value (`< 0` = unlimited).
    pub retention_bytes: i64,
    /// `retention.ms`: long, default 7 days, `>= -1` (-1 = unlimited).
    pub retention_ms: i64,
    /// `max.message.bytes`: int, default 1048588 (1 MiB + 12-byte log overhead), `>= 0`.
    pub max_message_bytes: i32,
    /// `file.delete.delay.ms`: long, default 60000, `>= 0`.
    pub file_delete_delay_ms: i64,
    /// `cleanup.policy`: list, default `delete`.
    pub cleanup_policy: CleanupPolicy,
    /// `delete.retention.ms`: long, default 1 day, `>= 0`.
    pub delete_retention_ms: i64,
    /// `min.compaction.lag.ms`: long, default 0, `>= 0`, and `<= max.compaction.lag.ms`.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms`: long, default `i64::MAX`, `>= 1`.
    pub max_compaction_lag_ms: i64,
    /// `min.cleanable.dirty.ratio`: double, default 0.5, in `[0, 1]`.
    pub min_cleanable_dirty_ratio: f64,
    /// `preallocate`: boolean, default false.
    pub preallocate: bool,
    /// `compression.type`: string, default `producer`.
    pub compression_type: TopicCompression,
    /// `compression.gzip.level`: int, default -1, in `[1, 9]` or -1.
    pub compression_gzip_level: i32,
    /// `compression.lz4.level`: int, default 9, in `[1, 17]`.
    pub compression_lz4_level: i32,
    /// `compression.zstd.level`: int, default 3, in `[-131072, 22]`.
    pub compression_zstd_level: i32,
    /// `message.timestamp.type`: string, default `CreateTime`.
    pub message_timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms`: long, default `i64::MAX`, `>= 0`.
    pub message_timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`: long, default 3600000 (1 hour; it was `i64::MAX` before
    /// Kafka 4.0), `>= 0`.
    pub message_timestamp_after_max_ms: i64,
    /// `local.retention.ms`: long, default -2 (= use `retention.ms`), `>= -2`.
    pub local_retention_ms: i64,
    /// `local.retention.bytes`: long, default -2 (= use `retention.bytes`), `>= -2`.
    pub local_retention_bytes: i64,
    /// `remote.storage.enable`: boolean, default false.
    pub remote_storage_enable: bool,
    /// `remote.log.copy.disable`: boolean, default false.
    pub remote_log_copy_disable: bool,
    /// `remote.log.delete.on.disable`: boolean, default false.
    pub remote_log_delete_on_disable: bool,
    /// `unclean.leader.election.enable`: boolean, default false. Replication only.
    pub unclean_leader_election_enable: bool,
    /// `min.insync.replicas`: int, default 1, `>= 1`. Replication only.
    pub min_insync_replicas: i32,
    /// `leader.replication.throttled.replicas`: list, default empty; `*` or
    /// `partitionId:brokerId` elements. Kept as Kafka keeps it (strings). Replication only.
    pub leader_replication_throttled_replicas: Vec<String>,
    /// `follower.replication.throttled.replicas`: as the leader list. Replication only.
    pub follower_replication_throttled_replicas: Vec<String>,
}

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

impl Default for LogConfig {
    /// Kafka 4.3's defaults.
    #[rustfmt::skip]
    fn default() -> Self {
        Self {
            segment_bytes: 1024 * 1024 * 1024, internal_segment_bytes: None,
            segment_ms: 7 * DAY_MS, segment_jitter_ms: 0,
            segment_index_bytes: 10 * 1024 * 1024, index_interval_bytes: 4096,
            flush_messages: i64::MAX, flush_ms: i64::MAX,
            retention_bytes: -1, retention_ms: 7 * DAY_MS,
            max_message_bytes: 1024 * 1024 + 12, file_delete_delay_ms: 60_000,
            cleanup_policy: CleanupPolicy::DELETE, delete_retention_ms: DAY_MS,
            min_compaction_lag_ms: 0, max_compaction_lag_ms: i64::MAX,
            min_cleanable_dirty_ratio: 0.5, preallocate: false,
            compression_type: TopicCompression::Producer, compression_gzip_level: -1,
            compression_lz4_level: 9, compression_zstd_level: 3,
            message_timestamp_type: TimestampType::CreateTime,
            message_timestamp_before_max_ms: i64::MAX, message_timestamp_after_max_ms: 3_600_000,
            local_retention_ms: -2, local_retention_bytes: -2,
            remote_storage_enable: false, remote_log_copy_disable: false,
            remote_log_delete_on_disable: false, unclean_leader_election_enable: false,
            min_insync_replicas: 1,
            leader_replication_throttled_replicas: Vec::new(),
            follower_replication_throttled_replicas: Vec::new(),
        }
    }
}

impl LogConfig {
    /// Builds a config from `(key, value)` pairs, starting from the defaults. It applies each pair
    /// with [`LogConfig::set`], then runs [`LogConfig::validate`].
    ///
    /// # Errors
    /// `InvalidConfig` for an unknown or removed key, a value that does not parse or is out of
    /// range, or a failed cross-key check.
    pub fn from_props<'a, I: IntoIterator<Item = (&'a str, &'a str)>>(props: I) -> Result<Self> {
        Self::default().with_overrides(props)
    }

    /// A copy of `self` with `overrides` applied, each with [`LogConfig::set`], then checked with
    /// [`LogConfig::validate`]: a topic's config over the broker defaults (Kafka's
    /// `LogConfig.fromProps(defaults, overrides)`). `self` is unchanged.
    ///
    /// # Errors
    /// As [`LogConfig::from_props`].
    pub fn with_overrides<K, V>(&self, overrides: impl IntoIterator<Item = (K, V)>) -> Result<Self>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut config = self.clone();
        for (key, value) in overrides {
            config.set(key.as_ref(), value.as_ref())?;
        }
        config.validate()?;
        Ok(config)
    }

    /// Parses, checks and applies one key. On error the config is unchanged. Cross-key checks
    /// are left to [`LogConfig::validate`]. For a dynamic change, apply every key to a clone, then
    /// call [`LogConfig::validate_update`].
    ///
    /// # Errors
    /// `InvalidConfig` naming the key, the value and the rule it breaks.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        match TABLE.set(self, key, value) {
            Some(result) => result,
            None if REMOVED_KEYS.contains(&key) => {
                let rule = "removed in Kafka 4.0; Kafka 4.x rejects it as unknown";
                Err(invalid(key, value, rule))
            }
            None => {
                let rule = format!("unknown topic config (known keys: {})", Self::names().join(", "));
                Err(invalid(key, value, rule))
            }
        }
    }

    /// The cross-key checks Kafka 4.x makes when a topic is created or altered:
    /// - `min.compaction.lag.ms <= max.compaction.lag.ms` (always).
    /// - With `remote.storage.enable=true`:
    ///   - `cleanup.policy` must be `delete` or empty.
    ///   - When `retention.bytes > -1` and `local.retention.bytes != -2`,
    ///     `local.retention.bytes` must not be -1 and must be `<= retention.bytes`.
    ///   - When `retention.ms != -1` and `local.retention.ms != -2`, `local.retention.ms` must
    ///     not be -1 and must be `<= retention.ms`.
    ///   - When `remote.log.copy.disable=true`, each `local.retention.*` must be -2 or equal to
    ///     its `retention.*`.
    ///
    /// Kafka does not compare the local and total retentions when remote storage is off. It also
    /// refuses `remote.storage.enable=true` when the broker has tiered storage turned off. That is
    /// a broker setting, so it is not checked here.
    ///
    /// # Errors
    /// `InvalidConfig` naming the offending key, its value and the rule.
    pub fn validate(&self) -> Result<()> {
        thread_local! {
            /// The config this thread validated last: a load opens every partition of a dir with
            /// the same config, and the check below prints and parses every value.
            static LAST_VALID: std::cell::RefCell<Option<LogConfig>> = const { std::cell::RefCell::new(None) };
        }
        if LAST_VALID.with(|last| last.borrow().as_ref() == Some(self)) {
            return Ok(());
        }
        self.validate_uncached()?;
        LAST_VALID.with(|last| *last.borrow_mut() = Some(self.clone()));
        Ok(())
    }

    /// [`Self::validate`]'s checks, always run.
    fn validate_uncached(&self) -> Result<()> {
        // Every value re-passes its key's range check, so a LogConfig built field by field in
        // Rust is held to the same rules as one parsed from strings.
        TABLE.recheck(self, LogConfig::default())?;
        let (min_lag, max_lag) = (self.min_compaction_lag_ms, self.max_compaction_lag_ms);
        if min_lag > max_lag {
            let rule = format!("must be <= max.compaction.lag.ms ({max_lag})");
            return Err(invalid("min.compaction.lag.ms", min_lag, rule));
        }
        if !self.remote_storage_enable {
            return Ok(());
        }
        if self.cleanup_policy.compact {
            let rule = "must be delete or empty when remote.storage.enable=true";
            return Err(invalid("cleanup.policy", self.cleanup_policy, rule));
        }
        let bytes = ("local.retention.bytes", "retention.bytes");
        let bytes = (bytes, self.local_retention_bytes, self.retention_bytes);
        let ms = (("local.retention.ms", "retention.ms"), self.local_retention_ms, self.retention_ms);
        for ((local_key, total_key), local, total) in [bytes, ms] {
            check_local_retention(local_key, total_key, local, total)?;
        }
        for ((local_key, total_key), local, total) in [bytes, ms] {
            if self.remote_log_copy_disable && local != -2 && local != total {
                let why = "when remote.log.copy.disable=true";
                let rule = format!("must be -2 or equal to {total_key} ({total}) {why}");
                return Err(invalid(local_key, local, rule));
            }
        }
        Ok(())
    }

    /// Checks `self` as the replacement for `previous` in a dynamic change. It runs
    /// [`LogConfig::validate`], then makes Kafka's one transition check: remote storage may be
    /// turned off only with `remote.log.delete.on.disable=true`.
    ///
    /// # Errors
    /// As [`LogConfig::validate`], or `InvalidConfig` on `remote.storage.enable`.
    pub fn validate_update(&self, previous: &LogConfig) -> Result<()> {
        self.validate()?;
        if previous.remote_storage_enable && !self.remote_storage_enable && !self.remote_log_delete_on_disable {
            let rule = "may turn off only with remote.log.delete.on.disable=true (to keep remote \
                        data read-only, keep it on and set remote.log.copy.disable=true)";
            return Err(invalid("remote.storage.enable", false, rule));
        }
        Ok(())
    }

    /// Every key with its current value, in [`LogConfig::names`] order, printed as Kafka prints
    /// it (`cleanup.policy` gives `compact,delete`, and a double prints as Java's
    /// `Double.toString` does). An unset `internal.segment.bytes` is left out.
    #[must_use]
    pub fn to_props(&self) -> Vec<(&'static str, String)> {
        TABLE.to_props(self)
    }

    /// The value of topic key `key` as [`LogConfig::to_props`] prints it; `None` for an unknown
    /// key or an unset `internal.segment.bytes`.
    #[must_use]
    pub fn value(&self, key: &str) -> Option<String> {
        TABLE.get(self, key)
    }

    /// The age after which the active segment rolls (Kafka's `maxSegmentMs`). For a compacted
    /// log this is `min(max.compaction.lag.ms, segment.ms)`; otherwise it is `segment.ms`.
    #[must_use]
    pub fn max_segment_ms(&self) -> i64 {
        if self.compact() && self.max_compaction_lag_ms > 0 {
            self.max_compaction_lag_ms.min(self.segment_ms)
        } else {
            self.segment_ms
        }
    }

    /// The segment size limit in force: `internal.segment.bytes` when set, else `segment.bytes`
    /// (Kafka's `segmentSize()`).
    #[must_use]
    pub fn segment_size(&self) -> i32 {
        self.internal_segment_bytes.unwrap_or(self.segment_bytes)
    }

    /// The size a new segment file starts at: the segment size when preallocating, else 0
    /// (Kafka's `initFileSize`).
    #[must_use]
    pub fn init_file_size(&self) -> i32 {
        if self.preallocate {
            self.segment_size()
        } else {
            0
        }
    }

    /// Kafka's topic config names (`LogConfig.configNames()`), sorted. This includes the internal
    /// `internal.segment.bytes`.
    #[must_use]
    pub fn names() -> &'static [&'static str] {
        TABLE.names()
    }

    /// Whether `cleanup.policy` includes `compact`.
    #[must_use]
    pub fn compact(&self) -> bool {
        self.cleanup_policy.compact
    }

    /// Whether `cleanup.policy` includes `delete`.
    #[must_use]
    pub fn delete(&self) -> bool {
        self.cleanup_policy.delete
    }
}

/// Every topic key Kafka 4.3 accepts, sorted by name (`set` binary-searches this table).
static TABLE: KeyTable<LogConfig> = KeyTable::new(&KEYS);

#[rustfmt::skip]
static KEYS: [Key<LogConfig>; 34] = [
    key!("cleanup.policy", cleanup_policy, CleanupPolicy::parse,
        |c| Some(c.cleanup_policy.to_string())),
    key!("compression.gzip.level", compression_gzip_level, int Range::GzipLevel),
    key!("compression.lz4.level", compression_lz4_level, int Range::Between(1, 17)),
    key!("compression.type", compression_type, parse_compression,
        |c| Some(c.compression_type.name().to_string())),
    key!("compression.zstd.level", compression_zstd_level, int Range::Between(-131_072, 22)),
    key!("delete.retention.ms", delete_retention_ms, long Range::AtLeast(0)),
    key!("file.delete.delay.ms", file_delete_delay_ms, long Range::AtLeast(0)),
    key!("flush.messages", flush_messages, long Range::AtLeast(1)),
    key!("flush.ms", flush_ms, long Range::AtLeast(0)),
    key!("follower.replication.throttled.replicas", follower_replication_throttled_replicas,
        parse_throttled, |c| Some(c.follower_replication_throttled_replicas.join(","))),
    key!("index.interval.bytes", index_interval_bytes, int Range::AtLeast(0)),
    key!("internal.segment.bytes", internal_segment_bytes, parse_internal_int,
        |c| c.internal_segment_bytes.map(|v| v.to_string())),
    key!("leader.replication.throttled.replicas", leader_replication_throttled_replicas,
        parse_throttled, |c| Some(c.leader_replication_throttled_replicas.join(","))),
    key!("local.retention.bytes", local_retention_bytes, long Range::AtLeast(-2)),
    key!("local.retention.ms", local_retention_ms, long Range::AtLeast(-2)),
    key!("max.compaction.lag.ms", max_compaction_lag_ms, long Range::AtLeast(1)),
    key!("max.message.bytes", max_message_bytes, int Range::AtLeast(0)),
    key!("message.timestamp.after.max.ms", message_timestamp_after_max_ms, long Range::AtLeast(0)),
    key!("message.timestamp.before.max.ms", message_timestamp_before_max_ms, long Range::AtLeast(0)),
    key!("message.timestamp.type", message_timestamp_type, parse_timestamp_type,
        |c| Some(c.message_timestamp_type.name().to_string())),
    key!("min.cleanable.dirty.ratio", min_cleanable_dirty_ratio, parse_ratio,
        |c| Some(java_double(c.min_cleanable_dirty_ratio))),
    key!("min.compaction.lag.ms", min_compaction_lag_ms, long Range::AtLeast(0)),
    key!("min.insync.replicas", min_insync_replicas, int Range::AtLeast(1)),
    key!("preallocate", preallocate, bool),
    key!("remote.log.copy.disable", remote_log_copy_disable, bool),
    key!("remote.log.delete.on.disable", remote_log_delete_on_disable, bool),
    key!("remote.storage.enable", remote_storage_enable, bool),
    key!("retention.bytes", retention_bytes, long Range::Any),
    key!("retention.ms", retention_ms, long Range::AtLeast(-1)),
    key!("segment.bytes", segment_bytes, int Range::AtLeast(1024 * 1024)),
    key!("segment.index.bytes", segment_index_bytes, int Range::AtLeast(4)),
    key!("segment.jitter.ms", segment_jitter_ms, long Range::AtLeast(0)),
    key!("segment.ms", segment_ms, long Range::AtLeast(1)),
    key!("unclean.leader.election.enable", unclean_leader_election_enable, bool),
];

/// Kafka's checks of one `local.retention.*` against its `retention.*` (remote storage on).
/// Kafka tests `retention.bytes > -1` but `retention.ms != -1`; those agree, because
/// `retention.ms` is never below -1.
fn check_local_retention(local_key: &str, total_key: &str, local: i64, total: i64) -> Result<()> {
    if total > -1 && local == -1 {
        let rule = format!("must not be -1 when {total_key} is {total} and remote storage is on");
        return Err(invalid(local_key, local, rule));
    }
    if total > -1 && local != -2 && local > total {
        let rule = format!("must be <= {total_key} ({total}) when remote storage is on");
        return Err(invalid(local_key, local, rule));
    }
    Ok(())
}

/// Kafka gives `internal.segment.bytes` no range; kafkalog requires room for one batch header
/// (Kafka's pre-4.1 `segment.bytes` minimum of 14), so no size computation can go negative.
fn parse_internal_int(key: &str, raw: &str) -> Result<Option<i32>> {
    parse_int(key, raw, Range::AtLeast(14)).map(Some)
}

/// `min.cleanable.dirty.ratio`. Kafka lets `NaN` through its range check (every comparison with
/// NaN is false); this module rejects it.
fn parse_ratio(key: &str, raw: &str) -> Result<f64> {
    parse_double(key, raw, |v| (0.0..=1.0).contains(&v), "must be in [0.0, 1.0]")
}

fn parse_compression(key: &str, raw: &str) -> Result<TopicCompression> {
    let rule = "must be one of [uncompressed, zstd, lz4, snappy, gzip, producer]";
    TopicCompression::from_name(java_trim(raw)).ok_or_else(|| invalid(key, raw, rule))
}

fn parse_timestamp_type(key: &str, raw: &str) -> Result<TimestampType> {
    TimestampType::from_name(java_trim(raw))
        .ok_or_else(|| invalid(key, raw, "must be one of [CreateTime, LogAppendTime]"))
}

/// Kafka's `ThrottledReplicaListValidator`: either every trimmed element is empty or
/// `digits:digits`, or the trimmed elements joined together are exactly `*`.
fn parse_throttled(key: &str, raw: &str) -> Result<Vec<String>> {
    let items = parse_list(raw);
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    let is_pair = |s: &str| s.split_once(':').is_some_and(|(p, b)| digits(p) && digits(b));
    let all_pairs = items.iter().map(|i| java_trim(i)).all(|i| i.is_empty() || is_pair(i));
    if all_pairs || items.iter().map(|i| java_trim(i)).collect::<String>() == "*" {
        Ok(items)
    } else {
        let rule = "must be \"*\" or a list of partitionId:brokerId pairs";
        Err(invalid(key, raw, rule))
    }
}

#[cfg(test)]
#[path = "log_config_tests.rs"]
mod tests;
