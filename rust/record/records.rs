//! Framing of a run of batches in a buffer or file (Kafka's `FileLogInputStream` /
//! `ByteBufferLogInputStream`), dispatching on the magic byte to the v2 or legacy parser.

use super::batch::{be_i32, RecordBatch, HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, MAGIC_OFFSET, MIN_RECORD_SIZE};
use super::compression::CompressionType;
use super::default_record::Record;
use super::legacy::LegacyEntry;
use super::timestamp_type::TimestampType;
use crate::error::{Error, Result};

/// One batch of any magic: a v2 `RecordBatch` or a legacy magic 0/1 log entry (a message, or a
/// compressed wrapper holding several). Mirrors Kafka's `RecordBatch` interface.
#[derive(Clone, Copy, Debug)]
pub enum AnyBatch<'a> {
    /// Magic 2.
    V2(RecordBatch<'a>),
    /// Magic 0 or 1.
    Legacy(LegacyEntry<'a>),
}

impl<'a> AnyBatch<'a> {
    /// Parses the complete batch in `buf`, dispatching on byte 16.
    pub fn new(buf: &'a [u8]) -> Result<Self> {
        match buf.get(MAGIC_OFFSET) {
            Some(2) => Ok(AnyBatch::V2(RecordBatch::new(buf)?)),
            Some(0 | 1) => Ok(AnyBatch::Legacy(LegacyEntry::new(buf)?)),
            Some(m) => Err(Error::corrupt(MAGIC_OFFSET as u64, format!("unknown record batch magic {m}"))),
            None => Err(Error::corrupt(0, format!("record batch of {} bytes is too short", buf.len()))),
        }
    }
    /// The batch's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        match self {
            AnyBatch::V2(b) => b.bytes(),
            AnyBatch::Legacy(e) => e.bytes(),
        }
    }
    /// Total size.
    pub fn size_in_bytes(&self) -> usize {
        self.bytes().len()
    }
    /// Magic byte.
    pub fn magic(&self) -> u8 {
        self.bytes()[MAGIC_OFFSET]
    }
    /// First offset (for a legacy compressed wrapper this inflates the inner messages).
    pub fn base_offset(&self) -> Result<i64> {
        match self {
            AnyBatch::V2(b) => Ok(b.base_offset()),
            AnyBatch::Legacy(e) => e.base_offset(),
        }
    }
    /// Last offset.
    pub fn last_offset(&self) -> i64 {
        match self {
            AnyBatch::V2(b) => b.last_offset(),
            AnyBatch::Legacy(e) => e.last_offset(),
        }
    }
    /// Offset after the batch (wrapping, like Java's arithmetic: the base offset is not covered
    /// by the CRC, so a corrupt one must not overflow).
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }
    /// Max timestamp (-1 for magic 0).
    pub fn max_timestamp(&self) -> i64 {
        match self {
            AnyBatch::V2(b) => b.max_timestamp(),
            AnyBatch::Legacy(e) => e.max_timestamp(),
        }
    }
    /// Timestamp type (CreateTime for magic 0).
    pub fn timestamp_type(&self) -> TimestampType {
        match self {
            AnyBatch::V2(b) => b.timestamp_type(),
            AnyBatch::Legacy(e) => e.timestamp_type(),
        }
    }
    /// Codec.
    pub fn compression_type(&self) -> Result<CompressionType> {
        match self {
            AnyBatch::V2(b) => b.compression_type(),
            AnyBatch::Legacy(e) => e.compression_type(),
        }
    }
    /// Control flag (never for legacy).
    pub fn is_control(&self) -> bool {
        matches!(self, AnyBatch::V2(b) if b.is_control())
    }
    /// Transactional flag (never for legacy).
    pub fn is_transactional(&self) -> bool {
        matches!(self, AnyBatch::V2(b) if b.is_transactional())
    }
    /// Partition leader epoch (-1 for legacy).
    pub fn partition_leader_epoch(&self) -> i32 {
        match self {
            AnyBatch::V2(b) => b.partition_leader_epoch(),
            AnyBatch::Legacy(_) => -1,
        }
    }
    /// Number of records: the v2 header's count, or for a legacy entry the messages it holds
    /// (a compressed wrapper is inflated to count them).
    pub fn record_count(&self) -> Result<u64> {
        match self {
            AnyBatch::V2(b) => Ok(b.records_count().max(0) as u64),
            AnyBatch::Legacy(_) => {
                let mut n = 0;
                self.for_each_record(&mut Vec::new(), |_| {
                    n += 1;
                    Ok(())
                })?;
                Ok(n)
            }
        }
    }

    /// Checks the CRC (CRC-32C for v2, CRC-32 for legacy).
    pub fn ensure_valid(&self) -> Result<()> {
        match self {
            AnyBatch::V2(b) => b.ensure_valid(),
            AnyBatch::Legacy(e) => e.ensure_valid(),
        }
    }
    /// Calls `f` for each record, inflating into `scratch` when compressed.
    pub fn for_each_record<'s, F>(&self, scratch: &'s mut Vec<u8>, f: F) -> Result<()>
    where
        'a: 's,
        F: FnMut(Record<'s>) -> Result<()>,
    {
        match self {
            AnyBatch::V2(b) => b.for_each_record(scratch, f),
            AnyBatch::Legacy(e) => e.for_each_record(scratch, f),
        }
    }

    /// Calls `f` with each record of an uncompressed v2 batch, by the fast walk of
    /// [`super::uncompressed`]. False for any other batch, and for one the walk gives up on
    /// (`f` may then have seen some of its records): decode it with
    /// [`AnyBatch::for_each_record`], which reports what is wrong with it.
    #[inline]
    pub fn try_for_each_record_fast(&self, f: impl FnMut(Record<'a>)) -> bool {
        match self {
            AnyBatch::V2(b) => super::uncompressed::try_for_each_record(b, f),
            AnyBatch::Legacy(_) => false,
        }
    }

    /// Replaces `out`'s contents with the batch's records, by
    /// [`AnyBatch::try_for_each_record_fast`], else by [`AnyBatch::for_each_record`].
    pub fn records_into<'s>(&self, scratch: &'s mut Vec<u8>, out: &mut Vec<Record<'s>>) -> Result<()>
    where
        'a: 's,
    {
        out.clear();
        if self.try_for_each_record_fast(|r| out.push(r)) {
            return Ok(());
        }
        out.clear();
        self.for_each_record(scratch, |r| {
            out.push(r);
            Ok(())
        })
    }
}

/// Iterates over the complete batches at the start of a buffer. Stops without error where
/// fewer than 17 bytes remain or the next batch extends past the end (a torn tail), as Kafka's
/// file scanner does; a size field below 14 or an unknown magic is a corrupt-record error.
/// `position()` after the end tells how many bytes formed complete batches.
#[derive(Debug, Clone)]
pub struct BatchIter<'a> {
    buf: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> BatchIter<'a> {
    /// Iterates over `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        BatchIter { buf, pos: 0, failed: false }
    }
    /// Bytes consumed by complete batches so far.
    pub fn position(&self) -> usize {
        self.pos
    }
}

/// The size of the batch starting at `buf[0]`, if its header is there: `Ok(None)` when fewer
/// than 17 bytes are available; an error when the size field is below 14.
pub fn next_batch_size(buf: &[u8]) -> Result<Option<usize>> {
    if buf.len() < HEADER_SIZE_UP_TO_MAGIC {
        return Ok(None);
    }
    let size = be_i32(buf, 8);
    if size < MIN_RECORD_SIZE {
        return Err(Error::corrupt(
            8,
            format!("record size {size} is smaller than the minimum record overhead ({MIN_RECORD_SIZE})"),
        ));
    }
    Ok(Some(LOG_OVERHEAD + size as usize))
}

impl<'a> Iterator for BatchIter<'a> {
    /// The batch and its byte position in the buffer.
    type Item = Result<(usize, AnyBatch<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let rest = &self.buf[self.pos..];
        let size = match next_batch_size(rest) {
            Ok(Some(size)) if size <= rest.len() => size,
            Ok(_) => return None,
            Err(e) => {
                self.failed = true;
                return Some(Err(e.with_position_offset(self.pos as u64)));
            }
        };
        let at = self.pos;
        match AnyBatch::new(&rest[..size]) {
            Ok(batch) => {
                self.pos += size;
                Some(Ok((at, batch)))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e.with_position_offset(at as u64)))
            }
        }
    }
}
