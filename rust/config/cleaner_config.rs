//! The cleaner's broker keys: Kafka's `CleanerConfig`
//! (`storage/.../internals/log/CleanerConfig.java`), the `log.cleaner.*` keys that configure the
//! cleaner threads, with Kafka 4.3.1's types, defaults and ranges. Its table runs on the engine
//! the topic and broker tables share ([`super::key_table`]); the broker table
//! (`LogManagerConfig`) takes these keys from it.
//!
//! kafkalog is stricter than Kafka here:
//! - Kafka sets no range for `log.cleaner.io.buffer.load.factor` and
//!   `log.cleaner.io.max.bytes.per.second`. Bad values break the cleaner, so here the load factor
//!   must be in (0, 1] and the rate finite and positive.
//! - Kafka's `ConfigDef` accepts `log.cleaner.threads=0`, but `KafkaConfig` then divides by it
//!   and the broker does not start. [`CleanerConfig::validate`] rejects it and says why.
//!
//! A plain value: not thread-safe to mutate; share it by cloning.

use super::key_table::{invalid, java_double, key, parse_double, Key, KeyTable, Range};
use crate::error::Result;

const MIB: i64 = 1024 * 1024;

/// The `log.cleaner.*` broker keys that configure the cleaner threads: Kafka's `CleanerConfig`
/// (`storage/.../internals/log/CleanerConfig.java`). Kafka's class also carries
/// `maxMessageSize`, which is `message.max.bytes`: read it from
/// [`LogManagerConfig::log_config`](super::LogManagerConfig::log_config). The cleaner's topic synonyms
/// (`log.cleaner.min.cleanable.ratio` and the rest) live in that `LogConfig` too.
/// A plain value.
#[derive(Clone, Debug, PartialEq)]
pub struct CleanerConfig {
    /// `log.cleaner.threads`: int, default 1, `>= 0`. `validate` then requires `>= 1`; see the
    /// module docs.
    pub num_threads: i32,
    /// `log.cleaner.dedupe.buffer.size`: long, default 128 MiB. It must be above 1 MiB per
    /// thread: `size / threads > 1048576`, in integer division (Kafka's start-up check).
    pub dedupe_buffer_size: i64,
    /// `log.cleaner.io.buffer.load.factor`: double, default 0.9. This is the dedupe map's load
    /// factor, despite the name. Kafka sets no range; kafkalog requires (0, 1].
    pub dedupe_buffer_load_factor: f64,
    /// `log.cleaner.io.buffer.size`: int, default 512 KiB, `>= 0`.
    pub io_buffer_size: i32,
    /// `log.cleaner.io.max.bytes.per.second`: double, default `f64::MAX` (unthrottled). Kafka
    /// sets no range; kafkalog requires a finite value `> 0`.
    pub max_io_bytes_per_second: f64,
    /// `log.cleaner.backoff.ms`: long, default 15000, `>= 0`. The sleep when no log needs
    /// cleaning.
    pub backoff_ms: i64,
    /// `log.cleaner.enable`: boolean, default true. Deprecated since Kafka 4.1, to be removed
    /// in 5.0.
    pub enable_cleaner: bool,
    /// `log.cleaner.kafkalog.sliced.decisions`: boolean, default false (kafkalog's; Kafka has
    /// no such key). When the dirty section holds more keys than the offset map, decide every
    /// key in hash-sliced passes and rewrite the log once (`cleaner::sliced`), keeping the
    /// records Kafka's rounds keep once they converge, instead of Kafka's one rewrite per round.
    pub sliced_decisions: bool,
}

impl Default for CleanerConfig {
    /// Kafka 4.3.1's defaults.
    fn default() -> Self {
        Self {
            num_threads: 1,
            dedupe_buffer_size: 128 * MIB,
            dedupe_buffer_load_factor: 0.9,
            io_buffer_size: 512 * 1024,
            max_io_bytes_per_second: f64::MAX,
            backoff_ms: 15_000,
            enable_cleaner: true,
            sliced_decisions: false,
        }
    }
}

impl CleanerConfig {
    /// Kafka's start-up check: at least one thread, and more than 1 MiB of dedupe buffer per
    /// thread.
    ///
    /// # Errors
    /// `InvalidConfig` naming `log.cleaner.threads` or `log.cleaner.dedupe.buffer.size`.
    pub fn validate(&self) -> Result<()> {
        let (threads, size) = (self.num_threads, self.dedupe_buffer_size);
        if threads < 1 {
            let rule = "must be >= 1: Kafka 4.3.1 accepts 0, then fails to start dividing \
                        log.cleaner.dedupe.buffer.size by it";
            return Err(invalid("log.cleaner.threads", threads, rule));
        }
        if size / i64::from(threads) <= MIB {
            let rule = format!(
                "must be more than 1 MiB per cleaner thread: {size} / log.cleaner.threads ({threads}) \
                 must be > {MIB}"
            );
            return Err(invalid("log.cleaner.dedupe.buffer.size", size, rule));
        }
        Ok(())
    }
}

impl CleanerConfig {
    /// Builds a config from `(key, value)` pairs of `log.cleaner.*` keys, starting from the
    /// defaults: each applied with [`CleanerConfig::set`], then [`CleanerConfig::validate`].
    ///
    /// # Errors
    /// `InvalidConfig` for an unknown key, a value that does not parse or is out of range, or a
    /// failed start-up check.
    pub fn from_props<'a, I: IntoIterator<Item = (&'a str, &'a str)>>(props: I) -> Result<Self> {
        let mut config = Self::default();
        for (key, value) in props {
            config.set(key, value)?;
        }
        config.validate()?;
        Ok(config)
    }

    /// Parses, checks and applies one `log.cleaner.*` key. On error the config is unchanged.
    ///
    /// # Errors
    /// `InvalidConfig` naming the key, the value and the rule it breaks.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        TABLE.set(self, key, value).unwrap_or_else(|| {
            let rule = format!("unknown cleaner config (known keys: {})", Self::names().join(", "));
            Err(invalid(key, value, rule))
        })
    }

    /// The value of `key` as Kafka prints it; `None` for a key this table does not have.
    #[must_use]
    pub fn value(&self, key: &str) -> Option<String> {
        TABLE.get(self, key)
    }

    /// Every key with its value, in [`CleanerConfig::names`] order, printed as Kafka prints it.
    #[must_use]
    pub fn to_props(&self) -> Vec<(&'static str, String)> {
        TABLE.to_props(self)
    }

    /// Every `log.cleaner.*` key of this table, sorted.
    #[must_use]
    pub fn names() -> &'static [&'static str] {
        TABLE.names()
    }
}

/// The cleaner keys, sorted by name (`set` binary-searches this table).
static TABLE: KeyTable<CleanerConfig> = KeyTable::new(&KEYS);

#[rustfmt::skip]
static KEYS: [Key<CleanerConfig>; 8] = [
    key!("log.cleaner.backoff.ms", backoff_ms, long Range::AtLeast(0)),
    key!("log.cleaner.dedupe.buffer.size", dedupe_buffer_size, long Range::Any),
    key!("log.cleaner.enable", enable_cleaner, bool),
    key!("log.cleaner.io.buffer.load.factor", dedupe_buffer_load_factor,
        |k, v| parse_double(k, v, |f| f > 0.0 && f <= 1.0, "must be in (0.0, 1.0]"),
        |c| Some(java_double(c.dedupe_buffer_load_factor))),
    key!("log.cleaner.io.buffer.size", io_buffer_size, int Range::AtLeast(0)),
    key!("log.cleaner.io.max.bytes.per.second", max_io_bytes_per_second,
        |k, v| parse_double(k, v, |f| f.is_finite() && f > 0.0, "must be finite and > 0"),
        |c| Some(java_double(c.max_io_bytes_per_second))),
    key!("log.cleaner.kafkalog.sliced.decisions", sliced_decisions, bool),
    key!("log.cleaner.threads", num_threads, int Range::AtLeast(0)),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_sorted_and_round_trip() {
        assert!(TABLE.is_sorted(), "KEYS must stay sorted: set() binary-searches it");
        let c = CleanerConfig::default();
        let props = c.to_props();
        assert_eq!(props.len(), KEYS.len());
        let back = CleanerConfig::from_props(props.iter().map(|(k, v)| (*k, v.as_str()))).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn unknown_and_rejected_keys_name_the_key() {
        let err = CleanerConfig::from_props([("log.cleaner.thread", "2")]).unwrap_err().to_string();
        assert!(err.contains("log.cleaner.thread") && err.contains("unknown cleaner config"), "{err}");
        let err = CleanerConfig::from_props([("log.cleaner.threads", "0")]).unwrap_err().to_string();
        assert!(err.contains("log.cleaner.threads") && err.contains("must be >= 1"), "{err}");
        let mut c = CleanerConfig::default();
        assert!(c.set("log.cleaner.io.buffer.load.factor", "0").is_err());
        assert_eq!(c, CleanerConfig::default(), "unchanged on error");
    }
}
