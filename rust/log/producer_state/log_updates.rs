//! How the log feeds batches to producer state: Kafka's `UnifiedLog.updateProducers` (appends),
//! `UnifiedLog.loadProducersFromRecords` (rebuilding from segments) and
//! `LogSegment.updateProducerState` (segment recovery), as methods of the manager.

use std::collections::HashMap;

use super::append_info::{ProducerAppendInfo, TV_0};
use super::manager::ProducerStateManager;
use super::txn_metadata::{CompletedTxn, LogOffsetMetadata};
use crate::error::Result;
use crate::log::log_validator::AppendOrigin;
use crate::record::batch::RecordBatch;
use crate::record::records::{AnyBatch, BatchIter};

impl ProducerStateManager {
    /// Validates one batch of an append into the producer's entry of `producers`, made from
    /// the table on first use (Kafka's static `UnifiedLog.updateProducers`), and returns the
    /// transaction its marker completed. A transactional batch also clears the producer's
    /// verification entry, except a transactions-version-2 marker of the verified epoch. Nothing
    /// reaches the table until [`ProducerStateManager::update`] is called with each info.
    pub fn update_producers(
        &mut self,
        batch: &RecordBatch<'_>,
        producers: &mut HashMap<i64, ProducerAppendInfo>,
        first_offset_metadata: Option<LogOffsetMetadata>,
        origin: AppendOrigin,
        transaction_version: i16,
    ) -> Result<Option<CompletedTxn>> {
        let producer_id = batch.producer_id();
        let info = producers.entry(producer_id).or_insert_with(|| self.prepare_update(producer_id, origin));
        let completed = info.append(batch, first_offset_metadata, transaction_version)?;
        if batch.is_transactional() {
            let keep = self
                .verification_state_entry(producer_id)
                .is_some_and(|v| v.supports_epoch_bump() && batch.is_control() && batch.producer_epoch() == v.epoch());
            if !keep {
                self.clear_verification_state_entry(producer_id);
            }
        }
        Ok(completed)
    }

    /// Replays `records` (whole batches, as read from a segment) into the table as a follower
    /// would (Kafka's `UnifiedLog.loadProducersFromRecords`, used to rebuild the state from the
    /// last snapshot to the log end): every batch with a producer id, unchecked (replication
    /// origin), then the completed transactions. The map end offset is the caller's to set.
    /// Legacy (magic 0/1) batches have no producer ids and are skipped.
    pub fn load_producers_from_records(&mut self, records: &[u8]) -> Result<()> {
        let mut infos: HashMap<i64, ProducerAppendInfo> = HashMap::new();
        let mut completed = Vec::new();
        for item in BatchIter::new(records) {
            let (_, batch) = item?;
            let AnyBatch::V2(batch) = batch else { continue };
            if batch.has_producer_id() {
                let txn = self.update_producers(&batch, &mut infos, None, AppendOrigin::Replication, TV_0)?;
                completed.extend(txn);
            }
        }
        for info in infos.into_values() {
            self.update(info)?;
        }
        for txn in &completed {
            self.complete_txn(txn)?;
        }
        Ok(())
    }

    /// Replays one recovered batch (Kafka's `LogSegment.updateProducerState`): a batch with a
    /// producer id is applied unchecked; a transaction its marker completes is handed to
    /// `on_completed` with its last stable offset (for the segment's transaction index) and then
    /// marked complete; the map end offset moves past the batch.
    pub fn update_from_recovered_batch<F>(&mut self, batch: &RecordBatch<'_>, mut on_completed: F) -> Result<()>
    where
        F: FnMut(&CompletedTxn, i64) -> Result<()>,
    {
        if batch.has_producer_id() {
            let mut info = self.prepare_update(batch.producer_id(), AppendOrigin::Replication);
            let completed = info.append(batch, None, TV_0)?;
            self.update(info)?;
            if let Some(txn) = completed {
                let lso = self.last_stable_offset(&txn);
                on_completed(&txn, lso)?;
                self.complete_txn(&txn)?;
            }
        }
        self.update_map_end_offset(batch.last_offset() + 1);
        Ok(())
    }
}
