//! A model-based property test: random sequences of appends, rolls, reads, truncations,
//! `delete_records`, high-watermark moves, flushes, the background flushes after rolls, clock
//! moves and close/crash + reopen, run
//! against `UnifiedLog` and against an in-memory list of batches. After every step the four
//! offsets must agree, the segments must be ordered with their batches inside their ranges, and
//! every read must return exactly the model's whole batches.

use kafkalog::error::Error;
use std::sync::Arc;

use kafkalog::log::unified_log::LogOpenOptions;
use kafkalog::record::CompressionType;
use kafkalog::util::background::BackgroundScheduler;
use kafkalog::util::clock::Clock;
use kafkalog::{FetchIsolation, LogConfig, UnifiedLog};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

use crate::common::{batch, batches, config, decode, proptest_config, scan_all, Fixture, Rec};

const SEGMENT_BYTES: usize = 4096;

type Bytes = Option<Vec<u8>>;

#[derive(Debug, Clone)]
enum Op {
    Append {
        records: Vec<(Bytes, Bytes)>,
        codec: usize,
        ts_delta: i64,
    },
    Roll,
    Read {
        pick: u64,
        max_bytes: u64,
        high_watermark: bool,
        min_one: bool,
    },
    TruncateTo {
        pick: u64,
        near_end: bool,
    },
    DeleteRecords {
        pick: u64,
    },
    SetHighWatermark {
        pick: u64,
    },
    Flush,
    /// Runs the queued `flush-log` tasks (the flushes after rolls).
    RollFlush,
    Reopen {
        clean: bool,
    },
    Advance {
        ms: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let record = |max_value: usize| (option::of(vec(any::<u8>(), 0..16)), option::of(vec(any::<u8>(), 0..max_value)));
    let append =
        |max_value: usize| {
            (vec(record(max_value), 1..20), 0..5usize, -1000i64..1000)
                .prop_map(|(records, codec, ts_delta)| Op::Append { records, codec, ts_delta })
        };
    prop_oneof![
        8 => append(200),
        // Large values: many of these batches outgrow a segment and must be refused.
        1 => append(600),
        5 => (any::<u64>(), 0u64..6000, any::<bool>(), any::<bool>())
            .prop_map(|(pick, max_bytes, high_watermark, min_one)| {
                Op::Read { pick, max_bytes, high_watermark, min_one }
            }),
        1 => Just(Op::Roll),
        1 => (any::<u64>(), any::<bool>()).prop_map(|(pick, near_end)| Op::TruncateTo { pick, near_end }),
        1 => any::<u64>().prop_map(|pick| Op::DeleteRecords { pick }),
        1 => any::<u64>().prop_map(|pick| Op::SetHighWatermark { pick }),
        1 => Just(Op::Flush),
        2 => Just(Op::RollFlush),
        1 => any::<bool>().prop_map(|clean| Op::Reopen { clean }),
        1 => (0i64..30_000).prop_map(|ms| Op::Advance { ms }),
    ]
}

/// A value of `pick` in `[lo, hi]`.
fn pick_in(pick: u64, lo: i64, hi: i64) -> i64 {
    lo + (pick % (hi - lo + 1) as u64) as i64
}

#[derive(Debug, Clone)]
struct MBatch {
    base: i64,
    last: i64,
    size: usize,
    records: Vec<Rec>,
}

#[derive(Debug, Default)]
struct Model {
    batches: Vec<MBatch>,
    log_end: i64,
    log_start: i64,
    high_watermark: i64,
    hw_follows_log_end: bool,
    recovery_point: i64,
    /// The highest segment base rolled since the last background flush ran: the flush raises
    /// the recovery point to it (capped by the log end), not the roll.
    roll_flush: Option<i64>,
}

struct Harness {
    fx: Fixture,
    cfg: LogConfig,
    log: Option<UnifiedLog>,
    m: Model,
}

impl Harness {
    fn new() -> Self {
        let fx = Fixture::new();
        let cfg = config(&[
            ("internal.segment.bytes", &SEGMENT_BYTES.to_string()),
            ("index.interval.bytes", "256"),
            ("segment.index.bytes", "1024"),
            ("segment.ms", "20000"),
        ]);
        let log = UnifiedLog::open(&fx.dir, cfg.clone(), manual_flush(fx.options())).expect("open log");
        Harness { fx, cfg, log: Some(log), m: Model { hw_follows_log_end: true, ..Model::default() } }
    }

    fn log(&self) -> &UnifiedLog {
        self.log.as_ref().expect("log open")
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match op {
            Op::Append { records, codec, ts_delta } => self.append(records, *codec, *ts_delta),
            Op::Roll => {
                let base = self.log().roll().map_err(fail)?;
                prop_assert_eq!(base, self.m.log_end);
                self.m.rolled(base);
                Ok(())
            }
            Op::Read { pick, max_bytes, high_watermark, min_one } => {
                let offset = pick_in(*pick, self.m.log_start - 2, self.m.log_end + 2);
                self.read(offset, *max_bytes, *high_watermark, *min_one)
            }
            Op::TruncateTo { pick, near_end } => {
                let lo = if *near_end { (self.m.log_end - 20).max(0) } else { 0 };
                self.truncate_to(pick_in(*pick, lo, self.m.log_end + 2))
            }
            Op::DeleteRecords { pick } => {
                let offset = pick_in(*pick, self.m.log_start - 1, self.m.high_watermark + 2);
                let m = &mut self.m;
                match self.log.as_ref().expect("log open").delete_records(offset) {
                    Ok(start) => {
                        prop_assert!(offset <= m.high_watermark, "delete_records({}) past the high watermark", offset);
                        if offset > m.log_start {
                            m.log_start = offset;
                            m.recovery_point = m.recovery_point.max(offset);
                        }
                        prop_assert_eq!(start, m.log_start);
                    }
                    Err(Error::OffsetOutOfRange { offset: o, .. }) => {
                        // Kafka's DeleteRecords: negative offsets and offsets past the high
                        // watermark are out of range.
                        prop_assert!(
                            (offset < 0 || offset > m.high_watermark) && o == offset,
                            "refused delete_records({})",
                            offset
                        );
                    }
                    Err(e) => return Err(fail(e)),
                }
                Ok(())
            }
            Op::SetHighWatermark { pick } => {
                let hw = pick_in(*pick, self.m.log_start - 2, self.m.log_end + 2);
                if hw < 0 {
                    // No offset is negative: refused, and nothing changes.
                    let refused = self.log().set_high_watermark(hw);
                    prop_assert!(matches!(refused, Err(Error::InvalidArgument { .. })), "set_high_watermark({})", hw);
                    return Ok(());
                }
                let got = self.log().set_high_watermark(hw).map_err(fail)?;
                self.m.high_watermark = hw.clamp(self.m.log_start, self.m.log_end);
                self.m.hw_follows_log_end = false;
                prop_assert_eq!(got, self.m.high_watermark);
                Ok(())
            }
            Op::Flush => {
                self.log().flush().map_err(fail)?;
                self.m.recovery_point = self.m.log_end;
                Ok(())
            }
            Op::RollFlush => {
                self.log().wait_for_roll_flush().map_err(fail)?;
                if let Some(target) = self.m.roll_flush.take() {
                    self.m.recovery_point = self.m.recovery_point.max(target.min(self.m.log_end));
                }
                Ok(())
            }
            Op::Reopen { clean } => self.reopen(*clean),
            Op::Advance { ms } => {
                self.fx.clock.advance(*ms);
                Ok(())
            }
        }
    }

    fn append(&mut self, records: &[(Bytes, Bytes)], codec: usize, ts_delta: i64) -> Result<(), TestCaseError> {
        let codec = CompressionType::ALL[codec];
        let ts = self.fx.clock.milliseconds() + ts_delta;
        let specs: Vec<_> =
            records.iter().enumerate().map(|(i, (k, v))| (k.as_deref(), v.as_deref(), ts + i as i64)).collect();
        let mut bytes = batch(0, codec, &specs);
        let built = bytes.len();
        let active_before = self.log().segments().last().expect("a segment").base_offset();
        match self.log().append_as_leader(&mut bytes, 0) {
            Err(Error::RecordBatchTooLarge { size, .. }) => {
                prop_assert!(built > SEGMENT_BYTES, "a {}-byte batch was refused", built);
                prop_assert_eq!(size, built);
                Ok(())
            }
            Err(e) => Err(fail(e)),
            Ok(info) => {
                prop_assert!(built <= SEGMENT_BYTES, "a {}-byte batch was accepted", built);
                prop_assert_eq!(bytes.len(), built, "the producer's codec is kept in place");
                let m = &mut self.m;
                let n = records.len() as i64;
                prop_assert_eq!((info.first_offset, info.last_offset), (m.log_end, m.log_end + n - 1));
                let recs = records
                    .iter()
                    .enumerate()
                    .map(|(i, (k, v))| Rec {
                        offset: m.log_end + i as i64,
                        timestamp: ts + i as i64,
                        key: k.clone(),
                        value: v.clone(),
                    })
                    .collect();
                m.batches.push(MBatch { base: m.log_end, last: m.log_end + n - 1, size: built, records: recs });
                m.log_end += n;
                if m.hw_follows_log_end {
                    m.high_watermark = m.log_end;
                }
                // A roll asks for a flush of everything below the new segment (Kafka's
                // flush-log task); the recovery point moves when that flush runs.
                let active = self.log.as_ref().expect("log open").segments().last().expect("a segment").base_offset();
                if active > active_before {
                    m.rolled(active);
                }
                Ok(())
            }
        }
    }

    fn read(&self, offset: i64, max_bytes: u64, hw: bool, min_one: bool) -> Result<(), TestCaseError> {
        let m = &self.m;
        let isolation = if hw { FetchIsolation::HighWatermark } else { FetchIsolation::LogEnd };
        let result = self.log().read(offset, max_bytes, isolation, min_one);
        if offset < m.log_start || offset > m.log_end {
            match result {
                Err(Error::OffsetOutOfRange { offset: o, log_start_offset, log_end_offset }) => {
                    prop_assert_eq!((o, log_start_offset, log_end_offset), (offset, m.log_start, m.log_end));
                    return Ok(());
                }
                other => {
                    return Err(TestCaseError::fail(format!("read at {offset}: expected out of range, got {other:?}")))
                }
            }
        }
        let info = result.map_err(fail)?;
        prop_assert_eq!(
            (info.log_start_offset, info.high_watermark, info.log_end_offset),
            (m.log_start, m.high_watermark, m.log_end)
        );
        let bound = if hw { m.high_watermark } else { m.log_end };
        // The first batch holding `offset` or after it; nothing if it reaches the bound.
        let first = m.batches.iter().position(|b| b.last >= offset).filter(|&i| m.batches[i].last < bound);
        let mut want: Vec<&MBatch> = Vec::new();
        if let Some(first) = first {
            // One segment per read: the batches that share the first one's segment.
            let bases = self.log().segments().iter().map(|s| s.base_offset()).collect::<Vec<_>>();
            let seg_of = |b: &MBatch| bases.iter().rev().find(|&&s| s <= b.base).copied();
            let seg = seg_of(&m.batches[first]);
            let budget = if min_one { max_bytes.max(m.batches[first].size as u64) } else { max_bytes };
            let mut used = 0u64;
            for b in &m.batches[first..] {
                if b.last >= bound || seg_of(b) != seg || used + b.size as u64 > budget {
                    break;
                }
                used += b.size as u64;
                want.push(b);
            }
        }
        let got = batches(&info.records).iter().map(|b| (b.base_offset, b.last_offset)).collect::<Vec<_>>();
        let expected = want.iter().map(|b| (b.base, b.last)).collect::<Vec<_>>();
        prop_assert_eq!(got, expected, "read({}, {}, hw={}, min_one={})", offset, max_bytes, hw, min_one);
        let recs: Vec<Rec> = want.iter().flat_map(|b| b.records.iter().cloned()).collect();
        prop_assert_eq!(decode(&info.records), recs);
        Ok(())
    }

    fn truncate_to(&mut self, target: i64) -> Result<(), TestCaseError> {
        let changed = self.log().truncate_to(target).map_err(fail)?;
        let m = &mut self.m;
        prop_assert_eq!(changed, target < m.log_end, "truncate_to({})", target);
        if changed {
            m.batches.retain(|b| b.last < target);
            m.log_end = target;
            m.high_watermark = m.high_watermark.min(target);
            m.recovery_point = m.recovery_point.min(target);
            m.log_start = m.log_start.min(target);
        }
        Ok(())
    }

    fn reopen(&mut self, clean: bool) -> Result<(), TestCaseError> {
        let log = self.log.take().expect("log open");
        let active_base = log.segments().last().expect("a segment").base_offset();
        if clean {
            log.close().map_err(fail)?;
        }
        drop(log);
        let options = manual_flush(LogOpenOptions { log_start_offset: Some(self.m.log_start), ..self.fx.options() });
        // A flush queued before the close or crash died with the old log.
        self.m.roll_flush = None;
        let log = UnifiedLog::open(&self.fx.dir, self.cfg.clone(), options).map_err(fail)?;
        prop_assert_eq!(log.load_result().bytes_truncated, 0, "nothing torn");
        self.log = Some(log);
        let m = &mut self.m;
        let data_end = m.batches.last().map_or(i64::MIN, |b| b.last + 1);
        let log_end = active_base.max(data_end);
        if m.log_start > log_end {
            // Kafka's log-start-past-log-end wipe.
            m.batches.clear();
            m.log_end = m.log_start;
        } else {
            m.log_end = log_end;
        }
        m.high_watermark = m.log_end;
        m.hw_follows_log_end = true;
        // Recovered data is not yet fsynced: the recovery point restarts at the active
        // segment's base (Kafka's LogLoader keeps min(checkpoint, log end)).
        let active = self.log.as_ref().expect("log open").segments().last().expect("a segment").base_offset();
        m.recovery_point = active.max(m.log_start).min(m.log_end);
        Ok(())
    }

    /// The offsets agree with the model, and the segments hold exactly the model's batches, in
    /// order, each inside its segment's range.
    fn check(&self, full: bool) -> Result<(), TestCaseError> {
        let log = self.log();
        let m = &self.m;
        prop_assert_eq!(
            (log.log_start_offset(), log.high_watermark(), log.log_end_offset(), log.recovery_point()),
            (m.log_start, m.high_watermark, m.log_end, m.recovery_point),
            "(log start, high watermark, log end, recovery point)"
        );
        let segments = log.segments();
        prop_assert!(!segments.is_empty());
        prop_assert!(segments.windows(2).all(|w| w[0].base_offset() < w[1].base_offset()), "segments out of order");
        prop_assert!(segments.last().unwrap().base_offset() <= m.log_end);
        let mut found = Vec::new();
        for (i, s) in segments.iter().enumerate() {
            let mut bytes = Vec::new();
            s.log().read_into(0, s.size() as usize, &mut bytes).map_err(fail)?;
            let next_base = segments.get(i + 1).map_or(i64::MAX, |n| n.base_offset());
            for b in batches(&bytes) {
                prop_assert!(
                    b.base_offset >= s.base_offset() && b.last_offset < next_base,
                    "{:?} outside its segment",
                    b
                );
                found.push((b.base_offset, b.last_offset, b.size));
            }
            if full {
                let want: Vec<Rec> = m
                    .batches
                    .iter()
                    .filter(|b| b.base >= s.base_offset() && b.base < next_base)
                    .flat_map(|b| b.records.iter().cloned())
                    .collect();
                prop_assert_eq!(decode(&bytes), want, "segment {}", s.base_offset());
            }
        }
        let expected: Vec<_> = m.batches.iter().map(|b| (b.base, b.last, b.size)).collect();
        prop_assert_eq!(found, expected, "the batches on disk");
        Ok(())
    }
}

impl Model {
    fn rolled(&mut self, base: i64) {
        self.roll_flush = Some(self.roll_flush.map_or(base, |r| r.max(base)));
    }
}

/// `options` with the flushes after rolls left to `Op::RollFlush` (a scheduler of the log's
/// own, so a reopened log never runs the old one's tasks).
fn manual_flush(options: LogOpenOptions) -> LogOpenOptions {
    LogOpenOptions { flush_scheduler: Some(Arc::new(BackgroundScheduler::manual())), ..options }
}

#[allow(clippy::needless_pass_by_value)]
fn fail(e: Error) -> TestCaseError {
    TestCaseError::fail(format!("unexpected error: {e}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, max_shrink_iters: 300, ..proptest_config() })]

    #[test]
    fn unified_log_matches_an_in_memory_model(ops in vec(op(), 1..40)) {
        let mut h = Harness::new();
        for op in &ops {
            h.apply(op)?;
            h.check(matches!(op, Op::Reopen { .. }))?;
        }
        h.check(true)?;
        // Everything still readable through the log, from the log start.
        let start = h.m.log_start;
        let first = h.m.batches.iter().position(|b| b.last >= start);
        let want: Vec<Rec> =
            first.map_or_else(Vec::new, |i| h.m.batches[i..].iter().flat_map(|b| b.records.clone()).collect());
        let got = scan_all(h.log(), start).map_err(fail)?;
        prop_assert_eq!(got, want);
    }
}
