//! The cheap sanity checks of a segment's index files that decide whether they must be rebuilt
//! from the segment's data: Kafka's `OffsetIndex.sanityCheck` and `TimeIndex.sanityCheck`, done
//! from a stat and one or two small reads instead of a mapping, plus a check for a preallocated
//! tail a crash left untrimmed. The loader runs them when it opens a segment
//! (`log/log_loader.rs`); after a clean shutdown it leaves them to the segment's first use of an
//! index (`segment/log_segment/index_check.rs`).
//!
//! Thread-safety: plain functions over files; they only read.

use std::path::Path;

use crate::util::file;

/// Why a segment's indexes must be rebuilt.
pub(crate) enum IndexProblem {
    /// The offset index file does not exist.
    Missing,
    /// An index file is damaged; what is wrong with it (Kafka's `CorruptIndexException` message).
    Corrupt(String),
}

/// Why an offset index cannot be trusted without recovery, if it cannot: it is missing, its
/// length is not a whole number of entries, or its last entry holds a negative relative offset
/// (Kafka's `OffsetIndex.sanityCheck`, done here from two small reads instead of a mapping), or
/// (with `trimmed`, for an inactive segment) its last entry is a tail of zeros.
pub(crate) fn offset_index_problem(path: &Path, trimmed: bool) -> Option<IndexProblem> {
    use std::os::unix::fs::FileExt;
    let file = match file::open(path, file::OpenMode::Read) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(IndexProblem::Missing),
        Err(e) => return Some(IndexProblem::Corrupt(format!("index file {} cannot be opened ({e})", path.display()))),
    };
    // A small index (most are) is read whole: its length without a `stat`.
    let mut head = [0u8; 4096];
    // (A read error falls back to the `stat` and the read of the last entry.)
    let read = file::read_prefix(&file, &mut head).unwrap_or(head.len());
    let len = if read < head.len() { read as u64 } else { file.metadata().map_or(1, |m| m.len()) };
    if len % 8 != 0 {
        return Some(IndexProblem::Corrupt(format!(
            "index file {} has a length of {len} bytes, which is not a multiple of the 8-byte entry size",
            path.display()
        )));
    }
    let mut last = [0u8; 8];
    let have_last = match len {
        0 => false,
        _ if read < head.len() => {
            last.copy_from_slice(&head[read - 8..read]);
            true
        }
        _ => file.read_exact_at(&mut last, len - 8).is_ok(),
    };
    if have_last {
        let relative = i32::from_be_bytes([last[0], last[1], last[2], last[3]]);
        let position = i32::from_be_bytes([last[4], last[5], last[6], last[7]]);
        if relative < 0 || position < 0 {
            return Some(IndexProblem::Corrupt(format!(
                "index file {} ends with an entry of relative offset {relative} and position {position}; \
                 neither may be negative",
                path.display()
            )));
        }
        if trimmed && len >= 16 && last == [0; 8] {
            return Some(untrimmed(path));
        }
    }
    None
}

/// An index whose preallocated tail was never cut: it holds two or more entries and the last
/// is all zeros, which no valid index ends with (offsets, and timestamps, increase from entry
/// to entry, so only a first entry can be zero): a segment rolled, then the process died before
/// the flush that trims its indexes (`segment/log_segment/inactive.rs`). With a recovery point,
/// such a segment lies above it and is recovered anyway; an open without one (a partition of a
/// `LogManager`'s dir opened on its own after a crash) recovers only the last segment, so this
/// check finds the others.
fn untrimmed(path: &Path) -> IndexProblem {
    IndexProblem::Corrupt(format!(
        "index file {} ends with an entry of zeros (a preallocated tail never trimmed)",
        path.display()
    ))
}

/// Why a time index cannot be trusted: its length is not a whole number of 12-byte entries
/// (a torn write or truncation), or (with `trimmed`, for an inactive segment) it still has its
/// preallocated length and ends with a tail of zeros (Kafka's `TimeIndex.sanityCheck` finds that
/// tail as a last timestamp below the first). Only a file of the preallocated length is read:
/// the others are known by their length alone (one `fstatat`, no open).
pub(crate) fn time_index_problem(path: &Path, trimmed: bool, max_index_size: usize) -> Option<IndexProblem> {
    use std::os::unix::fs::FileExt;
    let len = file::file_len(path).ok()?;
    if len % 12 != 0 {
        return Some(IndexProblem::Corrupt(format!(
            "time index file {} has a length of {len} bytes, which is not a multiple of the 12-byte entry size",
            path.display()
        )));
    }
    let preallocated = (max_index_size as u64) / 12 * 12;
    if !trimmed || len < 24 || len != preallocated {
        return None;
    }
    let file = file::open(path, file::OpenMode::Read).ok()?;
    let mut last = [0u8; 12];
    (file.read_exact_at(&mut last, len - 12).is_ok() && last == [0; 12]).then(|| untrimmed(path))
}

impl IndexProblem {
    /// Logs the problem as Kafka's loader does, for the segment whose data is `log_file`, to
    /// the logger `target` (the caller's module); `action` says what follows (Kafka:
    /// "recovering segment and rebuilding index files").
    pub(crate) fn warn(&self, target: &str, log_file: &Path, action: &str) {
        match self {
            IndexProblem::Missing => log::warn!(
                target: target,
                "Could not find offset index file corresponding to log file {}, {action}...",
                log_file.display()
            ),
            IndexProblem::Corrupt(why) => log::warn!(
                target: target,
                "Found a corrupted index file corresponding to log file {} due to {why}, {action}...",
                log_file.display()
            ),
        }
    }
}
