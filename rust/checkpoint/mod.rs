//! Small durable files beside the segments: `partition.metadata`, the offset and leader-epoch
//! checkpoints, the clean-shutdown marker and `meta.properties`.

pub mod checkpoint_file;
pub mod log_dir_files;
pub mod partition_metadata;
