//! The `.txnindex` file of a segment (Kafka's `TransactionIndex`, `AbortedTxn` and
//! `TxnIndexSearchResult`): the aborted transactions whose ABORT markers lie in the segment, in
//! marker order, 34 bytes each (version 0 as an int16, producer id, first offset, last offset,
//! last stable offset as int64s; big-endian). A `read_committed` fetch collects the entries
//! that overlap its range to tell the consumer which records to drop.
//!
//! As in Kafka, the file is created on the first append (a segment without aborted
//! transactions has none; Kafka's broker leaves an empty one per segment, which reads the
//! same), is not preallocated, and a trailing partial entry (a torn append) is not read.
//!
//! Thread-safety: reads take `&self` and may run concurrently; appends, truncation, reset,
//! renames and deletion take `&mut self` (the segment keeps the index behind a lock, and its
//! log serialises writers under its write lock).

use std::fmt;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::util::fault::{check, FaultOp};

/// Bytes of one entry (Kafka's `AbortedTxn.TOTAL_SIZE`).
pub const ENTRY_SIZE: usize = AbortedTxn::SIZE;

/// A transaction that was aborted: its producer, its offset range and the last stable offset
/// when it ended. Mirrors Kafka's `AbortedTxn`; one entry of a `.txnindex`.
///
/// Thread-safety: a plain value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AbortedTxn {
    /// Producer id.
    pub producer_id: i64,
    /// First offset of the transaction's data.
    pub first_offset: i64,
    /// Offset of the ABORT marker.
    pub last_offset: i64,
    /// The last stable offset when the transaction ended: the first offset of the earliest
    /// other transaction still open then, or the marker's offset + 1.
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    /// Bytes of one `.txnindex` entry (Kafka's `AbortedTxn.TOTAL_SIZE`).
    pub const SIZE: usize = 34;
    /// The entry version written (Kafka's `AbortedTxn.CURRENT_VERSION`).
    pub const CURRENT_VERSION: i16 = 0;

    /// The entry for a transaction of `producer_id` over `[first_offset, last_offset]` that ended
    /// with the last stable offset at `last_stable_offset`.
    #[must_use]
    pub fn new(producer_id: i64, first_offset: i64, last_offset: i64, last_stable_offset: i64) -> Self {
        AbortedTxn { producer_id, first_offset, last_offset, last_stable_offset }
    }

    /// The 34-byte entry: version 0, producer id, first offset, last offset, last stable
    /// offset, big-endian.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut out = [0u8; Self::SIZE];
        out[..2].copy_from_slice(&Self::CURRENT_VERSION.to_be_bytes());
        for (n, v) in
            [self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset].iter().enumerate()
        {
            out[2 + 8 * n..10 + 8 * n].copy_from_slice(&v.to_be_bytes());
        }
        out
    }

    /// Appends the 34-byte entry to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bytes());
    }

    /// Decodes one entry, returning its version too (only version 0 exists).
    fn decode(entry: &[u8]) -> (i16, AbortedTxn) {
        let long = |at: usize| i64::from_be_bytes(entry[at..at + 8].try_into().expect("8 bytes"));
        let version = i16::from_be_bytes([entry[0], entry[1]]);
        (version, AbortedTxn::new(long(2), long(10), long(18), long(26)))
    }
}

impl fmt::Display for AbortedTxn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "AbortedTxn(version={}, producerId={}, firstOffset={}, lastOffset={}, lastStableOffset={})",
            Self::CURRENT_VERSION,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset
        )
    }
}

/// The aborted transactions of one segment that overlap a fetch range, and whether the search
/// may stop there (Kafka's `TxnIndexSearchResult`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TxnIndexSearchResult {
    /// The overlapping transactions, in index order.
    pub aborted_transactions: Vec<AbortedTxn>,
    /// True when an entry's last stable offset reached the upper bound: no later segment can
    /// hold an aborted transaction that overlaps the range.
    pub is_complete: bool,
}

/// What an index knows of its last entry's last offset.
#[derive(Debug, Clone, Copy)]
enum LastOffset {
    /// Not read yet.
    Unknown,
    /// The last entry's last offset, `None` when the index has no entry.
    Known(Option<i64>),
}

/// One segment's `.txnindex`. Mirrors Kafka's `TransactionIndex`.
///
/// Thread-safety: `&self` reads may run concurrently; `&mut self` writes need exclusive access.
#[derive(Debug)]
pub struct TransactionIndex {
    start_offset: i64,
    path: PathBuf,
    writable: bool,
    /// The open file and its length, once an append, truncation or reset opened it.
    file: Option<(File, u64)>,
    /// The last entry's last offset, once known (`None` inside: no entry). Kafka knows it
    /// only after an append or truncation in this process; kafkalog reads the last entry on the
    /// first append, so an append below an entry of a reopened file is refused too.
    last_offset: LastOffset,
    /// The file is known not to exist (the loader's directory listing had none): reads and
    /// `exists` need no `stat` or failed open until something creates, renames or deletes it.
    known_missing: bool,
}

impl TransactionIndex {
    /// The index of the segment at `start_offset`, kept in `path`. Nothing is opened or created
    /// until needed; a read-only index never writes.
    #[must_use]
    pub fn new(start_offset: i64, path: PathBuf, writable: bool) -> Self {
        TransactionIndex {
            start_offset,
            path,
            writable,
            file: None,
            last_offset: LastOffset::Unknown,
            known_missing: false,
        }
    }

    /// Records that the file does not exist (the caller listed the directory and holds its
    /// lock), so reading it finds no entry without a file system call.
    pub fn known_missing(&mut self) {
        if self.file.is_none() {
            self.known_missing = true;
        }
    }

    /// The file's path (it may not exist).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The base offset of the segment.
    #[must_use]
    pub fn start_offset(&self) -> i64 {
        self.start_offset
    }

    /// Whether the file exists.
    #[must_use]
    pub fn exists(&self) -> bool {
        self.file.is_some() || (!self.known_missing && self.path.exists())
    }

    /// Appends `txn` (Kafka's `append`), creating the file on the first one. Its last offset
    /// must be above the previous entry's: markers only move forward.
    ///
    /// # Errors
    /// `InvalidOffset` naming the file and both offsets if it is not; `CorruptIndex` if the
    /// file's length is not a whole number of entries; `ReadOnly` on a read-only index; `Io`.
    pub fn append(&mut self, txn: AbortedTxn) -> Result<()> {
        let previous = self.known_last_offset()?;
        if let Some(last) = previous.filter(|last| *last >= txn.last_offset) {
            return Err(Error::InvalidOffset {
                reason: format!(
                    "the last offset of appended transactions must increase: {} is not above the last offset {last} \
                     of transaction index {}",
                    txn.last_offset,
                    self.path.display()
                ),
            });
        }
        let path = self.path.clone();
        let (file, len) = self.open_for_write()?;
        check(&path, FaultOp::Write)
            .and_then(|()| file.write_all_at(&txn.to_bytes(), *len))
            .map_err(|e| Error::io(&path, "write", e))?;
        *len += AbortedTxn::SIZE as u64;
        self.last_offset = LastOffset::Known(Some(txn.last_offset));
        Ok(())
    }

    /// Fsyncs the file if this index wrote it (Kafka's `flush`).
    ///
    /// # Errors
    /// `Io` if the fsync fails.
    pub fn flush(&self) -> Result<()> {
        match &self.file {
            Some((file, _)) => check(&self.path, FaultOp::Fsync)
                .and_then(|()| file.sync_all())
                .map_err(|e| Error::io(&self.path, "fsync", e)),
            None => Ok(()),
        }
    }

    /// Removes every entry (Kafka's `reset`): an existing file is cut to zero bytes, a missing
    /// one stays missing.
    ///
    /// # Errors
    /// `ReadOnly` on a read-only index; `Io`.
    pub fn reset(&mut self) -> Result<()> {
        if self.exists() {
            self.set_len(0)?;
        }
        self.last_offset = LastOffset::Known(None);
        Ok(())
    }

    /// Removes every aborted transaction whose marker lies at or above `offset` (Kafka's
    /// `truncateTo`): the file is cut before the first entry, in file order, whose last offset
    /// is `offset` or more. Returns the bytes cut. A missing file is nothing to truncate.
    ///
    /// # Errors
    /// `CorruptIndex` on an entry of an unknown version before the cut; `ReadOnly`; `Io`.
    pub fn truncate_to(&mut self, offset: i64) -> Result<u64> {
        let bytes = self.read_bytes()?;
        let mut previous = None;
        for (position, txn) in self.entries(&bytes)? {
            if txn.last_offset >= offset {
                self.set_len(position)?;
                self.last_offset = LastOffset::Known(previous);
                return Ok(bytes.len() as u64 - position);
            }
            previous = Some(txn.last_offset);
        }
        Ok(0)
    }

    /// Every entry, in file order (Kafka's `allAbortedTxns`).
    ///
    /// # Errors
    /// `CorruptIndex` naming the file and position of an entry of an unknown version; `Io`.
    pub fn all_aborted_txns(&self) -> Result<Vec<AbortedTxn>> {
        let bytes = self.read_bytes()?;
        Ok(self.entries(&bytes)?.into_iter().map(|(_, txn)| txn).collect())
    }

    /// The aborted transactions that overlap `[fetch_offset, upper_bound_offset)` (their marker
    /// at or after the start, their first offset before the end), and whether the search is
    /// complete: it is once an entry's last stable offset reaches the upper bound, since every
    /// transaction that overlaps the range has then ended (Kafka's `collectAbortedTxns`).
    ///
    /// # Errors
    /// As [`Self::all_aborted_txns`].
    pub fn collect_aborted_txns(&self, fetch_offset: i64, upper_bound_offset: i64) -> Result<TxnIndexSearchResult> {
        let mut result = TxnIndexSearchResult::default();
        for txn in self.all_aborted_txns()? {
            if txn.last_offset >= fetch_offset && txn.first_offset < upper_bound_offset {
                result.aborted_transactions.push(txn);
            }
            if txn.last_stable_offset >= upper_bound_offset {
                result.is_complete = true;
                break;
            }
        }
        Ok(result)
    }

    /// Kafka's `sanityCheck`, and the length check kafkalog adds: the file holds whole entries,
    /// each of a known version, none with a last offset below the segment's base offset.
    ///
    /// # Errors
    /// `CorruptIndex` naming the file and what is wrong (with the position of the entry); `Io`.
    pub fn sanity_check(&self) -> Result<()> {
        let bytes = self.read_bytes()?;
        if !bytes.len().is_multiple_of(AbortedTxn::SIZE) {
            let whole = bytes.len() / AbortedTxn::SIZE * AbortedTxn::SIZE;
            return Err(self.corrupt(&format!(
                "found {} bytes, which is not a multiple of the {}-byte entry size (a partial entry at position \
                 {whole})",
                bytes.len(),
                AbortedTxn::SIZE
            )));
        }
        for (position, txn) in self.entries(&bytes)? {
            if txn.last_offset < self.start_offset {
                return Err(self.corrupt(&format!(
                    "the last offset of aborted transaction {txn} at position {position} is less than the start \
                     offset {}",
                    self.start_offset
                )));
            }
        }
        Ok(())
    }

    /// Renames the file to `new_path` if it exists; the index uses the new name from then on
    /// (Kafka's `renameTo`).
    ///
    /// # Errors
    /// `Io` if the rename fails (the index then keeps its old path).
    pub fn rename_to(&mut self, new_path: PathBuf) -> Result<()> {
        if self.exists() {
            crate::util::file::rename(&self.path, &new_path)?;
        }
        self.path = new_path;
        self.known_missing = false;
        Ok(())
    }

    /// Points the index at the same file name in `parent_dir` (the directory was renamed).
    pub fn update_parent_dir(&mut self, parent_dir: &Path) {
        if let Some(name) = self.path.file_name() {
            self.path = parent_dir.join(name);
        }
    }

    /// Closes the file (Kafka's `close`); a later write opens it again.
    pub fn close(&mut self) {
        self.file = None;
    }

    /// Closes and deletes the file; returns whether there was one (Kafka's `deleteIfExists`).
    ///
    /// # Errors
    /// `Io` if the file exists but cannot be deleted.
    pub fn delete_if_exists(&mut self) -> Result<bool> {
        self.close();
        self.last_offset = LastOffset::Unknown;
        self.known_missing = false;
        crate::util::file::delete_if_exists(&self.path)
    }

    /// The last entry's last offset, read from the file the first time.
    fn known_last_offset(&mut self) -> Result<Option<i64>> {
        if let LastOffset::Known(known) = self.last_offset {
            return Ok(known);
        }
        let bytes = self.read_bytes()?;
        if !bytes.len().is_multiple_of(AbortedTxn::SIZE) {
            return Err(self.corrupt(&format!(
                "found {} bytes, which is not a multiple of the {}-byte entry size; refusing to append after a \
                 partial entry",
                bytes.len(),
                AbortedTxn::SIZE
            )));
        }
        let last = self.entries(&bytes)?.last().map(|(_, txn)| txn.last_offset);
        self.last_offset = LastOffset::Known(last);
        Ok(last)
    }

    /// The whole file (empty if it does not exist). Index files are small: one entry per
    /// aborted transaction of the segment.
    fn read_bytes(&self) -> Result<Vec<u8>> {
        if let Some((file, len)) = &self.file {
            let mut bytes = vec![0u8; usize::try_from(*len).unwrap_or(usize::MAX)];
            file.read_exact_at(&mut bytes, 0).map_err(|e| Error::io(&self.path, "read", e))?;
            return Ok(bytes);
        }
        if self.known_missing {
            return Ok(Vec::new());
        }
        match std::fs::read(&self.path) {
            Ok(bytes) => Ok(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(Error::io(&self.path, "read", e)),
        }
    }

    /// The whole entries of `bytes` with their positions; a trailing partial entry is not read
    /// (as Kafka's iterator). An entry of an unknown version is an error.
    fn entries(&self, bytes: &[u8]) -> Result<Vec<(u64, AbortedTxn)>> {
        bytes
            .chunks_exact(AbortedTxn::SIZE)
            .enumerate()
            .map(|(n, entry)| {
                let position = (n * AbortedTxn::SIZE) as u64;
                match AbortedTxn::decode(entry) {
                    (AbortedTxn::CURRENT_VERSION, txn) => Ok((position, txn)),
                    (version, _) => Err(self.corrupt(&format!(
                        "unexpected aborted transaction version {version} at position {position}; the current \
                         version is {}",
                        AbortedTxn::CURRENT_VERSION
                    ))),
                }
            })
            .collect()
    }

    /// Opens (creating) the file for writing, once.
    fn open_for_write(&mut self) -> Result<&mut (File, u64)> {
        if !self.writable {
            return Err(Error::ReadOnly { path: self.path.clone() });
        }
        if self.file.is_none() {
            let file = check(&self.path, FaultOp::Open)
                .and_then(|()| OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&self.path))
                .map_err(|e| Error::io(&self.path, "open", e))?;
            let len = file.metadata().map_err(|e| Error::io(&self.path, "stat", e))?.len();
            self.file = Some((file, len));
            self.known_missing = false;
        }
        Ok(self.file.as_mut().expect("opened above"))
    }

    /// Cuts the file to `len` bytes.
    fn set_len(&mut self, len: u64) -> Result<()> {
        let path = self.path.clone();
        let (file, file_len) = self.open_for_write()?;
        check(&path, FaultOp::Truncate)
            .and_then(|()| file.set_len(len))
            .map_err(|e| Error::io(&path, "truncate", e))?;
        *file_len = len;
        Ok(())
    }

    fn corrupt(&self, reason: &str) -> Error {
        Error::CorruptIndex { file: self.path.clone(), reason: format!("transaction index: {reason}") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(producer_id: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
        AbortedTxn::new(producer_id, first, last, lso)
    }

    /// A temp dir and a writable index at base offset 0 in it.
    fn fixture() -> (tempfile::TempDir, TransactionIndex) {
        let dir = tempfile::tempdir().unwrap();
        let index = TransactionIndex::new(0, dir.path().join("00000000000000000000.txnindex"), true);
        (dir, index)
    }

    /// Kafka's four aborted transactions of `testCollectAbortedTransactions`.
    fn four() -> Vec<AbortedTxn> {
        vec![txn(0, 0, 10, 11), txn(1, 5, 15, 13), txn(2, 18, 35, 25), txn(3, 32, 50, 40)]
    }

    fn append_all(index: &mut TransactionIndex, txns: &[AbortedTxn]) {
        for t in txns {
            index.append(*t).unwrap();
        }
    }

    /// TransactionIndexTest.testPositionSetCorrectlyWhenOpened: a reopened index appends after
    /// its entries.
    #[test]
    fn position_set_correctly_when_opened() {
        let (_dir, mut index) = fixture();
        let mut txns = four();
        append_all(&mut index, &txns);
        index.close();
        let mut reopened = TransactionIndex::new(0, index.path().to_path_buf(), true);
        let another = txn(3, 50, 60, 55);
        reopened.append(another).unwrap();
        txns.push(another);
        assert_eq!(reopened.all_aborted_txns().unwrap(), txns);
    }

    /// TransactionIndexTest.testSanityCheck: an entry whose last offset is below the segment's
    /// base offset fails the check, naming the file and the entry's position.
    #[test]
    fn sanity_check() {
        let (_dir, mut index) = fixture();
        append_all(&mut index, &four());
        index.sanity_check().unwrap();
        let reopened = TransactionIndex::new(100, index.path().to_path_buf(), false);
        let err = reopened.sanity_check().unwrap_err();
        assert!(matches!(err, Error::CorruptIndex { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("00000000000000000000.txnindex") && msg.contains("position 0"), "{msg}");
        assert!(msg.contains("start offset 100"), "{msg}");
    }

    /// kafkalog's length check: a torn append (a partial entry) fails the sanity check with its
    /// position, is not read as an entry, and nothing is appended after it.
    #[test]
    fn sanity_check_refuses_a_partial_entry() {
        let (_dir, mut index) = fixture();
        append_all(&mut index, &four()[..2]);
        index.close();
        let mut bytes = std::fs::read(index.path()).unwrap();
        bytes.extend_from_slice(&[0u8; 10]);
        std::fs::write(index.path(), &bytes).unwrap();
        let mut reopened = TransactionIndex::new(0, index.path().to_path_buf(), true);
        let msg = reopened.sanity_check().unwrap_err().to_string();
        assert!(msg.contains("78 bytes") && msg.contains("position 68") && msg.contains(".txnindex"), "{msg}");
        assert_eq!(reopened.all_aborted_txns().unwrap(), four()[..2].to_vec(), "Kafka's reader skips the tail");
        let err = reopened.append(four()[2]).unwrap_err();
        assert!(matches!(err, Error::CorruptIndex { .. }), "{err}");
        assert_eq!(std::fs::read(index.path()).unwrap(), bytes, "nothing written after the partial entry");
    }

    /// An entry of an unknown version is an error naming the file and its position (Kafka's
    /// iterator: "Unexpected aborted transaction version").
    #[test]
    fn unknown_version_is_named_with_its_position() {
        let (_dir, mut index) = fixture();
        append_all(&mut index, &four()[..2]);
        index.close();
        let mut bytes = std::fs::read(index.path()).unwrap();
        bytes[34..36].copy_from_slice(&1i16.to_be_bytes());
        std::fs::write(index.path(), &bytes).unwrap();
        let reopened = TransactionIndex::new(0, index.path().to_path_buf(), false);
        for err in [reopened.all_aborted_txns().unwrap_err(), reopened.collect_aborted_txns(0, 100).unwrap_err()] {
            let msg = err.to_string();
            assert!(matches!(err, Error::CorruptIndex { .. }), "{msg}");
            assert!(msg.contains("version 1 at position 34") && msg.contains(".txnindex"), "{msg}");
        }
    }

    /// TransactionIndexTest.testLastOffsetMustIncrease: an equal last offset is refused.
    #[test]
    fn last_offset_must_increase() {
        let (_dir, mut index) = fixture();
        index.append(txn(1, 5, 15, 13)).unwrap();
        let err = index.append(txn(0, 0, 15, 11)).unwrap_err();
        assert!(matches!(err, Error::InvalidOffset { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("15 is not above the last offset 15") && msg.contains(".txnindex"), "{msg}");
        assert_eq!(index.all_aborted_txns().unwrap(), vec![txn(1, 5, 15, 13)], "nothing written");
    }

    /// TransactionIndexTest.testLastOffsetCannotDecrease, also across a reopen (Kafka checks
    /// only appends made since the open; kafkalog reads the last entry).
    #[test]
    fn last_offset_cannot_decrease() {
        let (_dir, mut index) = fixture();
        index.append(txn(1, 5, 15, 13)).unwrap();
        assert!(matches!(index.append(txn(0, 0, 10, 11)), Err(Error::InvalidOffset { .. })));
        index.close();
        let mut reopened = TransactionIndex::new(0, index.path().to_path_buf(), true);
        assert!(matches!(reopened.append(txn(0, 0, 10, 11)), Err(Error::InvalidOffset { .. })));
        reopened.append(txn(0, 16, 20, 21)).unwrap();
    }

    /// TransactionIndexTest.testCollectAbortedTransactions.
    #[test]
    fn collect_aborted_transactions() {
        let (_dir, mut index) = fixture();
        let txns = four();
        append_all(&mut index, &txns);
        let cases: [(i64, i64, &[AbortedTxn], bool); 6] = [
            (0, 100, &txns, false),
            (0, 32, &txns[..3], true),
            (0, 35, &txns, true),
            (10, 35, &txns, true),
            (11, 35, &txns[1..], true),
            (20, 41, &txns[2..], false),
        ];
        for (fetch, upper, expected, complete) in cases {
            let result = index.collect_aborted_txns(fetch, upper).unwrap();
            assert_eq!(result.aborted_transactions, expected.to_vec(), "[{fetch}, {upper})");
            assert_eq!(result.is_complete, complete, "[{fetch}, {upper})");
        }
    }

    /// TransactionIndexTest.testTruncate, with the bytes cut and the last offset kept for the
    /// next append.
    #[test]
    fn truncate() {
        let (_dir, mut index) = fixture();
        let txns = vec![txn(0, 0, 10, 2), txn(1, 5, 15, 16), txn(2, 18, 35, 25), txn(3, 32, 50, 40)];
        append_all(&mut index, &txns);
        assert_eq!(index.truncate_to(51).unwrap(), 0);
        assert_eq!(index.collect_aborted_txns(0, 100).unwrap().aborted_transactions, txns);
        assert_eq!(index.truncate_to(50).unwrap(), 34);
        assert_eq!(index.collect_aborted_txns(0, 100).unwrap().aborted_transactions, txns[..3].to_vec());
        assert!(matches!(index.append(txn(4, 30, 35, 36)), Err(Error::InvalidOffset { .. })));
        index.append(txn(4, 30, 36, 37)).unwrap();
        index.reset().unwrap();
        assert_eq!(index.collect_aborted_txns(0, 100).unwrap(), TxnIndexSearchResult::default());
        assert_eq!(std::fs::metadata(index.path()).unwrap().len(), 0, "Kafka keeps the empty file");
        index.append(txn(5, 0, 1, 2)).unwrap();
    }

    /// Truncation of a file this index never opened (Kafka's broker wrote it): cut at the first
    /// entry whose marker is at or above the offset, in file order.
    #[test]
    fn truncates_a_file_written_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.txnindex");
        let entries = [txn(1, 0, 5, 6), txn(2, 3, 10, 11), txn(1, 11, 15, 16)];
        std::fs::write(&path, entries.iter().flat_map(AbortedTxn::to_bytes).collect::<Vec<u8>>()).unwrap();
        let mut index = TransactionIndex::new(0, path.clone(), true);
        assert_eq!(index.truncate_to(16).unwrap(), 0);
        assert_eq!(index.truncate_to(10).unwrap(), 2 * ENTRY_SIZE as u64);
        assert_eq!(std::fs::read(&path).unwrap(), entries[0].to_bytes());
        let mut missing = TransactionIndex::new(0, dir.path().join("missing.txnindex"), true);
        assert_eq!(missing.truncate_to(0).unwrap(), 0);
        missing.reset().unwrap();
        assert!(!missing.exists(), "truncation and reset create no file");
    }

    /// TransactionIndexTest.testAbortedTxnSerde, and the byte layout Kafka writes.
    #[test]
    fn aborted_txn_serde() {
        let t = txn(983_493, 137, 299, 200);
        let bytes = t.to_bytes();
        assert_eq!(bytes.len(), 34);
        assert_eq!(AbortedTxn::decode(&bytes), (AbortedTxn::CURRENT_VERSION, t));
        assert_eq!(&bytes[..2], &[0, 0]);
        assert_eq!(&bytes[2..10], &983_493i64.to_be_bytes());
        assert_eq!(&bytes[26..34], &200i64.to_be_bytes());
        assert_eq!(
            t.to_string(),
            "AbortedTxn(version=0, producerId=983493, firstOffset=137, lastOffset=299, lastStableOffset=200)"
        );
    }

    /// TransactionIndexTest.testRenameIndex: appends after a rename go to the renamed file.
    #[test]
    fn rename_index() {
        let (dir, mut index) = fixture();
        index.append(txn(0, 0, 10, 2)).unwrap();
        let renamed = dir.path().join("00000000000000000000.txnindex.deleted");
        let old = index.path().to_path_buf();
        index.rename_to(renamed.clone()).unwrap();
        index.append(txn(1, 5, 15, 16)).unwrap();
        assert!(!old.exists());
        let txns = TransactionIndex::new(0, renamed, false).collect_aborted_txns(0, 100).unwrap().aborted_transactions;
        assert_eq!(txns.iter().map(|t| t.first_offset).collect::<Vec<_>>(), vec![0, 5]);
    }

    /// A rename of an index with no file only changes its path; the first append then creates
    /// the file under the new name.
    #[test]
    fn rename_without_a_file() {
        let (dir, mut index) = fixture();
        let swap = dir.path().join("00000000000000000000.txnindex.swap");
        index.rename_to(swap.clone()).unwrap();
        assert!(!swap.exists());
        index.append(txn(0, 0, 10, 11)).unwrap();
        assert_eq!(std::fs::metadata(&swap).unwrap().len(), 34);
    }

    /// TransactionIndexTest.testUpdateParentDir.
    #[test]
    fn update_parent_dir() {
        let (dir, mut index) = fixture();
        let parent = dir.path().join("parent");
        index.update_parent_dir(&parent);
        assert_eq!(index.path(), parent.join("00000000000000000000.txnindex"));
    }

    /// TransactionIndexTest.testFlush: no file until the first append (created lazily).
    #[test]
    fn flush() {
        let (_dir, mut index) = fixture();
        index.flush().unwrap();
        assert!(!index.path().exists(), "no empty file before the first append");
        index.append(txn(0, 0, 10, 2)).unwrap();
        index.flush().unwrap();
        assert_eq!(std::fs::metadata(index.path()).unwrap().len(), 34);
    }

    /// TransactionIndexTest.testDeleteIfExists.
    #[test]
    fn delete_if_exists() {
        let (_dir, mut index) = fixture();
        index.append(txn(0, 0, 10, 2)).unwrap();
        assert!(index.delete_if_exists().unwrap());
        assert!(!index.path().exists());
        assert!(!index.delete_if_exists().unwrap());
        assert_eq!(index.all_aborted_txns().unwrap(), vec![]);
    }

    /// A read-only index reads but never writes.
    #[test]
    fn read_only_index_refuses_writes() {
        let (_dir, mut index) = fixture();
        index.append(txn(0, 0, 10, 2)).unwrap();
        let mut ro = TransactionIndex::new(0, index.path().to_path_buf(), false);
        assert_eq!(ro.all_aborted_txns().unwrap(), vec![txn(0, 0, 10, 2)]);
        assert!(matches!(ro.append(txn(1, 11, 12, 13)), Err(Error::ReadOnly { .. })));
        assert!(matches!(ro.truncate_to(0), Err(Error::ReadOnly { .. })));
        assert_eq!(std::fs::metadata(index.path()).unwrap().len(), 34);
    }
}
