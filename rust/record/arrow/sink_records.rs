//! Spark's Kafka sink columns of an append as [`PlannedRecords`]: every row checked and sized
//! into uncompressed batches first ([`SinkRecords::plan`]), then each batch encoded when the
//! log asks for it, straight from the Arrow buffers into the log's write buffer.
//!
//! Thread-safety: not shared; one per append, used by the appending thread.

use super::sink_columns::{SinkColumns, SinkTarget};
use crate::error::{Error, Result};
use crate::record::builder::BatchHeader;
use crate::record::default_record::Header;
use crate::record::planned_batches::{BatchPlan, BatchPlanner, InPlaceBatch, PlannedRecords};

/// The rows of some Arrow record batches, planned into batches and encoded on demand.
#[derive(Debug)]
pub struct SinkRecords<'s, 'a> {
    sinks: &'s [SinkColumns<'a>],
    now_ms: i64,
    plan: BatchPlan,
    /// Where the next batch starts: the record batch and its row.
    sink: usize,
    row: usize,
    next_batch: usize,
    headers: Vec<Header<'a>>,
}

impl<'s, 'a> SinkRecords<'s, 'a> {
    /// Checks every row of `sinks` for `target` and plans their batches with `planner` (made
    /// with the append's `batch_size`, limit and `now_ms`, which is passed again here for the
    /// rows without a timestamp). Nothing is encoded yet.
    pub fn plan(
        sinks: &'s [SinkColumns<'a>],
        target: &SinkTarget<'_>,
        mut planner: BatchPlanner,
        now_ms: i64,
    ) -> Result<Self> {
        let mut headers = Vec::new();
        for sink in sinks {
            sink.plan(target, &mut planner, &mut headers)?;
        }
        let plan = planner.finish()?;
        Ok(SinkRecords { sinks, now_ms, plan, sink: 0, row: 0, next_batch: 0, headers })
    }

    /// Every row, in order: its index in the append and its sink.
    fn rows(&self) -> impl Iterator<Item = (&'s SinkColumns<'a>, usize)> {
        self.sinks.iter().flat_map(|s| (0..s.rows()).map(move |i| (s, i)))
    }
}

impl PlannedRecords for SinkRecords<'_, '_> {
    fn plan(&self) -> &BatchPlan {
        &self.plan
    }

    fn encode_next(&mut self, header: &BatchHeader, log_append_time: Option<i64>, out: &mut Vec<u8>) -> Result<()> {
        let planned = *self.plan.batches.get(self.next_batch).ok_or_else(|| {
            Error::illegal_state(format!("all {} planned batches were encoded", self.plan.batches.len()))
        })?;
        let sinks = self.sinks;
        let mut batch = InPlaceBatch::begin(out, planned.size);
        for _ in 0..planned.records {
            while self.row >= sinks.get(self.sink).map_or(usize::MAX, SinkColumns::rows) {
                self.sink += 1;
                self.row = 0;
            }
            let sink = sinks.get(self.sink).ok_or_else(|| Error::illegal_state("a planned batch passed the rows"))?;
            let (timestamp, key, value) = sink.read_row(self.row, &mut self.headers)?;
            batch.push(timestamp.unwrap_or(self.now_ms), key, value, &self.headers, out);
            self.row += 1;
        }
        batch.finish(out, header, log_append_time, &planned)?;
        self.next_batch += 1;
        Ok(())
    }

    fn first_timestamp_outside(&self, earliest: i64, latest: i64) -> Option<(u64, i64)> {
        self.rows().enumerate().find_map(|(n, (sink, i))| {
            let ts = sink.read_row(i, &mut Vec::new()).ok()?.0.unwrap_or(self.now_ms);
            (ts < earliest || ts > latest).then_some((n as u64, ts))
        })
    }
}
