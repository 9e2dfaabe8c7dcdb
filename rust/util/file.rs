//! Durability helpers in one place: atomic replace (tmp + fsync + rename + directory fsync),
//! directory fsync, and I/O errors that name the file. Every write, fsync, rename and delete
//! passes the fault-injection seam (`util::fault::check`) first.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::log::file_names::{with_suffix, TMP_FILE_SUFFIX};
use crate::util::fault::{check, FaultOp};

/// Writes `contents` to `path` atomically (Kafka's `Utils.atomicMoveWithFallback` after writing a
/// `.tmp` file): write `<path>.tmp`, fsync it, rename it over `path`, fsync the directory.
/// After a crash the file holds either the old or the new contents, never a mix.
pub fn atomic_write(path: &Path, contents: &[u8]) -> Result<()> {
    let tmp = with_suffix(path, TMP_FILE_SUFFIX);
    {
        let mut f = check(&tmp, FaultOp::Open)
            .and_then(|()| OpenOptions::new().write(true).create(true).truncate(true).open(&tmp))
            .map_err(|e| Error::io(&tmp, "create", e))?;
        check(&tmp, FaultOp::Write).and_then(|()| f.write_all(contents)).map_err(|e| Error::io(&tmp, "write", e))?;
        check(&tmp, FaultOp::Fsync).and_then(|()| f.sync_all()).map_err(|e| Error::io(&tmp, "fsync", e))?;
    }
    check(path, FaultOp::Rename).and_then(|()| fs::rename(&tmp, path)).map_err(|e| Error::io(path, "rename", e))?;
    if let Some(dir) = path.parent() {
        fsync_dir(dir)?;
    }
    Ok(())
}

/// Fsyncs a directory so that renames and creations in it are durable.
pub fn fsync_dir(dir: &Path) -> Result<()> {
    let d = File::open(dir).map_err(|e| Error::io(dir, "open directory", e))?;
    check(dir, FaultOp::Fsync).and_then(|()| d.sync_all()).map_err(|e| Error::io(dir, "fsync directory", e))
}

/// Deletes `path` if it exists; returns whether it did.
pub fn delete_if_exists(path: &Path) -> Result<bool> {
    match check(path, FaultOp::Delete).and_then(|()| fs::remove_file(path)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(path, "delete", e)),
    }
}

/// An exclusive advisory lock (`flock`) on a directory, held until dropped. Writable logs take
/// one on their partition directory so that a second writer, in this process or another, is
/// refused instead of corrupting the files (and so no mapped index is resized under another
/// writer's mapping). Nothing is written to the directory.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

impl DirLock {
    /// Takes the lock without waiting; `Error::LogDirLocked` if someone else holds it.
    pub fn try_lock(dir: &Path) -> Result<Self> {
        use std::os::fd::AsRawFd;
        let file = File::open(dir).map_err(|e| Error::io(dir, "open directory", e))?;
        // SAFETY: flock is called on a file descriptor owned by `file`, which stays open for
        // the lifetime of the returned guard; it touches no memory.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            return Err(if err.kind() == std::io::ErrorKind::WouldBlock {
                Error::LogDirLocked { path: dir.to_path_buf() }
            } else {
                Error::io(dir, "lock directory", err)
            });
        }
        Ok(DirLock { _file: file })
    }
}
