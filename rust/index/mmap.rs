//! The bytes under an offset or time index file, and the module's only `unsafe`.
//!
//! Two forms, as in Kafka's `AbstractIndex` (which holds a `MappedByteBuffer`):
//!
//! * [`IndexStorage::Mapped`]: a read-write shared mapping of the whole file. Only the process
//!   that owns the log (a writable `UnifiedLog` holds an exclusive `flock` on its partition
//!   directory, `util::file::DirLock`) maps an index read-write, and it never
//!   shortens the file while the mapping is alive: [`IndexStorage::resize`] unmaps first.
//! * [`IndexStorage::Snapshot`]: the file's bytes copied into memory with positional reads.
//!   Read-only opens use it because the owning process may shorten the file at any time (it
//!   trims the active segment's indexes at roll), and touching a mapped page past the new end of
//!   file raises `SIGBUS`, which kills the reader.
//!
//! Every system call that creates, resizes, maps, syncs or deletes an index file passes the
//! fault-injection seam (`util::fault::check`) first; writes through the mapping are memory
//! stores and are not guarded.
//!
//! Not thread-safe for mutation (`&mut self`); the owning index serialises access.

#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io::{self, ErrorKind};
use std::os::unix::fs::FileExt;
use std::path::Path;

use memmap2::{Advice, MmapMut, MmapOptions};

use crate::error::{Error, Result};
use crate::util::fault::{check, FaultOp};
use crate::util::unnamed_file::UnnamedFile;

/// How many entries a read-only open reads per positional read.
const SNAPSHOT_CHUNK_ENTRIES: usize = 4096;

/// The bytes of one index file: mapped read-write, or copied for a read-only reader.
pub(crate) enum IndexStorage {
    /// A read-write shared mapping of the whole file.
    Mapped(MmapMut),
    /// A private in-memory copy of the file's valid prefix (read-only opens).
    Snapshot(Vec<u8>),
}

impl IndexStorage {
    /// Opens `path` read-write and maps it, creating it when missing.
    ///
    /// A new file is preallocated (`set_len`) to `max_index_size` rounded down to a multiple of
    /// `entry_size`; an existing file keeps its length, or is first set to `resize_to` when
    /// given and its whole entries (all of its length, an existing file being trimmed) fit (an
    /// index resized as it opens: one open, `stat` and map instead of two). With `reserved` (an
    /// unnamed file created ahead, `util::unnamed_file`), the new file is that one, named
    /// `path`, unless the name cannot be given here (`path` exists): then as without. Returns the
    /// storage and, for an existing file, its length before any resize (`None`: created).
    pub(crate) fn open_mapped(
        path: &Path,
        max_index_size: usize,
        entry_size: usize,
        resize_to: Option<usize>,
        reserved: Option<UnnamedFile>,
    ) -> Result<(Self, Option<u64>)> {
        if let Some(unnamed) = reserved {
            if let Some(file) = unnamed.name(path, FaultOp::Open, "create index")? {
                return Self::map_new(path, &file, max_index_size, entry_size).map(|s| (s, None));
            }
        }
        // An existing file is the common case: open it first, create only if missing.
        let existing = check(path, FaultOp::Open)
            .and_then(|()| crate::util::file::open(path, crate::util::file::OpenMode::ReadWrite));
        let file = match existing {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                let file = check(path, FaultOp::Open)
                    .and_then(|()| OpenOptions::new().read(true).write(true).create_new(true).open(path))
                    .map_err(|e| Error::io(path, "create index", e))?;
                return Self::map_new(path, &file, max_index_size, entry_size).map(|s| (s, None));
            }
            Err(e) => return Err(Error::io(path, "open index", e)),
        };
        let old_len = file.metadata().map_err(|e| Error::io(path, "stat index", e))?.len();
        let whole = old_len / entry_size as u64 * entry_size as u64;
        let len = match resize_to {
            Some(new_len) if new_len as u64 != old_len && new_len as u64 >= whole => {
                check(path, FaultOp::Truncate)
                    .and_then(|()| file.set_len(new_len as u64))
                    .map_err(|e| Error::io(path, "resize index", e))?;
                new_len as u64
            }
            _ => old_len,
        };
        let map = map_file(&file, path, len)?;
        Ok((IndexStorage::Mapped(map), Some(old_len)))
    }

    /// Preallocates the empty file just created (or named) at `path` to `max_index_size`
    /// rounded down to whole entries, and maps it. On failure the file is deleted: the next
    /// open would take an empty file for a trimmed index.
    fn map_new(path: &Path, file: &File, max_index_size: usize, entry_size: usize) -> Result<Self> {
        let len = max_index_size / entry_size * entry_size;
        let preallocated = if len == 0 {
            Err(Error::illegal_state(format!(
                "invalid max index size {max_index_size} for {}: it must hold at least one \
                 {entry_size}-byte entry",
                path.display()
            )))
        } else {
            check(path, FaultOp::Truncate)
                .and_then(|()| file.set_len(len as u64))
                .map_err(|e| Error::io(path, "preallocate index", e))
        };
        if let Err(e) = preallocated {
            let _ = check(path, FaultOp::Delete).and_then(|()| std::fs::remove_file(path));
            return Err(e);
        }
        let map = map_whole_file(file, path)?;
        // The new file is sparse: a fault's read-around (the device's read-ahead, 8 MiB on
        // this machine's disk) would fill the page cache with zeros, milliseconds of
        // memset at the first entry of each index. Entries go in one page at a time and
        // lookups are binary searches, so the mapping asks for the faulting page only. A
        // hint: ignored when the kernel refuses it.
        if let Err(e) = map.advise(Advice::Random) {
            log::debug!("madvise(MADV_RANDOM) of index {} refused: {e}", path.display());
        }
        Ok(IndexStorage::Mapped(map))
    }

    /// Makes the file at `path` (created when missing) hold `entries` (whole entries, an index
    /// rebuilt in memory) at its start and be `max_index_size` rounded down to whole entries
    /// long, without mapping it; returns that length, for [`Self::open_mapped_prepared`] at
    /// the index's first use. A file that already starts with `entries` followed by a zero
    /// entry (or its end) is not written; otherwise `entries` are written and the file cut to
    /// them before it is extended again with zeros, so no stale entry follows them. Nothing is
    /// fsynced (the segment's flush does). The caller checked that `entries` fit.
    pub(crate) fn prepare_holding(
        path: &Path,
        max_index_size: usize,
        entry_size: usize,
        entries: &[u8],
    ) -> Result<u64> {
        use crate::util::file::{open, read_prefix, OpenMode};
        let full = (max_index_size / entry_size * entry_size) as u64;
        let file = check(path, FaultOp::Open)
            .and_then(|()| open(path, OpenMode::ReadWriteCreate))
            .map_err(|e| Error::io(path, "open index", e))?;
        let mut window = vec![0u8; entries.len() + entry_size];
        let read = read_prefix(&file, &mut window).map_err(|e| Error::io(path, "read index", e))?;
        let same = read >= entries.len()
            && window[..entries.len()] == *entries
            && window[entries.len()..read].iter().all(|&b| b == 0);
        let mut len = file.metadata().map_err(|e| Error::io(path, "stat index", e))?.len();
        if !same {
            check(path, FaultOp::Write)
                .and_then(|()| file.write_all_at(entries, 0))
                .map_err(|e| Error::io(path, "write index", e))?;
            if len > entries.len() as u64 {
                check(path, FaultOp::Truncate)
                    .and_then(|()| file.set_len(entries.len() as u64))
                    .map_err(|e| Error::io(path, "truncate index", e))?;
                len = entries.len() as u64;
            }
        }
        if len != full {
            check(path, FaultOp::Truncate)
                .and_then(|()| file.set_len(full))
                .map_err(|e| Error::io(path, "resize index", e))?;
        }
        Ok(full)
    }

    /// Cuts the file [`Self::prepare_holding`] prepared, never mapped since, to `valid_len`
    /// (its entries), without mapping it: Kafka's `trimToValidSize` of an index not in use.
    pub(crate) fn trim_unmapped(path: &Path, valid_len: u64) -> Result<()> {
        check(path, FaultOp::Open)
            .and_then(|()| crate::util::file::open(path, crate::util::file::OpenMode::ReadWrite))
            .and_then(|file| check(path, FaultOp::Truncate).and_then(|()| file.set_len(valid_len)))
            .map_err(|e| Error::io(path, "trim index", e))
    }

    /// Opens and maps the file [`Self::prepare_holding`] left `len` bytes long. A file of
    /// another length was changed behind the log's back (the directory is locked): an
    /// `IllegalState` error naming it, rather than entries read from the wrong bytes.
    pub(crate) fn open_mapped_prepared(path: &Path, len: u64) -> Result<Self> {
        let file = check(path, FaultOp::Open)
            .and_then(|()| crate::util::file::open(path, crate::util::file::OpenMode::ReadWrite))
            .map_err(|e| Error::io(path, "open index", e))?;
        let found = file.metadata().map_err(|e| Error::io(path, "stat index", e))?.len();
        if found != len {
            return Err(Error::illegal_state(format!(
                "index {} is {found} bytes long, but its recovery left it {len} bytes long: the file was \
                 changed while the log was open",
                path.display()
            )));
        }
        Ok(IndexStorage::Mapped(map_file(&file, path, len)?))
    }

    /// Copies the longest prefix of whole `entry_size`-byte entries of `path` that `accept`
    /// takes, in order, stopping at the first entry it refuses. A missing file gives an empty
    /// snapshot; a trailing partial entry is ignored.
    pub(crate) fn read_snapshot(path: &Path, entry_size: usize, mut accept: impl FnMut(&[u8]) -> bool) -> Result<Self> {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(IndexStorage::Snapshot(Vec::new())),
            Err(e) => return Err(Error::io(path, "open index", e)),
        };
        let mut bytes = Vec::new();
        let mut chunk = vec![0u8; entry_size * SNAPSHOT_CHUNK_ENTRIES];
        let mut position = 0u64;
        loop {
            let read = read_full_at(&file, &mut chunk, position).map_err(|e| Error::io(path, "read index", e))?;
            let whole = read / entry_size * entry_size;
            for entry in chunk[..whole].chunks_exact(entry_size) {
                if !accept(entry) {
                    return Ok(IndexStorage::Snapshot(bytes));
                }
                bytes.extend_from_slice(entry);
            }
            if read < chunk.len() {
                return Ok(IndexStorage::Snapshot(bytes));
            }
            position += read as u64;
        }
    }

    /// All bytes: the whole file when mapped, the valid prefix for a snapshot.
    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            IndexStorage::Mapped(map) => map,
            IndexStorage::Snapshot(bytes) => bytes,
        }
    }

    /// Number of bytes held ([`Self::bytes`]'s length).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.bytes().len()
    }

    /// Whether writes are possible (a read-write mapping).
    #[inline]
    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self, IndexStorage::Mapped(_))
    }

    /// Writes `entry` at byte `at` of a mapped file.
    pub(crate) fn write_at(&mut self, path: &Path, at: usize, entry: &[u8]) -> Result<()> {
        match self {
            IndexStorage::Mapped(map) => match map.get_mut(at..at + entry.len()) {
                Some(slot) => {
                    slot.copy_from_slice(entry);
                    Ok(())
                }
                None => Err(Error::illegal_state(format!(
                    "write of {} bytes at position {at} is past the end of index {} ({} bytes)",
                    entry.len(),
                    path.display(),
                    map.len()
                ))),
            },
            IndexStorage::Snapshot(_) => Err(read_only(path)),
        }
    }

    /// Zeroes bytes `[from, to)` of a mapped file (clamped to its length); a no-op for a snapshot.
    pub(crate) fn zero(&mut self, from: usize, to: usize) {
        if let IndexStorage::Mapped(map) = self {
            let to = to.min(map.len());
            if from < to {
                map[from..to].fill(0);
            }
        }
    }

    /// Changes the file's length to `new_len`: unmap, `set_len`, map again.
    ///
    /// If `set_len` fails, the file is mapped again at its current length. If mapping fails,
    /// the storage is left as an empty snapshot (no bytes, no writes) rather than a mapping
    /// that might extend past the end of the file.
    pub(crate) fn resize(&mut self, path: &Path, new_len: usize) -> Result<()> {
        if !self.is_mapped() {
            return Err(read_only(path));
        }
        let file = check(path, FaultOp::Open)
            .and_then(|()| crate::util::file::open(path, crate::util::file::OpenMode::ReadWrite))
            .map_err(|e| Error::io(path, "open index", e))?;
        // Unmap before changing the length, so no mapped page ever lies past the end of file.
        *self = IndexStorage::Snapshot(Vec::new());
        let resized = check(path, FaultOp::Truncate)
            .and_then(|()| file.set_len(new_len as u64))
            .map_err(|e| Error::io(path, "resize index", e));
        *self = IndexStorage::Mapped(map_whole_file(&file, path)?);
        resized
    }

    /// Shortens the storage to `len` bytes: the file for a mapping (see [`Self::resize`]), the
    /// in-memory copy for a snapshot. Longer lengths are left alone.
    pub(crate) fn trim(&mut self, path: &Path, len: usize) -> Result<()> {
        match self {
            IndexStorage::Mapped(map) if map.len() > len => self.resize(path, len),
            IndexStorage::Mapped(_) => Ok(()),
            IndexStorage::Snapshot(bytes) => {
                bytes.truncate(len);
                Ok(())
            }
        }
    }

    /// Writes dirty mapped pages to the file and waits for them (`msync(MS_SYNC)`); nothing to
    /// do for a snapshot.
    pub(crate) fn flush(&self, path: &Path) -> Result<()> {
        match self {
            IndexStorage::Mapped(map) => {
                check(path, FaultOp::Fsync).and_then(|()| map.flush()).map_err(|e| Error::io(path, "flush index", e))
            }
            IndexStorage::Snapshot(_) => Ok(()),
        }
    }

    /// Drops the mapping (or copy), leaving an empty read-only snapshot.
    pub(crate) fn release(&mut self) {
        *self = IndexStorage::Snapshot(Vec::new());
    }
}

/// The error for a write through a read-only (snapshot) index.
pub(crate) fn read_only(path: &Path) -> Error {
    Error::illegal_state(format!(
        "index {} is open read-only (or was released); writes are not allowed",
        path.display()
    ))
}

/// Maps the whole of `file` read-write and shared.
fn map_whole_file(file: &File, path: &Path) -> Result<MmapMut> {
    let len = file.metadata().map_err(|e| Error::io(path, "stat index", e))?.len();
    map_file(file, path, len)
}

/// Maps `file`, whose length is `len`, read-write and shared.
fn map_file(file: &File, path: &Path, len: u64) -> Result<MmapMut> {
    let len = usize::try_from(len)
        .map_err(|_| Error::illegal_state(format!("index {} is too large to map ({len} bytes)", path.display())))?;
    check(path, FaultOp::Mmap).map_err(|e| Error::io(path, "map index", e))?;
    // SAFETY: a file mapping is sound while no one changes the file's length or contents behind
    // the mapping's back. Index files live in a partition directory that this process owns
    // exclusively (a writable log holds an exclusive flock on it, `DirLock`), and only the one read-write index
    // object that owns this mapping writes or resizes the file: it writes through the mapping
    // itself, and `IndexStorage::resize` unmaps before `set_len`, so no mapped page ever lies
    // past the end of file. `len` is the file's length (`stat`, or the `set_len` just done on
    // this descriptor). Readers in other processes use `Snapshot` storage, never a mapping.
    // memmap2 maps a zero-length file as an empty slice.
    let map = unsafe { MmapOptions::new().len(len).map_mut(file) };
    map.map_err(|e| Error::io(path, "map index", e))
}

/// Reads into `buf` from `position` until it is full or the file ends; returns the byte count.
fn read_full_at(file: &File, buf: &mut [u8], position: u64) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read_at(&mut buf[filled..], position + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}
