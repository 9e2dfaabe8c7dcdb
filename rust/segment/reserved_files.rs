//! The files of a log's next segment, created ahead of the roll as unnamed files
//! (`util::unnamed_file`). Not a Kafka class: Kafka's roll creates the new segment's `.log` and
//! (on first use) its two indexes inside the roll, and creating a file's inode is most of a
//! roll's cost (about a millisecond for a roll's files on this project's ext4 disk, with the
//! write lock held). A log whose rolls flush in the background reserves them on its flush task
//! (with the producer snapshot's file: `log/unified_log/roll_flush.rs`); the roll names them
//! (`LogSegment::create_reserved`), and a file that cannot be named is created the usual way
//! instead. A reservation costs three open descriptors and no disk space (the index files are
//! sparse).
//!
//! Thread-safety: plain owned data, moved from the flush task to the roll.

use std::fs::File;
use std::path::Path;

use crate::index::offset_index::OffsetIndex;
use crate::index::time_index::TimeIndex;
use crate::util::unnamed_file;

/// Unnamed files for one new segment: its `.log`, `.index` and `.timeindex`.
#[derive(Debug)]
pub struct ReservedSegmentFiles {
    /// The `.log` file, empty.
    pub log: File,
    /// The `.index` file, preallocated to `max_index_size` rounded down to whole entries.
    pub offset_index: File,
    /// The `.timeindex` file, likewise.
    pub time_index: File,
    /// The `segment.index.bytes` the indexes were preallocated for.
    max_index_size: usize,
}

impl ReservedSegmentFiles {
    /// Creates the three files unnamed in `dir`'s file system, the indexes preallocated for
    /// `max_index_size` (`segment.index.bytes`). `Ok(None)` when the file system cannot create
    /// unnamed files.
    ///
    /// # Errors
    /// The error of a create or a preallocation (the caller goes on without a reservation).
    pub fn create(dir: &Path, max_index_size: usize) -> std::io::Result<Option<Self>> {
        let (Some(log), Some(offset_index), Some(time_index)) =
            (unnamed_file::create_in(dir)?, unnamed_file::create_in(dir)?, unnamed_file::create_in(dir)?)
        else {
            return Ok(None);
        };
        offset_index.set_len(whole_entries(max_index_size, OffsetIndex::ENTRY_SIZE))?;
        time_index.set_len(whole_entries(max_index_size, TimeIndex::ENTRY_SIZE))?;
        Ok(Some(ReservedSegmentFiles { log, offset_index, time_index, max_index_size }))
    }

    /// Whether the indexes were preallocated for `max_index_size`: a reservation made before
    /// `segment.index.bytes` changed is not used.
    pub fn fits(&self, max_index_size: usize) -> bool {
        self.max_index_size == max_index_size
    }
}

/// `max_index_size` rounded down to whole entries of `entry_size` bytes, as a new index file
/// is preallocated (`index::mmap`).
fn whole_entries(max_index_size: usize, entry_size: usize) -> u64 {
    (max_index_size / entry_size * entry_size) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_are_preallocated_to_whole_entries_and_nothing_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let files = ReservedSegmentFiles::create(dir.path(), 1000).unwrap().expect("O_TMPFILE");
        assert_eq!(files.log.metadata().unwrap().len(), 0);
        assert_eq!(files.offset_index.metadata().unwrap().len(), 1000);
        assert_eq!(files.time_index.metadata().unwrap().len(), 996);
        assert!(files.fits(1000) && !files.fits(1024));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
