//! Producer state snapshots, `<20-digit offset>.snapshot`, in Kafka's format (the
//! `ProducerSnapshot` message, version 1, of `ProducerStateManager.readSnapshot` /
//! `writeSnapshot`), and the files that hold them (Kafka's `SnapshotFile`).
//!
//! Layout, big-endian:
//! ```text
//! 0   version                int16 = 1
//! 2   crc                    uint32  CRC-32C of bytes [6, end)
//! 6   entry count            int32
//! 10  entries, 46 bytes each:
//!       producerId int64, epoch int16, lastSequence int32, lastOffset int64,
//!       offsetDelta int32, timestamp int64, coordinatorEpoch int32,
//!       currentTxnFirstOffset int64 (-1: no open transaction)
//! ```
//! An entry with `lastOffset` < 0 has no batch metadata. The snapshot's offset (in its name) is
//! the end offset (exclusive) of the log it describes.

use std::path::{Path, PathBuf};

use super::entry::ProducerStateEntry;
use crate::error::{Error, Result};
use crate::file_names::{offset_from_file_name, with_suffix, DELETED_FILE_SUFFIX, PRODUCER_SNAPSHOT_FILE_SUFFIX};
use crate::record::batch::crc32c;
use crate::util::file::{delete_if_exists, rename, replace_file};

/// The only snapshot version Kafka reads and writes (`ProducerSnapshot.HIGHEST_SUPPORTED_VERSION`).
pub const PRODUCER_SNAPSHOT_VERSION: i16 = 1;
/// Where the CRC sits.
const CRC_OFFSET: usize = 2;
/// Where the CRC'd part (the entry count and the entries) starts.
const PRODUCER_ENTRIES_OFFSET: usize = 6;
/// Bytes per entry.
pub const SNAPSHOT_ENTRY_SIZE: usize = 46;

/// A snapshot file and the offset in its name (Kafka's `SnapshotFile`). A plain value; the
/// `ProducerStateManager` keeps one per snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotFile {
    /// The log end offset the snapshot describes.
    pub offset: i64,
    file: PathBuf,
}

impl SnapshotFile {
    /// The snapshot at `file`, whose name gives its offset; `None` for a name without one.
    pub fn from_path(file: PathBuf) -> Option<Self> {
        let offset = offset_from_file_name(&file.file_name()?.to_string_lossy())?;
        Some(SnapshotFile { offset, file })
    }

    /// The snapshot `file` at `offset`.
    pub fn new(file: PathBuf, offset: i64) -> Self {
        SnapshotFile { offset, file }
    }

    /// Its path (ends in `.deleted` once renamed for deletion).
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Deletes the file; returns whether it existed (`deleteIfExists`).
    pub fn delete_if_exists(&self) -> Result<bool> {
        let deleted = delete_if_exists(&self.file)?;
        if deleted {
            log::info!("Deleted producer state snapshot {}", self.file.display());
        } else {
            log::info!("Failed to delete producer state snapshot {} because it does not exist.", self.file.display());
        }
        Ok(deleted)
    }

    /// Renames the file with the `.deleted` suffix (`renameToDelete`); the path follows the
    /// rename even when it fails (Kafka's `finally`).
    pub fn rename_to_delete(&mut self) -> Result<()> {
        let renamed = with_suffix(&self.file, DELETED_FILE_SUFFIX);
        let result = rename(&self.file, &renamed);
        self.file = renamed;
        result
    }

    /// Moves the snapshot to `parent_dir` (its name kept), after the partition directory was
    /// renamed (`updateParentDir`).
    pub fn update_parent_dir(&mut self, parent_dir: &Path) {
        if let Some(name) = self.file.file_name() {
            self.file = parent_dir.join(name);
        }
    }
}

/// The snapshot bytes of `entries`, in the given order (Kafka writes its hash map's order; the
/// manager writes producer ids ascending, which is that order for small ids).
pub fn encode_snapshot<'a>(entries: impl ExactSizeIterator<Item = &'a ProducerStateEntry>) -> Vec<u8> {
    let count = entries.len();
    let mut out = Vec::with_capacity(PRODUCER_ENTRIES_OFFSET + 4 + count * SNAPSHOT_ENTRY_SIZE);
    out.extend_from_slice(&PRODUCER_SNAPSHOT_VERSION.to_be_bytes());
    out.extend_from_slice(&[0; 4]); // the CRC, filled in below
    out.extend_from_slice(&(count as i32).to_be_bytes());
    for e in entries {
        out.extend_from_slice(&e.producer_id().to_be_bytes());
        out.extend_from_slice(&e.producer_epoch().to_be_bytes());
        out.extend_from_slice(&e.last_seq().to_be_bytes());
        out.extend_from_slice(&e.last_data_offset().to_be_bytes());
        out.extend_from_slice(&e.last_offset_delta().to_be_bytes());
        out.extend_from_slice(&e.last_timestamp().to_be_bytes());
        out.extend_from_slice(&e.coordinator_epoch().to_be_bytes());
        out.extend_from_slice(&e.current_txn_first_offset().unwrap_or(-1).to_be_bytes());
    }
    let crc = crc32c(&out[PRODUCER_ENTRIES_OFFSET..]);
    out[CRC_OFFSET..PRODUCER_ENTRIES_OFFSET].copy_from_slice(&crc.to_be_bytes());
    out
}

/// Parses snapshot bytes read from `file` (`readSnapshot`): the version, the schema (every
/// entry whole), then the CRC over everything after it. Any failure is `CorruptSnapshot`.
pub fn decode_snapshot(bytes: &[u8], file: &Path) -> Result<Vec<ProducerStateEntry>> {
    let corrupt = |reason: String| Error::CorruptSnapshot { file: file.to_path_buf(), reason };
    let schema = |what: &str| corrupt(format!("snapshot failed schema validation: {what} ({} bytes)", bytes.len()));
    let Some(version) = bytes.get(..2).map(|b| i16::from_be_bytes([b[0], b[1]])) else {
        return Err(schema("no version"));
    };
    if version != PRODUCER_SNAPSHOT_VERSION {
        return Err(corrupt(format!("snapshot contained an unknown file version {version}; only 1 is known")));
    }
    let Some(header) = bytes.get(CRC_OFFSET..PRODUCER_ENTRIES_OFFSET + 4) else {
        return Err(schema("the CRC or the entry count is cut off"));
    };
    let stored_crc = u32::from_be_bytes(header[..4].try_into().expect("4 bytes"));
    let count = i32::from_be_bytes(header[4..].try_into().expect("4 bytes"));
    let body = &bytes[PRODUCER_ENTRIES_OFFSET + 4..];
    let count = usize::try_from(count).map_err(|_| schema(&format!("entry count {count} is negative")))?;
    if count > body.len() / SNAPSHOT_ENTRY_SIZE {
        return Err(schema(&format!(
            "{count} entries of {SNAPSHOT_ENTRY_SIZE} bytes do not fit in the {} bytes that follow",
            body.len()
        )));
    }
    let computed = crc32c(&bytes[PRODUCER_ENTRIES_OFFSET..]);
    if stored_crc != computed {
        return Err(corrupt(format!(
            "snapshot is corrupt (CRC is no longer valid). Stored crc: {stored_crc}. Computed crc: {computed}"
        )));
    }
    Ok(body.chunks_exact(SNAPSHOT_ENTRY_SIZE).take(count).map(decode_entry).collect())
}

fn decode_entry(b: &[u8]) -> ProducerStateEntry {
    let i64_at = |at: usize| i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let i32_at = |at: usize| i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"));
    let producer_id = i64_at(0);
    let epoch = i16::from_be_bytes([b[8], b[9]]);
    let last_sequence = i32_at(10);
    let last_offset = i64_at(14);
    let offset_delta = i32_at(22);
    let timestamp = i64_at(26);
    let coordinator_epoch = i32_at(34);
    let txn_first = i64_at(38);
    let mut entry = ProducerStateEntry::new(
        producer_id,
        epoch,
        coordinator_epoch,
        timestamp,
        (txn_first >= 0).then_some(txn_first),
    );
    if last_offset >= 0 {
        entry.add_batch(epoch, last_sequence, last_offset, offset_delta, timestamp);
    }
    entry
}

/// Reads and parses the snapshot at `path`.
pub fn read_snapshot(path: &Path) -> Result<Vec<ProducerStateEntry>> {
    crate::util::fault::check(path, crate::util::fault::FaultOp::Read).map_err(|e| Error::io(path, "read", e))?;
    let bytes = crate::util::file::read_small_file(path).map_err(|e| Error::io(path, "read", e))?;
    decode_snapshot(&bytes, path)
}

/// Writes `entries` as the snapshot at `path`, through a `.tmp` file renamed over it (fsynced
/// with the directory when `sync`).
pub fn write_snapshot<'a>(
    path: &Path,
    entries: impl ExactSizeIterator<Item = &'a ProducerStateEntry>,
    sync: bool,
) -> Result<()> {
    replace_file(path, &encode_snapshot(entries), sync)
}

/// The snapshot files in `dir`, in no order (`listSnapshotFiles`): regular files named
/// `<offset>.snapshot`. A missing directory has none.
pub fn list_snapshot_files(dir: &Path) -> Result<Vec<SnapshotFile>> {
    scan_snapshot_files(dir, false)
}

/// Deletes the `<offset>.snapshot.tmp` files a crash during [`write_snapshot`] may leave.
pub fn delete_leftover_tmp_snapshots(dir: &Path) -> Result<()> {
    scan_snapshot_files(dir, true).map(drop)
}

/// [`list_snapshot_files`], deleting the `<offset>.snapshot.tmp` files of the same listing
/// when `delete_tmp` ([`delete_leftover_tmp_snapshots`]): one directory read for both.
pub fn scan_snapshot_files(dir: &Path, delete_tmp: bool) -> Result<Vec<SnapshotFile>> {
    let read = match std::fs::read_dir(dir) {
        Ok(read) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir, "list directory", e)),
    };
    let tmp_suffix = format!("{PRODUCER_SNAPSHOT_FILE_SUFFIX}{}", crate::file_names::TMP_FILE_SUFFIX);
    let mut out = Vec::new();
    for item in read {
        let item = item.map_err(|e| Error::io(dir, "list directory", e))?;
        let name = item.file_name();
        let name = name.to_string_lossy();
        if delete_tmp && name.ends_with(&tmp_suffix) && offset_from_file_name(&name).is_some() {
            log::info!("deleting {}, left by an interrupted producer snapshot", item.path().display());
            delete_if_exists(&item.path())?;
            continue;
        }
        if !name.ends_with(PRODUCER_SNAPSHOT_FILE_SUFFIX) || !item.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        match SnapshotFile::from_path(item.path()) {
            Some(s) => out.push(s),
            None => log::warn!("ignoring {}: not a producer snapshot name", item.path().display()),
        }
    }
    Ok(out)
}
