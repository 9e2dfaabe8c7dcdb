//! What the cleaner needs to know about producers and transactions before it recopies a log:
//! each active producer's last data batch and epoch (Kafka reads these from its
//! `ProducerStateManager` as `lastRecordsOfActiveProducers`), and the aborted transactions
//! (Kafka reads them from the `.txnindex` files). kafkalog keeps no producer state yet, so both
//! come from one scan of the batch headers of the whole log (control batches are decoded to
//! tell COMMIT from ABORT).
//!
//! Thread-safety: plain data built by the cleaning thread.

use std::collections::HashMap;

use super::filter::{AbortedTxn, LastRecord};
use crate::error::Result;
use crate::log::unified_log::UnifiedLog;
use crate::record::control::ControlRecordType;
use crate::record::records::AnyBatch;

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
}

impl ProducerScan {
    /// Scans every segment of `log`. Producers whose last write is `expiration_ms` or more
    /// before `now` and that have no open transaction are dropped, as Kafka expires them.
    pub fn run(log: &UnifiedLog, now: i64, expiration_ms: i64, check: &dyn Fn() -> Result<()>) -> Result<Self> {
        let mut producers: HashMap<i64, ProducerEntry> = HashMap::new();
        let mut aborted = Vec::new();
        let mut buf = Vec::new();
        let mut scratch = Vec::new();
        for segment in log.segments() {
            check()?;
            segment.log().for_each_batch(0, segment.size(), &mut buf, |_, batch| {
                let AnyBatch::V2(b) = batch else { return Ok(true) };
                if !b.has_producer_id() {
                    return Ok(true);
                }
                let pid = b.producer_id();
                if b.is_control() {
                    let mut kind = None;
                    b.for_each_record(&mut scratch, |r| {
                        kind.get_or_insert(ControlRecordType::parse_key(r.key)?);
                        Ok(())
                    })?;
                    // An empty control batch is a marker whose transaction was cleaned away.
                    let Some(kind) = kind else { return Ok(true) };
                    let e = producers.entry(pid).or_insert(ProducerEntry {
                        last_data_offset: None,
                        epoch: b.producer_epoch(),
                        last_timestamp: b.max_timestamp(),
                        txn_first_offset: None,
                    });
                    e.epoch = b.producer_epoch();
                    e.last_timestamp = b.max_timestamp();
                    if let Some(first) = e.txn_first_offset.take() {
                        if kind == ControlRecordType::Abort {
                            aborted.push(AbortedTxn {
                                producer_id: pid,
                                first_offset: first,
                                last_offset: b.base_offset(),
                            });
                        }
                    }
                } else {
                    let e = producers.entry(pid).or_insert(ProducerEntry {
                        last_data_offset: None,
                        epoch: b.producer_epoch(),
                        last_timestamp: b.max_timestamp(),
                        txn_first_offset: None,
                    });
                    e.last_data_offset = Some(b.last_offset());
                    e.epoch = b.producer_epoch();
                    e.last_timestamp = b.max_timestamp();
                    if b.is_transactional() && e.txn_first_offset.is_none() {
                        e.txn_first_offset = Some(b.base_offset());
                    }
                }
                Ok(true)
            })?;
        }
        let last_records = producers
            .into_iter()
            .filter(|(_, e)| e.txn_first_offset.is_some() || now.saturating_sub(e.last_timestamp) < expiration_ms)
            .map(|(pid, e)| (pid, LastRecord { last_data_offset: e.last_data_offset, producer_epoch: e.epoch }))
            .collect();
        Ok(ProducerScan { last_records, aborted })
    }
}
