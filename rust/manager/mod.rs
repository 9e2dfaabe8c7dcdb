//! Kafka's LogManager layer: several log dirs, recovery at start-up, checkpoints, retention and
//! the scheduler.

pub mod config;
