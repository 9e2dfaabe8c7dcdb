//! On-demand cleans of the dirty section only (`cleaner::dirty_clean::compact_dirty`): the log
//! dir's `cleaner-offset-checkpoint` read, healed as Kafka's `LogCleanerManager.cleanableOffsets`
//! heals it (`LogCleanerManagerTest.testCleanableOffsetsForNone`, `testCleanableOffsetsNeedsCheckpointReset`),
//! written back beside the other partitions' entries, the skips Kafka's
//! `grabFilthiestCompactedLog` makes, and a `LogManager` continuing from the file.

use std::collections::HashMap;
use std::sync::Arc;

use kafkalog::checkpoint::cleaner_checkpoint::{read_cleaner_checkpoint, update_cleaner_checkpoint};
use kafkalog::cleaner::compactor::Compactor;
use kafkalog::cleaner::dirty_clean::{compact_dirty, DirtyClean, SkipReason};
use kafkalog::config::CleanerConfig;
use kafkalog::file_names::{CLEANER_OFFSET_CHECKPOINT_FILE, LOCK_FILE};
use kafkalog::log::unified_log::UnifiedLog;
use kafkalog::manager::log_manager::{LogManager, LogManagerOptions};
use kafkalog::util::file::FileLock;

use crate::common::cleaner_manager::{compact, file_checkpoints, fill, tp, Env};
use crate::common::{capture_log, config, lines_at, manager_config, T0};

fn compactor(env: &Env) -> Compactor {
    let sizes = CleanerConfig { dedupe_buffer_size: 1 << 20, io_buffer_size: 65536, ..CleanerConfig::default() };
    Compactor::new(sizes, env.clock.clone())
}

fn clean(env: &Env, log: &Arc<UnifiedLog>) -> DirtyClean {
    compact_dirty(&compactor(env), log, None, None).unwrap()
}

/// A clean writes its end offset; after N more records and a roll the next one starts there,
/// its first pass maps only the N new records, and another partition's entry is kept.
#[test]
fn the_second_clean_starts_at_the_checkpoint_and_reads_only_the_new_records() {
    let env = Env::new();
    let log = env.log("a", &compact(&[]));
    update_cleaner_checkpoint(env.dir(), &tp("other"), 7).unwrap();
    fill(&log, 60, 5, T0);
    log.roll().unwrap();
    let first = clean(&env, &log);
    let end = first.result.as_ref().unwrap().end_offset;
    assert_eq!((first.checkpoint, first.first_dirty_offset, end), (None, 0, 60));
    assert_eq!(first.checkpoint_written, Some(60));
    assert_eq!(first.result.as_ref().unwrap().stats.map_messages_read, 60);

    fill(&log, 12, 5, T0);
    log.roll().unwrap();
    let second = clean(&env, &log);
    assert_eq!((second.checkpoint, second.first_dirty_offset, second.skipped), (Some(60), 60, None));
    let result = second.result.unwrap();
    assert_eq!((result.stats.map_messages_read, result.end_offset), (12, 72));
    let entries = file_checkpoints(env.dir());
    assert_eq!((entries[&tp("a")], entries[&tp("other")]), (72, 7));
}

/// An entry below the log start or above the log end means the log start, with Kafka's
/// warning, and the healed entry is written even when nothing is cleaned.
#[test]
fn an_entry_outside_the_log_is_healed_to_the_log_start_with_kafkas_warning() {
    for (entry, words) in [(-5, "is invalid"), (1_000_000, "larger than the log end offset")] {
        let env = Env::new();
        let log = env.log("a", &compact(&[]));
        fill(&log, 3, 3, T0); // all in the active segment: nothing to clean
        update_cleaner_checkpoint(env.dir(), &tp("a"), entry).unwrap();
        let (outcome, lines) = capture_log(|| clean(&env, &log));
        let warnings = lines_at(&lines, ::log::Level::Warn);
        assert!(warnings.iter().any(|w| w.contains(&entry.to_string()) && w.contains(words)), "{warnings:?}");
        assert_eq!((outcome.checkpoint, outcome.first_dirty_offset), (Some(entry), 0));
        assert!(matches!(outcome.skipped, Some(SkipReason::NothingDirty { .. })), "{:?}", outcome.skipped);
        assert_eq!((outcome.checkpoint_written, read_cleaner_checkpoint(env.dir(), &tp("a"))), (Some(0), Some(0)));
    }
}

/// The skips of Kafka's `grabFilthiestCompactedLog`, each named: a `delete` policy (nothing
/// read or written), nothing dirty, a dirty ratio not above `min.cleanable.dirty.ratio`; and a
/// segment past `max.compaction.lag.ms` is cleaned whatever its ratio.
#[test]
fn skips_say_why_and_overdue_segments_are_cleaned_anyway() {
    let env = Env::new();
    let plain = env.log("plain", &[("cleanup.policy", "delete")]);
    fill(&plain, 20, 5, T0);
    plain.roll().unwrap();
    let skipped = clean(&env, &plain).skipped.unwrap();
    assert_eq!(skipped, SkipReason::DeletePolicy { policy: "delete".into() });
    assert!(skipped.to_string().starts_with("delete policy: cleanup.policy=delete"), "{skipped}");
    assert!(!env.dir().join(CLEANER_OFFSET_CHECKPOINT_FILE).exists());

    let log = env.log("a", &compact(&[("min.cleanable.dirty.ratio", "0.5")]));
    fill(&log, 3, 3, T0);
    let nothing = clean(&env, &log);
    assert!(nothing.skipped.unwrap().to_string().starts_with("nothing dirty: "));
    assert_eq!(nothing.checkpoint_written, None);

    fill(&log, 60, 60, T0); // distinct keys: the clean keeps them all
    log.roll().unwrap();
    assert!(clean(&env, &log).result.is_some());
    fill(&log, 6, 6, T0);
    log.roll().unwrap();
    let below = clean(&env, &log);
    match below.skipped {
        Some(SkipReason::BelowMinCleanableRatio { ratio, min_ratio }) => {
            assert!(ratio > 0.0 && ratio <= 0.5 && (min_ratio - 0.5).abs() < f64::EPSILON, "{ratio}");
            assert!((ratio - below.cleanable_ratio).abs() < f64::EPSILON);
        }
        other => panic!("expected BelowMinCleanableRatio, got {other:?}"),
    }
    assert_eq!(read_cleaner_checkpoint(env.dir(), &tp("a")), Some(63));

    // The same log with max.compaction.lag.ms passed for its dirty segment: cleaned.
    let log = env.reopen(&log, &compact(&[("min.cleanable.dirty.ratio", "0.5"), ("max.compaction.lag.ms", "1000")]));
    env.clock.advance(2000);
    let overdue = clean(&env, &log);
    assert_eq!((overdue.skipped, overdue.first_dirty_offset), (None, 63));
    assert_eq!(overdue.checkpoint_written, Some(69));
}

/// A log dir a `LogManager` (or a broker) holds: the clean stands, the entry is not written and
/// the outcome says why.
#[test]
fn a_held_log_dir_keeps_its_file_and_the_outcome_says_so() {
    let env = Env::new();
    let log = env.log("a", &compact(&[]));
    fill(&log, 30, 5, T0);
    log.roll().unwrap();
    let manager = FileLock::try_lock(&env.dir().join(LOCK_FILE)).unwrap();
    let outcome = clean(&env, &log);
    drop(manager);
    assert!(outcome.result.is_some() && outcome.checkpoint_written.is_none());
    let err = outcome.checkpoint_error.unwrap().to_string();
    assert!(err.contains(LOCK_FILE) && err.contains("using this log dir"), "{err}");
    assert!(!env.dir().join(CLEANER_OFFSET_CHECKPOINT_FILE).exists());
}

/// A `LogManager` opened on the log dir afterwards takes the file as its own: its cleaner's
/// checkpoint is the entry written, and its own clean of the partition starts there.
#[test]
fn a_log_manager_continues_from_the_entry_written() {
    let env = Env::new();
    let props = compact(&[]);
    let log = env.log("a", &props);
    fill(&log, 60, 5, T0);
    log.roll().unwrap();
    assert_eq!(clean(&env, &log).checkpoint_written, Some(60));
    fill(&log, 9, 5, T0);
    log.roll().unwrap();
    log.close().unwrap();

    let broker = manager_config(
        &[env.dir()],
        &[("log.cleaner.dedupe.buffer.size", "2097152"), ("log.cleaner.io.buffer.size", "65536")],
    );
    let topic_configs: HashMap<String, _> = [("a".to_string(), config(&props))].into();
    let options = LogManagerOptions {
        clock: env.clock.clone(),
        start_scheduler: false,
        topic_configs,
        ..LogManagerOptions::default()
    };
    let m = LogManager::open(broker, options).unwrap();
    let cm = m.log_cleaner().unwrap().manager().clone();
    assert_eq!(cm.all_cleaner_checkpoints().get(&tp("a")), Some(&60));
    let result = m.compact_now(&tp("a")).unwrap();
    assert_eq!((result.first_dirty_offset, result.end_offset, result.stats.map_messages_read), (60, 69, 9));
    m.close(-1).unwrap();
    assert_eq!(read_cleaner_checkpoint(env.dir(), &tp("a")), Some(69));
}
