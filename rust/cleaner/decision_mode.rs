//! The switch between Kafka's round-by-round cleaning and kafkalog's hash-sliced decision
//! passes ([`super::sliced`]), and what the sliced passes report. Its own module so that the
//! `Cleaner` (which holds the mode) and the sliced passes (which extend the `Cleaner`) do not
//! import each other.
//!
//! Thread-safety: plain values.

/// How a clean whose dirty section holds more keys than the offset map decides what to keep
/// (kafkalog's: the cleaner config `log.cleaner.kafkalog.sliced.decisions`, false = `Rounds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DecisionMode {
    /// Kafka's `Cleaner`: each clean maps what fits and recopies the log below it; the rest
    /// waits for the next round. Kafka's intermediate states, byte for byte.
    #[default]
    Rounds,
    /// Hash-sliced decision passes over the whole cleanable range, then one rewrite: the
    /// records Kafka's rounds keep once they converge (see [`super::sliced`]).
    Sliced,
}

impl DecisionMode {
    /// The config value's name.
    pub fn name(self) -> &'static str {
        match self {
            DecisionMode::Rounds => "rounds",
            DecisionMode::Sliced => "sliced",
        }
    }

    /// The mode `log.cleaner.kafkalog.sliced.decisions` selects.
    pub fn of_config(sliced_decisions: bool) -> Self {
        if sliced_decisions {
            DecisionMode::Sliced
        } else {
            DecisionMode::Rounds
        }
    }
}

/// What the sliced decision passes did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SlicedReport {
    /// Slices planned: the first pass's, and those its keys estimated for the rest.
    pub planned: u32,
    /// Decision passes run, the first included: each one read of the dirty section.
    pub passes: u32,
    /// Times a pass halved its slice because the map filled.
    pub splits: u32,
    /// The estimate of the dirty section's distinct keys (from the first pass's).
    pub estimated_keys: u64,
    /// Bytes of per-offset marks.
    pub mark_bytes: u64,
}
