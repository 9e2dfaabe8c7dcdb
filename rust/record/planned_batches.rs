//! Uncompressed producer batches planned before they are encoded: [`BatchPlanner`] groups
//! records exactly as `producer_batches::ProducerBatches` does (same
//! `batch_size` rule, same per-batch limit and error) but only sizes them, so that every record
//! is checked and every batch known to fit before a byte is written. [`PlannedRecords`] then
//! encodes the batches one at a time, straight into the writer's buffer with their final base
//! offset and leader epoch ([`InPlaceBatch`]): the log's trusted leader append
//! (`UnifiedLog::append_planned_as_leader`) writes them chunk by chunk, with no buffer holding
//! the whole append, no builder copy and no second pass over the records.
//!
//! Thread-safety: not shared; one per append.

use super::batch::{NO_TIMESTAMP, RECORD_BATCH_OVERHEAD};
use super::builder::{finish_uncompressed_in_place, BatchHeader};
use super::compression::CompressionType;
use super::default_record::{encode_record, record_body_size, Header};
use super::producer_batches::{closes_batch, BatchLimit, FirstRecord};
use super::varint::{size_of_varint, size_of_varlong};
use crate::error::{Error, Result};

/// One batch of a [`BatchPlan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedBatch {
    pub records: u32,
    /// Its size in bytes, header included.
    pub size: usize,
    /// The largest record timestamp in it.
    pub max_timestamp: i64,
}

/// The uncompressed batches some records make, in order, and what the log checks of them.
#[derive(Debug, Clone, Default)]
pub struct BatchPlan {
    pub batches: Vec<PlannedBatch>,
    pub records: u64,
    pub bytes: u64,
    /// The smallest and largest record timestamps.
    pub min_timestamp: i64,
    pub max_timestamp: i64,
    /// The largest batch, in bytes.
    pub max_batch_size: usize,
    /// The index (in the append) of the first record without a key, if any.
    pub first_null_key: Option<u64>,
}

/// Sizes records into uncompressed batches as `ProducerBatches` groups them, without encoding
/// them.
#[derive(Debug)]
pub struct BatchPlanner {
    batch_size: usize,
    now_ms: i64,
    limit: Option<BatchLimit>,
    rows: usize,
    plan: BatchPlan,
    /// The open batch: its records, their encoded bytes, first and largest timestamps.
    count: u32,
    bytes: usize,
    first_timestamp: i64,
    max_timestamp: i64,
    first: FirstRecord,
}

impl BatchPlanner {
    /// Batches of at most `batch_size` uncompressed bytes; a record without a timestamp gets
    /// `now_ms`.
    pub fn new(batch_size: usize, now_ms: i64) -> Self {
        BatchPlanner {
            batch_size,
            now_ms,
            limit: None,
            rows: 0,
            plan: BatchPlan { min_timestamp: i64::MAX, max_timestamp: NO_TIMESTAMP, ..BatchPlan::default() },
            count: 0,
            bytes: 0,
            first_timestamp: NO_TIMESTAMP,
            max_timestamp: NO_TIMESTAMP,
            first: FirstRecord::default(),
        }
    }

    /// Refuses, naming its rows, a batch bigger than `limit` (as `ProducerBatches::with_limit`).
    #[must_use]
    pub fn with_limit(mut self, limit: BatchLimit) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Adds the next record (row `rows()` of the append).
    #[inline]
    pub fn push(
        &mut self,
        timestamp: Option<i64>,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header<'_>],
    ) -> Result<()> {
        // The body with both deltas 0 (one byte each): ProducerBatches' estimate, and the
        // real body once the deltas' sizes replace those two bytes.
        let zero_deltas = record_body_size(0, 0, key, value, headers);
        if closes_batch(self.count > 0, RECORD_BATCH_OVERHEAD + self.bytes, zero_deltas, self.batch_size) {
            self.close_batch()?;
        }
        let ts = timestamp.unwrap_or(self.now_ms);
        if ts < 0 && ts != NO_TIMESTAMP {
            return Err(Error::invalid_record(format!("invalid negative timestamp {ts}")));
        }
        if self.count == 0 {
            self.first = FirstRecord::new(self.rows, key, value, headers);
            self.first_timestamp = ts;
        }
        let body = zero_deltas - 2
            + size_of_varint(self.count as i32)
            + size_of_varlong(ts.wrapping_sub(self.first_timestamp));
        self.bytes += size_of_varint(body as i32) + body;
        self.max_timestamp = self.max_timestamp.max(ts);
        self.plan.min_timestamp = self.plan.min_timestamp.min(ts);
        if key.is_none() && self.plan.first_null_key.is_none() {
            self.plan.first_null_key = Some(self.rows as u64);
        }
        self.count += 1;
        self.rows += 1;
        Ok(())
    }

    /// How many records were pushed.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The plan; `InvalidRecord` when no record was pushed.
    pub fn finish(mut self) -> Result<BatchPlan> {
        if self.count > 0 {
            self.close_batch()?;
        }
        if self.plan.batches.is_empty() {
            return Err(Error::invalid_record("no records to append"));
        }
        Ok(self.plan)
    }

    fn close_batch(&mut self) -> Result<()> {
        let size = RECORD_BATCH_OVERHEAD + self.bytes;
        if let Some(limit) = self.limit.as_ref().filter(|l| size > l.bytes) {
            return Err(self.first.too_large(size, self.count as usize, limit, CompressionType::None, self.batch_size));
        }
        let batch = PlannedBatch { records: self.count, size, max_timestamp: self.max_timestamp };
        let p = &mut self.plan;
        p.batches.push(batch);
        p.records += u64::from(self.count);
        p.bytes += size as u64;
        p.max_timestamp = p.max_timestamp.max(self.max_timestamp);
        p.max_batch_size = p.max_batch_size.max(size);
        (self.count, self.bytes, self.max_timestamp) = (0, 0, NO_TIMESTAMP);
        Ok(())
    }
}

/// Records checked and sized into a [`BatchPlan`], encoded on demand: what the log's trusted
/// leader append writes (`UnifiedLog::append_planned_as_leader`). Every record was checked
/// when planned, so encoding them cannot fail on their content.
pub trait PlannedRecords {
    /// The batches, checked against the limit the plan was made with.
    fn plan(&self) -> &BatchPlan;

    /// Encodes the next batch of the plan at the end of `out` with `header` (its base offset,
    /// leader epoch and timestamp type; uncompressed, no producer), stamping `log_append_time`
    /// as the max timestamp of a LogAppendTime batch. Batches come in plan order.
    fn encode_next(&mut self, header: &BatchHeader, log_append_time: Option<i64>, out: &mut Vec<u8>) -> Result<()>;

    /// The first record (its index in the append, and its timestamp) whose timestamp lies
    /// outside `[earliest, latest]`: the one the log names when it refuses the append.
    fn first_timestamp_outside(&self, earliest: i64, latest: i64) -> Option<(u64, i64)>;
}

/// One uncompressed batch being encoded at the end of a buffer: its records are written in
/// place after a 61-byte gap the header fills at the end.
#[derive(Debug)]
pub struct InPlaceBatch {
    start: usize,
    count: u32,
    first_timestamp: i64,
    max_timestamp: i64,
}

impl InPlaceBatch {
    /// Starts a batch of about `size` bytes at the end of `out`.
    pub fn begin(out: &mut Vec<u8>, size: usize) -> Self {
        out.reserve(size);
        let start = out.len();
        out.resize(start + RECORD_BATCH_OVERHEAD, 0);
        InPlaceBatch { start, count: 0, first_timestamp: NO_TIMESTAMP, max_timestamp: NO_TIMESTAMP }
    }

    /// Encodes the next record (offset delta = records so far).
    #[inline]
    pub fn push(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header<'_>],
        out: &mut Vec<u8>,
    ) {
        if self.count == 0 {
            self.first_timestamp = timestamp;
        }
        encode_record(self.count as i32, timestamp.wrapping_sub(self.first_timestamp), key, value, headers, out);
        self.max_timestamp = self.max_timestamp.max(timestamp);
        self.count += 1;
    }

    /// Writes the header and CRC; the batch must be the one `planned` describes.
    pub fn finish(
        self,
        out: &mut [u8],
        header: &BatchHeader,
        log_append_time: Option<i64>,
        planned: &PlannedBatch,
    ) -> Result<()> {
        let size = out.len() - self.start;
        if self.count != planned.records || size != planned.size || self.max_timestamp != planned.max_timestamp {
            return Err(Error::illegal_state(format!(
                "a planned batch of {} records and {} bytes was encoded as {} records and {size} bytes",
                planned.records, planned.size, self.count
            )));
        }
        let count = i32::try_from(self.count).map_err(|_| Error::illegal_state("too many records in a batch"))?;
        finish_uncompressed_in_place(
            out,
            self.start,
            header,
            count,
            self.first_timestamp,
            self.max_timestamp,
            log_append_time,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::producer_batches::ProducerBatches;
    use crate::record::records::BatchIter;

    type Row = (Option<i64>, Option<Vec<u8>>, Option<Vec<u8>>, Vec<(Vec<u8>, Option<Vec<u8>>)>);

    /// Plans `rows`, encodes the plan in place, and checks both against `ProducerBatches`.
    fn same_as_producer_batches(rows: &[Row], batch_size: usize, limit: Option<usize>) {
        let to_limit = |l: usize| BatchLimit { bytes: l, describe: "the limit".into() };
        let mut produced = ProducerBatches::new(CompressionType::None, batch_size, 77);
        let mut planner = BatchPlanner::new(batch_size, 77);
        if let Some(l) = limit.map(to_limit) {
            produced = produced.with_limit(l.clone());
            planner = planner.with_limit(l);
        }
        let (mut want, mut got) = (Ok(()), Ok(()));
        for (ts, k, v, h) in rows {
            let headers: Vec<Header<'_>> = h.iter().map(|(k, v)| (&k[..], v.as_deref())).collect();
            want = want.and_then(|()| produced.push(*ts, k.as_deref(), v.as_deref(), &headers));
            got = got.and_then(|()| planner.push(*ts, k.as_deref(), v.as_deref(), &headers));
        }
        let want = want.and_then(|()| produced.finish());
        let plan = got.and_then(|()| planner.finish());
        let (want, plan) = match (want, plan) {
            (Err(w), Err(g)) => return assert_eq!(w.to_string(), g.to_string()),
            (Ok(w), Ok(p)) => (w, p),
            (w, p) => panic!("{w:?} vs {p:?}"),
        };
        let sizes: Vec<(u32, usize, i64)> = BatchIter::new(&want)
            .map(|b| {
                let b = b.unwrap().1;
                (b.record_count().unwrap() as u32, b.size_in_bytes(), b.max_timestamp())
            })
            .collect();
        let planned: Vec<(u32, usize, i64)> =
            plan.batches.iter().map(|b| (b.records, b.size, b.max_timestamp)).collect();
        assert_eq!(planned, sizes);
        assert_eq!(plan.bytes, want.len() as u64);
        // Encoded in place, batch after batch: the bytes ProducerBatches built.
        let mut out = Vec::new();
        let mut next = 0;
        for b in &plan.batches {
            let mut batch = InPlaceBatch::begin(&mut out, b.size);
            for (ts, k, v, h) in &rows[next..next + b.records as usize] {
                let headers: Vec<Header<'_>> = h.iter().map(|(k, v)| (&k[..], v.as_deref())).collect();
                batch.push(ts.unwrap_or(77), k.as_deref(), v.as_deref(), &headers, &mut out);
            }
            batch.finish(&mut out, &BatchHeader::default(), None, b).unwrap();
            next += b.records as usize;
        }
        assert_eq!(out, want);
    }

    fn row(ts: Option<i64>, key: Option<&[u8]>, value: usize, headers: usize) -> Row {
        let h = (0..headers).map(|i| (vec![b'h'; i + 1], Some(vec![1; i]))).collect();
        (ts, key.map(<[u8]>::to_vec), Some(vec![7; value]), h)
    }

    #[test]
    fn plans_the_batches_producer_batches_builds() {
        let rows: Vec<Row> = (0..300)
            .map(|i| {
                // Timestamps far apart make the deltas' varints grow inside a batch.
                let ts = if i % 7 == 0 { None } else { Some(1_000 + (i as i64 % 13) * 100_000_000) };
                row(ts, (i % 5 != 0).then_some(b"key"), (i * 37) % 200, i % 3)
            })
            .collect();
        for batch_size in [0, 61, 200, 1000, 16384] {
            same_as_producer_batches(&rows, batch_size, None);
        }
    }

    #[test]
    fn refuses_a_batch_over_the_limit_as_producer_batches_does() {
        let rows = vec![row(None, Some(b"k"), 50, 0), row(Some(3), None, 300, 1), row(None, Some(b"k"), 700, 0)];
        same_as_producer_batches(&rows, 1000, Some(200));
        same_as_producer_batches(&rows, 10, Some(200));
        same_as_producer_batches(&rows[..2], 10, Some(400));
    }

    #[test]
    fn keeps_what_the_log_checks() {
        let rows = [row(Some(50), Some(b"k"), 1, 0), row(None, None, 1, 0), row(Some(9), None, 1, 0)];
        let mut p = BatchPlanner::new(16384, 20);
        for (ts, k, v, _) in &rows {
            p.push(*ts, k.as_deref(), v.as_deref(), &[]).unwrap();
        }
        let plan = p.finish().unwrap();
        assert_eq!((plan.min_timestamp, plan.max_timestamp, plan.first_null_key, plan.records), (9, 50, Some(1), 3));
        assert!(BatchPlanner::new(10, 5).finish().unwrap_err().to_string().contains("no records to append"));
    }
}
