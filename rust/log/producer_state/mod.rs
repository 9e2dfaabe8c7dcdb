//! Producer state: the idempotent and transactional producers of one partition, as Kafka's
//! storage engine keeps them.
//!
//! - [`batch_metadata`]: one batch's sequence range, offsets and timestamp (`BatchMetadata`);
//! - [`entry`]: one producer's epoch, coordinator epoch, last 5 batches, open transaction
//!   (`ProducerStateEntry`);
//! - [`append_info`]: the epoch, sequence, transaction and coordinator-fencing checks of one
//!   append (`ProducerAppendInfo`, with transactions version 2);
//! - [`txn_metadata`]: open and completed transactions (`TxnMetadata`, `CompletedTxn`) and
//!   `LogOffsetMetadata`;
//! - [`verification`]: transaction verification entries (`VerificationStateEntry`);
//! - [`snapshot`]: the `<offset>.snapshot` files in Kafka's byte format (`SnapshotFile`,
//!   `readSnapshot` / `writeSnapshot`);
//! - [`manager`]: the partition's producer table, transactions, first unstable offset and
//!   snapshots (`ProducerStateManager`); [`manager_config`]: its settings;
//! - [`log_updates`]: how appends, rebuilds and segment recovery feed it (`UnifiedLog.updateProducers`,
//!   `loadProducersFromRecords`, `LogSegment.updateProducerState`); [`rebuild`]: the rebuild
//!   from snapshot and segments (`UnifiedLog.rebuildProducerState`).

pub mod append_info;
pub mod batch_metadata;
pub mod entry;
pub mod log_updates;
pub mod manager;
pub mod manager_config;
pub mod rebuild;
pub mod snapshot;
pub mod txn_metadata;
pub mod verification;

#[cfg(test)]
mod manager_tests;
#[cfg(test)]
mod snapshot_tests;
#[cfg(test)]
mod txn_v2_tests;

pub use append_info::{ProducerAppendInfo, TV_0, TV_1, TV_2, TV_UNKNOWN};
pub use batch_metadata::BatchMetadata;
pub use entry::{LastRecord, ProducerStateEntry, NUM_BATCHES_TO_RETAIN};
pub use manager::{last_stable_offset_for, ProducerStateManager, LATE_TRANSACTION_BUFFER_MS};
pub use manager_config::ProducerStateManagerConfig;
pub use rebuild::{rebuild_producer_state, RebuildParams};
pub use snapshot::SnapshotFile;
pub use txn_metadata::{CompletedTxn, LogOffsetMetadata, TxnMetadata};
pub use verification::{VerificationGuard, VerificationStateEntry};
