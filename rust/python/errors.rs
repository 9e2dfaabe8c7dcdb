//! Maps the crate's `Error` onto the exception classes of `kafkalog.exceptions` (pure Python,
//! so Spark can pickle them back to the driver).

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::error::Error;

fn exception_class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("kafkalog.exceptions")?.getattr(name)
}

/// Converts an error into the matching `kafkalog.exceptions` instance.
#[allow(clippy::needless_pass_by_value)]
pub fn to_py_err(py: Python<'_>, err: Error) -> PyErr {
    let message = err.to_string();
    let build = || -> PyResult<PyErr> {
        let (name, args): (&str, Bound<'_, PyTuple>) = match &err {
            Error::CorruptRecord { .. } => ("CorruptRecordError", PyTuple::new(py, [message.clone()])?),
            Error::CorruptIndex { .. } => ("CorruptIndexError", PyTuple::new(py, [message.clone()])?),
            Error::OffsetOutOfRange { .. } => ("OffsetOutOfRangeError", PyTuple::new(py, [message.clone()])?),
            Error::RecordBatchTooLarge { .. } | Error::RecordTooLarge { .. } => {
                ("RecordBatchTooLargeError", PyTuple::new(py, [message.clone()])?)
            }
            Error::InvalidRecord { .. } => ("InvalidRecordError", PyTuple::new(py, [message.clone()])?),
            Error::InvalidOffset { .. } => ("InvalidOffsetError", PyTuple::new(py, [message.clone()])?),
            Error::OffsetOverflow { .. } => ("OffsetOverflowError", PyTuple::new(py, [message.clone()])?),
            Error::InvalidConfig { .. } => ("InvalidConfigError", PyTuple::new(py, [message.clone()])?),
            Error::LogClosed { .. } => ("LogClosedError", PyTuple::new(py, [message.clone()])?),
            Error::LogDirLocked { .. } => ("LogDirLockedError", PyTuple::new(py, [message.clone()])?),
            Error::ReadOnly { .. } => ("ReadOnlyLogError", PyTuple::new(py, [message.clone()])?),
            Error::InconsistentTopicId { .. } => ("InconsistentTopicIdError", PyTuple::new(py, [message.clone()])?),
            Error::InvalidTopic { .. } => ("InvalidTopicError", PyTuple::new(py, [message.clone()])?),
            Error::InvalidArgument { .. } => ("InvalidArgumentError", PyTuple::new(py, [message.clone()])?),
            Error::Io { path, source, .. } => {
                let errno = source.raw_os_error().unwrap_or_else(|| errno_of_kind(source.kind()));
                let args = (errno, message.clone(), path.to_string_lossy().into_owned()).into_pyobject(py)?;
                ("KafkaLogIOError", args)
            }
            Error::KafkaStorage { .. } => ("KafkaStorageError", PyTuple::new(py, [message.clone()])?),
            Error::AllLogDirsOffline { .. } => ("AllLogDirsOfflineError", PyTuple::new(py, [message.clone()])?),
            Error::LogCleaningAborted { .. } => ("LogCleaningAbortedError", PyTuple::new(py, [message.clone()])?),
            Error::OutOfOrderSequence { .. } => ("OutOfOrderSequenceError", PyTuple::new(py, [message.clone()])?),
            Error::InvalidProducerEpoch { .. } => ("InvalidProducerEpochError", PyTuple::new(py, [message.clone()])?),
            Error::TransactionCoordinatorFenced { .. } => {
                ("TransactionCoordinatorFencedError", PyTuple::new(py, [message.clone()])?)
            }
            Error::InvalidTxnState { .. } => ("InvalidTxnStateError", PyTuple::new(py, [message.clone()])?),
            Error::CorruptSnapshot { .. } => ("CorruptSnapshotError", PyTuple::new(py, [message.clone()])?),
            Error::FencedLeaderEpoch { .. } => ("FencedLeaderEpochError", PyTuple::new(py, [message.clone()])?),
            _ => ("IllegalStateError", PyTuple::new(py, [message.clone()])?),
        };
        let cls = exception_class(py, name)?;
        Ok(PyErr::from_value(cls.call1(args)?))
    };
    build().unwrap_or_else(|e| e)
}

/// The errno for an `io::Error` built from a kind rather than an OS error (so `OSError.errno`
/// is set whenever Python would set it, e.g. ENOENT for a missing directory).
fn errno_of_kind(kind: std::io::ErrorKind) -> i32 {
    use std::io::ErrorKind as K;
    match kind {
        K::NotFound => libc::ENOENT,
        K::PermissionDenied => libc::EACCES,
        K::AlreadyExists => libc::EEXIST,
        K::NotADirectory => libc::ENOTDIR,
        K::IsADirectory => libc::EISDIR,
        K::DirectoryNotEmpty => libc::ENOTEMPTY,
        K::InvalidInput => libc::EINVAL,
        K::StorageFull => libc::ENOSPC,
        K::ReadOnlyFilesystem => libc::EROFS,
        K::Interrupted => libc::EINTR,
        K::UnexpectedEof => libc::EIO,
        _ => 0,
    }
}

/// Runs `f` with the GIL released (all I/O goes through here), delivers the log events queued
/// meanwhile to Python's `logging`, converts its error, and honours Ctrl-C pressed meanwhile.
pub fn run<T, F>(py: Python<'_>, f: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> crate::error::Result<T> + Send,
{
    let result = py.detach(|| super::logging::in_call(f));
    super::logging::flush(py)?; // the call's log events reach Python's handlers before it returns
    py.check_signals()?;
    result.map_err(|e| to_py_err(py, e))
}
