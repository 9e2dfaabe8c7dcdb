//! A standalone log's clean close, kept in its partition directory as `kafkalog-clean-close`,
//! so that the next open of the log alone skips recovery, as a `LogManager`'s open does after a
//! clean shutdown. No Kafka counterpart: Kafka marks a whole log dir's clean shutdown with
//! `.kafka_cleanshutdown`, which only its `LogManager` writes, and keeps recovery points in the
//! log dir's checkpoints; a log opened alone has neither, so without this file every open of it
//! re-reads and re-checks its whole active segment (Kafka's recovery of an unflushed segment).
//!
//! The file is written by `close` after everything is flushed (the segments, their indexes, the
//! producer snapshot at the log end) and names what that close left: the active segment's base
//! offset and size, and the log end offset. An open trusts it only while the directory still
//! holds exactly that (its last `.log` file has that base and size, and no interrupted replace
//! is pending), and the load then finds that log end; anything else (another writer appended,
//! rolled or truncated since: a kafkalog process without this file's rules, a broker) is a
//! normal open, recovering the active segment. A writable open deletes the file (and fsyncs the
//! directory) before it changes anything, so a crash after it never leaves the file beside
//! data written since. Kafka ignores the file (its loader reads only segment, index and
//! snapshot files in a partition directory).
//!
//! Format (text, the checkpoint files' framing): a version line `0`, then one line
//! `<active segment base offset> <active segment size> <log end offset>`.
//!
//! Thread-safety: plain functions over the directory, called by `UnifiedLog::open` and `close`
//! under the partition directory's lock.

use std::path::Path;

use crate::error::{Error, Result};
use crate::file_names::{
    offset_from_file_name, CLEANED_FILE_SUFFIX, CLEAN_CLOSE_FILE, LOG_FILE_SUFFIX, SWAP_FILE_SUFFIX,
};
use crate::util::file::{atomic_write, delete_if_exists, fsync_dir};

/// What a clean close left (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanClose {
    pub active_base_offset: i64,
    pub active_size: u64,
    pub log_end_offset: i64,
}

const VERSION: &str = "0";

/// Records `close` in `dir` (tmp + fsync + rename + directory fsync). The caller flushed
/// everything first.
pub fn write(dir: &Path, close: &CleanClose) -> Result<()> {
    let text = format!("{VERSION}\n{} {} {}\n", close.active_base_offset, close.active_size, close.log_end_offset);
    atomic_write(&dir.join(CLEAN_CLOSE_FILE), text.as_bytes())
}

/// Removes `dir`'s record of a clean close, if any, and returns what it held when it still
/// describes the directory (see the module doc), judged from `names`, the open's listing of
/// the directory's files. The removal is durable (the directory is fsynced) before this
/// returns, so the caller may then change the log. A malformed file is removed with a warning
/// and trusted for nothing.
pub fn take<'n>(dir: &Path, names: impl IntoIterator<Item = &'n str>) -> Result<Option<CleanClose>> {
    let path = dir.join(CLEAN_CLOSE_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&path, "read", e)),
    };
    let recorded = parse(&text);
    if recorded.is_none() {
        log::warn!(
            "ignoring {}: not a clean-close record ({text:?}); the log is recovered as after a crash",
            path.display()
        );
    }
    let matches = match recorded {
        Some(r) => describes(dir, names, &r)?,
        None => false,
    };
    delete_if_exists(&path)?;
    fsync_dir(dir)?;
    Ok(recorded.filter(|_| matches))
}

fn parse(text: &str) -> Option<CleanClose> {
    let mut lines = text.lines();
    if lines.next()? != VERSION {
        return None;
    }
    let mut fields = lines.next()?.split(' ');
    let close = CleanClose {
        active_base_offset: fields.next()?.parse().ok().filter(|&o: &i64| o >= 0)?,
        active_size: fields.next()?.parse().ok()?,
        log_end_offset: fields.next()?.parse().ok().filter(|&o: &i64| o >= 0)?,
    };
    (fields.next().is_none() && lines.next().is_none()).then_some(close)
}

/// Whether the last `.log` file among `names` (files of `dir`) has the recorded base offset and
/// size, and no interrupted replace (`.cleaned` or `.swap` files) waits for the loader.
fn describes<'n>(dir: &Path, names: impl IntoIterator<Item = &'n str>, close: &CleanClose) -> Result<bool> {
    let mut last: Option<(i64, &str)> = None;
    for name in names {
        if name.ends_with(CLEANED_FILE_SUFFIX) || name.ends_with(SWAP_FILE_SUFFIX) {
            return Ok(false);
        }
        if name.len() == 20 + LOG_FILE_SUFFIX.len() && name.ends_with(LOG_FILE_SUFFIX) {
            if let Some(base) = offset_from_file_name(name) {
                if last.is_none_or(|(b, _)| base > b) {
                    last = Some((base, name));
                }
            }
        }
    }
    let Some((base, name)) = last else { return Ok(false) };
    let path = dir.join(name);
    let size = std::fs::metadata(&path).map_err(|e| Error::io(&path, "stat", e))?.len();
    Ok(base == close.active_base_offset && size == close.active_size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::log_loader::Listing;

    /// `take` with a fresh listing of `dir`, as an open passes it.
    fn take_listed(dir: &Path) -> Result<Option<CleanClose>> {
        let listing = Listing::read(dir)?;
        take(dir, listing.names())
    }

    fn segment(dir: &Path, base: i64, size: usize) {
        std::fs::write(crate::file_names::log_file(dir, base), vec![0u8; size]).unwrap();
    }

    #[test]
    fn a_record_is_trusted_only_while_it_describes_the_directory_and_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        segment(d, 0, 100);
        segment(d, 50, 30);
        let close = CleanClose { active_base_offset: 50, active_size: 30, log_end_offset: 70 };
        write(d, &close).unwrap();
        assert_eq!(std::fs::read_to_string(d.join(CLEAN_CLOSE_FILE)).unwrap(), "0\n50 30 70\n");
        assert_eq!(take_listed(d).unwrap(), Some(close));
        assert!(!d.join(CLEAN_CLOSE_FILE).exists(), "taken: the next open does not trust it again");
        assert_eq!(take_listed(d).unwrap(), None);

        // The active segment grew, or a later segment appeared, or a replace is pending.
        for change in 0..3 {
            write(d, &close).unwrap();
            match change {
                0 => segment(d, 50, 31),
                1 => segment(d, 70, 0),
                _ => std::fs::write(d.join("00000000000000000000.log.swap"), b"").unwrap(),
            }
            assert_eq!(take_listed(d).unwrap(), None, "change {change}");
            assert!(!d.join(CLEAN_CLOSE_FILE).exists());
            segment(d, 50, 30);
            let _ = std::fs::remove_file(crate::file_names::log_file(d, 70));
            let _ = std::fs::remove_file(d.join("00000000000000000000.log.swap"));
        }
    }

    #[test]
    fn a_malformed_record_is_removed_and_trusted_for_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        segment(d, 0, 10);
        for text in
            ["", "1\n0 10 5\n", "0\n0 10\n", "0\n0 10 5 6\n", "0\n-1 10 5\n", "0\n0 10 5\nextra\n", "0\n0 x 5\n"]
        {
            std::fs::write(d.join(CLEAN_CLOSE_FILE), text).unwrap();
            assert_eq!(take_listed(d).unwrap(), None, "{text:?}");
            assert!(!d.join(CLEAN_CLOSE_FILE).exists());
        }
    }
}
