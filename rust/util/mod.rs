//! Durability helpers and injectable time.

pub mod clock;
pub mod file;
