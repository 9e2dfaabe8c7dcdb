//! Segments: the `.log` file (`FileRecords`), one `LogSegment`, the ordered `LogSegments`, and
//! the files of a next segment created ahead of its roll (`ReservedSegmentFiles`).

pub mod file_records;
pub mod log_segment;
pub mod log_segments;
pub mod reserved_files;
mod torn_tail;
pub mod verify;
