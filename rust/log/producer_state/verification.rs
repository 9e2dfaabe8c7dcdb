//! Transaction verification state (Kafka's `VerificationStateEntry` and `VerificationGuard`,
//! KIP-890 part 1): a leader that asked the transaction coordinator whether a producer's
//! transaction includes this partition keeps what it asked until the first transactional
//! append, so a late retry with a higher sequence cannot slip in first.

use std::sync::atomic::{AtomicU64, Ordering};

/// The token a verified append carries (Kafka's `VerificationGuard`): unique per verification,
/// compared by identity. [`VerificationGuard::SENTINEL`] stands for "no verification". A plain
/// value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VerificationGuard(u64);

impl VerificationGuard {
    /// No verification (Kafka's `VerificationGuard.SENTINEL`).
    pub const SENTINEL: VerificationGuard = VerificationGuard(0);

    /// A new guard, different from every other.
    pub fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        VerificationGuard(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

impl Default for VerificationGuard {
    fn default() -> Self {
        Self::new()
    }
}

/// What a leader remembers of a producer it is verifying (Kafka's `VerificationStateEntry`):
/// when, the guard, the lowest sequence seen for the newest epoch, and whether the producer
/// uses transactions version 2 (`supports_epoch_bump`). A plain value owned by the
/// `ProducerStateManager`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerificationStateEntry {
    timestamp: i64,
    verification_guard: VerificationGuard,
    supports_epoch_bump: bool,
    lowest_sequence: i32,
    epoch: i16,
}

impl VerificationStateEntry {
    /// An entry made at `timestamp` for a batch with `sequence` and `epoch`.
    pub fn new(timestamp: i64, sequence: i32, epoch: i16, supports_epoch_bump: bool) -> Self {
        VerificationStateEntry {
            timestamp,
            verification_guard: VerificationGuard::new(),
            supports_epoch_bump,
            lowest_sequence: sequence,
            epoch,
        }
    }

    /// When the entry was made (expiry counts from here).
    pub fn timestamp(&self) -> i64 {
        self.timestamp
    }
    /// The guard appends of this verification carry.
    pub fn verification_guard(&self) -> VerificationGuard {
        self.verification_guard
    }
    /// The lowest sequence seen for [`Self::epoch`].
    pub fn lowest_sequence(&self) -> i32 {
        self.lowest_sequence
    }
    /// The newest epoch seen.
    pub fn epoch(&self) -> i16 {
        self.epoch
    }
    /// Whether the producer bumps its epoch per transaction (transactions version 2).
    pub fn supports_epoch_bump(&self) -> bool {
        self.supports_epoch_bump
    }

    /// Keeps the lowest sequence of the newest epoch (`maybeUpdateLowestSequenceAndEpoch`): a
    /// lower sequence of the same epoch replaces it; a higher epoch replaces both; an older
    /// epoch changes nothing. Blocks an out-of-order loop when a lower sequence is retried.
    pub fn maybe_update_lowest_sequence_and_epoch(&mut self, incoming_sequence: i32, incoming_epoch: i16) {
        if incoming_epoch == self.epoch && incoming_sequence < self.lowest_sequence {
            self.lowest_sequence = incoming_sequence;
        }
        if incoming_epoch > self.epoch {
            self.epoch = incoming_epoch;
            self.lowest_sequence = incoming_sequence;
        }
    }
}
