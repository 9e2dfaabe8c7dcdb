//! Column buffers in Arrow's layout for Spark's Kafka-source schema, filled straight from the
//! decoded batches (no Python object per record). Python wraps them with
//! `pyarrow.Array.from_buffers`.

use pyo3::prelude::*;

use super::buffer::{ColumnBytes, OwnedBuffer};
use super::results::py_result;
use crate::error::Result;
use crate::log::unified_log::{FetchIsolation, UnifiedLog};
use crate::record::batch::{RecordBatch, COMPRESSION_CODEC_MASK};
use crate::record::default_record::Record;
use crate::record::records::AnyBatch;
use crate::record::uncompressed;

/// Decodes `[start, end)` of `log` into Arrow-layout columns, stopping after about `max_bytes`
/// of key/value data, with the offset to read next (`UnifiedLog.read_columns`). Control
/// records are left out, and with `TxnCommitted` the records of aborted transactions too.
/// Uncompressed batches take the fast walk of `record/uncompressed.rs`; a batch it gives up on
/// is undone and decoded the general way, as compressed and legacy batches are.
pub(crate) fn read_columns(
    log: &UnifiedLog,
    start: i64,
    end: i64,
    isolation: FetchIsolation,
    max_bytes: usize,
) -> Result<(KafkaColumns, i64)> {
    // Records below the log start offset (deleted, but still in their batch) never leak out,
    // whatever `start` the caller gave; `records()` and `read()` agree.
    let start = start.max(log.log_start_offset());
    let tp = log.topic_partition();
    let mut cols = KafkaColumns::new(&tp.topic, tp.partition);
    let mut next = start;
    let mut scratch = Vec::new();
    // At most one row per offset of the range the log holds.
    let max_rows = (end.min(log.log_end_offset()) - start).max(0) as usize;
    let mut planned = false;
    let mut plain = true;
    log.scan_visible(start, end, isolation, |batch, visible| {
        if visible {
            // The count is untrusted until decoded: a record takes at least 7 bytes.
            let (rows, bytes) = match &batch {
                AnyBatch::V2(b) => ((b.records_count().max(0) as usize).min(b.size_in_bytes() / 7), b.size_in_bytes()),
                AnyBatch::Legacy(_) => (0, 0),
            };
            cols.start_batch(timestamp_type_id(&batch), rows, bytes);
            let in_range = |r: &Record<'_>| r.offset >= start && r.offset < end;
            let fast = match &batch {
                AnyBatch::V2(b) if plain && is_plain_candidate(b, start, end) => {
                    // A batch of other records (nulls, headers) says the next ones likely hold
                    // such records too: the rest of the read pushes record by record.
                    plain = cols.push_plain_batch(b, start, end);
                    plain || push_records_fast(&mut cols, b, start, end)
                }
                AnyBatch::V2(b) => push_records_fast(&mut cols, b, start, end),
                AnyBatch::Legacy(_) => false,
            };
            if !fast {
                batch.for_each_record(&mut scratch, |r| {
                    if in_range(&r) {
                        cols.push(&r);
                    }
                    Ok(())
                })?;
            }
            if !planned && cols.rows > 0 {
                cols.plan(max_rows, max_bytes);
                planned = true;
            }
        }
        next = batch.next_offset().min(end.max(start));
        Ok(cols.data_bytes() < max_bytes)
    })?;
    cols.finish();
    Ok((cols, next))
}

/// Whether `b` may take [`KafkaColumns::push_plain_batch`]: uncompressed, and wholly inside
/// `[start, end)`.
fn is_plain_candidate(b: &RecordBatch<'_>, start: i64, end: i64) -> bool {
    b.attributes() & COMPRESSION_CODEC_MASK == 0 && b.base_offset() >= start && b.last_offset() < end
}

/// Pushes the records of `b` in `[start, end)` through the fast walk; false, with the columns
/// as they were, when the walk gives up (decode the batch the general way).
fn push_records_fast(cols: &mut KafkaColumns, b: &RecordBatch<'_>, start: i64, end: i64) -> bool {
    let mark = cols.mark();
    let done = uncompressed::try_for_each_record(b, |r| {
        if r.offset >= start && r.offset < end {
            cols.push(&r);
        }
    });
    if !done {
        cols.rollback(&mark);
    }
    done
}

/// Kafka's `TimestampType` id of a batch's records, as consumers (and Spark's `timestampType`
/// column) see it: 0 CreateTime, 1 LogAppendTime, and -1 (`NO_TIMESTAMP_TYPE`) for magic-0
/// messages, which carry no timestamp (`LegacyRecord.timestampType`).
pub fn timestamp_type_id(batch: &AnyBatch<'_>) -> i32 {
    if batch.magic() == 0 {
        -1
    } else {
        batch.timestamp_type() as i32
    }
}

/// A variable-size binary/string column: validity bitmap, int32 offsets, data.
///
/// The bitmap is built only once a null arrives (Python passes none while `nulls` is 0);
/// [`BinaryColumn::finish`] fills it for a column without nulls, as Arrow lays it out.
#[derive(Debug, Default)]
pub struct BinaryColumn {
    pub validity: ColumnBytes,
    pub offsets: ColumnBytes,
    pub data: ColumnBytes,
    pub len: usize,
    pub nulls: usize,
}

impl BinaryColumn {
    fn new() -> Self {
        let mut c = BinaryColumn::default();
        c.offsets.extend_from_slice(&0i32.to_le_bytes());
        c
    }

    /// Room for `rows` more values of `bytes` in all.
    fn reserve(&mut self, rows: usize, bytes: usize) {
        self.offsets.reserve(rows * 4);
        self.data.reserve(bytes);
    }

    // Always inlined: called per key and value of every record.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn push(&mut self, v: Option<&[u8]>) {
        if let Some(b) = v {
            self.data.extend_from_slice(b);
            if self.nulls > 0 {
                self.push_valid_bit(true);
            }
        } else {
            if self.nulls == 0 {
                self.fill_validity();
            }
            self.nulls += 1;
            self.push_valid_bit(false);
        }
        self.offsets.extend_from_slice(&(self.data.len() as i32).to_le_bytes());
        self.len += 1;
    }

    /// Appends the bit of row `self.len` to the bitmap.
    #[inline]
    fn push_valid_bit(&mut self, valid: bool) {
        if self.len.is_multiple_of(8) {
            self.validity.push(0);
        }
        if valid {
            *self.validity.last_mut().expect("byte pushed above") |= 1 << (self.len % 8);
        }
    }

    /// The bitmap of the first `self.len` rows, all valid (one bit per row, the last byte's
    /// unused bits clear).
    #[cold]
    fn fill_validity(&mut self) {
        self.validity.extend_repeated(&[0xff], self.len / 8);
        if !self.len.is_multiple_of(8) {
            self.validity.push((1u8 << (self.len % 8)) - 1);
        }
    }

    /// Completes the bitmap of a column without nulls.
    fn finish(&mut self) {
        if self.nulls == 0 && self.validity.is_empty() {
            self.fill_validity();
        }
    }

    fn mark(&self) -> BinaryMark {
        BinaryMark {
            len: self.len,
            nulls: self.nulls,
            validity: self.validity.len(),
            offsets: self.offsets.len(),
            data: self.data.len(),
        }
    }

    /// Back to where `mark` was taken (before [`BinaryColumn::finish`]).
    fn rollback(&mut self, mark: &BinaryMark) {
        self.len = mark.len;
        self.nulls = mark.nulls;
        self.offsets.truncate(mark.offsets);
        self.data.truncate(mark.data);
        // Without nulls there is no bitmap yet; with them, the last byte loses the later bits.
        self.validity.truncate(if mark.nulls == 0 { 0 } else { mark.validity });
        if mark.nulls > 0 && !mark.len.is_multiple_of(8) {
            if let Some(last) = self.validity.last_mut() {
                *last &= (1u8 << (mark.len % 8)) - 1;
            }
        }
    }

    /// Room for `rows` values in all, of `bytes_per_row` each on average (as so far).
    fn plan(&mut self, rows: usize, bytes_per_row: usize) {
        self.offsets.reserve_total((rows + 1) * 4);
        self.data.reserve_total(rows.saturating_mul(bytes_per_row));
    }

    /// Appends the same value `n` times.
    fn push_repeated(&mut self, v: &[u8], n: usize) {
        self.data.extend_repeated(v, n);
        let base = self.offsets.len() / 4 - 1;
        self.offsets.reserve(n * 4);
        for i in 1..=n {
            self.offsets.extend_from_slice(&(((base + i) * v.len()) as i32).to_le_bytes());
        }
        self.len += n;
    }
}

/// Where a [`BinaryColumn`] stood.
#[derive(Debug, Clone, Copy)]
struct BinaryMark {
    len: usize,
    nulls: usize,
    validity: usize,
    offsets: usize,
    data: usize,
}

/// Where the columns stood before a batch, to undo its records ([`KafkaColumns::rollback`]).
#[derive(Debug)]
pub struct ColumnsMark {
    binary: [BinaryMark; 4],
    fixed: [usize; 3],
    rows: usize,
    pending_ts_type: usize,
}

/// All columns of a chunk.
///
/// Thread-safety: a plain owned value, filled by one thread (`&mut`) and handed to Python whole.
#[derive(Debug)]
pub struct KafkaColumns {
    topic_name: Vec<u8>,
    partition_id: i32,
    pub key: BinaryColumn,
    pub value: BinaryColumn,
    pub topic: BinaryColumn,
    pub partition: ColumnBytes,
    pub offset: ColumnBytes,
    pub timestamp_us: ColumnBytes,
    pub timestamp_type: ColumnBytes,
    /// List offsets (int32) into the header entries.
    pub header_offsets: ColumnBytes,
    pub header_key: BinaryColumn,
    pub header_value: BinaryColumn,
    pub rows: usize,
    /// Rows whose `timestamp_type` is still to be written (those of the current batch).
    pending_ts_type: usize,
    ts_type: i32,
}

impl KafkaColumns {
    /// Empty columns for records of `topic`-`partition`.
    pub fn new(topic: &str, partition: i32) -> Self {
        let mut c = KafkaColumns {
            topic_name: topic.as_bytes().to_vec(),
            partition_id: partition,
            topic: BinaryColumn::new(),
            partition: ColumnBytes::default(),
            key: BinaryColumn::new(),
            value: BinaryColumn::new(),
            offset: ColumnBytes::default(),
            timestamp_us: ColumnBytes::default(),
            timestamp_type: ColumnBytes::default(),
            header_offsets: ColumnBytes::default(),
            header_key: BinaryColumn::new(),
            header_value: BinaryColumn::new(),
            rows: 0,
            pending_ts_type: 0,
            ts_type: 0,
        };
        c.header_offsets.extend_from_slice(&0i32.to_le_bytes());
        c
    }

    /// Starts a batch whose records have timestamp type `ts_type` ([`timestamp_type_id`]), with
    /// room for `rows` more records carrying about `bytes` of keys and values.
    pub fn start_batch(&mut self, ts_type: i32, rows: usize, bytes: usize) {
        self.flush_ts_type();
        self.ts_type = ts_type;
        self.key.reserve(rows, 0);
        self.value.reserve(rows, bytes);
        self.offset.reserve(rows * 8);
        self.timestamp_us.reserve(rows * 8);
        self.header_offsets.reserve(rows * 4);
    }

    /// Sizes every column for the whole chunk at once, from the records gathered so far: at
    /// most `max_rows` rows (what the range holds), and as many as the chunk takes to reach
    /// `max_bytes` of keys and values at the average size so far, one batch's worth over. Each
    /// large column then takes its memory once (a kept map from an earlier chunk, see
    /// `buffer.rs`) instead of growing into fresh pages.
    pub fn plan(&mut self, max_rows: usize, max_bytes: usize) {
        let rows = self.rows.max(1);
        let per_row = |bytes: usize| bytes.div_ceil(rows);
        let estimate = max_bytes / per_row(self.data_bytes()).max(1) + 2 * self.rows;
        let target = max_rows.min(estimate + estimate / 16);
        let rows_now = self.rows;
        for c in [&mut self.key, &mut self.value] {
            c.plan(target, per_row(c.data.len()));
        }
        let entries = |n: usize| (target as u128 * n as u128 / rows as u128) as usize;
        for c in [&mut self.header_key, &mut self.header_value] {
            if c.len > 0 {
                let total = entries(c.len);
                c.plan(total, c.data.len().div_ceil(c.len));
            }
        }
        self.topic.plan(target, self.topic_name.len());
        self.header_offsets.reserve_total((target + 1) * 4);
        for (c, width) in [
            (&mut self.offset, 8),
            (&mut self.timestamp_us, 8),
            (&mut self.timestamp_type, 4),
            (&mut self.partition, 4),
        ] {
            c.reserve_total(target.max(rows_now) * width);
        }
    }

    /// Where the columns stand now (between records).
    pub fn mark(&self) -> ColumnsMark {
        ColumnsMark {
            binary: [self.key.mark(), self.value.mark(), self.header_key.mark(), self.header_value.mark()],
            fixed: [self.offset.len(), self.timestamp_us.len(), self.header_offsets.len()],
            rows: self.rows,
            pending_ts_type: self.pending_ts_type,
        }
    }

    /// Undoes the records pushed since `mark` was taken (in the same batch).
    pub fn rollback(&mut self, mark: &ColumnsMark) {
        let binary = [&mut self.key, &mut self.value, &mut self.header_key, &mut self.header_value];
        for (c, m) in binary.into_iter().zip(&mark.binary) {
            c.rollback(m);
        }
        let fixed = [&mut self.offset, &mut self.timestamp_us, &mut self.header_offsets];
        for (c, &len) in fixed.into_iter().zip(&mark.fixed) {
            c.truncate(len);
        }
        self.rows = mark.rows;
        self.pending_ts_type = mark.pending_ts_type;
    }

    fn flush_ts_type(&mut self) {
        let n = std::mem::take(&mut self.pending_ts_type);
        self.timestamp_type.extend_repeated(&self.ts_type.to_le_bytes(), n);
    }

    /// Bytes of variable data gathered so far.
    pub fn data_bytes(&self) -> usize {
        self.key.data.len() + self.value.data.len() + self.header_key.data.len() + self.header_value.data.len()
    }

    /// Appends one record of the current batch.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn push(&mut self, r: &Record<'_>) {
        self.key.push(r.key);
        self.value.push(r.value);
        self.offset.extend_from_slice(&r.offset.to_le_bytes());
        self.timestamp_us.extend_from_slice(&r.timestamp.saturating_mul(1000).to_le_bytes());
        if r.header_count() > 0 {
            self.push_headers(r);
        }
        self.header_offsets.extend_from_slice(&(self.header_key.len as i32).to_le_bytes());
        self.pending_ts_type += 1;
        self.rows += 1;
    }

    /// Appends every record of `batch`, an uncompressed v2 batch, when each lies in
    /// `[start, end)` and has a key and a value and no header, and neither the key nor the value
    /// column has a null so far (no bitmap to extend): each column is written through a
    /// [`super::buffer::Cursor`] and its length committed once for the batch. False, with the
    /// columns unchanged, for any other batch (or one the fast walk gives up on).
    fn push_plain_batch(&mut self, batch: &RecordBatch<'_>, start: i64, end: i64) -> bool {
        if self.key.nulls > 0 || self.value.nulls > 0 {
            return false;
        }
        // The count is untrusted until decoded: a record takes at least 7 bytes.
        let size = batch.size_in_bytes();
        let rows = (batch.records_count().max(0) as usize).min(size / 7);
        for c in [&mut self.key.offsets, &mut self.value.offsets, &mut self.header_offsets] {
            c.reserve(rows * 4);
        }
        self.offset.reserve(rows * 8);
        self.timestamp_us.reserve(rows * 8);
        self.key.data.reserve(size);
        self.value.data.reserve(size);
        let no_headers = (self.header_key.len as i32).to_le_bytes();
        let (mut key, mut key_offsets) = (self.key.data.cursor(), self.key.offsets.cursor());
        let (mut value, mut value_offsets) = (self.value.data.cursor(), self.value.offsets.cursor());
        let (mut offset, mut timestamp) = (self.offset.cursor(), self.timestamp_us.cursor());
        let mut header_offsets = self.header_offsets.cursor();
        let (mut ok, mut n) = (true, 0usize);
        let walked = uncompressed::try_for_each_record(batch, |r| {
            let (true, Some(k), Some(v)) = (ok, r.key, r.value) else {
                ok = false;
                return;
            };
            ok = r.header_count() == 0
                && r.offset >= start
                && r.offset < end
                && key.put(k)
                && key_offsets.put(&(key.len() as i32).to_le_bytes())
                && value.put(v)
                && value_offsets.put(&(value.len() as i32).to_le_bytes())
                && offset.put(&r.offset.to_le_bytes())
                && timestamp.put(&r.timestamp.saturating_mul(1000).to_le_bytes())
                && header_offsets.put(&no_headers);
            n += 1;
        });
        if !(walked && ok) {
            return false;
        }
        let lens = [key.len(), key_offsets.len(), value.len(), value_offsets.len()];
        let (offset, timestamp, header_offsets) = (offset.len(), timestamp.len(), header_offsets.len());
        self.key.data.commit(lens[0]);
        self.key.offsets.commit(lens[1]);
        self.value.data.commit(lens[2]);
        self.value.offsets.commit(lens[3]);
        self.offset.commit(offset);
        self.timestamp_us.commit(timestamp);
        self.header_offsets.commit(header_offsets);
        self.key.len += n;
        self.value.len += n;
        self.pending_ts_type += n;
        self.rows += n;
        true
    }

    #[inline(never)]
    fn push_headers(&mut self, r: &Record<'_>) {
        for (k, v) in r.headers() {
            // Header keys are UTF-8 strings in Kafka; invalid bytes are replaced as Java does.
            match std::str::from_utf8(k) {
                Ok(_) => self.header_key.push(Some(k)),
                Err(_) => self.header_key.push(Some(String::from_utf8_lossy(k).as_bytes())),
            }
            self.header_value.push(v);
        }
    }

    /// Writes the columns that are the same for every row of a batch (topic, partition,
    /// timestamp type) and completes the validity bitmaps: the columns are then whole.
    pub fn finish(&mut self) {
        self.flush_ts_type();
        let rows = self.rows - self.topic.len;
        self.topic.push_repeated(&self.topic_name, rows);
        self.partition.extend_repeated(&self.partition_id.to_le_bytes(), rows);
        for c in [&mut self.key, &mut self.value, &mut self.topic, &mut self.header_key, &mut self.header_value] {
            c.finish();
        }
    }
}

py_result! { record
    /// A binary or string column of `UnifiedLog.read_columns`, in Arrow's layout.
    #[module = "kafkalog._native"]
    pub struct BinaryBuffers {
        /// The validity bitmap (one bit per row, set = not null).
        validity: Py<OwnedBuffer>,
        /// `rows + 1` little-endian int32 offsets into `data`.
        offsets: Py<OwnedBuffer>,
        data: Py<OwnedBuffer>,
        /// How many rows are null.
        nulls: usize,
    }
}

py_result! { record
    /// One chunk of `UnifiedLog.read_columns`: Spark's Kafka-source columns as Arrow buffers
    /// (`kafkalog.arrow.columns_to_record_batch` wraps them), and where the next chunk starts.
    #[module = "kafkalog._native"]
    pub struct ArrowColumns {
        rows: usize,
        key: Py<BinaryBuffers>,
        value: Py<BinaryBuffers>,
        topic: Py<BinaryBuffers>,
        /// int32 per row.
        partition: Py<OwnedBuffer>,
        /// int64 per row.
        offset: Py<OwnedBuffer>,
        /// int64 microseconds per row.
        timestamp: Py<OwnedBuffer>,
        /// int32 per row.
        timestamp_type: Py<OwnedBuffer>,
        /// `rows + 1` int32 offsets into the header columns.
        header_offsets: Py<OwnedBuffer>,
        header_count: usize,
        header_key: Py<BinaryBuffers>,
        header_value: Py<BinaryBuffers>,
        /// The offset to read next.
        next_offset: i64,
    }
}

fn owned(py: Python<'_>, data: &mut ColumnBytes) -> PyResult<Py<OwnedBuffer>> {
    Py::new(py, OwnedBuffer::from_column(std::mem::take(data)))
}

fn binary(py: Python<'_>, c: &mut BinaryColumn) -> PyResult<Py<BinaryBuffers>> {
    let buffers = BinaryBuffers {
        validity: owned(py, &mut c.validity)?,
        offsets: owned(py, &mut c.offsets)?,
        data: owned(py, &mut c.data)?,
        nulls: c.nulls,
    };
    Py::new(py, buffers)
}

impl ArrowColumns {
    /// Hands the buffers of `c` ([`KafkaColumns::finish`]ed) to Python without copying them.
    pub(crate) fn new(py: Python<'_>, c: &mut KafkaColumns, next_offset: i64) -> PyResult<Self> {
        Ok(ArrowColumns {
            rows: c.rows,
            key: binary(py, &mut c.key)?,
            value: binary(py, &mut c.value)?,
            topic: binary(py, &mut c.topic)?,
            partition: owned(py, &mut c.partition)?,
            offset: owned(py, &mut c.offset)?,
            timestamp: owned(py, &mut c.timestamp_us)?,
            timestamp_type: owned(py, &mut c.timestamp_type)?,
            header_offsets: owned(py, &mut c.header_offsets)?,
            header_count: c.header_key.len,
            header_key: binary(py, &mut c.header_key)?,
            header_value: binary(py, &mut c.header_value)?,
            next_offset,
        })
    }
}
