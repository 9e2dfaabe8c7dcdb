//! Small durable files beside the segments: `partition.metadata` (and, with `LogManager`, the
//! offset checkpoints and the clean-shutdown marker).

pub mod partition_metadata;
