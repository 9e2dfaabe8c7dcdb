//! Records grouped into v2 batches as a producer groups them (Kafka's `RecordAccumulator` with
//! `batch.size`): a batch is closed when the next record would take it past `batch_size`
//! uncompressed bytes. Both of the Python layer's appends (records, and Arrow columns) build
//! their batches here, so the same records give the same bytes.
//!
//! Thread-safety: not shared; one per append.

use super::batch::RECORD_BATCH_OVERHEAD;
use super::builder::{BatchBuilder, BatchHeader};
use super::compression::CompressionType;
use super::default_record::{record_body_size, Header};
use crate::error::{Error, Result};

/// The largest batch an append may make, and where that limit comes from (for the error).
#[derive(Debug, Clone)]
pub struct BatchLimit {
    pub bytes: usize,
    /// E.g. "the 1048588 bytes of max.message.bytes".
    pub describe: String,
}

/// The batch-boundary rule every encoder of a producer's append shares: the open batch
/// (`estimated_size` bytes with its header; `has_records`) is closed before the next record
/// when that record, estimated with both deltas zero (`zero_deltas`, its body) plus 5 bytes for
/// its length varint, would take it past `batch_size`. A batch always takes its first record.
pub(super) fn closes_batch(has_records: bool, estimated_size: usize, zero_deltas: usize, batch_size: usize) -> bool {
    has_records && estimated_size + zero_deltas + 5 > batch_size
}

/// What the first record of the open batch was, to name it if it alone is too big.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct FirstRecord {
    row: usize,
    key: Option<usize>,
    value: Option<usize>,
    headers: usize,
    header_bytes: usize,
}

impl FirstRecord {
    /// Row `row` of the append, the first of a batch.
    pub(super) fn new(row: usize, key: Option<&[u8]>, value: Option<&[u8]>, headers: &[Header<'_>]) -> Self {
        FirstRecord {
            row,
            key: key.map(<[u8]>::len),
            value: value.map(<[u8]>::len),
            headers: headers.len(),
            header_bytes: headers.iter().map(|(k, v)| k.len() + v.map_or(0, <[u8]>::len)).sum(),
        }
    }

    /// The error for the batch of `count` records starting at this one, which takes `size`
    /// bytes, more than `limit`.
    pub(super) fn too_large(
        &self,
        size: usize,
        count: usize,
        limit: &BatchLimit,
        codec: CompressionType,
        batch_size: usize,
    ) -> Error {
        let f = self;
        let codec = codec.name();
        let what = if count == 1 {
            let len = |l: Option<usize>| l.map_or("null".to_string(), |l| format!("{l} bytes"));
            format!(
                "row {} (key {}, value {}, {} headers of {} bytes) alone in a batch ({codec})",
                f.row,
                len(f.key),
                len(f.value),
                f.headers,
                f.header_bytes
            )
        } else {
            format!(
                "the batch ({codec}) of rows {}..{} (grouped up to batch_size={batch_size} uncompressed bytes; a \
                 smaller batch_size avoids it)",
                f.row,
                f.row + count,
            )
        };
        debug_assert!(size > RECORD_BATCH_OVERHEAD);
        Error::RecordTooLarge { what, size, limit: limit.describe.clone() }
    }
}

/// Encodes records into v2 batches of at most `batch_size` uncompressed bytes each (a batch
/// holds at least one record). Offsets start at 0 in every batch: the log assigns the real ones.
#[derive(Debug)]
pub struct ProducerBatches {
    header: BatchHeader,
    builder: BatchBuilder,
    batch_size: usize,
    now_ms: i64,
    out: Vec<u8>,
    limit: Option<BatchLimit>,
    rows: usize,
    first: FirstRecord,
}

impl ProducerBatches {
    /// Batches compressed with `codec`; a record without a timestamp gets `now_ms`.
    pub fn new(codec: CompressionType, batch_size: usize, now_ms: i64) -> Self {
        let header = BatchHeader { compression: codec, ..BatchHeader::default() };
        ProducerBatches {
            header,
            builder: BatchBuilder::new(header),
            batch_size,
            now_ms,
            out: Vec::new(),
            limit: None,
            rows: 0,
            first: FirstRecord::default(),
        }
    }

    /// Refuses, naming its rows, a batch bigger than `limit` as it is built (the log would
    /// refuse it with no row to name).
    #[must_use]
    pub fn with_limit(mut self, limit: BatchLimit) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Reserves room for about `bytes` of output.
    pub fn reserve(&mut self, bytes: usize) {
        self.out.reserve(bytes);
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
        let zero_deltas = record_body_size(0, 0, key, value, headers);
        if closes_batch(self.builder.count() > 0, self.builder.estimated_size(), zero_deltas, self.batch_size) {
            self.close_batch()?;
        }
        if self.builder.count() == 0 {
            self.first = FirstRecord::new(self.rows, key, value, headers);
        }
        self.builder.append_next(timestamp.unwrap_or(self.now_ms), key, value, headers)?;
        self.rows += 1;
        Ok(())
    }

    /// How many records were pushed.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The encoded batches; `InvalidRecord` when no record was pushed.
    pub fn finish(mut self) -> Result<Vec<u8>> {
        if self.builder.count() > 0 {
            self.close_batch()?;
        }
        if self.out.is_empty() {
            return Err(Error::invalid_record("no records to append"));
        }
        Ok(self.out)
    }

    fn close_batch(&mut self) -> Result<()> {
        let start = self.out.len();
        self.builder.build_into(&mut self.out, None, None)?;
        let count = self.builder.count() as usize;
        self.builder.reset(self.header);
        let size = self.out.len() - start;
        match &self.limit {
            Some(limit) if size > limit.bytes => {
                Err(self.first.too_large(size, count, limit, self.header.compression, self.batch_size))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::records::BatchIter;

    fn batch_counts(bytes: &[u8]) -> Vec<usize> {
        BatchIter::new(bytes).map(|b| b.unwrap().1.record_count().unwrap() as usize).collect()
    }

    #[test]
    fn a_batch_closes_before_the_record_that_would_pass_batch_size() {
        let mut p = ProducerBatches::new(CompressionType::None, 61 + 3 * 20, 5);
        for _ in 0..7 {
            // 1 (attributes) + 1 + 1 (deltas) + 1 + 3 (key) + 1 + 10 (value) + 1 (headers) + 5 = 24
            p.push(None, Some(b"key"), Some(b"0123456789"), &[]).unwrap();
        }
        assert_eq!(p.rows(), 7);
        assert_eq!(batch_counts(&p.finish().unwrap()), vec![2, 2, 2, 1]);
    }

    #[test]
    fn a_record_bigger_than_batch_size_gets_a_batch_of_its_own() {
        let mut p = ProducerBatches::new(CompressionType::None, 10, 5);
        p.push(None, None, Some(&[0; 100]), &[]).unwrap();
        p.push(Some(7), None, Some(&[0; 100]), &[]).unwrap();
        assert_eq!(batch_counts(&p.finish().unwrap()), vec![1, 1]);
    }

    #[test]
    fn nothing_pushed_is_an_error() {
        let e = ProducerBatches::new(CompressionType::None, 10, 5).finish().unwrap_err();
        assert!(e.to_string().contains("no records to append"), "{e}");
    }

    #[test]
    fn a_record_that_cannot_fit_alone_is_named_by_its_row() {
        let limit = BatchLimit { bytes: 200, describe: "the 200 bytes of max.message.bytes".into() };
        let mut p = ProducerBatches::new(CompressionType::None, 1000, 5).with_limit(limit);
        p.push(None, Some(b"k"), Some(&[1; 50]), &[]).unwrap();
        p.push(None, None, Some(&[1; 300]), &[(b"h", Some(b"xy"))]).unwrap();
        let e = p.push(None, Some(b"k"), Some(&[1; 700]), &[]).unwrap_err().to_string();
        assert_eq!(
            e,
            "the batch (none) of rows 0..2 (grouped up to batch_size=1000 uncompressed bytes; a smaller batch_size \
             avoids it) takes 433 bytes, more than the 200 bytes of max.message.bytes"
        );
        let limit = BatchLimit { bytes: 200, describe: "the limit".into() };
        let mut p = ProducerBatches::new(CompressionType::None, 10, 5).with_limit(limit);
        p.push(None, Some(b"k"), Some(&[1; 50]), &[]).unwrap();
        p.push(None, None, Some(&[1; 300]), &[(b"h", Some(b"xy"))]).unwrap();
        let e = p.finish().unwrap_err().to_string();
        assert_eq!(
            e,
            "row 1 (key null, value 300 bytes, 1 headers of 3 bytes) alone in a batch (none) takes 375 bytes, more \
             than the limit"
        );
    }
}
