//! Kafka's LogManager layer: several log dirs, recovery at start-up, checkpoints, retention and
//! the scheduler.

pub mod discovery;
pub mod loading;
pub mod log_dir;
pub mod log_manager;
pub mod metrics;
pub mod scheduler;
mod startup;
