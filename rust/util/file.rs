//! Durability helpers in one place: atomic replace (tmp + fsync + rename + directory fsync),
//! directory fsync, and I/O errors that name the file.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::log::file_names::{with_suffix, TMP_FILE_SUFFIX};

/// Writes `contents` to `path` atomically (Kafka's `Utils.atomicMoveWithFallback` after writing a
/// `.tmp` file): write `<path>.tmp`, fsync it, rename it over `path`, fsync the directory.
/// After a crash the file holds either the old or the new contents, never a mix.
pub fn atomic_write(path: &Path, contents: &[u8]) -> Result<()> {
    let tmp = with_suffix(path, TMP_FILE_SUFFIX);
    {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(|e| Error::io(&tmp, "create", e))?;
        f.write_all(contents).map_err(|e| Error::io(&tmp, "write", e))?;
        f.sync_all().map_err(|e| Error::io(&tmp, "fsync", e))?;
    }
    fs::rename(&tmp, path).map_err(|e| Error::io(path, "rename", e))?;
    if let Some(dir) = path.parent() {
        fsync_dir(dir)?;
    }
    Ok(())
}

/// Fsyncs a directory so that renames and creations in it are durable.
pub fn fsync_dir(dir: &Path) -> Result<()> {
    let d = File::open(dir).map_err(|e| Error::io(dir, "open directory", e))?;
    d.sync_all().map_err(|e| Error::io(dir, "fsync directory", e))
}

/// Deletes `path` if it exists; returns whether it did.
pub fn delete_if_exists(path: &Path) -> Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(path, "delete", e)),
    }
}
