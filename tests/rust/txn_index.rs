//! A segment's `.txnindex` follows the log's truncation (Kafka's `LogSegment.truncateTo`
//! truncates its `TransactionIndex` with the other indexes).

use kafkalog::index::transaction_index::AbortedTxn;
use kafkalog::index::transaction_index::ENTRY_SIZE;

use crate::common::{append_values, config, Fixture, T0};

/// One `.txnindex` entry, as the cleaner writes it.
fn entry(producer_id: i64, first_offset: i64, last_offset: i64) -> Vec<u8> {
    let mut out = Vec::new();
    AbortedTxn { producer_id, first_offset, last_offset, last_stable_offset: last_offset + 1 }.write_to(&mut out);
    out
}

#[test]
fn truncation_cuts_the_aborted_transactions_at_or_above_the_new_end() {
    let fx = Fixture::new();
    let cfg = config(&[]);
    let txn_index = fx.dir.join(format!("{:020}.txnindex", 0));
    {
        let log = fx.open(&cfg);
        for _ in 0..3 {
            append_values(&log, T0, &["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]);
        }
        log.close().unwrap();
    }
    // As Kafka's broker leaves it: aborted transactions whose markers are at 5, 15 and 25.
    std::fs::write(&txn_index, [entry(7, 0, 5), entry(8, 11, 15), entry(7, 20, 25)].concat()).unwrap();
    let log = fx.open(&cfg);
    assert!(log.truncate_to(20).unwrap());
    assert_eq!(std::fs::read(&txn_index).unwrap(), [entry(7, 0, 5), entry(8, 11, 15)].concat());
    // Kafka cuts at the first entry whose marker is at or above the offset: 15 goes with 10.
    assert!(log.truncate_to(10).unwrap());
    assert_eq!(std::fs::read(&txn_index).unwrap(), entry(7, 0, 5));
    assert!(log.truncate_to(0).unwrap());
    assert_eq!(std::fs::metadata(&txn_index).unwrap().len(), 0);
    assert_eq!(ENTRY_SIZE, 34);
}
