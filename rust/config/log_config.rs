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
mod tests {
    use super::*;
    use crate::error::Error;
    use proptest::prelude::*;

    type Props = &'static [(&'static str, &'static str)];

    /// Kafka 4.3.1's `LogConfig` defaults, as `ConfigDef.convertToString` prints them.
    #[rustfmt::skip]
    const KAFKA_DEFAULTS: Props = &[
        ("cleanup.policy", "delete"), ("compression.gzip.level", "-1"),
        ("compression.lz4.level", "9"), ("compression.type", "producer"),
        ("compression.zstd.level", "3"), ("delete.retention.ms", "86400000"),
        ("file.delete.delay.ms", "60000"), ("flush.messages", "9223372036854775807"),
        ("flush.ms", "9223372036854775807"), ("follower.replication.throttled.replicas", ""),
        ("index.interval.bytes", "4096"), ("leader.replication.throttled.replicas", ""),
        ("local.retention.bytes", "-2"), ("local.retention.ms", "-2"),
        ("max.compaction.lag.ms", "9223372036854775807"), ("max.message.bytes", "1048588"),
        ("message.timestamp.after.max.ms", "3600000"),
        ("message.timestamp.before.max.ms", "9223372036854775807"),
        ("message.timestamp.type", "CreateTime"), ("min.cleanable.dirty.ratio", "0.5"),
        ("min.compaction.lag.ms", "0"), ("min.insync.replicas", "1"), ("preallocate", "false"),
        ("remote.log.copy.disable", "false"), ("remote.log.delete.on.disable", "false"),
        ("remote.storage.enable", "false"), ("retention.bytes", "-1"),
        ("retention.ms", "604800000"), ("segment.bytes", "1073741824"),
        ("segment.index.bytes", "10485760"), ("segment.jitter.ms", "0"),
        ("segment.ms", "604800000"), ("unclean.leader.election.enable", "false"),
    ];

    /// (key, just inside, just outside, rule) for every range and type bound.
    #[rustfmt::skip]
    const BOUNDARIES: &[(&str, &str, &str, &str)] = &[
        ("segment.bytes", "1048576", "1048575", "must be >= 1048576"),
        ("segment.ms", "1", "0", "must be >= 1"),
        ("segment.jitter.ms", "0", "-1", "must be >= 0"),
        ("segment.index.bytes", "4", "3", "must be >= 4"),
        ("index.interval.bytes", "0", "-1", "must be >= 0"),
        ("flush.messages", "1", "0", "must be >= 1"),
        ("flush.ms", "0", "-1", "must be >= 0"),
        ("retention.ms", "-1", "-2", "must be >= -1"),
        ("max.message.bytes", "0", "-1", "must be >= 0"),
        ("file.delete.delay.ms", "0", "-1", "must be >= 0"),
        ("delete.retention.ms", "0", "-1", "must be >= 0"),
        ("min.compaction.lag.ms", "0", "-1", "must be >= 0"),
        ("max.compaction.lag.ms", "1", "0", "must be >= 1"),
        ("min.cleanable.dirty.ratio", "0.0", "-0.000001", "must be in [0.0, 1.0]"),
        ("min.cleanable.dirty.ratio", "1.0", "1.0000001", "must be in [0.0, 1.0]"),
        ("compression.gzip.level", "1", "0", "must be in [1, 9] or -1"),
        ("compression.gzip.level", "9", "10", "must be in [1, 9] or -1"),
        ("compression.gzip.level", "-1", "-2", "must be in [1, 9] or -1"),
        ("compression.lz4.level", "1", "0", "must be in [1, 17]"),
        ("compression.lz4.level", "17", "18", "must be in [1, 17]"),
        ("compression.zstd.level", "-131072", "-131073", "must be in [-131072, 22]"),
        ("compression.zstd.level", "22", "23", "must be in [-131072, 22]"),
        ("message.timestamp.before.max.ms", "0", "-1", "must be >= 0"),
        ("message.timestamp.after.max.ms", "0", "-1", "must be >= 0"),
        ("local.retention.ms", "-2", "-3", "must be >= -2"),
        ("local.retention.bytes", "-2", "-3", "must be >= -2"),
        ("min.insync.replicas", "1", "0", "must be >= 1"),
        ("segment.bytes", "2147483647", "2147483648", "must be an integer (int32)"),
        ("internal.segment.bytes", "14", "13", "must be >= 14"),
        ("internal.segment.bytes", "2147483647", "2147483648", "must be an integer (int32)"),
        ("retention.bytes", "-9223372036854775808", "-9223372036854775809", "must be a long"),
        ("segment.ms", "9223372036854775807", "9223372036854775808", "must be a long"),
    ];

    /// Values Kafka 4.3.1 accepts, checked with its `LogConfig.validate`.
    #[rustfmt::skip]
    const ACCEPTED: Props = &[
        ("segment.bytes", " \t1048576\n"), ("retention.ms", "+5"), ("preallocate", "TRUE"),
        ("preallocate", " False "), ("min.cleanable.dirty.ratio", "1e0"),
        ("min.cleanable.dirty.ratio", " .25 "), ("message.timestamp.type", " LogAppendTime "),
        ("compression.type", "zstd"), ("leader.replication.throttled.replicas", "*"),
        ("leader.replication.throttled.replicas", "0:1,1:2"),
        ("leader.replication.throttled.replicas", " 0:1 , 12:345 "),
        ("follower.replication.throttled.replicas", "0:1,"),
        ("follower.replication.throttled.replicas", ""),
    ];

    /// (key, value, rule) for values Kafka 4.3.1 rejects (`NaN` is this module's own choice).
    #[rustfmt::skip]
    const REJECTED: &[(&str, &str, &str)] = &[
        ("segment.ms", "1.5", "must be a long"),
        ("segment.ms", "0x10", "must be a long"),
        ("segment.ms", "", "must be a long"),
        ("segment.bytes", "1_048_576", "must be an integer (int32)"),
        ("preallocate", "yes", "must be true or false"),
        ("preallocate", "1", "must be true or false"),
        ("min.cleanable.dirty.ratio", "NaN", "must be in [0.0, 1.0]"),
        ("min.cleanable.dirty.ratio", "half", "must be a double"),
        ("message.timestamp.type", "createtime", "must be one of [CreateTime, LogAppendTime]"),
        ("compression.type", "GZIP", "must be one of [uncompressed, zstd, lz4, snappy, gzip, producer]"),
        ("compression.type", "none", "must be one of [uncompressed"),
        ("cleanup.policy", "Compact", "elements must be one of [compact, delete]"),
        ("cleanup.policy", "compact,", "elements must not be empty"),
        ("cleanup.policy", "compact delete", "elements must be one of [compact, delete]"),
        ("leader.replication.throttled.replicas", "*,0:1", "partitionId:brokerId"),
        ("leader.replication.throttled.replicas", "0:x", "partitionId:brokerId"),
        ("follower.replication.throttled.replicas", "0 : 1", "partitionId:brokerId"),
        ("segment.byte", "1", "unknown topic config (known keys: cleanup.policy,"),
        ("log.segment.bytes", "1048576", "unknown topic config"),
        ("message.format.version", "3.0-IV1", "removed in Kafka 4.0"),
        ("message.timestamp.difference.max.ms", "5", "removed in Kafka 4.0"),
        ("message.downconversion.enable", "true", "removed in Kafka 4.0"),
    ];

    /// With `remote.storage.enable=true`: (props, key, rule), or an empty key for "accepted".
    /// Each case matches Kafka 4.3.1's `LogConfig.validate` on the broker path.
    #[rustfmt::skip]
    const REMOTE_CASES: &[(Props, &str, &str)] = &[
        (&[("cleanup.policy", "compact")], "cleanup.policy", "must be delete or empty"),
        (&[("cleanup.policy", "compact,delete")], "cleanup.policy", "must be delete or empty"),
        (&[("cleanup.policy", "")], "", ""),
        (&[("cleanup.policy", "delete,delete")], "", ""),
        (&[("retention.ms", "100"), ("local.retention.ms", "101")],
            "local.retention.ms", "must be <= retention.ms (100)"),
        (&[("retention.ms", "100"), ("local.retention.ms", "-1")], "local.retention.ms", "not be -1"),
        (&[("retention.ms", "100"), ("local.retention.ms", "100")], "", ""),
        (&[("retention.ms", "-1"), ("local.retention.ms", "-1")], "", ""),
        (&[("retention.ms", "-1"), ("local.retention.ms", "5")], "", ""),
        (&[("retention.bytes", "100"), ("local.retention.bytes", "101")],
            "local.retention.bytes", "must be <= retention.bytes (100)"),
        (&[("retention.bytes", "100"), ("local.retention.bytes", "-1")],
            "local.retention.bytes", "not be -1"),
        (&[("retention.bytes", "-5"), ("local.retention.bytes", "101")], "", ""),
        (&[("remote.log.copy.disable", "true"), ("retention.ms", "100"), ("local.retention.ms", "50")],
            "local.retention.ms", "must be -2 or equal to retention.ms (100)"),
        (&[("remote.log.copy.disable", "true"), ("retention.bytes", "9"), ("local.retention.bytes", "5")],
            "local.retention.bytes", "must be -2 or equal to retention.bytes (9)"),
        (&[("remote.log.copy.disable", "true"), ("retention.ms", "100"), ("local.retention.ms", "100")],
            "", ""),
    ];

    fn config(props: &[(&str, &str)]) -> Result<LogConfig> {
        LogConfig::from_props(props.iter().copied())
    }

    fn round_trip(c: &LogConfig) -> Result<LogConfig> {
        LogConfig::from_props(c.to_props().iter().map(|(k, v)| (*k, v.as_str())))
    }

    /// Asserts that `err` is an `InvalidConfig` whose message names `key`, `value` and `rule`.
    fn assert_names(err: &Error, key: &str, value: &str, rule: &str) {
        assert!(matches!(err, Error::InvalidConfig { key: k, .. } if k == key), "{err:?}");
        let msg = err.to_string();
        let named = msg.contains(key) && msg.contains(&format!("{value:?}")) && msg.contains(rule);
        assert!(named, "{msg:?} should name {key}, {value:?} and {rule:?}");
    }

    #[test]
    fn defaults_match_kafka() {
        let props = LogConfig::default().to_props();
        let got: Vec<(&str, &str)> = props.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert_eq!(got, KAFKA_DEFAULTS);
        assert_eq!(LogConfig::from_props([]).unwrap(), LogConfig::default());
        assert_eq!(LogConfig::default().validate().ok(), Some(()));
    }

    #[test]
    fn names_are_kafkas_sorted_list() {
        let mut expected: Vec<&str> = KAFKA_DEFAULTS.iter().map(|(k, _)| *k).collect();
        expected.push("internal.segment.bytes");
        expected.sort_unstable();
        assert_eq!(LogConfig::names(), expected.as_slice());
        let sorted = KEYS.windows(2).all(|w| w[0].name < w[1].name);
        assert!(sorted, "KEYS must stay sorted: set() binary-searches it");
    }

    #[test]
    fn accepted_values_apply_and_read_back() {
        let inside = BOUNDARIES.iter().map(|(k, inside, _, _)| (*k, *inside));
        for (key, value) in inside.chain(ACCEPTED.iter().copied()) {
            let mut c = LogConfig::default();
            let applied = c.set(key, value);
            assert!(applied.is_ok(), "{key}={value:?}: {applied:?}");
            let printed = c.to_props().into_iter().find(|(k, _)| *k == key).unwrap().1;
            let mut again = LogConfig::default();
            again.set(key, &printed).unwrap();
            assert_eq!(again, c, "{key}={value:?} printed as {printed:?}");
        }
    }

    #[test]
    fn rejected_values_name_key_value_and_rule() {
        let outside = BOUNDARIES.iter().map(|(k, _, out, rule)| (*k, *out, *rule));
        for (key, value, rule) in outside.chain(REJECTED.iter().copied()) {
            let mut c = LogConfig::default();
            assert_names(&c.set(key, value).unwrap_err(), key, value, rule);
            assert_eq!(c, LogConfig::default(), "a rejected {key} changed it");
            assert!(config(&[("segment.ms", "5"), (key, value)]).is_err());
        }
    }

    #[test]
    fn cleanup_policy_forms() {
        #[rustfmt::skip]
        let cases = [
            ("delete", CleanupPolicy::DELETE), ("compact", CleanupPolicy::COMPACT),
            ("compact,delete", CleanupPolicy::COMPACT_DELETE),
            (" delete , compact ", CleanupPolicy::COMPACT_DELETE),
            ("delete,delete", CleanupPolicy::DELETE), ("", CleanupPolicy::NONE),
            ("  ", CleanupPolicy::NONE),
        ];
        for (raw, want) in cases {
            let c = config(&[("cleanup.policy", raw)]).unwrap();
            assert_eq!(c.cleanup_policy, want, "{raw:?}");
            assert_eq!((c.compact(), c.delete()), (want.compact(), want.delete()));
            assert_eq!(round_trip(&c).unwrap(), c);
        }
        let both = config(&[("cleanup.policy", "delete,compact")]).unwrap();
        assert_eq!(both.to_props()[0].1, "compact,delete");
        assert_eq!(CleanupPolicy::new(true, false), CleanupPolicy::COMPACT);
    }

    #[test]
    fn enum_names() {
        for t in [TimestampType::CreateTime, TimestampType::LogAppendTime] {
            assert_eq!(TimestampType::from_name(t.name()), Some(t));
        }
        assert_eq!(TimestampType::LogAppendTime as i8, 1);
        for c in TopicCompression::ALL {
            assert_eq!(TopicCompression::from_name(c.name()), Some(c));
        }
        assert_eq!(TopicCompression::from_name("Producer"), None);
    }

    #[test]
    fn compaction_lags_must_be_ordered() {
        let lags = |min, max| {
            let props = [("min.compaction.lag.ms", min), ("max.compaction.lag.ms", max)];
            config(&props)
        };
        assert!(lags("5", "5").is_ok());
        let err = lags("10", "5").unwrap_err();
        let rule = "must be <= max.compaction.lag.ms (5)";
        assert_names(&err, "min.compaction.lag.ms", "10", rule);
        // `set` alone does not cross-check, so keys can be changed one at a time.
        let mut c = LogConfig::default();
        c.set("min.compaction.lag.ms", "10").unwrap();
        c.set("max.compaction.lag.ms", "5").unwrap();
        assert!(c.validate().is_err());
    }

    #[test]
    fn remote_storage_cross_checks() {
        for (extra, key, rule) in REMOTE_CASES {
            let mut props = vec![("remote.storage.enable", "true")];
            props.extend_from_slice(extra);
            match config(&props) {
                Ok(_) => assert!(key.is_empty(), "{extra:?} accepted"),
                Err(e) => {
                    let msg = e.to_string();
                    assert!(!key.is_empty() && msg.contains(key) && msg.contains(rule), "{msg}");
                }
            }
            // Without remote storage Kafka checks none of this.
            assert!(config(extra).is_ok(), "{extra:?}");
        }
    }

    #[test]
    fn turning_remote_storage_off_needs_delete_on_disable() {
        let on = config(&[("remote.storage.enable", "true")]).unwrap();
        let off = LogConfig::default();
        let err = off.validate_update(&on).unwrap_err();
        let rule = "remote.log.delete.on.disable=true";
        assert_names(&err, "remote.storage.enable", "false", rule);
        let off_deleting = config(&[("remote.log.delete.on.disable", "true")]).unwrap();
        assert!(off_deleting.validate_update(&on).is_ok());
        assert!(on.validate_update(&off).is_ok());
    }

    #[test]
    fn max_segment_ms_and_segment_size() {
        let roll = |policy| {
            let props = [("cleanup.policy", policy), ("segment.ms", "1000")];
            let c = config(&[props[0], props[1], ("max.compaction.lag.ms", "300")]).unwrap();
            c.max_segment_ms()
        };
        let rolls = (roll("delete"), roll("compact"), roll("compact,delete"));
        assert_eq!(rolls, (1000, 300, 300));
        let c = config(&[("cleanup.policy", "compact"), ("segment.ms", "200")]).unwrap();
        assert_eq!(c.max_segment_ms(), 200);

        let mut c = config(&[("preallocate", "true"), ("segment.bytes", "2097152")]).unwrap();
        let sizes = |c: &LogConfig| (c.segment_size(), c.init_file_size());
        assert_eq!(sizes(&c), (2_097_152, 2_097_152));
        c.set("internal.segment.bytes", "1024").unwrap();
        assert_eq!(sizes(&c), (1024, 1024));
        let internal = ("internal.segment.bytes", "1024".to_string());
        assert!(c.to_props().contains(&internal));
        assert_eq!(LogConfig::default().init_file_size(), 0);
    }

    #[test]
    fn doubles_print_like_java() {
        #[rustfmt::skip]
        let cases = [(0.5, "0.5"), (1.0, "1.0"), (0.0, "0.0"), (-0.0, "-0.0"), (0.001, "0.001"),
            (1e-4, "1.0E-4"), (1.5e-5, "1.5E-5")];
        for (v, want) in cases {
            assert_eq!(java_double(v), want);
        }
    }

    #[test]
    fn every_key_round_trips_through_to_props() {
        let c = config(&[
            ("cleanup.policy", "compact"),
            ("compression.type", "lz4"),
            ("message.timestamp.type", "LogAppendTime"),
            ("min.cleanable.dirty.ratio", "0.0001"),
            ("leader.replication.throttled.replicas", "0:1,2:3"),
            ("follower.replication.throttled.replicas", "*"),
            ("internal.segment.bytes", "500"),
            ("retention.bytes", "-7"),
        ])
        .unwrap();
        assert_eq!(c.to_props().len(), 34);
        assert_eq!(round_trip(&c).unwrap(), c);
    }

    proptest! {
        #![proptest_config(crate::util::proptest_config())]

        /// Any sequence of `set` calls either leaves the config unchanged (on error) or yields a
        /// config that reads back from its own `to_props`.
        #[test]
        fn set_then_round_trip(
            edits in prop::collection::vec((0..34usize, any::<i64>(), 0.0..=1.0f64), 0..40)
        ) {
            let mut c = LogConfig::default();
            for (i, n, ratio) in edits {
                let candidates = [
                    n.to_string(), (n % 40).to_string(), ratio.to_string(), (n > 0).to_string(),
                    "compact".into(), "compact,delete".into(), String::new(),
                    "LogAppendTime".into(), "gzip".into(), "*".into(), "0:1,2:3".into(),
                ];
                let raw = &candidates[usize::from(n.to_le_bytes()[0]) % candidates.len()];
                let before = c.clone();
                if c.set(KEYS[i].name, raw).is_err() {
                    prop_assert_eq!(&c, &before);
                }
            }
            match c.validate() {
                Ok(()) => prop_assert_eq!(round_trip(&c).unwrap(), c),
                Err(_) => prop_assert!(round_trip(&c).is_err()),
            }
        }
    }
}
