//! # kafkalog
//!
//! Apache Kafka's log storage engine as a library, byte-compatible with Kafka 4.x log
//! directories: v2 record batches with every codec, segments with memory-mapped offset and time
//! indexes, and the per-partition [`UnifiedLog`].
//!
//! ## Layers
//!
//! Bottom up; a module imports only from its own layer and the layers below it, and no two
//! modules or folders import each other. `architecture.rs` (a unit test) reads this list and
//! holds every `use crate::` to it.
//!
//! 1. [`error`]: the one `Error` enum every layer returns;
//! 2. [`file_names`]: every on-disk name (segment, index and snapshot files, `.deleted` /
//!    `.cleaned` / `.swap`, the checkpoints, `.lock`, `meta.properties`,
//!    `.kafka_cleanshutdown`, partition directory names) and Kafka's topic-name rules;
//! 3. [`util`]: durable file operations, the fault seam, the clock, lock holders;
//! 4. [`record`]: varints, records, batches, `TimestampType`, codecs, legacy magic 0/1;
//! 5. [`config`]: the topic (`LogConfig`), broker (`LogManagerConfig`) and cleaner
//!    (`CleanerConfig`) key tables on one engine;
//! 6. [`index`]: the offset and time indexes (memory-mapped in `index/mmap.rs`);
//! 7. [`segment`]: the `.log` file, one segment, the ordered set of segments;
//! 8. [`checkpoint`]: `partition.metadata`, the offset checkpoints, `meta.properties`, the
//!    clean-shutdown marker: their reads and writes;
//! 9. [`log`]: `LocalLog`, `UnifiedLog`, recovery, validation of appends;
//! 10. [`cleaner`]: log compaction (the offset map, the two-pass cleaner, its threads);
//! 11. [`manager`]: the LogManager layer;
//! 12. `python`: the `kafkalog._native` module, behind the `python` feature.
//!
//! The Python module (`kafkalog._native`) lives in `python/` behind the `python` feature.
//!
//! ## `unsafe`
//!
//! `unsafe_code` is denied crate-wide and allowed (`#![allow(unsafe_code)]`) in nine modules
//! only, each block with a `SAFETY:` comment (the architecture test checks both this list and
//! the comments):
//! - `index/mmap.rs`: the index memory maps;
//! - `util/file.rs`: the directory `flock`, the `.lock` file's `fcntl` lock, `pathconf`, the
//!   write-back hint, and the loader's `openat`, `fstatat` and `getdents64` on the locked
//!   directory's descriptor;
//! - `util/fault.rs`: the fault seam's `SIGKILL` of its own process (crash tests);
//! - `util/unnamed_file.rs`: `linkat`, which names a file created unnamed (`O_TMPFILE`), and
//!   `getrlimit` for their descriptor budget;
//! - `cleaner/offset_map.rs`: the cache prefetch hint of the cleaner's offset map;
//! - `cleaner/md5x16_avx512.rs`: the AVX-512 MD5 kernel, run only through a token made by the
//!   run-time CPU check;
//! - `cleaner/md5x24_avx2.rs`: the AVX2 MD5 kernel, likewise;
//! - `python/buffer.rs`: the read-only buffer protocol that hands Arrow column bytes to Python
//!   without a copy;
//! - `python/arrow_c.rs`: Arrow's C data interface structs, moved out of their PyCapsules and
//!   read in place as column views (`UnifiedLog.append_arrow`).

#![deny(unsafe_code)]
#![warn(clippy::pedantic)]
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_lossless,
    clippy::cast_precision_loss,
    clippy::module_name_repetitions,
    clippy::missing_errors_doc,
    clippy::missing_panics_doc,
    clippy::must_use_candidate,
    clippy::similar_names,
    clippy::doc_markdown,
    clippy::struct_excessive_bools,
    clippy::fn_params_excessive_bools,
    clippy::return_self_not_must_use
)]

pub mod checkpoint;
pub mod cleaner;
pub mod config;
pub mod error;
pub mod file_names;
pub mod index;
pub mod log;
pub mod manager;
pub mod record;
pub mod segment;
pub mod util;

#[cfg(test)]
mod architecture;
#[cfg(feature = "python")]
mod python;

pub use config::LogConfig;
pub use config::LogManagerConfig;
pub use error::{Error, Result};
pub use log::unified_log::{FetchIsolation, LogOpenOptions, UnifiedLog};
