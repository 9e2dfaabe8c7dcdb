//! Segments: the `.log` file (`FileRecords`), one `LogSegment`, and the ordered `LogSegments`.

pub mod file_records;
pub mod log_segment;
pub mod log_segments;
mod torn_tail;
pub mod verify;
