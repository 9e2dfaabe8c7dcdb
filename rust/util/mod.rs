//! Durability helpers, the file I/O fault-injection seam, injectable time, who holds a lock,
//! and the pure half of the `log` -> Python `logging` bridge.

pub mod clock;
pub mod fault;
pub mod file;
pub mod lock_holder;
pub mod log_bridge;
