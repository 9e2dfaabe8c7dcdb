//! Durability helpers, the file I/O fault-injection seam, and injectable time.

pub mod clock;
pub mod fault;
pub mod file;
