//! Durability helpers, the file I/O fault-injection seam, injectable time, and who holds a
//! lock.

pub mod clock;
pub mod fault;
pub mod file;
pub mod lock_holder;
