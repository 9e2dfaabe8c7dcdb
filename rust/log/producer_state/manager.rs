//! One partition's producer table (Kafka's `ProducerStateManager`): producer id -> state, the
//! open transactions by first offset, the completed ones whose markers are not yet below the
//! high watermark, and the `.snapshot` files that persist the table.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::append_info::ProducerAppendInfo;
use super::entry::ProducerStateEntry;
use super::manager_config::ProducerStateManagerConfig;
use super::snapshot::{
    decode_snapshot, encode_snapshot, list_snapshot_files, read_snapshot, scan_snapshot_files, SnapshotFile,
};
use super::txn_metadata::{CompletedTxn, LogOffsetMetadata, TxnMetadata};
use super::verification::VerificationStateEntry;
use crate::error::{Error, Result};
use crate::file_names::{producer_snapshot_file, TopicPartition};
use crate::log::log_validator::AppendOrigin;
use crate::record::batch::NO_PRODUCER_ID;
use crate::util::clock::Clock;
use crate::util::file::{file_has_contents, replace_file};

/// How much later than `transaction.max.timeout.ms` an open transaction counts as late
/// (Kafka's `ProducerStateManager.LATE_TRANSACTION_BUFFER_MS`, 5 minutes).
pub const LATE_TRANSACTION_BUFFER_MS: i64 = 5 * 60 * 1000;

/// The last stable offset (Kafka's `UnifiedLog.lastStableOffset`): the first unstable offset
/// when there is one below the high watermark, else the high watermark.
pub fn last_stable_offset_for(first_unstable_offset: Option<i64>, high_watermark: i64) -> i64 {
    first_unstable_offset.filter(|&o| o < high_watermark).unwrap_or(high_watermark)
}

/// The producer state of one partition. Mirrors Kafka's `ProducerStateManager`.
///
/// A producer may go on writing while its id is in the table; ids expire after
/// `producer.id.expiration.ms` without a write unless a transaction is open
/// ([`Self::remove_expired_producers`]), or go with the data when the log is truncated and the
/// table reloaded. [`Self::take_snapshot`] writes the table at the map end offset; a reload
/// starts from the latest readable snapshot (a corrupt one is deleted with a warning and the
/// next older one used) and the log replays what follows it.
///
/// Not thread-safe: the owning log calls it under its write lock (Kafka's `UnifiedLog.lock`).
/// Readers that need the last stable offset without the lock read the value the log publishes
/// after each change ([`Self::first_unstable_offset_from`], [`last_stable_offset_for`]).
#[derive(Debug)]
pub struct ProducerStateManager {
    topic_partition: Arc<TopicPartition>,
    log_dir: PathBuf,
    max_transaction_timeout_ms: i32,
    config: ProducerStateManagerConfig,
    clock: Arc<dyn Clock>,
    producers: HashMap<i64, ProducerStateEntry>,
    verification_states: HashMap<i64, VerificationStateEntry>,
    /// Open transactions by first offset.
    ongoing_txns: BTreeMap<i64, TxnMetadata>,
    /// Completed transactions whose markers are at or above the high watermark, by first offset.
    unreplicated_txns: BTreeMap<i64, TxnMetadata>,
    /// The last timestamp of the producer of the oldest open transaction, or -1.
    oldest_txn_last_timestamp: i64,
    snapshots: BTreeMap<i64, SnapshotFile>,
    last_map_offset: i64,
    last_snap_offset: i64,
    /// While a recovery defers them ([`Self::defer_snapshot_deletions`]): the snapshots past
    /// the log end that [`Self::truncate_and_reload`] would have deleted, still on disk.
    deferred_deletions: Option<BTreeMap<i64, SnapshotFile>>,
}

impl ProducerStateManager {
    /// An empty table for the partition in `log_dir`, knowing the snapshots there (nothing is
    /// loaded until [`Self::truncate_and_reload`]).
    pub fn new(
        topic_partition: TopicPartition,
        log_dir: &Path,
        max_transaction_timeout_ms: i32,
        config: ProducerStateManagerConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self> {
        let mut psm = Self::new_unlisted(topic_partition, log_dir, max_transaction_timeout_ms, config, clock);
        psm.snapshots = load_snapshots(log_dir)?;
        Ok(psm)
    }

    /// [`Self::new`] with the snapshots its caller listed in `log_dir` just before, under the
    /// directory's lock (the loader's listing): no second listing.
    pub fn with_snapshots(
        topic_partition: TopicPartition,
        log_dir: &Path,
        max_transaction_timeout_ms: i32,
        config: ProducerStateManagerConfig,
        clock: Arc<dyn Clock>,
        snapshots: BTreeMap<i64, SnapshotFile>,
    ) -> Self {
        let mut psm = Self::new_unlisted(topic_partition, log_dir, max_transaction_timeout_ms, config, clock);
        psm.snapshots = snapshots;
        psm
    }

    /// [`Self::new`] without listing the snapshots, for a caller whose next step lists them
    /// ([`Self::remove_stray_snapshots`]): one directory read instead of two.
    pub fn new_unlisted(
        topic_partition: TopicPartition,
        log_dir: &Path,
        max_transaction_timeout_ms: i32,
        config: ProducerStateManagerConfig,
        clock: Arc<dyn Clock>,
    ) -> Self {
        ProducerStateManager {
            topic_partition: Arc::new(topic_partition),
            log_dir: log_dir.to_path_buf(),
            max_transaction_timeout_ms,
            config,
            clock,
            producers: HashMap::new(),
            verification_states: HashMap::new(),
            ongoing_txns: BTreeMap::new(),
            unreplicated_txns: BTreeMap::new(),
            oldest_txn_last_timestamp: -1,
            snapshots: BTreeMap::new(),
            last_map_offset: 0,
            last_snap_offset: 0,
            deferred_deletions: None,
        }
    }

    /// The partition.
    pub fn topic_partition(&self) -> &TopicPartition {
        &self.topic_partition
    }
    /// `transaction.max.timeout.ms`.
    pub fn max_transaction_timeout_ms(&self) -> i32 {
        self.max_transaction_timeout_ms
    }
    /// The expiration and verification settings.
    pub fn config(&self) -> &ProducerStateManagerConfig {
        &self.config
    }
    /// The settings, to change at run time (they are dynamic broker configs in Kafka).
    pub fn config_mut(&mut self) -> &mut ProducerStateManagerConfig {
        &mut self.config
    }

    /// Whether the oldest open transaction has been idle for longer than
    /// `transaction.max.timeout.ms` plus [`LATE_TRANSACTION_BUFFER_MS`] (`hasLateTransaction`).
    pub fn has_late_transaction(&self, current_time_ms: i64) -> bool {
        let last = self.oldest_txn_last_timestamp;
        last > 0 && current_time_ms - last > i64::from(self.max_transaction_timeout_ms) + LATE_TRANSACTION_BUFFER_MS
    }

    /// Forgets everything and lists the snapshots on disk again (`truncateFullyAndReloadSnapshots`).
    pub fn truncate_fully_and_reload_snapshots(&mut self) -> Result<()> {
        log::info!("[ProducerStateManager partition={}] Reloading the producer state snapshots", self.topic_partition);
        self.truncate_fully_and_start_at(0)?;
        self.snapshots = load_snapshots(&self.log_dir)?;
        Ok(())
    }

    /// How many producer ids the table holds.
    pub fn producer_id_count(&self) -> usize {
        self.producers.len()
    }

    /// The producer's verification entry, made now if there is none; the sequence and epoch are
    /// folded in (`maybeCreateVerificationStateEntry`).
    pub fn maybe_create_verification_state_entry(
        &mut self,
        producer_id: i64,
        sequence: i32,
        epoch: i16,
        supports_epoch_bump: bool,
    ) -> VerificationStateEntry {
        let now = self.clock.milliseconds();
        let entry = self
            .verification_states
            .entry(producer_id)
            .or_insert_with(|| VerificationStateEntry::new(now, sequence, epoch, supports_epoch_bump));
        entry.maybe_update_lowest_sequence_and_epoch(sequence, epoch);
        *entry
    }

    /// The producer's verification entry.
    pub fn verification_state_entry(&self, producer_id: i64) -> Option<&VerificationStateEntry> {
        self.verification_states.get(&producer_id)
    }

    /// Drops the producer's verification entry.
    pub fn clear_verification_state_entry(&mut self, producer_id: i64) {
        self.verification_states.remove(&producer_id);
    }

    /// Lists the snapshots on disk again and deletes those without a segment
    /// (`removeStraySnapshots`): every snapshot whose offset is not in `segment_base_offsets`,
    /// except the largest such one when it is at or past the largest base offset (the one a
    /// clean shutdown wrote at the log end). Left-over `.snapshot.tmp` files go too.
    pub fn remove_stray_snapshots(&mut self, segment_base_offsets: &[i64]) -> Result<()> {
        let snapshots = scan_snapshot_files(&self.log_dir, true)?.into_iter().map(|s| (s.offset, s)).collect();
        self.remove_strays_of(snapshots, segment_base_offsets)
    }

    /// [`Self::remove_stray_snapshots`] over the snapshots this manager holds, for a manager
    /// that knows them to be those on disk (the loader's recovery built it from a listing and
    /// made every change since): no listing.
    ///
    /// # Errors
    /// `Io` if a deletion fails.
    pub fn remove_known_stray_snapshots(&mut self, segment_base_offsets: &[i64]) -> Result<()> {
        let snapshots = std::mem::take(&mut self.snapshots);
        self.remove_strays_of(snapshots, segment_base_offsets)
    }

    /// The body of the two above: `snapshots` (those on disk) without the strays.
    fn remove_strays_of(
        &mut self,
        mut snapshots: BTreeMap<i64, SnapshotFile>,
        segment_base_offsets: &[i64],
    ) -> Result<()> {
        let max_base = segment_base_offsets.iter().copied().max();
        let strays: Vec<i64> = snapshots.keys().copied().filter(|o| !segment_base_offsets.contains(o)).collect();
        if let Some((&latest, older)) = strays.split_last() {
            for offset in older {
                if let Some(s) = snapshots.remove(offset) {
                    s.delete_if_exists()?;
                }
            }
            if max_base.is_some_and(|max| latest < max) {
                if let Some(s) = snapshots.remove(&latest) {
                    s.delete_if_exists()?;
                }
            }
        }
        self.snapshots = snapshots;
        Ok(())
    }

    /// The first offset that is unstable (`firstUnstableOffset`): the first offset of the
    /// earliest open transaction or of the earliest completed one whose marker is not yet below
    /// the high watermark.
    pub fn first_unstable_offset(&self) -> Option<LogOffsetMetadata> {
        let unreplicated = self.unreplicated_txns.values().next().map(|t| t.first_offset);
        let undecided = self.ongoing_txns.values().next().map(|t| t.first_offset);
        match (unreplicated, undecided) {
            (None, u) | (u, None) => u,
            (Some(r), Some(u)) => Some(if u.message_offset < r.message_offset { u } else { r }),
        }
    }

    /// [`Self::first_unstable_offset`] as `UnifiedLog.maybeIncrementFirstUnstableOffset` keeps
    /// it: raised to `log_start_offset` when below it (then only the offset is known; the log
    /// looks up its place when it needs it).
    pub fn first_unstable_offset_from(&self, log_start_offset: i64) -> Option<LogOffsetMetadata> {
        self.first_unstable_offset().map(|m| {
            if m.message_offset < log_start_offset {
                LogOffsetMetadata::offset_only(log_start_offset)
            } else {
                m
            }
        })
    }

    /// Drops the completed transactions whose markers are below `high_watermark`, letting the
    /// first unstable offset advance (`onHighWatermarkUpdated`).
    pub fn on_high_watermark_updated(&mut self, high_watermark: i64) {
        self.remove_unreplicated_transactions(high_watermark);
    }

    /// The first offset of the earliest open transaction (`firstUndecidedOffset`).
    pub fn first_undecided_offset(&self) -> Option<i64> {
        self.ongoing_txns.values().next().map(|t| t.first_offset.message_offset)
    }

    /// The end offset (exclusive) of what the table has seen (`mapEndOffset`).
    pub fn map_end_offset(&self) -> i64 {
        self.last_map_offset
    }

    /// The producer table (`activeProducers`).
    pub fn active_producers(&self) -> &HashMap<i64, ProducerStateEntry> {
        &self.producers
    }

    /// The open transactions, by first offset.
    pub fn ongoing_txns(&self) -> impl Iterator<Item = &TxnMetadata> + '_ {
        self.ongoing_txns.values()
    }

    /// Whether no producer is known and no completed transaction awaits the high watermark.
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty() && self.unreplicated_txns.is_empty()
    }

    /// Loads the latest readable snapshot; a corrupt one is deleted with a warning and the next
    /// older one tried. With none, the table starts empty at `log_start_offset`.
    fn load_from_snapshot(&mut self, log_start_offset: i64, current_time_ms: i64) -> Result<()> {
        while let Some((&offset, snapshot)) = self.snapshots.last_key_value() {
            let file = snapshot.file().to_path_buf();
            log::info!(
                "[ProducerStateManager partition={}] Loading producer state from snapshot file '{}'",
                self.topic_partition,
                file.display()
            );
            match read_snapshot(&file) {
                Ok(entries) => {
                    for e in entries {
                        if !self.is_producer_expired(current_time_ms, &e) {
                            self.load_producer_entry(e);
                        }
                    }
                    self.last_snap_offset = offset;
                    self.last_map_offset = offset;
                    self.update_oldest_txn_timestamp();
                    return Ok(());
                }
                Err(e @ Error::CorruptSnapshot { .. }) => {
                    log::warn!("Failed to load producer snapshot from '{}': {e}", file.display());
                    self.remove_and_delete_snapshot(offset)?;
                }
                Err(e) => return Err(e),
            }
        }
        self.last_snap_offset = log_start_offset;
        self.last_map_offset = log_start_offset;
        Ok(())
    }

    /// Puts a loaded entry in the table, with its open transaction (`loadProducerEntry`).
    pub fn load_producer_entry(&mut self, entry: ProducerStateEntry) {
        let producer_id = entry.producer_id();
        if let Some(first) = entry.current_txn_first_offset() {
            self.ongoing_txns.insert(first, TxnMetadata::new(producer_id, LogOffsetMetadata::offset_only(first)));
        }
        self.producers.insert(producer_id, entry);
    }

    fn is_producer_expired(&self, current_time_ms: i64, entry: &ProducerStateEntry) -> bool {
        is_expired(entry, current_time_ms, self.config.producer_id_expiration_ms)
    }

    /// Forgets the producers idle for `producer.id.expiration.ms` with no open transaction, and
    /// the verification entries that old (`removeExpiredProducers`).
    pub fn remove_expired_producers(&mut self, current_time_ms: i64) {
        let expiration_ms = self.config.producer_id_expiration_ms;
        self.producers.retain(|_, e| !is_expired(e, current_time_ms, expiration_ms));
        self.verification_states.retain(|_, v| current_time_ms - v.timestamp() < i64::from(expiration_ms));
    }

    /// Fits the table to a log now holding `[log_start_offset, log_end_offset)`
    /// (`truncateAndReload`): snapshots past the end or at or below the start are deleted; when
    /// the end moved, the table is cleared and reloaded from the latest snapshot left (the log
    /// then replays from [`Self::map_end_offset`]). The end is assumed at or below the high
    /// watermark, so completed transactions awaiting it are dropped.
    pub fn truncate_and_reload(
        &mut self,
        log_start_offset: i64,
        log_end_offset: i64,
        current_time_ms: i64,
    ) -> Result<()> {
        let out_of_range: Vec<i64> =
            self.snapshots.keys().copied().filter(|&o| o > log_end_offset || o <= log_start_offset).collect();
        for offset in out_of_range {
            match (&mut self.deferred_deletions, self.snapshots.remove(&offset)) {
                (Some(deferred), Some(s)) if offset > log_end_offset => drop(deferred.insert(offset, s)),
                (_, Some(s)) => drop(s.delete_if_exists()?),
                (_, None) => {}
            }
        }
        if log_end_offset == self.map_end_offset() {
            self.on_log_start_offset_incremented(log_start_offset);
            return Ok(());
        }
        self.producers.clear();
        self.ongoing_txns.clear();
        self.update_oldest_txn_timestamp();
        self.unreplicated_txns.clear();
        self.load_from_snapshot(log_start_offset, current_time_ms)
    }

    /// Starts an append of `producer_id`'s batches from its current state (`prepareUpdate`).
    pub fn prepare_update(&self, producer_id: i64, origin: AppendOrigin) -> ProducerAppendInfo {
        let current =
            self.producers.get(&producer_id).copied().unwrap_or_else(|| ProducerStateEntry::empty(producer_id));
        let verification = self.verification_states.get(&producer_id).copied();
        ProducerAppendInfo::new(self.topic_partition.clone(), producer_id, current, origin, verification)
    }

    /// Folds a validated append into the table (`update`) and registers the transactions it
    /// opened. Call it once the batches are written.
    pub fn update(&mut self, append_info: ProducerAppendInfo) -> Result<()> {
        let (producer_id, updated, started) = append_info.into_parts();
        if producer_id == NO_PRODUCER_ID {
            return Err(Error::invalid_argument(
                "producer_id",
                producer_id,
                format!("{producer_id} (no producer) has no state to update in partition {}", self.topic_partition),
            ));
        }
        log::trace!("Updated producer {producer_id} state to {updated:?}");
        match self.producers.get_mut(&producer_id) {
            Some(current) => current.update(&updated),
            None => {
                self.producers.insert(producer_id, updated);
            }
        }
        for txn in started {
            self.ongoing_txns.insert(txn.first_offset.message_offset, txn);
        }
        self.update_oldest_txn_timestamp();
        Ok(())
    }

    fn update_oldest_txn_timestamp(&mut self) {
        self.oldest_txn_last_timestamp = self
            .ongoing_txns
            .values()
            .next()
            .map_or(-1, |t| self.producers.get(&t.producer_id).map_or(-1, ProducerStateEntry::last_timestamp));
    }

    /// Sets the end offset (exclusive) of what the table has seen (`updateMapEndOffset`).
    pub fn update_map_end_offset(&mut self, last_offset: i64) {
        self.last_map_offset = last_offset;
    }

    /// The producer's state (`lastEntry`).
    pub fn last_entry(&self, producer_id: i64) -> Option<&ProducerStateEntry> {
        self.producers.get(&producer_id)
    }

    /// Writes the table as `<map end offset>.snapshot` unless a snapshot already covers that
    /// offset (`takeSnapshot`); returns the file written. `sync` fsyncs the file and the
    /// directory (Kafka defers the fsync of a roll's snapshot to the flush:
    /// [`Self::flush_snapshot`]). Producer ids are written ascending.
    pub fn take_snapshot(&mut self, sync: bool) -> Result<Option<PathBuf>> {
        self.take_snapshot_into(sync, None)
    }

    /// [`Self::take_snapshot`], the file written into `reserved` when given: an unnamed file
    /// created ahead of the roll (`UnnamedFile::write_and_name`), so the roll names a
    /// file instead of creating one. Without `sync` only; a reservation left unused is dropped.
    pub fn take_snapshot_into(
        &mut self,
        sync: bool,
        reserved: Option<crate::util::unnamed_file::UnnamedFile>,
    ) -> Result<Option<PathBuf>> {
        if self.last_map_offset <= self.last_snap_offset {
            return Ok(None);
        }
        let offset = self.last_map_offset;
        let path = producer_snapshot_file(&self.log_dir, offset);
        let start = self.clock.nanoseconds();
        let mut entries: Vec<&ProducerStateEntry> = self.producers.values().collect();
        entries.sort_unstable_by_key(|e| e.producer_id());
        let bytes = encode_snapshot(entries.into_iter());
        if !self.keep_deferred_snapshot(offset, &bytes)? {
            match reserved {
                Some(unnamed) if !sync => unnamed.write_and_name(&path, &bytes)?,
                _ => replace_file(&path, &bytes, sync)?,
            }
        }
        log::info!(
            "[ProducerStateManager partition={}] Wrote producer snapshot at offset {offset} with {} producer ids in {} ms.",
            self.topic_partition,
            self.producers.len(),
            (self.clock.nanoseconds() - start) / 1_000_000
        );
        self.snapshots.insert(offset, SnapshotFile::new(path.clone(), offset));
        self.last_snap_offset = offset;
        Ok(Some(path))
    }

    /// What a fresh manager over this directory would hold after loading the latest snapshot,
    /// when that snapshot was taken from this table at its current end: the table goes through
    /// the snapshot's encoding and back, dropping what a snapshot does not keep, and the
    /// producers expired at `current_time_ms` are left out, as `load_from_snapshot` leaves them.
    /// The loader's segment-by-segment recovery carries one manager from a segment to the next
    /// this way instead of listing the directory and reading back the snapshot it just wrote
    /// (Kafka's `LogLoader.recoverSegment` builds a new manager per segment). Returns false,
    /// changing nothing, when the latest snapshot is not at the table's end.
    ///
    /// # Errors
    /// `CorruptSnapshot` if the encoding does not read back (a bug).
    pub fn reload_from_own_snapshot(&mut self, current_time_ms: i64) -> Result<bool> {
        let at_end = self.last_snap_offset == self.last_map_offset;
        if !at_end || self.latest_snapshot_offset() != Some(self.last_map_offset) {
            return Ok(false);
        }
        let path = producer_snapshot_file(&self.log_dir, self.last_map_offset);
        let mut entries: Vec<&ProducerStateEntry> = self.producers.values().collect();
        entries.sort_unstable_by_key(|e| e.producer_id());
        let decoded = decode_snapshot(&encode_snapshot(entries.into_iter()), &path)?;
        self.producers.clear();
        self.verification_states.clear();
        self.ongoing_txns.clear();
        self.unreplicated_txns.clear();
        for e in decoded {
            if !self.is_producer_expired(current_time_ms, &e) {
                self.load_producer_entry(e);
            }
        }
        self.update_oldest_txn_timestamp();
        Ok(true)
    }

    /// Starts deferring what [`Self::truncate_and_reload`] deletes past the log end, for the
    /// loader's segment-by-segment recovery (Kafka's `LogLoader.recoverSegment`, whose first
    /// rebuild deletes every snapshot past the first recovered segment, then takes one at each
    /// segment's end). `already`: the snapshots an earlier manager of the same recovery
    /// deferred (forgotten here if listed). A deferred snapshot stays on disk until
    /// [`Self::take_snapshot`] reaches its offset: one holding exactly the bytes it would write
    /// is kept instead of deleted and written again, any other is replaced; those it passes
    /// over, and all left at [`Self::finish_deferred_deletions`], are deleted. The files left are
    /// Kafka's, with Kafka's bytes.
    pub fn defer_snapshot_deletions(&mut self, already: BTreeMap<i64, SnapshotFile>) {
        for offset in already.keys() {
            self.snapshots.remove(offset);
        }
        self.deferred_deletions = Some(already);
    }

    /// Deletes the snapshots still deferred and stops deferring; returns those a later manager
    /// of the same recovery should defer instead when `hand_over` (nothing is deleted then).
    ///
    /// # Errors
    /// `Io` if a deletion fails.
    pub fn finish_deferred_deletions(&mut self, hand_over: bool) -> Result<BTreeMap<i64, SnapshotFile>> {
        let deferred = self.deferred_deletions.take().unwrap_or_default();
        if hand_over {
            return Ok(deferred);
        }
        for s in deferred.values() {
            s.delete_if_exists()?;
        }
        Ok(BTreeMap::new())
    }

    /// For [`Self::take_snapshot`] at `offset` while deletions are deferred: deletes the
    /// deferred snapshots below `offset` (nothing will write them again), and says whether the
    /// one at `offset` holds exactly `bytes` and is kept (it is then no longer deferred).
    fn keep_deferred_snapshot(&mut self, offset: i64, bytes: &[u8]) -> Result<bool> {
        let Some(deferred) = self.deferred_deletions.as_mut() else { return Ok(false) };
        let passed: Vec<i64> = deferred.range(..offset).map(|(&o, _)| o).collect();
        for o in passed {
            if let Some(s) = deferred.remove(&o) {
                s.delete_if_exists()?;
            }
        }
        Ok(deferred.remove(&offset).is_some_and(|s| file_has_contents(s.file(), bytes)))
    }

    /// Fsyncs the snapshot at `offset`, if it exists (`UnifiedLog.flushProducerStateSnapshot`).
    pub fn flush_snapshot(&self, offset: i64) -> Result<()> {
        crate::util::file::fsync_file_if_exists(&producer_snapshot_file(&self.log_dir, offset))
    }

    /// Follows a rename of the partition directory (`updateParentDir`).
    pub fn update_parent_dir(&mut self, parent_dir: &Path) {
        self.log_dir = parent_dir.to_path_buf();
        for s in self.snapshots.values_mut() {
            s.update_parent_dir(parent_dir);
        }
    }

    /// The offset of the latest snapshot.
    pub fn latest_snapshot_offset(&self) -> Option<i64> {
        self.snapshots.keys().next_back().copied()
    }

    /// The offset of the oldest snapshot.
    pub fn oldest_snapshot_offset(&self) -> Option<i64> {
        self.snapshots.keys().next().copied()
    }

    /// The snapshot at `offset`.
    pub fn snapshot_file_for_offset(&self, offset: i64) -> Option<&SnapshotFile> {
        self.snapshots.get(&offset)
    }

    /// The path of the snapshot at `offset` (`fetchSnapshot`).
    pub fn fetch_snapshot(&self, offset: i64) -> Option<&Path> {
        self.snapshots.get(&offset).map(SnapshotFile::file)
    }

    /// After the log start moved up (`onLogStartOffsetIncremented`): completed transactions
    /// below it are dropped and the map end follows it.
    pub fn on_log_start_offset_incremented(&mut self, log_start_offset: i64) {
        self.remove_unreplicated_transactions(log_start_offset);
        self.last_map_offset = self.last_map_offset.max(log_start_offset);
        self.last_snap_offset = self.latest_snapshot_offset().unwrap_or(log_start_offset);
    }

    fn remove_unreplicated_transactions(&mut self, offset: i64) {
        self.unreplicated_txns.retain(|_, t| t.last_offset.is_none_or(|last| last >= offset));
    }

    /// Clears the table and deletes every snapshot; the table starts at `offset`
    /// (`truncateFullyAndStartAt`).
    pub fn truncate_fully_and_start_at(&mut self, offset: i64) -> Result<()> {
        self.producers.clear();
        self.ongoing_txns.clear();
        self.unreplicated_txns.clear();
        let all: Vec<i64> = self.snapshots.keys().copied().collect();
        for snapshot_offset in all {
            self.remove_and_delete_snapshot(snapshot_offset)?;
        }
        self.last_snap_offset = 0;
        self.last_map_offset = offset;
        self.update_oldest_txn_timestamp();
        Ok(())
    }

    /// The last stable offset to record with a completed transaction in the transaction index
    /// (`lastStableOffset(CompletedTxn)`): the first offset of the earliest open transaction of
    /// another producer, else the offset after the marker. Call it before [`Self::complete_txn`].
    pub fn last_stable_offset(&self, completed: &CompletedTxn) -> i64 {
        self.ongoing_txns
            .values()
            .find(|t| t.producer_id != completed.producer_id)
            .map_or(completed.last_offset + 1, |t| t.first_offset.message_offset)
    }

    /// Marks a transaction complete (`completeTxn`); it stays unstable until the high
    /// watermark passes its marker. Call it after the transaction index has the entry.
    pub fn complete_txn(&mut self, completed: &CompletedTxn) -> Result<()> {
        let Some(mut txn) = self.ongoing_txns.remove(&completed.first_offset) else {
            return Err(Error::illegal_state(format!(
                "attempted to complete transaction {completed:?} on partition {} which was not started",
                self.topic_partition
            )));
        };
        txn.last_offset = Some(completed.last_offset);
        self.unreplicated_txns.insert(completed.first_offset, txn);
        self.update_oldest_txn_timestamp();
        Ok(())
    }

    /// Deletes the snapshots below `offset` (`deleteSnapshotsBefore`).
    pub fn delete_snapshots_before(&mut self, offset: i64) -> Result<()> {
        let below: Vec<i64> = self.snapshots.range(..offset).map(|(&o, _)| o).collect();
        for o in below {
            self.remove_and_delete_snapshot(o)?;
        }
        Ok(())
    }

    fn remove_and_delete_snapshot(&mut self, offset: i64) -> Result<()> {
        if let Some(s) = self.snapshots.remove(&offset) {
            s.delete_if_exists()?;
        }
        Ok(())
    }

    /// Forgets the snapshot at `offset` and renames its file `.deleted`, for the log to unlink
    /// after `file.delete.delay.ms` with its segment (`removeAndMarkSnapshotForDeletion`). A
    /// file already gone gives `None`.
    pub fn remove_and_mark_snapshot_for_deletion(&mut self, offset: i64) -> Result<Option<SnapshotFile>> {
        let Some(mut snapshot) = self.snapshots.remove(&offset) else { return Ok(None) };
        match snapshot.rename_to_delete() {
            Ok(()) => Ok(Some(snapshot)),
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                log::info!(
                    "Failed to rename producer state snapshot at offset {offset} in {} with deletion suffix because \
                     it was already deleted",
                    self.log_dir.display()
                );
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

/// Kafka's `isProducerExpired`: no open transaction and no write for `expiration_ms`.
fn is_expired(entry: &ProducerStateEntry, current_time_ms: i64, expiration_ms: i32) -> bool {
    entry.current_txn_first_offset().is_none() && current_time_ms - entry.last_timestamp() >= i64::from(expiration_ms)
}

fn load_snapshots(dir: &Path) -> Result<BTreeMap<i64, SnapshotFile>> {
    Ok(list_snapshot_files(dir)?.into_iter().map(|s| (s.offset, s)).collect())
}
