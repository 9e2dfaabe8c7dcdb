//! The crate's one error type.
//!
//! Every variant carries what an operator needs to find the problem: the file, the offset or
//! byte position, the config key and its allowed range. Python maps each variant onto an
//! exception class in `kafkalog.exceptions` (see `python/errors.rs`).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure kafkalog reports.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Bytes that do not form a valid record batch (Kafka's `CorruptRecordException` /
    /// `InvalidRecordException`). `position` is a byte position in `file` when a file is known,
    /// else in the buffer that was decoded.
    CorruptRecord { file: Option<PathBuf>, position: u64, reason: String },
    /// An index file whose contents fail a sanity check (Kafka's `CorruptIndexException`).
    CorruptIndex { file: PathBuf, reason: String },
    /// A fetch offset outside `[log_start_offset, log_end_offset]` (Kafka's `OffsetOutOfRangeException`).
    OffsetOutOfRange { offset: i64, log_start_offset: i64, log_end_offset: i64 },
    /// A batch larger than `max.message.bytes` (Kafka's `RecordTooLargeException`), or an append
    /// larger than the segment size (Kafka's `RecordBatchTooLargeException`).
    RecordBatchTooLarge { size: usize, max: usize },
    /// Records that no batch within the limit can hold, found while building batches before an
    /// append (Kafka's producer-side `RecordTooLargeException`): `what` names them (the rows of
    /// an Arrow append and their sizes), `size` is the batch they make, `limit` the limit and
    /// where it comes from. Nothing was written.
    RecordTooLarge { what: String, size: usize, limit: String },
    /// A record or batch the log refuses to store: missing key on a compacted topic, timestamp out
    /// of bounds, wrong magic (Kafka's `InvalidRecordException` / `InvalidTimestampException`).
    InvalidRecord { reason: String },
    /// Offsets that do not increase, or an index append out of order (Kafka's `InvalidOffsetException`
    /// / `UnexpectedAppendOffsetException`).
    InvalidOffset { reason: String },
    /// An offset that cannot be stored relative to a segment's base offset (Kafka's
    /// `LogSegmentOffsetOverflowException` / `IndexOffsetOverflowException`).
    OffsetOverflow { base_offset: i64, offset: i64 },
    /// A configuration value rejected when given (Kafka's `ConfigException`).
    InvalidConfig { key: String, value: String, reason: String },
    /// The caller asked for something the current state does not allow (Kafka's
    /// `IllegalArgumentException` / `IllegalStateException`).
    IllegalState { reason: String },
    /// The log has been closed (or was opened read-only and a write was attempted).
    LogClosed { path: PathBuf },
    /// Another writer (in this or another process) has the partition directory open for
    /// writing (Kafka's `LogDirLockedError` is the log-dir level equivalent).
    LogDirLocked {
        path: PathBuf,
        /// Who holds the lock, when `/proc` tells (`util::lock_holder`).
        holder: Option<String>,
        /// How long the caller waited for it, when it waited (a `LogManager` start-up).
        waited_ms: Option<u64>,
    },
    /// A write on a log opened read-only.
    ReadOnly { path: PathBuf },
    /// `partition.metadata` names another topic id than the caller's (Kafka's
    /// `InconsistentTopicIdException`).
    InconsistentTopicId { path: PathBuf, stored: String, given: String },
    /// A topic name that breaks Kafka's naming rules (Kafka's `InvalidTopicException`);
    /// `reason` is Kafka's wording and names the topic.
    InvalidTopic { topic: String, reason: String },
    /// A log whose log dir went offline after an I/O error (Kafka's `KafkaStorageException`):
    /// `path` is the log dir, `reason` the first error seen there.
    KafkaStorage { path: PathBuf, reason: String },
    /// Every log dir of a `LogManager` has failed; the manager cannot serve anything (Kafka
    /// halts the broker here).
    AllLogDirsOffline { dirs: Vec<PathBuf>, reason: String },
    /// A clean was stopped by a truncation, deletion or close of its log (Kafka's
    /// `LogCleaningAbortedException`); nothing was changed.
    LogCleaningAborted { partition: String },
    /// A caller's argument outside its allowed range or set of values (Kafka's
    /// `IllegalArgumentException`): `argument` names it, `value` is what was given, `allowed`
    /// says what is accepted. Raised before anything changes.
    InvalidArgument { argument: String, value: String, allowed: String },
    /// An operating-system I/O failure on `path` during `op`.
    Io { path: PathBuf, op: &'static str, source: io::Error },
    /// A producer's batch whose sequence number does not follow the last one the partition
    /// accepted from it (Kafka's `OutOfOrderSequenceException`): `sequence` is the batch's first
    /// sequence, `offset` its first offset, `detail` what was expected.
    OutOfOrderSequence { partition: String, producer_id: i64, offset: i64, sequence: i32, detail: String },
    /// A batch or transaction marker from a producer epoch older than the one the partition has
    /// seen (Kafka's `InvalidProducerEpochException`); with transactions version 2, a marker
    /// must bump the epoch, so an equal epoch is refused too (`transaction_version` >= 2).
    InvalidProducerEpoch {
        partition: String,
        producer_id: i64,
        offset: i64,
        epoch: i16,
        current_epoch: i16,
        transaction_version: i16,
    },
    /// A transaction marker from a coordinator epoch older than the last one the partition has
    /// seen for the producer (Kafka's `TransactionCoordinatorFencedException`): a zombie
    /// coordinator.
    TransactionCoordinatorFenced {
        partition: String,
        producer_id: i64,
        offset: i64,
        coordinator_epoch: i32,
        current_coordinator_epoch: i32,
    },
    /// A write that breaks the producer's transaction state (Kafka's `InvalidTxnStateException`),
    /// e.g. a non-transactional batch while the producer has a transaction open.
    InvalidTxnState { partition: String, producer_id: i64, reason: String },
    /// A producer state snapshot (`<offset>.snapshot`) that fails its version, schema or CRC
    /// check (Kafka's `CorruptSnapshotException`); loading deletes it and falls back to the next
    /// older snapshot.
    CorruptSnapshot { file: PathBuf, reason: String },
    /// A leader append in a leader epoch older than the latest one the partition's leader
    /// epoch cache holds (Kafka's `FencedLeaderEpochException`): the caller is a stale leader.
    /// Nothing was written.
    FencedLeaderEpoch { partition: String, leader_epoch: i32, latest_epoch: i32 },
}

impl Error {
    /// A corrupt-record error at `position` of an in-memory buffer.
    pub fn corrupt(position: u64, reason: impl Into<String>) -> Self {
        Error::CorruptRecord { file: None, position, reason: reason.into() }
    }

    /// An `InvalidRecord` error.
    pub fn invalid_record(reason: impl Into<String>) -> Self {
        Error::InvalidRecord { reason: reason.into() }
    }

    /// An `IllegalState` error.
    pub fn illegal_state(reason: impl Into<String>) -> Self {
        Error::IllegalState { reason: reason.into() }
    }

    /// An `InvalidOffset` error.
    pub fn invalid_offset(reason: impl Into<String>) -> Self {
        Error::InvalidOffset { reason: reason.into() }
    }

    /// An `InvalidConfig` error naming `key`, `value` and what is allowed.
    pub fn invalid_config(key: &str, value: impl fmt::Display, reason: impl Into<String>) -> Self {
        Error::InvalidConfig { key: key.to_string(), value: value.to_string(), reason: reason.into() }
    }

    /// An `InvalidArgument` error: `argument` with `value` is refused; `allowed` says what is
    /// accepted (e.g. "must be an offset in [0, 9223372036854775807]").
    pub fn invalid_argument(argument: &str, value: impl fmt::Display, allowed: impl Into<String>) -> Self {
        Error::InvalidArgument { argument: argument.to_string(), value: value.to_string(), allowed: allowed.into() }
    }

    /// Wraps an I/O error with the path and operation that failed.
    pub fn io(path: impl AsRef<Path>, op: &'static str, source: io::Error) -> Self {
        Error::Io { path: path.as_ref().to_path_buf(), op, source }
    }

    /// Shifts the position of a corrupt-record error by `delta` bytes (a batch-relative error
    /// placed in its enclosing buffer). Other variants pass through unchanged.
    #[must_use]
    pub fn with_position_offset(self, delta: u64) -> Self {
        match self {
            Error::CorruptRecord { file, position, reason } => {
                Error::CorruptRecord { file, position: position + delta, reason }
            }
            other => other,
        }
    }

    /// Places a buffer-relative corrupt-record error into `file`, whose buffer started at
    /// `file_position`. Other variants pass through unchanged.
    #[must_use]
    pub fn in_file(self, file: &Path, file_position: u64) -> Self {
        match self {
            Error::CorruptRecord { file: None, position, reason } => {
                Error::CorruptRecord { file: Some(file.to_path_buf()), position: file_position + position, reason }
            }
            other => other,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::CorruptRecord { file: Some(file), position, reason } => {
                write!(f, "corrupt record batch in {} at position {position}: {reason}", file.display())
            }
            Error::CorruptRecord { file: None, position, reason } => {
                write!(f, "corrupt record batch at position {position}: {reason}")
            }
            Error::LogCleaningAborted { partition } => {
                write!(f, "cleaning of {partition} was aborted (the log was truncated, deleted or closed)")
            }
            Error::CorruptIndex { file, reason } => {
                write!(f, "corrupt index {}: {reason}", file.display())
            }
            Error::OffsetOutOfRange { offset, log_start_offset, log_end_offset } => {
                write!(f, "offset {offset} is out of range: the log holds [{log_start_offset}, {log_end_offset}]")
            }
            Error::RecordBatchTooLarge { size, max } => {
                write!(
                    f,
                    "record batch of {size} bytes is larger than the limit of {max} bytes \
                     (max.message.bytes, or the segment size for a whole append)"
                )
            }
            Error::RecordTooLarge { what, size, limit } => {
                write!(f, "{what} takes {size} bytes, more than {limit}")
            }
            Error::InvalidRecord { reason } => write!(f, "invalid record: {reason}"),
            Error::InvalidOffset { reason } => write!(f, "invalid offset: {reason}"),
            Error::OffsetOverflow { base_offset, offset } => write!(
                f,
                "offset {offset} cannot be stored relative to segment base offset {base_offset} \
                 (relative offsets must lie in [0, 2147483647])"
            ),
            Error::InvalidConfig { key, value, reason } => {
                write!(f, "invalid value {value:?} for configuration {key}: {reason}")
            }
            Error::IllegalState { reason } => write!(f, "{reason}"),
            Error::LogClosed { path } => write!(f, "log {} is closed", path.display()),
            // `file_names::LOCK_FILE`, spelled out: `file_names` builds errors, so `error` sits
            // below it and cannot import it.
            Error::LogDirLocked { path, holder, .. } if path.file_name().is_some_and(|n| n == ".lock") => write!(
                f,
                "failed to acquire lock on file {}: {} is using this log dir",
                path.display(),
                holder.as_deref().map_or("another LogManager or a running Kafka broker".into(), |h| {
                    format!("another LogManager or a Kafka broker, in {h},")
                })
            ),
            Error::LogDirLocked { path, holder, waited_ms: Some(waited) } => write!(
                f,
                "{} stayed locked by another writer{} for {waited} ms, the partition lock timeout; stop that \
                 writer, or wait longer",
                path.display(),
                holder.as_deref().map_or(String::new(), |h| format!(" ({h})"))
            ),
            Error::LogDirLocked { path, holder, waited_ms: None } => write!(
                f,
                "{} is locked by another writer{}; open it with read_only=True to read it meanwhile",
                path.display(),
                holder.as_deref().map_or(String::new(), |h| format!(" ({h})"))
            ),
            Error::ReadOnly { path } => {
                write!(f, "log {} was opened read-only; writes are not allowed", path.display())
            }
            Error::InconsistentTopicId { path, stored, given } => {
                write!(f, "{} holds topic id {stored}, but the caller gave {given}", path.display())
            }
            Error::InvalidTopic { reason, .. } => write!(f, "Topic name is invalid: {reason}"),
            Error::KafkaStorage { path, reason } => {
                write!(f, "log dir {} is offline after an I/O error: {reason}", path.display())
            }
            Error::AllLogDirsOffline { dirs, reason } => {
                let dirs: Vec<_> = dirs.iter().map(|d| d.display().to_string()).collect();
                write!(f, "every log dir has failed ({}); the log manager is shut down: {reason}", dirs.join(", "))
            }
            Error::InvalidArgument { argument, value, allowed } => {
                write!(f, "invalid value {value} for {argument}: {allowed}")
            }
            Error::Io { path, op, source } => {
                write!(f, "I/O error during {op} on {}: {source}", path.display())
            }
            Error::OutOfOrderSequence { .. }
            | Error::InvalidProducerEpoch { .. }
            | Error::TransactionCoordinatorFenced { .. }
            | Error::InvalidTxnState { .. }
            | Error::CorruptSnapshot { .. }
            | Error::FencedLeaderEpoch { .. } => self.fmt_producer_state(f),
        }
    }
}

impl Error {
    /// The messages of the producer state and leader epoch errors: each names the partition, the
    /// producer id or leader, the offset and the epochs or sequences involved.
    fn fmt_producer_state(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::OutOfOrderSequence { partition, producer_id, offset, sequence, detail } => write!(
                f,
                "out of order sequence number for producer {producer_id} at offset {offset} in partition \
                 {partition}: {sequence} (incoming seq. number), {detail}"
            ),
            Error::InvalidProducerEpoch {
                partition,
                producer_id,
                offset,
                epoch,
                current_epoch,
                transaction_version,
            } => {
                let relation = if *transaction_version >= 2 { "not above" } else { "below" };
                write!(
                    f,
                    "epoch of producer {producer_id} at offset {offset} in {partition} is {epoch}, which is \
                     {relation} the last seen epoch {current_epoch} (transaction version {transaction_version})"
                )
            }
            Error::TransactionCoordinatorFenced {
                partition,
                producer_id,
                offset,
                coordinator_epoch,
                current_coordinator_epoch,
            } => write!(
                f,
                "invalid coordinator epoch for producer {producer_id} at offset {offset} in partition \
                 {partition}: {coordinator_epoch} (zombie), {current_coordinator_epoch} (current)"
            ),
            Error::InvalidTxnState { partition, producer_id, reason } => {
                write!(f, "invalid transaction state of producer {producer_id} in partition {partition}: {reason}")
            }
            Error::CorruptSnapshot { file, reason } => {
                write!(f, "corrupt producer state snapshot {}: {reason}", file.display())
            }
            Error::FencedLeaderEpoch { partition, leader_epoch, latest_epoch } => write!(
                f,
                "the leader epoch {leader_epoch} of the append to {partition} is older than the partition's latest \
                 leader epoch {latest_epoch}; a leader appends in the latest epoch or a newer one"
            ),
            other => write!(f, "{other:?}"), // only the variants above are routed here
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
