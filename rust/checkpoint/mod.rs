//! Small durable files beside the segments: `partition.metadata`, the offset and leader-epoch
//! checkpoints, the clean-shutdown marker and `meta.properties`; and the `cleaner-offset-checkpoint`
//! entries that on-demand cleans outside a `LogManager` read and update (`cleaner_checkpoint`).

pub mod checkpoint_file;
pub mod cleaner_checkpoint;
pub mod log_dir_files;
pub mod partition_metadata;
