//! Unit tests of `LogConfig`: parsing, defaults, ranges and synonyms of the topic keys (log_config.rs).

use super::*;
use crate::config::table_checks::{assert_accepted, assert_names, assert_rejected};
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
    assert_accepted::<LogConfig>(inside.chain(ACCEPTED.iter().copied()));
}

#[test]
fn rejected_values_name_key_value_and_rule() {
    let outside = BOUNDARIES.iter().map(|(k, _, out, rule)| (*k, *out, *rule));
    let rejected: Vec<_> = outside.chain(REJECTED.iter().copied()).collect();
    assert_rejected::<LogConfig>(rejected.iter().copied());
    for (key, value, _) in rejected {
        assert!(config(&[("segment.ms", "5"), (key, value)]).is_err(), "{key}={value:?} among other keys");
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

/// `validate` remembers the last config it passed on a thread: that one passes again, and any
/// config differing from it (one field out of range, or two fields out of order) is still
/// checked and refused.
#[test]
fn validate_checks_every_config_other_than_the_last_valid_one() {
    let valid = LogConfig::default();
    assert!(valid.validate().is_ok());
    let mut lags = valid.clone();
    (lags.min_compaction_lag_ms, lags.max_compaction_lag_ms) = (10, 5);
    assert!(lags.validate().unwrap_err().to_string().contains("min.compaction.lag.ms"));
    let mut interval = valid.clone();
    interval.index_interval_bytes = -1;
    assert!(interval.validate().unwrap_err().to_string().contains("index.interval.bytes"));
    assert!(valid.validate().is_ok());
    assert!(lags.validate().is_err(), "a refused config is not remembered");
}
