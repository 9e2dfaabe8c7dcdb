//! The `.txnindex` file of a segment: the aborted transactions whose ABORT markers lie in the
//! segment, 34 bytes each (version 0, producer id, first offset, last offset, last stable
//! offset; big-endian). kafkalog reads Kafka's files and the cleaner writes them (see
//! `cleaner::filter::AbortedTxn`); this module holds what the log itself does to them.
//! Mirrors the truncation part of Kafka's `TransactionIndex`.
//!
//! Thread-safety: plain functions on a file; the owning log serialises them under its write
//! lock.

use std::fs::OpenOptions;
use std::path::Path;

use crate::error::{Error, Result};
use crate::util::fault::{check, FaultOp};

/// Bytes of one entry (Kafka's `AbortedTxn.TOTAL_SIZE`).
pub const ENTRY_SIZE: usize = 34;
/// Position of the last offset (the ABORT marker's offset) within an entry.
const LAST_OFFSET_AT: usize = 2 + 8 + 8;

/// Removes every aborted transaction whose marker lies at or above `offset` (Kafka's
/// `TransactionIndex.truncateTo`): the file is cut before the first entry whose last offset is
/// `offset` or more, as Kafka's scan of the entries in file order does. Returns the bytes cut.
/// A missing file is nothing to truncate.
pub fn truncate_to(path: &Path, offset: i64) -> Result<u64> {
    let data = match std::fs::read(path) {
        Ok(data) => data,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io(path, "read", e)),
    };
    let cut = data
        .chunks_exact(ENTRY_SIZE)
        .position(|entry| {
            let last = i64::from_be_bytes(entry[LAST_OFFSET_AT..LAST_OFFSET_AT + 8].try_into().expect("8 bytes"));
            last >= offset
        })
        .map(|n| n * ENTRY_SIZE);
    let Some(cut) = cut else { return Ok(0) };
    check(path, FaultOp::Truncate)
        .and_then(|()| OpenOptions::new().write(true).open(path))
        .and_then(|f| f.set_len(cut as u64))
        .map_err(|e| Error::io(path, "truncate", e))?;
    Ok((data.len() - cut) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(producer_id: i64, first: i64, last: i64) -> Vec<u8> {
        let mut out = 0i16.to_be_bytes().to_vec();
        for v in [producer_id, first, last, last + 1] {
            out.extend_from_slice(&v.to_be_bytes());
        }
        out
    }

    #[test]
    fn cuts_at_the_first_marker_at_or_above_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.txnindex");
        let entries: Vec<u8> = [entry(1, 0, 5), entry(2, 3, 10), entry(1, 11, 15)].concat();
        std::fs::write(&path, &entries).unwrap();
        assert_eq!(truncate_to(&path, 16).unwrap(), 0);
        assert_eq!(truncate_to(&path, 10).unwrap(), 2 * ENTRY_SIZE as u64);
        assert_eq!(std::fs::read(&path).unwrap(), entry(1, 0, 5));
        assert_eq!(truncate_to(&path, 0).unwrap(), ENTRY_SIZE as u64);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0, "Kafka keeps the empty file");
        assert_eq!(truncate_to(&dir.path().join("missing.txnindex"), 0).unwrap(), 0);
    }
}
