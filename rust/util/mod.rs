//! One-shot background tasks, short copies in line, durability helpers, the file I/O fault-injection seam, injectable time, who holds a lock,
//! the pure half of the `log` -> Python `logging` bridge, Kafka's murmur2 partitioner, and unnamed files
//! (`O_TMPFILE`) named later.

pub mod background;
pub mod clock;
pub mod copy;
pub mod fault;
pub mod file;
pub mod lock_holder;
pub mod log_bridge;
pub mod murmur2;
pub mod progress;
pub mod unnamed_file;

/// proptest's configuration for the crate's property tests: a fixed RNG seed (proptest's own
/// default draws one from the OS on every run), so every run tries the same cases and a failure
/// seen once is seen every time. The `PROPTEST_RNG_SEED` and `PROPTEST_CASES` environment
/// variables still override it (`proptest!` applies them to this config).
#[cfg(test)]
pub(crate) fn proptest_config() -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        rng_seed: proptest::test_runner::RngSeed::Fixed(PROPTEST_SEED),
        ..proptest::test_runner::Config::default()
    }
}

/// The seed of [`proptest_config`] ("kafkalog" in ASCII).
#[cfg(test)]
const PROPTEST_SEED: u64 = 0x6b61_666b_616c_6f67;
