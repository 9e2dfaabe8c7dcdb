//! The cleaner's I/O buffers (Kafka's `Cleaner` read and write `ByteBuffer`s): the read buffer
//! grows for a batch larger than it, up to the message size limits, with Kafka's errors beyond,
//! and shrinks back after the segment.
//!
//! Thread-safety: owned by one cleaner; not shared.

use super::filter::Kept;
use super::offset_map::KeyHash;
use super::segment_scan::KeyDigest;
use crate::error::{Error, Result};
use crate::record::batch::{MAGIC_OFFSET, MAGIC_V2};
use crate::record::builder::{BatchBuilder, BatchHeader};
use crate::record::records::{next_batch_size, BatchIter};
use crate::segment::log_segment::LogSegment;

/// The read buffer, grown for batches larger than it and restored afterwards.
pub(super) struct IoBuffers {
    pub(super) read: Vec<u8>,
    /// What the rewrite keeps of the chunk in `read`.
    pub(super) kept: Kept,
    pub(super) scratch: Vec<u8>,
    /// Key digests of one batch's records, and scratch for computing them.
    pub(super) hashes: Vec<Option<KeyHash>>,
    pub(super) digests: Vec<KeyHash>,
    /// The decision passes' keyed records of one batch, and their keys (kept empty between
    /// batches: only the allocation is reused).
    pub(super) key_digests: Vec<KeyDigest>,
    pub(super) keys: Vec<&'static [u8]>,
    pub(super) builder: BatchBuilder,
    base_size: usize,
    max_size: usize,
}

impl IoBuffers {
    pub(super) fn new(size: usize, max_size: usize) -> Self {
        IoBuffers {
            read: vec![0; size],
            kept: Kept { out: Vec::with_capacity(size), pieces: Vec::new() },
            scratch: Vec::new(),
            hashes: Vec::new(),
            digests: Vec::new(),
            key_digests: Vec::new(),
            keys: Vec::new(),
            builder: BatchBuilder::new(BatchHeader::default()),
            base_size: size,
            max_size,
        }
    }

    /// Reads up to a buffer's worth at `position` of `segment` (bounded by its size).
    pub(super) fn read_chunk(&mut self, segment: &LogSegment, position: u64, end: u64) -> Result<usize> {
        let want = ((end - position) as usize).min(self.read.len());
        segment.log().read_at(position, &mut self.read[..want])
    }

    /// Whether the chunk at `position`, which held no complete batch, is the segment's torn
    /// tail: the next batch, as its header declares it, runs past the end of the segment (or
    /// too few bytes are left for a header). A damaged size field is not a torn tail; it is
    /// left to [`IoBuffers::grow_or_fail`] to report.
    pub(super) fn is_torn_tail(&self, segment: &LogSegment, position: u64, chunk_len: usize) -> bool {
        let left = segment.size().saturating_sub(position);
        match next_batch_size(&self.read[..chunk_len]) {
            Ok(Some(size)) => size as u64 > left,
            Ok(None) => chunk_len as u64 == left,
            Err(_) => false,
        }
    }

    /// Kafka's `growBuffersOrFail`: the chunk at `position` held no complete batch.
    pub(super) fn grow_or_fail(
        &mut self,
        segment: &LogSegment,
        position: u64,
        max_message_bytes: usize,
        chunk_len: usize,
    ) -> Result<()> {
        let target = if self.read.len() >= max_message_bytes {
            let desc = || format!("log segment {} at position {position}", segment.path().display());
            let chunk = &self.read[..chunk_len];
            let next = next_batch_size(chunk).map_err(|e| e.in_file(&segment.path(), position))?;
            // Kafka's ByteBufferLogInputStream.nextBatchSize also rejects an impossible magic here, so a damaged
            // header fails at the size limit instead of growing the buffers to whatever size it declares.
            if let Some(&magic) = chunk.get(MAGIC_OFFSET).filter(|_| next.is_some()) {
                if magic > MAGIC_V2 {
                    return Err(Error::CorruptRecord {
                        file: Some(segment.path()),
                        position,
                        reason: format!("Invalid magic found in record: {}", magic as i8),
                    });
                }
            }
            let Some(next) = next else {
                return Err(Error::illegal_state(format!("Could not determine next batch size for {}", desc())));
            };
            if next <= self.read.len() {
                return Err(Error::illegal_state(format!(
                    "Batch size {next} < buffer size {}, but not processed for {}",
                    self.read.len(),
                    desc()
                )));
            }
            let left = segment.size().saturating_sub(position);
            if next as u64 > left {
                return Err(Error::CorruptRecord {
                    file: Some(segment.path()),
                    position,
                    reason: format!("Log segment may be corrupt, batch size {next} > {left} bytes left in segment"),
                });
            }
            next
        } else {
            max_message_bytes
        };
        let cap = target.max(self.max_size);
        if self.read.len() >= cap {
            return Err(Error::illegal_state(format!(
                "This log contains a message larger than maximum allowable size of {cap} ({}, position {position}).",
                segment.path().display()
            )));
        }
        let new_size = (self.read.len() * 2).min(cap);
        log::info!("Growing cleaner I/O buffers from {} bytes to {new_size} bytes.", self.read.len());
        self.read.resize(new_size, 0);
        Ok(())
    }

    /// Appends the first `len` bytes of `source` (whole batches, all kept as they were) to
    /// `dest`, chunk by chunk, through a buffer of its own the size of the read buffer (which
    /// has already held every one of those batches, and may still hold the chunk being
    /// written). Returns the bytes written.
    pub(super) fn copy_prefix(&self, source: &LogSegment, dest: &LogSegment, len: u64) -> Result<u64> {
        let mut buf = vec![0u8; self.read.len()];
        let mut position = 0u64;
        while position < len {
            let want = ((len - position) as usize).min(buf.len());
            let n = source.log().read_at(position, &mut buf[..want])?;
            let (mut valid, mut last_offset, mut records) = (0usize, -1i64, 0u64);
            for item in BatchIter::new(&buf[..n]) {
                let (at, batch) = item.map_err(|e| e.in_file(&source.path(), position))?;
                valid = at + batch.size_in_bytes();
                last_offset = batch.last_offset();
                records += batch.record_count()?;
            }
            if valid == 0 {
                return Err(Error::illegal_state(format!(
                    "cannot re-read the batch at position {position} of {}",
                    source.path().display()
                )));
            }
            dest.append(last_offset, &buf[..valid], records)?;
            position += valid as u64;
        }
        Ok(position)
    }

    pub(super) fn restore(&mut self) {
        if self.read.len() > self.base_size {
            self.read.truncate(self.base_size);
            self.read.shrink_to_fit();
        }
        if self.kept.out.capacity() > 4 * self.base_size {
            self.kept.out = Vec::with_capacity(self.base_size);
        }
    }
}
