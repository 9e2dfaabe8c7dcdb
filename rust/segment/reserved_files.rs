//! The files of a log's next segment, created ahead of the roll as unnamed files
//! (`util::unnamed_file`). Not a Kafka class: Kafka's roll creates the new segment's `.log` and
//! (on first use) its two indexes inside the roll, and creating a file's inode was most of a
//! roll's cost (about a millisecond for a roll's files on this project's ext4 disk, with the
//! write lock held). A log whose rolls flush in the background reserves them on its flush task
//! (with the producer snapshot's file: `log/unified_log/roll_flush.rs`); the roll names the
//! `.log` (`LogSegment::create_reserved`), each index is named at its first use (or dropped, if
//! something else comes first: `index::lazy::LazyIndex`), and a file that cannot be named is
//! created the usual way instead. Each file holds a descriptor (within the process's budget for
//! unnamed files) and an inode, no data, until it is named or dropped.
//!
//! Thread-safety: plain owned data, moved from the flush task to the roll.

use std::path::Path;

use crate::util::unnamed_file::UnnamedFile;

/// Unnamed, empty files for one new segment: its `.log`, `.index` and `.timeindex`.
#[derive(Debug)]
pub struct ReservedSegmentFiles {
    /// The `.log` file.
    pub log: UnnamedFile,
    /// The `.index` file (preallocated when named, as a created index is).
    pub offset_index: UnnamedFile,
    /// The `.timeindex` file, likewise.
    pub time_index: UnnamedFile,
}

impl ReservedSegmentFiles {
    /// Creates the three files unnamed in `dir`'s file system. `Ok(None)` when the process's
    /// unnamed files hold their descriptor budget.
    ///
    /// # Errors
    /// As `UnnamedFile::create_in` (`ErrorKind::Unsupported` when the file system cannot).
    pub fn create(dir: &Path) -> std::io::Result<Option<Self>> {
        let Some(log) = UnnamedFile::create_in(dir)? else { return Ok(None) };
        let Some(offset_index) = UnnamedFile::create_in(dir)? else { return Ok(None) };
        let Some(time_index) = UnnamedFile::create_in(dir)? else { return Ok(None) };
        Ok(Some(ReservedSegmentFiles { log, offset_index, time_index }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let files = ReservedSegmentFiles::create(dir.path()).unwrap().expect("within the budget");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        drop(files);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
