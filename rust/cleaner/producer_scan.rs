//! What the cleaner needs to know about producers and transactions before it recopies a log:
//! each active producer's last data batch and epoch (Kafka reads these from its
//! `ProducerStateManager` as `lastRecordsOfActiveProducers`), and the aborted transactions
//! (Kafka reads them from the `.txnindex` files). kafkalog keeps no producer state yet, so both
//! come from one scan of the batch headers of the whole log (control batches are decoded to
//! tell COMMIT from ABORT). Record data is not read: while batches are small the file is read
//! in 64 KiB windows, and once they average more than 8 KiB only each header is read.
//!
//! Thread-safety: plain data built by the cleaning thread.

use std::collections::HashMap;

use super::filter::LastRecord;
use crate::error::Result;
use crate::index::transaction_index::AbortedTxn;
use crate::log::unified_log::UnifiedLog;
use crate::record::batch::{
    be_i16, be_i32, be_i64, RecordBatch, ATTRIBUTES_OFFSET, BASE_OFFSET_OFFSET, CONTROL_FLAG_MASK,
    LAST_OFFSET_DELTA_OFFSET, LENGTH_OFFSET, LOG_OVERHEAD, MAGIC_OFFSET, MAGIC_V2, MAX_TIMESTAMP_OFFSET,
    PRODUCER_EPOCH_OFFSET, PRODUCER_ID_OFFSET, RECORDS_COUNT_OFFSET, RECORD_BATCH_OVERHEAD, TRANSACTIONAL_FLAG_MASK,
};
use crate::record::control::ControlRecordType;
use crate::segment::log_segment::LogSegment;

#[derive(Debug, Clone, Copy)]
struct ProducerEntry {
    last_data_offset: Option<i64>,
    epoch: i16,
    last_timestamp: i64,
    /// First offset of the producer's open transaction.
    txn_first_offset: Option<i64>,
}

/// Producers and aborted transactions of one log, as of one scan.
#[derive(Debug, Default)]
pub struct ProducerScan {
    /// Active producers (not expired) and what they wrote last.
    pub last_records: HashMap<i64, LastRecord>,
    /// Aborted transactions, in marker order.
    pub aborted: Vec<AbortedTxn>,
    /// First offset of the earliest transaction still open (no marker yet): the last stable
    /// offset can be no higher (Kafka's `firstUnstableOffset`).
    pub first_unstable_offset: Option<i64>,
}

/// The v2 header fields the scan needs.
#[derive(Debug, Clone, Copy)]
struct Header {
    base_offset: i64,
    last_offset: i64,
    max_timestamp: i64,
    producer_id: i64,
    epoch: i16,
    transactional: bool,
    control: bool,
    count: i32,
}

/// Window of a segment file read at once while batches are small; above `BIG_BATCH` bytes
/// per batch on average, only each 61-byte header is read.
const WINDOW: usize = 64 * 1024;
const BIG_BATCH: u64 = 8 * 1024;

/// Visits the v2 batch headers of `segment` without reading record data (control batches,
/// whose one record tells COMMIT from ABORT, are read whole). `f` gets the header and, for a
/// control batch, its bytes.
fn scan_headers(segment: &LogSegment, mut f: impl FnMut(&Header, Option<&[u8]>) -> Result<()>) -> Result<()> {
    let file = segment.log();
    let size = segment.size();
    let mut window = vec![0u8; WINDOW];
    let (mut win_start, mut win_len) = (0u64, 0usize);
    let (mut pos, mut batches) = (0u64, 0u64);
    let mut whole = Vec::new();
    while pos + RECORD_BATCH_OVERHEAD as u64 <= size {
        let in_window = pos >= win_start && pos + RECORD_BATCH_OVERHEAD as u64 <= win_start + win_len as u64;
        if !in_window {
            let big = batches > 0 && pos / batches > BIG_BATCH;
            let want = if big { RECORD_BATCH_OVERHEAD } else { WINDOW }.min((size - pos) as usize);
            win_len = file.read_at(pos, &mut window[..want])?;
            win_start = pos;
            if win_len < RECORD_BATCH_OVERHEAD {
                break;
            }
        }
        let h = &window[(pos - win_start) as usize..];
        let batch_size = LOG_OVERHEAD as u64 + u64::try_from(be_i32(h, LENGTH_OFFSET)).unwrap_or(0);
        if batch_size < RECORD_BATCH_OVERHEAD as u64 || pos + batch_size > size {
            // Legacy messages can be shorter than a v2 header; anything else here is damage
            // that the clean itself will report with its position.
            if h[MAGIC_OFFSET] == MAGIC_V2 {
                break;
            }
        }
        if h[MAGIC_OFFSET] == MAGIC_V2 && batch_size >= RECORD_BATCH_OVERHEAD as u64 {
            let attributes = h[ATTRIBUTES_OFFSET + 1];
            let base_offset = be_i64(h, BASE_OFFSET_OFFSET);
            let header = Header {
                base_offset,
                last_offset: base_offset + i64::from(be_i32(h, LAST_OFFSET_DELTA_OFFSET)),
                max_timestamp: be_i64(h, MAX_TIMESTAMP_OFFSET),
                producer_id: be_i64(h, PRODUCER_ID_OFFSET),
                epoch: be_i16(h, PRODUCER_EPOCH_OFFSET),
                transactional: attributes & TRANSACTIONAL_FLAG_MASK != 0,
                control: attributes & CONTROL_FLAG_MASK != 0,
                count: be_i32(h, RECORDS_COUNT_OFFSET),
            };
            if header.control && header.count > 0 && header.producer_id >= 0 {
                whole.resize(batch_size as usize, 0);
                let n = file.read_at(pos, &mut whole)?;
                f(&header, Some(&whole[..n]))?;
            } else {
                f(&header, None)?;
            }
        }
        pos += batch_size.max(1);
        batches += 1;
    }
    Ok(())
}

impl ProducerScan {
    /// Scans every segment of `log`. Producers whose last write is `expiration_ms` or more
    /// before `now` and that have no open transaction are dropped, as Kafka expires them.
    pub fn run(log: &UnifiedLog, now: i64, expiration_ms: i64, check: &dyn Fn() -> Result<()>) -> Result<Self> {
        let mut producers: HashMap<i64, ProducerEntry> = HashMap::new();
        let mut aborted = Vec::new();
        // Open transactions by (first offset, producer id).
        let mut open: std::collections::BTreeSet<(i64, i64)> = std::collections::BTreeSet::new();
        let mut scratch = Vec::new();
        for segment in log.segments() {
            check()?;
            scan_headers(&segment, |h, control| {
                if h.producer_id < 0 {
                    return Ok(());
                }
                let pid = h.producer_id;
                let e = producers.entry(pid).or_insert(ProducerEntry {
                    last_data_offset: None,
                    epoch: h.epoch,
                    last_timestamp: h.max_timestamp,
                    txn_first_offset: None,
                });
                if h.control {
                    // A control batch with no record is a marker whose transaction was
                    // cleaned away: it changes nothing (as in Kafka's producer state).
                    let Some(bytes) = control else { return Ok(()) };
                    let batch = RecordBatch::new(bytes).map_err(|e| e.in_file(&segment.path(), 0))?;
                    let kind = ControlRecordType::of_batch(&batch, &mut scratch)?;
                    e.epoch = h.epoch;
                    e.last_timestamp = h.max_timestamp;
                    if let Some(first) = e.txn_first_offset.take() {
                        open.remove(&(first, pid));
                        if kind == Some(ControlRecordType::Abort) {
                            // Kafka's ProducerStateManager.lastStableOffset(completedTxn).
                            let lso = open.iter().next().map_or(h.base_offset + 1, |(o, _)| *o);
                            aborted.push(AbortedTxn {
                                producer_id: pid,
                                first_offset: first,
                                last_offset: h.base_offset,
                                last_stable_offset: lso,
                            });
                        }
                    }
                } else {
                    e.last_data_offset = Some(h.last_offset);
                    e.epoch = h.epoch;
                    e.last_timestamp = h.max_timestamp;
                    if h.transactional && e.txn_first_offset.is_none() {
                        e.txn_first_offset = Some(h.base_offset);
                        open.insert((h.base_offset, pid));
                    }
                }
                Ok(())
            })?;
        }
        let first_unstable_offset = producers.values().filter_map(|e| e.txn_first_offset).min();
        let last_records = producers
            .into_iter()
            .filter(|(_, e)| e.txn_first_offset.is_some() || now.saturating_sub(e.last_timestamp) < expiration_ms)
            .map(|(pid, e)| (pid, LastRecord { last_data_offset: e.last_data_offset, producer_epoch: e.epoch }))
            .collect();
        Ok(ProducerScan { last_records, aborted, first_unstable_offset })
    }
}
