//! Unit tests of `LogManagerConfig`: parsing, defaults, ranges and synonyms of the broker keys (log_manager_config.rs).

use super::*;
use crate::config::table_checks::{assert_accepted, assert_names, assert_rejected};

type Props = &'static [(&'static str, &'static str)];

/// Kafka 4.3.1's defaults as its `ConfigDef` prints them, for every key that has one
    /// (`node.id` is kafkalog's; Kafka requires it).
#[rustfmt::skip]
const KAFKA_DEFAULTS: Props = &[
    ("compression.gzip.level", "-1"), ("compression.lz4.level", "9"),
    ("compression.type", "producer"), ("compression.zstd.level", "3"),
    ("cordoned.log.dirs", ""), ("log.cleaner.backoff.ms", "15000"),
    ("log.cleaner.dedupe.buffer.size", "134217728"),
    ("log.cleaner.delete.retention.ms", "86400000"), ("log.cleaner.enable", "true"),
    ("log.cleaner.io.buffer.load.factor", "0.9"), ("log.cleaner.io.buffer.size", "524288"),
    ("log.cleaner.io.max.bytes.per.second", "1.7976931348623157E308"),
    ("log.cleaner.max.compaction.lag.ms", "9223372036854775807"),
    ("log.cleaner.min.cleanable.ratio", "0.5"), ("log.cleaner.min.compaction.lag.ms", "0"),
    ("log.cleaner.threads", "1"), ("log.cleanup.policy", "delete"),
    ("log.dir.failure.timeout.ms", "30000"),
    ("log.flush.interval.messages", "9223372036854775807"),
    ("log.flush.offset.checkpoint.interval.ms", "60000"),
    ("log.flush.scheduler.interval.ms", "9223372036854775807"),
    ("log.flush.start.offset.checkpoint.interval.ms", "60000"),
    ("log.index.interval.bytes", "4096"), ("log.index.size.max.bytes", "10485760"),
    ("log.initial.task.delay.ms", "30000"), ("log.local.retention.bytes", "-2"),
    ("log.local.retention.ms", "-2"), ("log.message.timestamp.after.max.ms", "3600000"),
    ("log.message.timestamp.before.max.ms", "9223372036854775807"),
    ("log.message.timestamp.type", "CreateTime"), ("log.preallocate", "false"),
    ("log.retention.bytes", "-1"), ("log.retention.check.interval.ms", "300000"),
    ("log.retention.hours", "168"), ("log.roll.hours", "168"), ("log.roll.jitter.hours", "0"),
    ("log.segment.bytes", "1073741824"), ("log.segment.delete.delay.ms", "60000"),
    ("message.max.bytes", "1048588"), ("min.insync.replicas", "1"), ("node.id", "1"),
    ("num.recovery.threads.per.data.dir", "2"),
    ("producer.id.expiration.check.interval.ms", "600000"), ("producer.id.expiration.ms", "86400000"),
    ("transaction.max.timeout.ms", "900000"),
    ("unclean.leader.election.enable", "false"),
];

/// Keys whose Kafka default is null (or, for `log.dir`, `/tmp/kafka-logs`, which kafkalog
/// drops), plus kafkalog's own `cluster.id` and `internal.segment.bytes`.
const UNSET_BY_DEFAULT: &[&str] = &[
    "cluster.id",
    "internal.segment.bytes",
    "log.dir",
    "log.dirs",
    "log.flush.interval.ms",
    "log.retention.minutes",
    "log.retention.ms",
    "log.roll.jitter.ms",
    "log.roll.ms",
];

/// Kafka's `ServerTopicConfigSynonyms` (first synonym of each topic key first), as
    /// (broker key, value, topic key, resulting topic value).
#[rustfmt::skip]
const SYNONYMS: &[(&str, &str, &str, &str)] = &[
    ("log.segment.bytes", "2097152", "segment.bytes", "2097152"),
    ("log.roll.ms", "5", "segment.ms", "5"),
    ("log.roll.hours", "2", "segment.ms", "7200000"),
    ("log.roll.jitter.ms", "5", "segment.jitter.ms", "5"),
    ("log.roll.jitter.hours", "1", "segment.jitter.ms", "3600000"),
    ("log.index.size.max.bytes", "4096", "segment.index.bytes", "4096"),
    ("log.flush.interval.messages", "7", "flush.messages", "7"),
    ("log.flush.interval.ms", "7", "flush.ms", "7"),
    ("log.flush.scheduler.interval.ms", "8", "flush.ms", "8"),
    ("log.retention.bytes", "9", "retention.bytes", "9"),
    ("log.retention.ms", "10", "retention.ms", "10"),
    ("log.retention.ms", "-7", "retention.ms", "-1"),
    ("log.retention.minutes", "2", "retention.ms", "120000"),
    ("log.retention.minutes", "-1", "retention.ms", "-1"),
    ("log.retention.hours", "1", "retention.ms", "3600000"),
    ("log.retention.hours", "-3", "retention.ms", "-1"),
    ("message.max.bytes", "100", "max.message.bytes", "100"),
    ("log.index.interval.bytes", "10", "index.interval.bytes", "10"),
    ("log.cleaner.delete.retention.ms", "11", "delete.retention.ms", "11"),
    ("log.cleaner.min.compaction.lag.ms", "12", "min.compaction.lag.ms", "12"),
    ("log.cleaner.max.compaction.lag.ms", "13", "max.compaction.lag.ms", "13"),
    ("log.segment.delete.delay.ms", "14", "file.delete.delay.ms", "14"),
    ("log.cleaner.min.cleanable.ratio", " .25", "min.cleanable.dirty.ratio", "0.25"),
    ("log.cleanup.policy", "delete,compact", "cleanup.policy", "compact,delete"),
    ("unclean.leader.election.enable", "TRUE", "unclean.leader.election.enable", "true"),
    ("min.insync.replicas", "2", "min.insync.replicas", "2"),
    ("compression.type", "zstd", "compression.type", "zstd"),
    ("compression.gzip.level", "5", "compression.gzip.level", "5"),
    ("compression.lz4.level", "10", "compression.lz4.level", "10"),
    ("compression.zstd.level", "-5", "compression.zstd.level", "-5"),
    ("log.preallocate", "true", "preallocate", "true"),
    ("log.message.timestamp.type", "LogAppendTime", "message.timestamp.type", "LogAppendTime"),
    ("log.message.timestamp.before.max.ms", "15", "message.timestamp.before.max.ms", "15"),
    ("log.message.timestamp.after.max.ms", "16", "message.timestamp.after.max.ms", "16"),
    ("log.local.retention.ms", "17", "local.retention.ms", "17"),
    ("log.local.retention.bytes", "18", "local.retention.bytes", "18"),
    ("internal.segment.bytes", "1024", "internal.segment.bytes", "1024"),
];

/// (key, just inside, just outside, rule) for every range and type bound `set` checks.
#[rustfmt::skip]
const BOUNDARIES: &[(&str, &str, &str, &str)] = &[
    ("log.retention.check.interval.ms", "1", "0", "must be >= 1"),
    ("log.flush.offset.checkpoint.interval.ms", "0", "-1", "must be >= 0"),
    ("log.flush.start.offset.checkpoint.interval.ms", "0", "-1", "must be >= 0"),
    ("num.recovery.threads.per.data.dir", "1", "0", "must be >= 1"),
    ("log.initial.task.delay.ms", "0", "-1", "must be >= 0"),
    ("log.dir.failure.timeout.ms", "1", "0", "must be >= 1"),
    ("node.id", "0", "-1", "must be >= 0"),
    ("producer.id.expiration.ms", "1", "0", "must be >= 1"),
    ("producer.id.expiration.check.interval.ms", "1", "0", "must be >= 1"),
    ("transaction.max.timeout.ms", "1", "0", "must be >= 1"),
    ("log.cleaner.threads", "0", "-1", "must be >= 0"),
    ("log.cleaner.io.buffer.size", "0", "-1", "must be >= 0"),
    ("log.cleaner.backoff.ms", "0", "-1", "must be >= 0"),
    ("log.cleaner.io.buffer.load.factor", "1.0", "1.0000001", "must be in (0.0, 1.0]"),
    ("log.cleaner.io.buffer.load.factor", "1.0E-4", "0", "must be in (0.0, 1.0]"),
    ("log.cleaner.io.max.bytes.per.second", "4.9E-324", "0", "must be finite and > 0"),
    ("log.cleaner.io.max.bytes.per.second", "1.7976931348623157E308", "inf", "must be finite"),
    ("log.roll.ms", "1", "0", "must be >= 1"),
    ("log.roll.hours", "1", "0", "must be >= 1"),
    ("log.roll.hours", "2147483647", "2147483648", "must be an integer (int32)"),
    ("log.roll.jitter.ms", "0", "-1", "must be >= 0"),
    ("log.roll.jitter.hours", "0", "-1", "must be >= 0"),
    ("log.flush.interval.ms", "0", "-1", "must be >= 0"),
    ("log.retention.ms", "1", "0", "must not be 0"),
    ("log.retention.ms", "-1", "0", "must not be 0"),
    ("log.retention.minutes", "-2147483648", "-2147483649", "must be an integer (int32)"),
    ("log.flush.scheduler.interval.ms", "-9223372036854775808", "-9223372036854775809", "must be a long"),
    ("log.segment.bytes", "1048576", "1048575", "must be >= 1048576"),
    ("log.index.size.max.bytes", "4", "3", "must be >= 4"),
    ("log.index.interval.bytes", "0", "-1", "must be >= 0"),
    ("log.flush.interval.messages", "1", "0", "must be >= 1"),
    ("message.max.bytes", "0", "-1", "must be >= 0"),
    ("log.segment.delete.delay.ms", "0", "-1", "must be >= 0"),
    ("log.cleaner.delete.retention.ms", "0", "-1", "must be >= 0"),
    ("log.cleaner.min.compaction.lag.ms", "0", "-1", "must be >= 0"),
    ("log.cleaner.max.compaction.lag.ms", "1", "0", "must be >= 1"),
    ("log.cleaner.min.cleanable.ratio", "1.0", "1.01", "must be in [0.0, 1.0]"),
    ("compression.gzip.level", "9", "10", "must be in [1, 9] or -1"),
    ("compression.lz4.level", "17", "18", "must be in [1, 17]"),
    ("compression.zstd.level", "22", "23", "must be in [-131072, 22]"),
    ("log.message.timestamp.before.max.ms", "0", "-1", "must be >= 0"),
    ("log.message.timestamp.after.max.ms", "0", "-1", "must be >= 0"),
    ("log.local.retention.ms", "-2", "-3", "must be >= -2"),
    ("log.local.retention.bytes", "-2", "-3", "must be >= -2"),
    ("min.insync.replicas", "1", "0", "must be >= 1"),
    ("internal.segment.bytes", "14", "13", "must be >= 14"),
];

#[rustfmt::skip]
    const ACCEPTED: Props = &[
        ("log.dirs", "/data/a"), ("log.dirs", " /data/a/ , /data/b//c/./ "), ("log.dirs", "relative/dir"),
        ("log.dir", "/x"), ("cordoned.log.dirs", "*"), ("cordoned.log.dirs", " * "),
        ("cordoned.log.dirs", ""), ("cordoned.log.dirs", "/data/a,/data/b"),
        ("cluster.id", " MkU3OEVBNTcwNTJENDM2Qg "), ("cluster.id", "a-b_c"), ("log.cleaner.enable", "False"),
        ("log.cleanup.policy", ""), ("log.cleanup.policy", "delete,delete"), ("log.retention.ms", "-9"),
        ("log.retention.hours", "0"), ("log.retention.minutes", "0"), ("log.cleaner.dedupe.buffer.size", "-1"),
    ];

/// (key, value, rule) that `set` rejects.
#[rustfmt::skip]
const REJECTED: &[(&str, &str, &str)] = &[
    ("log.dirs", "", "must name at least one directory"),
    ("log.dir", " ", "must name at least one directory"),
    ("log.dirs", "/a,,/b", "elements must not be empty"),
    ("log.dirs", "/a,/a/", "lists /a twice"),
    ("log.dir", "/a/./b , /a//b/", "lists /a/b twice"),
    ("cordoned.log.dirs", "/a, /a", "lists /a twice"),
    ("cordoned.log.dirs", "*,/a", "\"*\" (every log dir) must be the only entry"),
    ("cordoned.log.dirs", "*,*", "must be the only entry"),
    ("cluster.id", "", "must be non-empty ASCII letters"),
    ("cluster.id", "a b", "must be non-empty ASCII letters"),
    ("cluster.id", "a=b", "must be non-empty ASCII letters"),
    ("log.cleaner.enable", "1", "must be true or false"),
    ("log.cleaner.io.buffer.load.factor", "NaN", "must be in (0.0, 1.0]"),
    ("log.cleaner.io.max.bytes.per.second", "NaN", "must be finite and > 0"),
    ("log.cleaner.backoff.ms", "1.5", "must be a long"),
    ("log.cleanup.policy", "Compact", "elements must be one of [compact, delete]"),
    ("compression.type", "none", "must be one of [uncompressed"),
    ("log.message.timestamp.type", "createtime", "must be one of [CreateTime, LogAppendTime]"),
    ("log.preallocate", "yes", "must be true or false"),
    ("retention.ms", "5", "a topic config; at broker level use log.retention.ms"),
    ("segment.ms", "5", "use log.roll.ms"),
    ("segment.jitter.ms", "5", "use log.roll.jitter.ms"),
    ("flush.ms", "5", "use log.flush.interval.ms"),
    ("segment.bytes", "1048576", "use log.segment.bytes"),
    ("max.message.bytes", "5", "use message.max.bytes"),
    ("min.cleanable.dirty.ratio", "0.5", "use log.cleaner.min.cleanable.ratio"),
    ("file.delete.delay.ms", "5", "use log.segment.delete.delay.ms"),
    ("remote.storage.enable", "true", "a topic config with no broker-level synonym"),
    ("leader.replication.throttled.replicas", "*", "a topic config with no broker-level synonym"),
    ("log.retention.days", "1", "unknown log manager config (known keys: cluster.id, compression.gzip.level,"),
    ("log.message.format.version", "3.0-IV1", "removed in Kafka 4.0"),
];

/// Checks only `validate` makes, on top of `log.dirs=/data/a,/data/b`: (props, key, rule),
    /// an empty key meaning "accepted". Each case matches Kafka 4.3.1's `KafkaConfig` and
    /// `LogManager.apply`, run with the same broker keys.
#[rustfmt::skip]
const CROSS_KEY: &[(Props, &str, &str)] = &[
    (&[], "", ""),
    (&[("log.retention.minutes", "0")], "log.retention.minutes", "must not be 0"),
    (&[("log.retention.hours", "0")], "log.retention.hours", "must not be 0"),
    (&[("log.retention.hours", "0"), ("log.retention.minutes", "1")], "", ""),
    (&[("log.retention.minutes", "0"), ("log.retention.ms", "100")], "", ""),
    (&[("log.flush.scheduler.interval.ms", "-5")], "log.flush.scheduler.interval.ms",
        "must be >= 0 (as flush.ms, the default for topics)"),
    (&[("log.flush.scheduler.interval.ms", "-5"), ("log.flush.interval.ms", "7")], "", ""),
    (&[("log.cleaner.min.compaction.lag.ms", "10"), ("log.cleaner.max.compaction.lag.ms", "5")],
        "log.cleaner.min.compaction.lag.ms", "must be <= max.compaction.lag.ms (5)"),
    (&[("log.cleaner.threads", "0")], "log.cleaner.threads", "must be >= 1"),
    (&[("log.cleaner.dedupe.buffer.size", "1048576")], "log.cleaner.dedupe.buffer.size",
        "1048576 / log.cleaner.threads (1) must be > 1048576"),
    (&[("log.cleaner.dedupe.buffer.size", "1048577")], "", ""),
    (&[("log.cleaner.dedupe.buffer.size", "2097153"), ("log.cleaner.threads", "2")],
        "log.cleaner.dedupe.buffer.size", "1 MiB per cleaner thread"),
    (&[("log.cleaner.dedupe.buffer.size", "2097154"), ("log.cleaner.threads", "2")], "", ""),
    (&[("log.cleaner.dedupe.buffer.size", "-1")], "log.cleaner.dedupe.buffer.size", "per cleaner thread"),
    (&[("log.cleaner.enable", "false"), ("log.cleaner.threads", "0")], "log.cleaner.threads", ">= 1"),
    (&[("cordoned.log.dirs", "/data/b/")], "", ""),
    (&[("cordoned.log.dirs", "*")], "", ""),
    (&[("cordoned.log.dirs", "/data/a,/z,/y")], "cordoned.log.dirs", "missing: /z,/y"),
    (&[("log.dir", "/x"), ("cordoned.log.dirs", "/x")], "cordoned.log.dirs", "missing: /x"),
];

fn with_dirs(props: &[(&'static str, &'static str)]) -> Result<LogManagerConfig> {
    LogManagerConfig::from_props([("log.dirs", "/data/a,/data/b")].into_iter().chain(props.iter().copied()))
}

fn round_trip(c: &LogManagerConfig) -> Result<LogManagerConfig> {
    LogManagerConfig::from_props(c.to_props().iter().map(|(k, v)| (*k, v.as_str())))
}

fn topic_value(c: &LogManagerConfig, topic: &str) -> String {
    c.log_config().to_props().into_iter().find(|(k, _)| *k == topic).map(|(_, v)| v).unwrap_or_default()
}

#[test]
fn defaults_match_kafka() {
    let c = LogManagerConfig::default();
    let props = c.to_props();
    let got: Vec<(&str, &str)> = props.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(got, KAFKA_DEFAULTS);
    assert_eq!(c.log_config(), &LogConfig::default(), "broker defaults give Kafka's topic defaults");
    assert_eq!((c.flush_check_ms(), c.log_dirs(), c.cordoned_log_dirs()), (i64::MAX, &[][..], &[][..]));
    assert_eq!(c.cleaner, CleanerConfig::default());
    let from_props = with_dirs(&[]).unwrap();
    assert_eq!(from_props.log_dirs(), [PathBuf::from("/data/a"), PathBuf::from("/data/b")]);
}

#[test]
fn names_are_sorted_and_complete() {
    let mut expected: Vec<&str> =
        KAFKA_DEFAULTS.iter().map(|(k, _)| *k).chain(UNSET_BY_DEFAULT.iter().copied()).collect();
    expected.sort_unstable();
    assert_eq!(LogManagerConfig::names(), expected.as_slice());
    assert!(KEYS.windows(2).all(|w| w[0].name < w[1].name), "KEYS must stay sorted: set() binary-searches it");
    for def in &KEYS {
        if let Some(topic) = def.synonym_of {
            assert!(LogConfig::names().contains(&topic), "{} feeds unknown topic key {topic}", def.name);
        }
    }
}

#[test]
fn log_dirs_are_required() {
    let err = LogManagerConfig::from_props([("node.id", "3")]).unwrap_err();
    assert_names(&err, "log.dirs", "", "at least one directory is required");
    assert!(LogManagerConfig::default().validate().is_err());
}

#[test]
fn synonyms_feed_the_topic_defaults() {
    for (broker, value, topic, want) in SYNONYMS {
        let c = with_dirs(&[(broker, value)]).unwrap();
        assert_eq!(topic_value(&c, topic), *want, "{broker}={value}");
        let printed = c.to_props().into_iter().find(|(k, _)| k == broker).unwrap().1;
        assert_eq!(round_trip(&c).unwrap(), c, "{broker}={value} printed as {printed:?}");
    }
}

#[test]
fn topic_keys_are_rejected_with_the_broker_key_to_use() {
    for topic in LogConfig::names() {
        let mut c = LogManagerConfig::default();
        if LogManagerConfig::names().contains(topic) {
            continue; // the same name at both levels, e.g. compression.type
        }
        let err = c.set(topic, "1").unwrap_err().to_string();
        let first = SYNONYMS.iter().find(|s| s.2 == *topic).map(|s| s.0);
        match first {
            Some(broker) => assert!(err.ends_with(&format!("at broker level use {broker}")), "{err}"),
            None => assert!(err.contains("no broker-level synonym"), "{err}"),
        }
    }
}

#[test]
fn synonym_precedence_does_not_depend_on_order() {
    #[rustfmt::skip]
    let cases: &[(Props, &str, &str)] = &[
        (&[("log.retention.hours", "1"), ("log.retention.minutes", "2"), ("log.retention.ms", "3")],
            "retention.ms", "3"),
        (&[("log.retention.hours", "1"), ("log.retention.minutes", "2")], "retention.ms", "120000"),
        (&[("log.retention.hours", "1"), ("log.retention.ms", "-1")], "retention.ms", "-1"),
        (&[("log.retention.hours", "-1"), ("log.retention.minutes", "5")], "retention.ms", "300000"),
        (&[("log.roll.hours", "2"), ("log.roll.ms", "5")], "segment.ms", "5"),
        (&[("log.roll.jitter.hours", "1"), ("log.roll.jitter.ms", "5")], "segment.jitter.ms", "5"),
        (&[("log.flush.scheduler.interval.ms", "9"), ("log.flush.interval.ms", "7")], "flush.ms", "7"),
    ];
    for (props, topic, want) in cases {
        let forward = with_dirs(props).unwrap();
        let reversed: Vec<_> = props.iter().rev().copied().collect();
        let backward = with_dirs(&reversed).unwrap();
        assert_eq!((topic_value(&forward, topic), topic_value(&backward, topic)), (want.to_string(), want.to_string()));
        assert_eq!(forward, backward);
    }
    let dirs = LogManagerConfig::from_props([("log.dirs", "/y"), ("log.dir", "/x")]).unwrap();
    assert_eq!(dirs.log_dirs(), [PathBuf::from("/y")]);
    let dir = LogManagerConfig::from_props([("log.dir", "/x/")]).unwrap();
    assert_eq!(dir.log_dirs(), [PathBuf::from("/x")]);
}

#[test]
fn accepted_values_apply_and_read_back() {
    let inside = BOUNDARIES.iter().map(|(k, inside, _, _)| (*k, *inside));
    assert_accepted::<LogManagerConfig>(inside.chain(ACCEPTED.iter().copied()));
}

#[test]
fn rejected_values_name_key_value_and_rule() {
    let outside = BOUNDARIES.iter().map(|(k, _, out, rule)| (*k, *out, *rule));
    assert_rejected::<LogManagerConfig>(outside.chain(REJECTED.iter().copied()));
}

#[test]
fn cross_key_checks() {
    for (props, key, rule) in CROSS_KEY {
        match with_dirs(props) {
            Ok(_) => assert!(key.is_empty(), "{props:?} accepted"),
            Err(e) => {
                let msg = e.to_string();
                let named = matches!(&e, Error::InvalidConfig { key: k, .. } if k == key);
                assert!(named && msg.contains(rule), "{props:?}: {msg}");
            }
        }
    }
}

#[test]
fn relative_dirs_become_absolute() {
    let c = LogManagerConfig::from_props([("log.dirs", "data/,./other")]).unwrap();
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(c.log_dirs(), [cwd.join("data"), cwd.join("other")]);
    let err = LogManagerConfig::from_props([("log.dirs", "data, ./data/")]).unwrap_err();
    assert!(err.to_string().contains(&format!("lists {} twice", cwd.join("data").display())), "{err}");
}

#[test]
fn cordoned_star_means_every_log_dir() {
    let c = with_dirs(&[("cordoned.log.dirs", "*")]).unwrap();
    assert_eq!(c.cordoned_log_dirs(), c.log_dirs());
    let one = with_dirs(&[("cordoned.log.dirs", "/data/b/")]).unwrap();
    assert_eq!(one.cordoned_log_dirs(), [PathBuf::from("/data/b")]);
}

#[test]
fn validate_rechecks_public_fields() {
    let good = with_dirs(&[]).unwrap();
    let mut c = good.clone();
    c.node_id = -1;
    assert_names(&c.validate().unwrap_err(), "node.id", "-1", "must be >= 0");
    let mut c = good.clone();
    c.cleaner.dedupe_buffer_load_factor = 2.0;
    assert_names(&c.validate().unwrap_err(), "log.cleaner.io.buffer.load.factor", "2.0", "(0.0, 1.0]");
    let mut c = good;
    c.cluster_id = Some("not valid".into());
    assert_names(&c.validate().unwrap_err(), "cluster.id", "not valid", "ASCII letters");
}

#[test]
fn every_key_round_trips_through_to_props() {
    let all: Vec<(&str, &str)> = SYNONYMS
        .iter()
        .filter(|s| !matches!(s.0, "log.retention.minutes" | "log.retention.hours" | "log.roll.hours"))
        .map(|s| (s.0, s.1))
        .chain([
            ("log.dir", "/x"),
            ("log.dirs", "/y,/z"),
            ("cordoned.log.dirs", "/z"),
            ("cluster.id", "abc"),
            ("log.retention.minutes", "3"),
            ("log.retention.hours", "4"),
            ("log.roll.hours", "5"),
            ("node.id", "7"),
            ("num.recovery.threads.per.data.dir", "3"),
            ("log.retention.check.interval.ms", "9"),
            ("log.flush.offset.checkpoint.interval.ms", "10"),
            ("log.flush.start.offset.checkpoint.interval.ms", "11"),
            ("log.initial.task.delay.ms", "12"),
            ("log.dir.failure.timeout.ms", "13"),
            ("log.cleaner.threads", "2"),
            ("log.cleaner.dedupe.buffer.size", "4194304"),
            ("log.cleaner.io.buffer.load.factor", "0.75"),
            ("log.cleaner.io.buffer.size", "1024"),
            ("log.cleaner.io.max.bytes.per.second", "1e6"),
            ("log.cleaner.backoff.ms", "5"),
            ("log.cleaner.enable", "false"),
        ])
        .collect();
    let c = LogManagerConfig::from_props(all).unwrap();
    assert_eq!(c.to_props().len(), KEYS.len());
    assert_eq!(round_trip(&c).unwrap(), c);
    // SYNONYMS sets log.retention.ms twice; the later -7 stands, meaning unlimited.
    let times = (c.flush_check_ms(), c.log_config().retention_ms, c.log_config().segment_ms);
    assert_eq!(times, (8, -1, 5));
    assert!(c.to_props().contains(&("log.cleaner.io.max.bytes.per.second", "1000000.0".into())));
}
