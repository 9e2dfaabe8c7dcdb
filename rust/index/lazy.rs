//! Lazily opened indexes (Kafka's `LazyIndex`): a segment knows its index files from the
//! start but maps them only on first use, so opening a log with thousands of segments does not
//! map thousands of files.
//!
//! Thread-safety: safe for concurrent use; lookups share a read lock, appends take the write lock.

use std::path::{Path, PathBuf};

use parking_lot::{MappedRwLockReadGuard, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::mmap::IndexStorage;
use super::offset_index::OffsetIndex;
use super::time_index::TimeIndex;
use super::{AbstractIndex, PreparedIndex};
use crate::error::Result;
use crate::util::fault::FaultOp;
use crate::util::unnamed_file::UnnamedFile;

/// How [`LazyIndex::rewrite`] writes the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewriteMode {
    /// Truncated and written in place, nothing fsynced: for a segment that a crash would
    /// recover again anyway.
    InPlace,
    /// A `.tmp` file renamed over the index, so a crash leaves the old file or the new one,
    /// never a part; nothing fsynced (the segment's flush does that).
    Replace,
    /// As `Replace`, with the file and the directory fsynced: for an index that no flush covers
    /// (a segment below the recovery point).
    ReplaceDurably,
}

/// What the lazy wrapper needs from an index type.
pub trait IndexFile: Sized {
    /// Opens read-write (creating the file, preallocated to `max_index_size`).
    fn open_rw(path: PathBuf, base_offset: i64, max_index_size: usize) -> Result<Self>;
    /// `open_rw`, a missing file created from `reserved` (an unnamed file created ahead,
    /// `segment::reserved_files`): it is named `path` instead of a new file being created.
    fn open_rw_reserved(path: PathBuf, base_offset: i64, max_index_size: usize, reserved: UnnamedFile) -> Result<Self>;
    /// Opens read-write at `size` (`open_rw`, then `resize`, in one open).
    fn open_rw_resized(path: PathBuf, base_offset: i64, max_index_size: usize, size: usize) -> Result<Self>;
    /// Kafka's `resize`.
    fn resize_file(&mut self, size: usize) -> Result<bool>;
    /// Makes the file hold exactly `entries` at `max_index_size`, unmapped (`prepare_holding`).
    fn prepare_holding(path: &Path, max_index_size: usize, entries: &[u8]) -> Result<PreparedIndex>;
    /// Opens, mapped, the file `prepare_holding` prepared (`open_prepared`).
    fn open_prepared(path: PathBuf, base_offset: i64, max_index_size: usize, prepared: PreparedIndex) -> Result<Self>;
    /// Opens a read-only snapshot (no mapping, nothing written).
    fn open_ro(path: PathBuf, base_offset: i64) -> Result<Self>;
    /// Renames the file.
    fn rename(&mut self, to: &Path) -> Result<()>;
    /// Deletes the file.
    fn delete(&mut self) -> Result<bool>;
    /// The file's path.
    fn file_path(&self) -> &Path;
}

impl IndexFile for OffsetIndex {
    fn open_rw(path: PathBuf, base_offset: i64, max_index_size: usize) -> Result<Self> {
        OffsetIndex::open(path, base_offset, max_index_size)
    }
    fn open_rw_reserved(path: PathBuf, base_offset: i64, max_index_size: usize, reserved: UnnamedFile) -> Result<Self> {
        let inner = AbstractIndex::open(path, base_offset, max_index_size, Self::ENTRY_SIZE, None, Some(reserved))?;
        Ok(Self::with_inner(inner))
    }
    fn open_rw_resized(path: PathBuf, base_offset: i64, max_index_size: usize, size: usize) -> Result<Self> {
        OffsetIndex::open_resized(path, base_offset, max_index_size, size)
    }
    fn resize_file(&mut self, size: usize) -> Result<bool> {
        self.resize(size)
    }
    fn prepare_holding(path: &Path, max_index_size: usize, entries: &[u8]) -> Result<PreparedIndex> {
        OffsetIndex::prepare_holding(path, max_index_size, entries)
    }
    fn open_prepared(path: PathBuf, base_offset: i64, max_index_size: usize, prepared: PreparedIndex) -> Result<Self> {
        OffsetIndex::open_prepared(path, base_offset, max_index_size, prepared)
    }
    fn open_ro(path: PathBuf, base_offset: i64) -> Result<Self> {
        OffsetIndex::open_read_only(path, base_offset)
    }
    fn rename(&mut self, to: &Path) -> Result<()> {
        self.rename_to(to.to_path_buf())
    }
    fn delete(&mut self) -> Result<bool> {
        self.delete_if_exists()
    }
    fn file_path(&self) -> &Path {
        self.path()
    }
}

impl IndexFile for TimeIndex {
    fn open_rw(path: PathBuf, base_offset: i64, max_index_size: usize) -> Result<Self> {
        TimeIndex::open(path, base_offset, max_index_size)
    }
    fn open_rw_reserved(path: PathBuf, base_offset: i64, max_index_size: usize, reserved: UnnamedFile) -> Result<Self> {
        let inner = AbstractIndex::open(path, base_offset, max_index_size, Self::ENTRY_SIZE, None, Some(reserved))?;
        Ok(Self::with_inner(inner))
    }
    fn open_rw_resized(path: PathBuf, base_offset: i64, max_index_size: usize, size: usize) -> Result<Self> {
        TimeIndex::open_resized(path, base_offset, max_index_size, size)
    }
    fn resize_file(&mut self, size: usize) -> Result<bool> {
        self.resize(size)
    }
    fn prepare_holding(path: &Path, max_index_size: usize, entries: &[u8]) -> Result<PreparedIndex> {
        TimeIndex::prepare_holding(path, max_index_size, entries)
    }
    fn open_prepared(path: PathBuf, base_offset: i64, max_index_size: usize, prepared: PreparedIndex) -> Result<Self> {
        TimeIndex::open_prepared(path, base_offset, max_index_size, prepared)
    }
    fn open_ro(path: PathBuf, base_offset: i64) -> Result<Self> {
        TimeIndex::open_read_only(path, base_offset)
    }
    fn rename(&mut self, to: &Path) -> Result<()> {
        self.rename_to(to.to_path_buf())
    }
    fn delete(&mut self) -> Result<bool> {
        self.delete_if_exists()
    }
    fn file_path(&self) -> &Path {
        self.path()
    }
}

/// The path of an unloaded index's state (`unload_for_rewrite` leaves it unloaded).
fn unloaded_path<T>(state: &State<T>) -> &Path {
    match state {
        State::Unloaded { path, .. } => path,
        State::Loaded(_) => unreachable!("unload_for_rewrite leaves the index unloaded"),
    }
}

#[derive(Debug)]
enum State<T> {
    /// Not opened yet. `prepared`: the file holds a recovery's rebuilt entries at full size
    /// (`LazyIndex::rewrite_mapped`); the first use maps it with those entries.
    Unloaded {
        path: PathBuf,
        prepared: Option<PreparedIndex>,
    },
    Loaded(T),
}

/// An index opened on first use. Mirrors Kafka's `LazyIndex`.
#[derive(Debug)]
pub struct LazyIndex<T> {
    state: RwLock<State<T>>,
    base_offset: i64,
    max_index_size: usize,
    read_only: bool,
    /// An unnamed file created ahead (`segment::reserved_files`) that the first open (or
    /// `create_empty_if_missing`) names as the index file. Any other change to the index drops
    /// it unnamed.
    reserved: Mutex<Option<UnnamedFile>>,
}

impl<T: IndexFile> LazyIndex<T> {
    /// A lazy index for `path`; nothing is opened yet.
    pub fn new(path: PathBuf, base_offset: i64, max_index_size: usize, read_only: bool) -> Self {
        LazyIndex {
            state: RwLock::new(State::Unloaded { path, prepared: None }),
            base_offset,
            max_index_size,
            read_only,
            reserved: Mutex::new(None),
        }
    }

    /// A new read-write index whose file does not exist yet: its first open names `reserved`
    /// (an unnamed file created ahead, `util::unnamed_file`) `path` instead of creating a file.
    pub fn new_reserved(path: PathBuf, base_offset: i64, max_index_size: usize, reserved: UnnamedFile) -> Self {
        let index = Self::new(path, base_offset, max_index_size, false);
        *index.reserved.lock() = Some(reserved);
        index
    }

    /// An index that is already open.
    pub fn loaded(index: T, base_offset: i64, max_index_size: usize, read_only: bool) -> Self {
        LazyIndex {
            state: RwLock::new(State::Loaded(index)),
            base_offset,
            max_index_size,
            read_only,
            reserved: Mutex::new(None),
        }
    }

    /// The size a read-write open preallocates (`segment.index.bytes`), which `reset` restores.
    pub fn max_index_size(&self) -> usize {
        self.max_index_size
    }

    /// Whether the file has been opened.
    pub fn is_loaded(&self) -> bool {
        matches!(*self.state.read(), State::Loaded(_))
    }

    fn open(&self, path: &Path, prepared: Option<PreparedIndex>) -> Result<T> {
        if let Some(prepared) = prepared {
            T::open_prepared(path.to_path_buf(), self.base_offset, self.max_index_size, prepared)
        } else if self.read_only {
            T::open_ro(path.to_path_buf(), self.base_offset)
        } else if let Some(reserved) = self.reserved.lock().take() {
            T::open_rw_reserved(path.to_path_buf(), self.base_offset, self.max_index_size, reserved)
        } else {
            T::open_rw(path.to_path_buf(), self.base_offset, self.max_index_size)
        }
    }

    fn ensure_loaded(&self) -> Result<()> {
        if self.is_loaded() {
            return Ok(());
        }
        let mut state = self.state.write();
        if let State::Unloaded { path, prepared } = &*state {
            let index = self.open(path, *prepared)?;
            *state = State::Loaded(index);
        }
        Ok(())
    }

    /// Kafka's `resize` of the index, opening it first if needed: an unopened read-write index
    /// opens at `size` directly (one open and map instead of a map, an unmap and a map again).
    /// An index a recovery prepared at full size stays unopened when `size` is that full size
    /// (`segment.index.bytes`): its file already has that length.
    ///
    /// # Errors
    /// As the index's open and `resize`.
    pub fn resize(&self, size: usize) -> Result<bool> {
        self.drop_reserved();
        if !self.read_only {
            let mut state = self.state.write();
            if let State::Unloaded { prepared: Some(_), .. } = &*state {
                if size == self.max_index_size {
                    return Ok(false);
                }
            }
            if let State::Unloaded { path, prepared: None } = &*state {
                let index = T::open_rw_resized(path.clone(), self.base_offset, self.max_index_size, size)?;
                *state = State::Loaded(index);
            }
        }
        self.get_mut()?.resize_file(size)
    }

    /// Closes the unnamed file created ahead, if the index still holds one.
    fn drop_reserved(&self) {
        self.reserved.lock().take();
    }

    /// Shared access, opening the file first if needed.
    pub fn get(&self) -> Result<MappedRwLockReadGuard<'_, T>> {
        self.ensure_loaded()?;
        Ok(RwLockReadGuard::map(self.state.read(), |s| match s {
            State::Loaded(index) => index,
            State::Unloaded { .. } => unreachable!("index loaded above and never unloaded"),
        }))
    }

    /// Exclusive access, opening the file first if needed.
    pub fn get_mut(&self) -> Result<parking_lot::MappedRwLockWriteGuard<'_, T>> {
        self.ensure_loaded()?;
        Ok(RwLockWriteGuard::map(self.state.write(), |s| match s {
            State::Loaded(index) => index,
            State::Unloaded { .. } => unreachable!("index loaded above and never unloaded"),
        }))
    }

    /// The index file's path.
    pub fn path(&self) -> PathBuf {
        match &*self.state.read() {
            State::Loaded(index) => index.file_path().to_path_buf(),
            State::Unloaded { path, .. } => path.clone(),
        }
    }

    /// Replaces the file with `bytes` (whole entries, an index rebuilt in memory: see
    /// `index::rebuild`), written once at its final length; a mapping is dropped first and the
    /// file is opened again on next use. How the file is written is `how` ([`RewriteMode`]). A
    /// file that already holds exactly `bytes` is left as it is
    /// (`util::file::file_has_contents`): the same result, without dirtying or replacing it.
    ///
    /// # Errors
    /// `IllegalState` on a read-only index; `Io` naming the file when a step fails.
    pub fn rewrite(&self, bytes: &[u8], how: RewriteMode) -> Result<()> {
        let state = self.unload_for_rewrite()?;
        let path = unloaded_path(&state).to_path_buf();
        drop(state);
        if crate::util::file::file_has_contents(&path, bytes) {
            return Ok(());
        }
        match how {
            RewriteMode::InPlace => crate::util::file::write_file_in_place(&path, bytes),
            RewriteMode::Replace => crate::util::file::replace_file(&path, bytes, false),
            RewriteMode::ReplaceDurably => crate::util::file::replace_file(&path, bytes, true),
        }
    }

    /// [`Self::rewrite`] for the active segment: the file holds `bytes` at its start and is
    /// `segment.index.bytes` long (full size, ready for appends), with exactly those entries;
    /// no write when the file already starts with them and a zero entry
    /// (`IndexStorage::prepare_holding`). It is mapped at its first use, not here: a recovery
    /// of many partitions maps none of their active indexes until they are used. Past the
    /// entries the file may keep bytes a reader never takes for entries (they follow a zero
    /// entry); a close trims the file to its entries and a crash recovers the segment again.
    /// Only for a segment a crash recovers again (its indexes are written in place).
    ///
    /// # Errors
    /// `ReadOnly` on a read-only index; `IllegalState` when the entries do not fit; `Io` naming
    /// the file when a step fails.
    pub fn rewrite_mapped(&self, bytes: &[u8]) -> Result<()> {
        let mut state = self.unload_for_rewrite()?;
        let prepared = T::prepare_holding(unloaded_path(&state), self.max_index_size, bytes)?;
        if let State::Unloaded { prepared: slot, .. } = &mut *state {
            *slot = Some(prepared);
        }
        Ok(())
    }

    /// The first step of both rewrites: refused on a read-only index; otherwise the index is
    /// unmapped (before its file changes) and left unloaded and unprepared, its state still
    /// locked.
    fn unload_for_rewrite(&self) -> Result<RwLockWriteGuard<'_, State<T>>> {
        if self.read_only {
            return Err(crate::error::Error::ReadOnly { path: self.path() });
        }
        self.drop_reserved();
        let mut state = self.state.write();
        match &mut *state {
            State::Loaded(index) => {
                let path = index.file_path().to_path_buf();
                *state = State::Unloaded { path, prepared: None };
            }
            State::Unloaded { prepared, .. } => *prepared = None,
        }
        Ok(state)
    }

    /// Renames the file, whether or not it is open.
    pub fn rename_to(&self, to: &Path) -> Result<()> {
        self.drop_reserved();
        let mut state = self.state.write();
        match &mut *state {
            State::Loaded(index) => index.rename(to),
            State::Unloaded { path, .. } => {
                if path.exists() {
                    crate::util::file::rename(path, to)?;
                }
                *path = to.to_path_buf();
                Ok(())
            }
        }
    }

    /// Trims the file of an index that is not open: one a recovery prepared at full size
    /// (`rewrite_mapped`) is cut to its entries, as Kafka's `trimToValidSize` would cut it,
    /// without mapping it; a missing one is created empty (`create_empty_if_missing`). Returns
    /// false, doing nothing, when the index is open: the caller trims it through the open index.
    ///
    /// # Errors
    /// `Io` naming the file when it cannot be opened or cut.
    pub fn trim_unopened(&self) -> Result<bool> {
        {
            let mut state = self.state.write();
            let State::Unloaded { path, prepared } = &mut *state else { return Ok(false) };
            if let Some(p) = *prepared {
                IndexStorage::trim_unmapped(path, p.valid_len())?;
                *prepared = None;
            }
        }
        self.create_empty_if_missing()?;
        Ok(true)
    }

    /// Creates an empty file if the index was never opened and has no file yet, so a closed
    /// segment always has its index files (as Kafka's flush at shutdown leaves them).
    pub fn create_empty_if_missing(&self) -> Result<()> {
        let state = self.state.read();
        if let State::Unloaded { path, .. } = &*state {
            let reserved = self.reserved.lock().take();
            if let Some(unnamed) = reserved {
                if unnamed.name(path, FaultOp::Open, "create")?.is_some() {
                    return Ok(());
                }
            }
            if !path.exists() && !self.read_only {
                crate::util::fault::check(path, crate::util::fault::FaultOp::Open)
                    .and_then(|()| std::fs::OpenOptions::new().write(true).create_new(true).open(path).map(drop))
                    .map_err(|e| crate::error::Error::io(path, "create", e))?;
            }
        }
        Ok(())
    }

    /// Deletes the file, whether or not it is open.
    pub fn delete_if_exists(&self) -> Result<bool> {
        self.drop_reserved();
        let mut state = self.state.write();
        match &mut *state {
            State::Loaded(index) => index.delete(),
            State::Unloaded { path, prepared } => {
                *prepared = None;
                crate::util::file::delete_if_exists(path)
            }
        }
    }
}
