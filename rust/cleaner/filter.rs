//! The cleaner's retention rules: which batches and records a clean keeps (Kafka's
//! `MemoryRecords.filterTo` driven by the `RecordFilter` that `Cleaner.cleanInto` builds, with
//! `CleanedTransactionMetadata` for transactional data).
//!
//! Per batch ([`CleanerFilter::check_batch_retention`], first match wins):
//! 1. the producer's last batch (its last data batch, or its last marker when it has no data)
//!    is kept, if need be as an empty batch, so idempotence and fencing survive the clean;
//! 2. the batch ending at the round's upper bound is kept, if need be as an empty batch;
//! 3. aborted transactional data, and markers whose transaction left nothing behind once their
//!    delete horizon has passed, are dropped whole;
//! 4. otherwise the batch goes only if none of its records survives.
//!
//! Per record: past the map's range → kept; control → kept; unkeyed → dropped (counted
//! invalid); otherwise kept iff it is the latest offset of its key and it has a value or is a
//! tombstone still inside its delete horizon.
//!
//! A batch with nothing removed and no horizon to stamp is copied byte for byte; otherwise it
//! is rebuilt as v2 with the same codec, offsets and last offset (legacy batches become v2, as
//! in Kafka).
//!
//! Thread-safety: not thread-safe; one per clean.

use std::collections::{BinaryHeap, HashMap, HashSet};

use super::cleaner_stats::CleanerStats;
use super::mapped_records::{BatchFate, MappedRecords};
use super::md5_keys::hash_record_keys;
use super::offset_map::{KeyHash, SkimpyOffsetMap};
use crate::error::{Error, Result};
use crate::index::transaction_index::AbortedTxn;
pub use crate::log::producer_state::LastRecord;
use crate::record::batch::MAGIC_V2;
use crate::record::builder::{write_empty_header, BatchBuilder, BatchHeader};
use crate::record::control::ControlRecordType;
use crate::record::default_record::Record;
use crate::record::records::AnyBatch;
use crate::record::TimestampType;

/// How a batch is treated (Kafka's `BatchRetention`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchRetention {
    /// Dropped whole, records unread.
    Delete,
    /// Dropped if no record survives.
    DeleteEmpty,
    /// Kept, as an empty batch if no record survives.
    RetainEmpty,
}

/// Transaction state carried across the segments of one pass (Kafka's
/// `CleanedTransactionMetadata`).
#[derive(Debug, Default)]
pub struct CleanedTransactionMetadata {
    ongoing_committed: HashSet<i64>,
    /// Aborted transactions reached, by producer: and the last data batch of it seen.
    ongoing_aborted: HashMap<i64, (AbortedTxn, Option<i64>)>,
    /// Aborted transactions not reached yet, smallest first offset first.
    pending: BinaryHeap<std::cmp::Reverse<(i64, i64, i64, i64)>>,
    /// Aborted transactions that must stay in the cleaned segments' transaction index.
    retained_aborted: Vec<AbortedTxn>,
}

impl CleanedTransactionMetadata {
    /// Registers aborted transactions overlapping the range being read.
    pub fn add_aborted_transactions(&mut self, txns: &[AbortedTxn]) {
        for t in txns {
            self.pending.push(std::cmp::Reverse((t.first_offset, t.producer_id, t.last_offset, t.last_stable_offset)));
        }
    }

    fn consume_aborted_up_to(&mut self, offset: i64) {
        while let Some(std::cmp::Reverse((first, pid, last, lso))) = self.pending.peek().copied() {
            if first > offset {
                break;
            }
            self.pending.pop();
            let txn = AbortedTxn { producer_id: pid, first_offset: first, last_offset: last, last_stable_offset: lso };
            self.ongoing_aborted.entry(pid).or_insert((txn, None));
        }
    }

    /// A data batch was read; true if it belongs to an aborted transaction (discardable).
    pub fn on_batch_read(&mut self, batch: &AnyBatch<'_>) -> bool {
        self.consume_aborted_up_to(batch.last_offset());
        let AnyBatch::V2(b) = batch else { return false };
        if !b.is_transactional() {
            return false;
        }
        if let Some(entry) = self.ongoing_aborted.get_mut(&b.producer_id()) {
            entry.1 = Some(b.last_offset());
            true
        } else {
            self.ongoing_committed.insert(b.producer_id());
            false
        }
    }

    /// A control batch was read; true if the marker is discardable (its transaction left
    /// nothing in this pass, or the batch is already empty).
    pub fn on_control_batch_read(&mut self, batch: &AnyBatch<'_>, scratch: &mut Vec<u8>) -> Result<bool> {
        self.consume_aborted_up_to(batch.last_offset());
        let AnyBatch::V2(b) = batch else { return Ok(false) };
        let Some(kind) = ControlRecordType::of_batch(b, scratch)? else { return Ok(true) };
        let pid = b.producer_id();
        Ok(match kind {
            ControlRecordType::Abort => match self.ongoing_aborted.remove(&pid) {
                Some((txn, Some(_))) => {
                    self.retained_aborted.push(txn);
                    false
                }
                _ => true,
            },
            ControlRecordType::Commit => !self.ongoing_committed.remove(&pid),
            _ => false,
        })
    }

    /// Aborted transactions whose markers the current group kept; they go into its cleaned
    /// segment's `.txnindex` (Kafka's `cleanedIndex.append`). Empties the list.
    pub fn take_retained_aborted(&mut self) -> Vec<AbortedTxn> {
        std::mem::take(&mut self.retained_aborted)
    }
}

/// The cleaner's filter for one source segment. Mirrors the anonymous `RecordFilter` of
/// Kafka's `Cleaner.cleanInto`.
pub struct CleanerFilter<'a> {
    /// The clean's time.
    pub current_time: i64,
    /// `delete.retention.ms`.
    pub delete_retention_ms: i64,
    /// Keep legacy (magic < 2) tombstones: the source segment is newer than the legacy
    /// delete horizon.
    pub retain_legacy_deletes: bool,
    /// Active producers and what they wrote last.
    pub last_records: &'a HashMap<i64, LastRecord>,
    /// The round's upper bound (first uncleanable offset).
    pub upper_bound_offset: i64,
    /// The dedupe map of pass 1.
    pub map: &'a mut SkimpyOffsetMap,
    /// What pass 1 learned about the records it mapped (spares their lookups).
    pub mapped: &'a MappedRecords,
    /// Transaction state across the group.
    pub txn: &'a mut CleanedTransactionMetadata,
}

/// The outcome of filtering one chunk (Kafka's `FilterResult`).
#[derive(Debug, Default, Clone, Copy)]
pub struct FilterResult {
    /// Bytes of complete batches read.
    pub bytes_read: usize,
    /// Records read (batches dropped whole are not counted, as in Kafka).
    pub messages_read: u64,
    /// Records written.
    pub messages_retained: u64,
    /// Bytes written.
    pub bytes_retained: usize,
    /// Largest offset written, -1 if none.
    pub max_offset: i64,
    /// Batches read, and of those, batches copied as they were: the chunk came out unchanged
    /// when the two are equal.
    pub batches_read: u64,
    pub batches_verbatim: u64,
    /// The offset after the last batch read, -1 if none.
    pub next_offset: i64,
}

/// What [`CleanerFilter::filter_to`] keeps of a chunk, in log order: a batch kept byte for
/// byte is named by its range in the chunk (never copied: the writer appends it from the read
/// buffer), a rebuilt or emptied batch is written to `out`.
#[derive(Debug, Default)]
pub struct Kept {
    /// The batches rebuilt or emptied.
    pub out: Vec<u8>,
    /// The kept bytes in order, adjacent ranges merged.
    pub pieces: Vec<Piece>,
}

/// A run of kept bytes: `start..end` of the chunk or of [`Kept::out`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece {
    /// Batches kept as they were, in the chunk.
    Chunk(usize, usize),
    /// Batches written to `out`.
    Out(usize, usize),
}

impl Kept {
    /// Forgets everything kept.
    pub fn clear(&mut self) {
        self.out.clear();
        self.pieces.clear();
    }

    /// Bytes kept.
    pub fn len(&self) -> usize {
        self.pieces
            .iter()
            .map(|p| match *p {
                Piece::Chunk(a, b) | Piece::Out(a, b) => b - a,
            })
            .sum()
    }

    /// Whether nothing was kept.
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// The kept bytes of `chunk` (the chunk filtered), run by run.
    pub fn slices<'a>(&'a self, chunk: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.pieces.iter().map(move |p| match *p {
            Piece::Chunk(a, b) => &chunk[a..b],
            Piece::Out(a, b) => &self.out[a..b],
        })
    }

    /// Keeps `chunk[at..at + len]` as it is.
    fn keep_verbatim(&mut self, at: usize, len: usize) {
        match self.pieces.last_mut() {
            Some(Piece::Chunk(_, end)) if *end == at => *end += len,
            _ => self.pieces.push(Piece::Chunk(at, at + len)),
        }
    }

    /// Keeps what was written to `out` since it was `from` bytes long.
    fn keep_written(&mut self, from: usize) {
        let to = self.out.len();
        if to == from {
            return;
        }
        match self.pieces.last_mut() {
            Some(Piece::Out(_, end)) if *end == from => *end = to,
            _ => self.pieces.push(Piece::Out(from, to)),
        }
    }
}

impl CleanerFilter<'_> {
    /// Decides a batch's fate; also returns whether its records are discarded unread and
    /// whether it is a marker of a transaction that left nothing (`containsMarkerForEmptyTxn`).
    fn check_batch_retention(
        &mut self,
        batch: &AnyBatch<'_>,
        scratch: &mut Vec<u8>,
    ) -> Result<(BatchRetention, bool, bool)> {
        let can_discard = if batch.is_control() {
            self.txn.on_control_batch_read(batch, scratch)?
        } else {
            self.txn.on_batch_read(batch)
        };
        let discard_records = match batch {
            AnyBatch::V2(b) if b.is_control() => {
                can_discard && b.delete_horizon_ms().is_some_and(|h| h <= self.current_time)
            }
            _ => can_discard,
        };
        let last_of_producer = match batch {
            AnyBatch::V2(b) if b.has_producer_id() => {
                self.last_records.get(&b.producer_id()).is_some_and(|last| match last.last_data_offset {
                    Some(o) => b.last_offset() == o,
                    None => b.is_control() && b.producer_epoch() == last.producer_epoch,
                })
            }
            _ => false,
        };
        let retention = if last_of_producer || batch.next_offset() == self.upper_bound_offset {
            BatchRetention::RetainEmpty
        } else if discard_records {
            BatchRetention::Delete
        } else {
            BatchRetention::DeleteEmpty
        };
        Ok((retention, discard_records, can_discard && batch.is_control()))
    }

    /// Whether `record` of `batch` survives (Kafka's `shouldRetainRecord`).
    /// `hash` is the key's digest, computed (and its slot prefetched) beforehand, unless pass 1
    /// already knows whether the record is its key's latest (`known`).
    fn should_retain_record(
        &mut self,
        batch: &AnyBatch<'_>,
        offset: i64,
        (known, hash): (Option<bool>, Option<&KeyHash>),
        has_value: bool,
        stats: &mut CleanerStats,
    ) -> bool {
        if offset > self.map.latest_offset() {
            return true;
        }
        let latest = match (known, hash) {
            (Some(latest), _) => latest,
            (None, Some(hash)) => offset >= self.map.get_hash(hash),
            (None, None) => {
                stats.invalid_messages_read += 1;
                return false;
            }
        };
        if !latest {
            return false;
        }
        if has_value {
            return true;
        }
        let retain_deletes = match batch {
            AnyBatch::V2(b) => b.delete_horizon_ms().is_none_or(|h| self.current_time < h),
            AnyBatch::Legacy(_) => self.retain_legacy_deletes,
        };
        if retain_deletes {
            stats.tombstones_retained += 1;
        } else {
            stats.tombstones_removed += 1;
        }
        retain_deletes
    }

    /// The shortcut for a data batch whose every offset pass 1 mapped (see
    /// [`MappedRecords`]): all its records are their keys' latest, so it is copied verbatim,
    /// or all were superseded, so it goes (or stays as an empty batch when `retention` says
    /// so); either way it is not decoded. False when the records must be looked at one by one.
    fn keep_or_drop_whole(
        &self,
        (position, batch): (usize, &AnyBatch<'_>),
        retention: BatchRetention,
        kept: &mut Kept,
        result: &mut FilterResult,
        stats: &mut CleanerStats,
    ) -> Result<bool> {
        let AnyBatch::V2(b) = batch else { return Ok(false) };
        if b.is_control() || b.last_offset() > self.map.latest_offset() {
            return Ok(false);
        }
        match self.mapped.batch_fate(b.base_offset(), b.last_offset()) {
            BatchFate::Mixed => return Ok(false),
            BatchFate::AllLatest => {
                let count = batch.record_count()?;
                kept.keep_verbatim(position, batch.size_in_bytes());
                result.bytes_retained += batch.size_in_bytes();
                stats.batches_copied_verbatim += 1;
                result.batches_verbatim += 1;
                result.messages_read += count;
                result.messages_retained += count;
                result.max_offset = result.max_offset.max(b.last_offset());
            }
            BatchFate::AllSuperseded => {
                result.messages_read += batch.record_count()?;
                if retention == BatchRetention::RetainEmpty {
                    let start = kept.out.len();
                    write_empty(batch, &mut kept.out)?;
                    kept.keep_written(start);
                    result.bytes_retained += kept.out.len() - start;
                    result.max_offset = result.max_offset.max(b.last_offset());
                }
            }
        }
        Ok(true)
    }

    /// Filters the complete batches of `chunk` into `kept` (Kafka's `MemoryRecords.filterTo`).
    /// Stops at the first incomplete batch; `bytes_read` tells how far it got.
    pub fn filter_to(
        &mut self,
        chunk: &[u8],
        kept: &mut Kept,
        builder: &mut BatchBuilder,
        scratch: &mut Vec<u8>,
        stats: &mut CleanerStats,
    ) -> Result<FilterResult> {
        let mut result = FilterResult { max_offset: -1, next_offset: -1, ..FilterResult::default() };
        let mut retained_flags: Vec<bool> = Vec::new();
        let mut hashes: Vec<Option<KeyHash>> = Vec::new();
        let mut digests: Vec<KeyHash> = Vec::new();
        for item in crate::record::records::BatchIter::new(chunk) {
            let (position, batch) = item?;
            let (retention, discard_records, marker_for_empty_txn) =
                self.check_batch_retention(&batch, scratch).map_err(|e| e.with_position_offset(position as u64))?;
            result.bytes_read += batch.size_in_bytes();
            result.batches_read += 1;
            result.next_offset = batch.next_offset();
            if retention == BatchRetention::Delete {
                continue;
            }
            if !discard_records && self.keep_or_drop_whole((position, &batch), retention, kept, &mut result, stats)? {
                continue;
            }
            // Decode once; decide each record's fate.
            let mut records: Vec<Record<'_>> = Vec::new();
            batch.records_into(scratch, &mut records).map_err(|e| e.with_position_offset(position as u64))?;
            retained_flags.clear();
            let mut contains_tombstones = false;
            let mut max_offset = -1i64;
            let is_control = batch.is_control();
            // Hash the keys that need a lookup and prefetch their slots first.
            let latest = self.map.latest_offset();
            let mut keys = Vec::new();
            let lookup = !discard_records && !is_control;
            let mapped = self.mapped;
            let wanted = |r: &Record<'_>| lookup && r.offset <= latest && mapped.is_latest(r.offset).is_none();
            hash_record_keys(&records, wanted, &mut keys, &mut digests, &mut hashes);
            for h in hashes.iter().flatten() {
                self.map.prefetch(h);
            }
            for (r, hash) in records.iter().zip(&hashes) {
                let known = mapped.is_latest(r.offset);
                let keep = !discard_records
                    && (is_control
                        || self.should_retain_record(
                            &batch,
                            r.offset,
                            (known, hash.as_ref()),
                            r.value.is_some(),
                            stats,
                        ));
                if keep {
                    max_offset = max_offset.max(r.offset);
                    contains_tombstones |= r.value.is_none();
                }
                retained_flags.push(keep);
            }
            result.messages_read += records.len() as u64;
            let kept_count = retained_flags.iter().filter(|k| **k).count();
            let start = kept.out.len();
            if kept_count > 0 {
                let horizon_in_batch = match &batch {
                    AnyBatch::V2(b) => b.delete_horizon_ms(),
                    AnyBatch::Legacy(_) => None,
                };
                let need_horizon = batch.magic() >= MAGIC_V2
                    && (contains_tombstones || marker_for_empty_txn)
                    && horizon_in_batch.is_none();
                let original = batch.magic() >= MAGIC_V2 && kept_count == records.len();
                if original && !need_horizon {
                    kept.keep_verbatim(position, batch.size_in_bytes());
                    result.bytes_retained += batch.size_in_bytes();
                    stats.batches_copied_verbatim += 1;
                    result.batches_verbatim += 1;
                    result.max_offset = result.max_offset.max(batch.last_offset());
                } else {
                    let horizon = if need_horizon {
                        Some(self.current_time.saturating_add(self.delete_retention_ms))
                    } else {
                        horizon_in_batch
                    };
                    // A rebuilt batch gets a new CRC: never give one to damaged bytes, which
                    // every read reports (a batch kept verbatim keeps its CRC, and its damage).
                    batch.ensure_valid().map_err(|e| e.with_position_offset(position as u64))?;
                    let kept_records = records.iter().zip(&retained_flags).filter(|(_, k)| **k).map(|(r, _)| r);
                    rebuild(&batch, kept_records, horizon, builder, &mut kept.out)?;
                    result.max_offset = result.max_offset.max(max_offset);
                }
                result.messages_retained += kept_count as u64;
            } else if retention == BatchRetention::RetainEmpty {
                write_empty(&batch, &mut kept.out)?;
                result.max_offset = result.max_offset.max(batch.last_offset());
            }
            result.bytes_retained += kept.out.len() - start;
            kept.keep_written(start);
        }
        Ok(result)
    }
}

/// Rebuilds `batch` with only the records flagged in `keep` (Kafka's
/// `buildRetainedRecordsInto`): v2, same codec at its default level, same header fields,
/// the delete horizon if any, and for v2 sources the original last offset.
fn rebuild<'r, 's: 'r>(
    batch: &AnyBatch<'_>,
    mut retained: impl Iterator<Item = &'r Record<'s>> + Clone,
    horizon: Option<i64>,
    builder: &mut BatchBuilder,
    out: &mut Vec<u8>,
) -> Result<()> {
    let first = *retained.clone().next().expect("at least one record is kept");
    let timestamp_type = batch.timestamp_type();
    let header = match batch {
        AnyBatch::V2(b) => BatchHeader {
            base_offset: b.base_offset(),
            partition_leader_epoch: b.partition_leader_epoch(),
            compression: b.compression_type()?,
            compression_level: None,
            timestamp_type,
            producer_id: b.producer_id(),
            producer_epoch: b.producer_epoch(),
            base_sequence: b.base_sequence(),
            is_transactional: b.is_transactional(),
            is_control: b.is_control(),
            delete_horizon_ms: horizon,
        },
        AnyBatch::Legacy(_) => BatchHeader {
            base_offset: first.offset,
            compression: batch.compression_type()?,
            // Magic 0 has no timestamp type; AnyBatch reports CreateTime for it, as Kafka's
            // rebuild chooses.
            timestamp_type,
            delete_horizon_ms: horizon,
            ..BatchHeader::default()
        },
    };
    builder.reset(header);
    for r in retained.by_ref() {
        builder.append_record(r)?;
    }
    let last_delta = match batch {
        AnyBatch::V2(b) => Some(b.last_offset_delta()),
        AnyBatch::Legacy(_) => None,
    };
    let log_append_time = (header.timestamp_type == TimestampType::LogAppendTime).then(|| batch.max_timestamp());
    builder.build_into(out, last_delta, log_append_time)
}

/// Writes the 61-byte empty batch that keeps `batch`'s offsets and producer fields
/// (`DefaultRecordBatch.writeEmptyHeader`). Legacy batches have no such form in Kafka (it
/// throws); kafkalog writes the v2 empty header, which keeps the same offset information.
fn write_empty(batch: &AnyBatch<'_>, out: &mut Vec<u8>) -> Result<()> {
    match batch {
        AnyBatch::V2(b) => write_empty_header(
            out,
            b.base_offset(),
            b.last_offset(),
            b.producer_id(),
            b.producer_epoch(),
            b.base_sequence(),
            b.partition_leader_epoch(),
            b.timestamp_type(),
            b.max_timestamp(),
            b.is_transactional(),
            b.is_control(),
        ),
        AnyBatch::Legacy(e) => {
            let base = e.base_offset()?;
            write_empty_header(
                out,
                base,
                e.last_offset(),
                -1,
                -1,
                -1,
                -1,
                e.timestamp_type(),
                e.max_timestamp(),
                false,
                false,
            )
            .map_err(|err| Error::illegal_state(format!("cannot keep an empty legacy batch at offset {base}: {err}")))
        }
    }
}
