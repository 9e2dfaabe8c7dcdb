//! The `.log` file of a segment (Kafka's `FileRecords`): appended through the file, read with
//! positional reads, never memory-mapped (a mapping of a file truncated under it kills readers
//! with SIGBUS).
//!
//! Thread-safety: safe for concurrent readers while one writer appends; the logical size is an
//! atomic published after the bytes are written, so a reader never sees a partial append.
//! Appends, truncation and renames must be serialised by the owner (the log's write lock).
//!
//! Every system call that changes the file, and every positional read, passes the
//! fault-injection seam (`util::fault::check`) first.

use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::RwLock;

use crate::error::{Error, Result};
use crate::record::batch::{
    be_i32, be_i64, HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, MAGIC_OFFSET, MIN_RECORD_SIZE, RECORD_BATCH_OVERHEAD,
};
use crate::record::records::{AnyBatch, BatchIter};
use crate::util::fault::{check, FaultOp};
use crate::util::unnamed_file::UnnamedFile;

/// Default size of the chunks read while scanning batches.
const SCAN_CHUNK: usize = 1 << 20;

/// The offset (below 64) in `buf` where a read at file `position` should land: the one whose
/// address equals `position` modulo 64, so that source and destination of the kernel's copy
/// are equally aligned. On AMD's Zen cores, the `rep movsb` that Linux copies to user space
/// with runs about 3x slower when the destination lies less than about 40 bytes past the
/// source modulo 4 KiB, and a large `Vec` from glibc starts 16 bytes into its page: every read
/// from a page-aligned position (a segment's start, the one read of a small segment) into one
/// was that slow case (see `benches/bench_common.py`'s `read_buffer`). Callers leave 63 bytes
/// of slack.
#[must_use]
pub fn aligned_read_offset(buf: &[u8], position: u64) -> usize {
    (position as usize).wrapping_sub(buf.as_ptr() as usize) & 63
}

/// The header fields of a batch read without its records (a `FileChannelRecordBatch` whose
/// body was not loaded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeaderInfo {
    /// Position of the batch in the file.
    pub position: u64,
    /// Total size of the batch.
    pub size: u32,
    /// Magic byte.
    pub magic: u8,
    /// Last offset (for legacy entries: the entry's offset).
    pub last_offset: i64,
    /// Base offset (v2 only; for legacy entries the same as `last_offset`).
    pub base_offset: i64,
    /// Max timestamp (v2), or -1 when unknown without loading the body.
    pub max_timestamp: i64,
    /// Records count (v2), or -1 when unknown without loading the body.
    pub records_count: i32,
    /// Partition leader epoch (v2), -1 for legacy entries (which have none).
    pub partition_leader_epoch: i32,
}

impl BatchHeaderInfo {
    /// Offset after the batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset.wrapping_add(1)
    }
}

/// How a scan ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanEnd {
    /// Position after the last complete batch visited.
    pub position: u64,
    /// True when the scan stopped at bytes that do not form a complete batch (a torn tail).
    pub torn_tail: bool,
}

/// A segment's `.log` file. Mirrors Kafka's `FileRecords`.
#[derive(Debug)]
pub struct FileRecords {
    path: RwLock<PathBuf>,
    file: File,
    size: AtomicU64,
    writable: bool,
    /// Whether a read already warned of this file's torn tail (once per open file).
    torn_tail_reported: AtomicBool,
    /// The file may be longer than `size` (it was preallocated and not trimmed since): only
    /// then does a truncation to the current size need the file's length.
    maybe_longer: AtomicBool,
}

impl FileRecords {
    /// Opens `path`. A writable open creates the file if missing; with `preallocate_bytes` a new
    /// file is extended to that length up front (its logical size stays 0; `trim` cuts it back).
    /// A read-only open never creates or modifies anything.
    pub fn open(path: PathBuf, writable: bool, preallocate_bytes: Option<u64>) -> Result<Self> {
        use crate::util::file::{open, OpenMode};
        let file = if writable {
            check(&path, FaultOp::Open).and_then(|()| open(&path, OpenMode::ReadWriteCreate))
        } else {
            open(&path, OpenMode::Read)
        }
        .map_err(|e| Error::io(&path, "open", e))?;
        Self::with_file(path, file, writable, preallocate_bytes)
    }

    /// [`Self::open`] (writable) of a new file: `reserved`, an unnamed file created ahead
    /// (`segment::reserved_files`), is named `path` instead of a file being created. When the
    /// name cannot be given here (`path` exists), as `open`.
    ///
    /// # Errors
    /// As [`Self::open`].
    pub fn open_reserved(path: PathBuf, reserved: UnnamedFile, preallocate_bytes: Option<u64>) -> Result<Self> {
        match reserved.name(&path, FaultOp::Open, "open")? {
            Some(file) => Self::with_file(path, file, true, preallocate_bytes),
            None => Self::open(path, true, preallocate_bytes),
        }
    }

    /// The records of `file`, open at `path`; a writable empty file is preallocated first.
    fn with_file(path: PathBuf, file: File, writable: bool, preallocate_bytes: Option<u64>) -> Result<Self> {
        // The length from a seek to the end: cheaper than a `stat`, and reads and writes are
        // positional, so the file position is never used.
        let len = (&file).seek(SeekFrom::End(0)).map_err(|e| Error::io(&path, "size (seek to end)", e))?;
        let mut size = len;
        let preallocated = matches!((writable, len, preallocate_bytes), (true, 0, Some(_)));
        if let (true, 0, Some(bytes)) = (writable, len, preallocate_bytes) {
            check(&path, FaultOp::Truncate)
                .and_then(|()| file.set_len(bytes))
                .map_err(|e| Error::io(&path, "preallocate", e))?;
            size = 0;
        }
        Ok(FileRecords {
            path: RwLock::new(path),
            file,
            size: AtomicU64::new(size),
            writable,
            torn_tail_reported: AtomicBool::new(false),
            maybe_longer: AtomicBool::new(preallocated),
        })
    }

    /// Current file path.
    pub fn path(&self) -> PathBuf {
        self.path.read().clone()
    }

    /// Logical size in bytes (`sizeInBytes`).
    pub fn size(&self) -> u64 {
        self.size.load(Ordering::Acquire)
    }

    /// Ends a read-only view at `size` bytes: a live file's torn or preallocated tail is not
    /// part of it. A no-op on a writable file or beyond the current size.
    pub fn limit_read_only_size(&self, size: u64) {
        if !self.writable && size < self.size() {
            self.size.store(size, Ordering::Release);
        }
    }

    /// Sets the file's modification time (Kafka's `LogSegment.setLastModified`, used when a
    /// segment's data moves to a new file).
    pub fn set_modified(&self, time: std::time::SystemTime) -> Result<()> {
        self.file.set_modified(time).map_err(|e| self.io("set modification time", e))
    }

    /// Length of the file on disk (larger than `size` while preallocated).
    pub fn file_len(&self) -> Result<u64> {
        Ok(self.file.metadata().map_err(|e| self.io("stat", e))?.len())
    }

    fn io(&self, op: &'static str, e: std::io::Error) -> Error {
        Error::io(&*self.path.read(), op, e)
    }

    /// The fault-injection seam for `op` on this file (`util::fault::check`).
    fn check(&self, op: FaultOp) -> std::io::Result<()> {
        check(&self.path.read(), op)
    }

    /// Reads into `buf` from `position`; returns the bytes read (short only at end of file).
    pub fn read_at(&self, position: u64, buf: &mut [u8]) -> Result<usize> {
        self.check(FaultOp::Read).map_err(|e| self.io("read", e))?;
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], position + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io("read", e)),
            }
        }
        Ok(done)
    }

    /// Appends `position..position+len` of the file to `out` (stopping at end of file).
    pub fn read_into(&self, position: u64, len: usize, out: &mut Vec<u8>) -> Result<usize> {
        let start = out.len();
        out.resize(start + len, 0);
        let n = self.read_at(position, &mut out[start..])?;
        out.truncate(start + n);
        Ok(n)
    }

    /// Appends `data` at the logical end and publishes the new size; returns the bytes written.
    pub fn append(&self, data: &[u8]) -> Result<usize> {
        if !self.writable {
            return Err(Error::ReadOnly { path: self.path() });
        }
        let at = self.size();
        self.check(FaultOp::Write).and_then(|()| self.file.write_all_at(data, at)).map_err(|e| self.io("append", e))?;
        self.size.store(at + data.len() as u64, Ordering::Release);
        Ok(data.len())
    }

    /// Starts writing `[from, to)` back to disk without waiting (see
    /// [`crate::util::file::start_writeback`]); nothing for a read-only file.
    pub fn start_writeback(&self, from: u64, to: u64) {
        if self.writable && to > from {
            crate::util::file::start_writeback(&self.file, &self.path.read(), from, to - from);
        }
    }

    /// Fsyncs the file's data (`flush`).
    pub fn flush(&self) -> Result<()> {
        if self.writable {
            self.check(FaultOp::Fsync).and_then(|()| self.file.sync_data()).map_err(|e| self.io("fsync", e))?;
        }
        Ok(())
    }

    /// Truncates to `target` bytes (`truncateTo`); returns the bytes removed. Truncating to more
    /// than the current size is an error, as in Kafka.
    pub fn truncate_to(&self, target: u64) -> Result<u64> {
        let size = self.size();
        if target > size {
            return Err(Error::illegal_state(format!(
                "attempt to truncate log segment {} to {target} bytes failed: its size is {size} bytes",
                self.path().display()
            )));
        }
        if !self.writable {
            return Err(Error::ReadOnly { path: self.path() });
        }
        // Appends write the file before they publish the size, so it is no longer than `size`
        // unless preallocated: nothing to cut (recovery of an intact segment, no `stat`).
        if target == size && !self.maybe_longer.load(Ordering::Acquire) {
            return Ok(0);
        }
        let len = self.file_len()?;
        if target < len {
            self.check(FaultOp::Truncate)
                .and_then(|()| self.file.set_len(target))
                .map_err(|e| self.io("truncate", e))?;
        }
        self.size.store(target, Ordering::Release);
        Ok(size - target)
    }

    /// Cuts a preallocated file back to its logical size (`trim`).
    pub fn trim(&self) -> Result<()> {
        if self.writable && self.file_len()? > self.size() {
            self.check(FaultOp::Truncate)
                .and_then(|()| self.file.set_len(self.size()))
                .map_err(|e| self.io("trim", e))?;
        }
        Ok(())
    }

    /// Renames the file (keeping the open handle), e.g. to add `.deleted` (`renameTo`).
    pub fn rename_to(&self, new_path: &Path) -> Result<()> {
        let mut path = self.path.write();
        crate::util::file::rename(&path, new_path)?;
        *path = new_path.to_path_buf();
        Ok(())
    }

    /// Reads the batch header at `position`, without the records. `Ok(None)` when the bytes
    /// there do not hold a complete batch before `end` (a torn tail).
    pub fn read_header(&self, position: u64, end: u64) -> Result<Option<BatchHeaderInfo>> {
        if position + HEADER_SIZE_UP_TO_MAGIC as u64 > end {
            return Ok(None);
        }
        let mut h = [0u8; RECORD_BATCH_OVERHEAD];
        let want = (end - position).min(RECORD_BATCH_OVERHEAD as u64) as usize;
        let n = self.read_at(position, &mut h[..want])?;
        if n < HEADER_SIZE_UP_TO_MAGIC {
            return Ok(None);
        }
        let size_field = be_i32(&h, 8);
        if size_field < MIN_RECORD_SIZE {
            return Err(Error::corrupt(
                position + 8,
                format!("record size {size_field} is smaller than the minimum record overhead ({MIN_RECORD_SIZE})"),
            )
            .in_file(&self.path(), 0));
        }
        let size = LOG_OVERHEAD as u64 + size_field as u64;
        if position + size > end {
            return Ok(None);
        }
        let magic = h[MAGIC_OFFSET];
        let first = be_i64(&h, 0);
        let info = match magic {
            2 if n >= RECORD_BATCH_OVERHEAD => BatchHeaderInfo {
                position,
                size: size as u32,
                magic,
                base_offset: first,
                last_offset: first.wrapping_add(i64::from(be_i32(&h, 23))),
                max_timestamp: be_i64(&h, 35),
                records_count: be_i32(&h, 57),
                partition_leader_epoch: be_i32(&h, crate::record::batch::PARTITION_LEADER_EPOCH_OFFSET),
            },
            0 | 1 => BatchHeaderInfo {
                position,
                size: size as u32,
                magic,
                base_offset: first,
                last_offset: first,
                max_timestamp: -1,
                records_count: -1,
                partition_leader_epoch: -1,
            },
            2 => {
                return Err(Error::corrupt(
                    position + 8,
                    format!(
                        "v2 record batch of {size} bytes is shorter than the {RECORD_BATCH_OVERHEAD}-byte batch header"
                    ),
                )
                .in_file(&self.path(), 0))
            }
            m => {
                return Err(Error::corrupt(position + MAGIC_OFFSET as u64, format!("unknown record batch magic {m}"))
                    .in_file(&self.path(), 0))
            }
        };
        Ok(Some(info))
    }

    /// Visits batch headers from `start` to `end` (exclusive) until `f` returns false.
    pub fn for_each_header<F>(&self, start: u64, end: u64, mut f: F) -> Result<ScanEnd>
    where
        F: FnMut(&BatchHeaderInfo) -> Result<bool>,
    {
        let mut pos = start;
        while let Some(h) = self.read_header(pos, end)? {
            pos += u64::from(h.size);
            if !f(&h)? {
                return Ok(ScanEnd { position: pos, torn_tail: false });
            }
        }
        Ok(ScanEnd { position: pos, torn_tail: pos < end })
    }

    /// Finds the first batch whose last offset is at or above `target`, scanning headers from
    /// `start` (`searchForOffsetWithSize`), and says how the scan ended. `None` when no
    /// complete batch from `start` on reaches `target`: the offset lies beyond this file, or
    /// in bytes after its last complete batch (`ScanEnd::torn_tail`; the caller decides what
    /// they are, see `LogSegment::check_torn_tail`).
    ///
    /// The scan trusts each header's last offset (Kafka's does too). When `target` falls in a
    /// gap before the batch found (offsets a compaction removed, or a damaged last offset delta
    /// in the batch before, which would make the read pass over that batch's last records), the
    /// batch before is checked against its CRC: damage there is reported, not skipped.
    pub fn search_for_offset_with_size(&self, target: i64, start: u64) -> Result<(Option<BatchHeaderInfo>, ScanEnd)> {
        let mut found = None;
        let mut previous: Option<BatchHeaderInfo> = None;
        let end = self.for_each_header(start, self.size(), |h| {
            if h.last_offset >= target {
                found = Some(*h);
                return Ok(false);
            }
            previous = Some(*h);
            Ok(true)
        })?;
        if let (Some(h), Some(before)) = (found, previous) {
            if h.magic >= 2 && h.base_offset > target && before.magic >= 2 {
                self.ensure_valid_at(&before)?;
            }
        }
        Ok((found, end))
    }

    /// Reads the batch `h` describes and checks its CRC.
    fn ensure_valid_at(&self, h: &BatchHeaderInfo) -> Result<()> {
        let mut bytes = Vec::new();
        self.read_into(h.position, h.size as usize, &mut bytes)?;
        let batch = crate::record::batch::RecordBatch::new(&bytes).map_err(|e| e.in_file(&self.path(), h.position))?;
        batch.ensure_valid().map_err(|e| e.in_file(&self.path(), h.position))
    }

    /// Warns, once per open file, that the bytes from `position` to `end` do not form a
    /// complete batch (see `LogSegment::check_torn_tail`, which decides that they are a torn
    /// tail and calls this).
    pub fn report_torn_tail(&self, position: u64, end: u64) {
        if !self.torn_tail_reported.swap(true, Ordering::Relaxed) {
            log::warn!(
                "Log segment {} has {} bytes at position {position} that do not form a complete record batch \
                 (a torn write or damage below the recovery point); reads skip them and go on with the next \
                 segment",
                self.path().display(),
                end.saturating_sub(position)
            );
        }
    }

    /// Visits every complete batch from `start` to `end`, loading bodies in large chunks, until
    /// `f` returns false. Errors from the batch framing name this file and the position. The
    /// scan stops (without error) at a torn tail; `ScanEnd` tells where. `buf` is scratch space
    /// (its contents afterwards are unspecified); a caller scanning many files reuses one.
    pub fn for_each_batch<F>(&self, start: u64, end: u64, buf: &mut Vec<u8>, mut f: F) -> Result<ScanEnd>
    where
        F: FnMut(u64, AnyBatch<'_>) -> Result<bool>,
    {
        let mut pos = start;
        let mut chunk = SCAN_CHUNK;
        while pos < end {
            let want = ((end - pos) as usize).min(chunk);
            // `buf` is scratch: grown (zeroed) only when too short, never zeroed again, so a
            // buffer reused from scan to scan costs no fill.
            if buf.len() < want + 63 {
                buf.resize(want + 63, 0);
            }
            let off = aligned_read_offset(buf, pos);
            let n = self.read_at(pos, &mut buf[off..off + want])?;
            if n == 0 {
                break;
            }
            let data = &buf[off..off + n];
            let mut iter = BatchIter::new(data);
            let mut any = false;
            for item in iter.by_ref() {
                let (at, batch) = item.map_err(|e| e.in_file(&self.path(), pos))?;
                any = true;
                if !f(pos + at as u64, batch).map_err(|e| e.in_file(&self.path(), pos + at as u64))? {
                    return Ok(ScanEnd { position: pos + (at + batch_size_at(data, at)) as u64, torn_tail: false });
                }
            }
            let consumed = iter.position();
            if any {
                pos += consumed as u64;
                chunk = SCAN_CHUNK.max(chunk / 2);
                continue;
            }
            // No complete batch in this chunk: the next batch is larger than the chunk, or the
            // bytes are a torn tail.
            match crate::record::records::next_batch_size(data) {
                Ok(Some(size)) if (pos + size as u64) <= end && size > chunk => chunk = size,
                Ok(_) => break,
                Err(e) => return Err(e.in_file(&self.path(), pos)),
            }
        }
        Ok(ScanEnd { position: pos, torn_tail: pos < end })
    }

    /// Largest max-timestamp of the batches from `start` to the end (`largestTimestampAfter`).
    pub fn largest_timestamp_after(&self, start: u64) -> Result<(i64, i64)> {
        let mut best = (-1i64, -1i64);
        let mut buf = Vec::new();
        self.for_each_batch(start, self.size(), &mut buf, |_, b| {
            if b.max_timestamp() > best.0 {
                best = (b.max_timestamp(), b.last_offset());
            }
            Ok(true)
        })?;
        Ok(best)
    }
}

fn batch_size_at(buf: &[u8], at: usize) -> usize {
    LOG_OVERHEAD + be_i32(buf, at + 8) as usize
}
