//! `append_planned_as_leader` against `append_as_leader` of the batches `ProducerBatches`
//! builds from the same rows: the same files, byte for byte, the same `LogAppendInfo`, the
//! same errors, for each log setting the trusted path must honour (as `LogValidatorTest` and
//! `UnifiedLogTest` check the client path: timestamp types, compression.type, compaction keys,
//! timestamp bounds, batch sizes, rolls, leader epochs).

use std::collections::BTreeMap;
use std::path::Path;

use super::*;
use crate::log::unified_log::LogOpenOptions;
use crate::record::planned_batches::{BatchPlanner, InPlaceBatch};
use crate::record::producer_batches::ProducerBatches;
use crate::record::CompressionType;
use crate::util::clock::ManualClock;

const NOW: i64 = 1_700_000_000_000;

struct Row {
    timestamp: Option<i64>,
    key: Option<Vec<u8>>,
    value: Vec<u8>,
}

/// Rows as [`PlannedRecords`], in the role the Arrow sink plays.
struct VecRecords<'r> {
    rows: &'r [Row],
    plan: BatchPlan,
    next_row: usize,
    next_batch: usize,
}

impl<'r> VecRecords<'r> {
    fn new(rows: &'r [Row], batch_size: usize) -> Result<Self> {
        let mut planner = BatchPlanner::new(batch_size, NOW);
        for r in rows {
            planner.push(r.timestamp, r.key.as_deref(), Some(&r.value), &[])?;
        }
        Ok(VecRecords { rows, plan: planner.finish()?, next_row: 0, next_batch: 0 })
    }
}

impl PlannedRecords for VecRecords<'_> {
    fn plan(&self) -> &BatchPlan {
        &self.plan
    }

    fn encode_next(&mut self, header: &BatchHeader, log_append_time: Option<i64>, out: &mut Vec<u8>) -> Result<()> {
        let planned = self.plan.batches[self.next_batch];
        let mut batch = InPlaceBatch::begin(out, planned.size);
        for r in &self.rows[self.next_row..self.next_row + planned.records as usize] {
            batch.push(r.timestamp.unwrap_or(NOW), r.key.as_deref(), Some(&r.value), &[], out);
        }
        batch.finish(out, header, log_append_time, &planned)?;
        self.next_row += planned.records as usize;
        self.next_batch += 1;
        Ok(())
    }

    fn first_timestamp_outside(&self, earliest: i64, latest: i64) -> Option<(u64, i64)> {
        self.rows.iter().enumerate().find_map(|(i, r)| {
            let ts = r.timestamp.unwrap_or(NOW);
            (ts < earliest || ts > latest).then_some((i as u64, ts))
        })
    }
}

/// `n` rows of 50 to 250 bytes; every 17th has no key, every 5th no timestamp, the others go
/// back up to 99 s from NOW.
fn rows(n: usize) -> Vec<Row> {
    (0..n)
        .map(|i| Row {
            timestamp: (i % 5 != 0).then(|| NOW - (i as i64 % 100) * 1000),
            key: (i % 17 != 3).then(|| format!("key-{}", i % 1000).into_bytes()),
            value: vec![b'a' + (i % 26) as u8; 50 + (i * 31) % 200],
        })
        .collect()
}

fn open(dir: &Path, props: &[(&str, &str)]) -> UnifiedLog {
    let config = LogConfig::from_props(props.iter().copied()).unwrap();
    let options = LogOpenOptions { clock: ManualClock::new(NOW), ..LogOpenOptions::default() };
    UnifiedLog::open(dir, config, options).unwrap()
}

/// Every file of the partition directory after close, by name.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect()
}

type Outcome = (Vec<std::result::Result<LogAppendInfo, String>>, BTreeMap<String, Vec<u8>>);

/// Appends `first` then `second` (so the second starts past offset 0) to a fresh log with
/// `props`, each append as `planned` says, and returns what each returned and the files.
fn append_twice(dir: &Path, props: &[(&str, &str)], first: &[Row], second: &[Row], planned: bool) -> Outcome {
    let log = open(dir, props);
    let mut results = Vec::new();
    for rows in [first, second] {
        let result = if planned {
            VecRecords::new(rows, 16384).and_then(|mut r| log.append_planned_as_leader(&mut r, 5))
        } else {
            let mut p = ProducerBatches::new(CompressionType::None, 16384, NOW);
            let built = rows.iter().try_for_each(|r| p.push(r.timestamp, r.key.as_deref(), Some(&r.value), &[]));
            built.and_then(|()| p.finish()).and_then(|mut bytes| log.append_as_leader(&mut bytes, 5))
        };
        results.push(result.map_err(|e| e.to_string()));
    }
    log.close().unwrap();
    (results, files(dir))
}

fn same_as_client_append(props: &[(&str, &str)], second: &[Row]) -> Outcome {
    let tmp = tempfile::tempdir().unwrap();
    let first = rows(3);
    let client = append_twice(&tmp.path().join("client-0"), props, &first, second, false);
    let planned = append_twice(&tmp.path().join("planned-0"), props, &first, second, true);
    assert_eq!(client.0, planned.0, "{props:?}");
    assert_eq!(client.1.keys().collect::<Vec<_>>(), planned.1.keys().collect::<Vec<_>>(), "{props:?}");
    for (name, bytes) in &client.1 {
        assert!(bytes == &planned.1[name], "{props:?}: {name} differs");
    }
    planned
}

#[test]
fn writes_what_a_client_append_writes() {
    let many = rows(30_000); // about 4.5 MB: several write chunks, and rolls with the small segments
    for props in [
        &[][..],
        &[("message.timestamp.type", "LogAppendTime")],
        &[("compression.type", "uncompressed")],
        &[("compression.type", "gzip")],
        &[("internal.segment.bytes", "1000000"), ("index.interval.bytes", "100")],
        &[("internal.segment.bytes", "100000"), ("message.timestamp.type", "LogAppendTime")],
    ] {
        let (results, files) = same_as_client_append(props, &many);
        let info = results[1].as_ref().unwrap();
        assert_eq!((info.first_offset, info.record_count), (3, 30_000), "{props:?}");
        assert!(files.contains_key("leader-epoch-checkpoint"));
    }
}

/// The runs of batches written in one go roll where one batch at a time rolls: on size, on
/// time (`segment.ms` against timestamps that grow), on a full offset or time index, and on
/// all of them at once.
#[test]
fn rolls_where_a_client_append_rolls() {
    let mut rising = rows(30_000);
    for (i, r) in rising.iter_mut().enumerate() {
        r.timestamp = Some(NOW + i as i64 * 30);
    }
    for props in [
        &[("internal.segment.bytes", "300000")][..],
        &[("segment.ms", "20000")],
        &[("segment.index.bytes", "400"), ("index.interval.bytes", "100")],
        &[("segment.index.bytes", "1200"), ("index.interval.bytes", "1")],
        &[("segment.ms", "50000"), ("internal.segment.bytes", "250000"), ("segment.index.bytes", "600")],
    ] {
        let (_, files) = same_as_client_append(props, &rising);
        let segments = files.keys().filter(|n| Path::new(n).extension().is_some_and(|e| e == "log")).count();
        assert!(segments > 3, "{props:?}: {segments} segments");
    }
}

#[test]
fn refuses_what_a_client_append_refuses_and_writes_nothing() {
    let many = rows(5_000);
    let mut late = rows(5_000);
    late[4_321].timestamp = Some(NOW + 7_200_000);
    for (props, second) in [
        (&[("cleanup.policy", "compact")][..], &many),
        (&[("message.timestamp.before.max.ms", "50000")], &many),
        (&[], &late),
        (&[("max.message.bytes", "5000")], &many),
        (&[("internal.segment.bytes", "10000"), ("max.message.bytes", "100000")], &many),
    ] {
        let (results, _) = same_as_client_append(props, second);
        let error = results[1].as_ref().unwrap_err();
        assert!(!error.is_empty());
    }
    // The timestamp error names the offset the record would have had (3 + its row).
    let (results, _) = same_as_client_append(&[], &late);
    assert!(results[1].as_ref().unwrap_err().contains("offset 4324"), "{results:?}");
}
