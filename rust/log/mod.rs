//! One partition's log: `LocalLog` (segments), `UnifiedLog` (offsets, append,
//! read), validation of appends (`LogValidator`), and producer state (`ProducerStateManager`).

pub mod leader_epoch_cache;
pub mod local_log;
pub mod log_dir_failure_channel;
pub mod log_loader;
pub mod log_validator;
pub mod producer_state;
pub mod splitter;
pub mod unified_log;
pub mod verify;
