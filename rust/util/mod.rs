//! Durability helpers, the file I/O fault-injection seam, injectable time, and the pure half of
//! the `log` -> Python `logging` bridge.

pub mod clock;
pub mod fault;
pub mod file;
pub mod log_bridge;
