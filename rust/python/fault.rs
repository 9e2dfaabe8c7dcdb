//! Test-only Python access to the file I/O fault-injection seam (`util::fault`);
//! `kafkalog.testing` wraps these functions.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::util::fault::{self, FaultOp};

/// Makes `op` on every path under `path_prefix` fail with `errno`, `times` times (or until
/// cleared). Rules are process-global.
#[pyfunction]
#[pyo3(name = "_inject_fault", signature = (path_prefix, op, errno, times = None))]
#[allow(clippy::needless_pass_by_value)] // pyo3 extracts an owned PathBuf (str or os.PathLike)
pub fn inject_fault(path_prefix: PathBuf, op: &str, errno: i32, times: Option<u64>) -> PyResult<()> {
    let op = FaultOp::from_name(op).ok_or_else(|| {
        PyValueError::new_err(format!("unknown fault op {op:?}: expected one of {}", FaultOp::NAMES.join(", ")))
    })?;
    if errno <= 0 {
        return Err(PyValueError::new_err(format!("invalid errno {errno}: expected a positive errno such as 5 (EIO)")));
    }
    fault::inject(&path_prefix, op, errno, times).persist();
    Ok(())
}

/// Kills this process with SIGKILL just before the file operation under `path_prefix` that
/// changes something after `skip` of them have gone through (`util::fault::crash_after`).
#[pyfunction]
#[pyo3(name = "_crash_after")]
#[allow(clippy::needless_pass_by_value)]
pub fn crash_after(path_prefix: PathBuf, skip: u64) {
    fault::crash_after(&path_prefix, skip).persist();
}

/// Removes the rules under `path_prefix`, or every rule when it is `None`.
#[pyfunction]
#[pyo3(name = "_clear_faults", signature = (path_prefix = None))]
pub fn clear_faults(path_prefix: Option<PathBuf>) {
    match path_prefix {
        Some(prefix) => fault::clear_under(&prefix),
        None => fault::clear_all(),
    }
}

/// Appends `<op> <path>` to `trace_file` for every file operation under `path_prefix` that
/// goes through (`util::fault::trace`), until the rules under it are cleared.
#[pyfunction]
#[pyo3(name = "_trace_file_ops")]
#[allow(clippy::needless_pass_by_value)]
pub fn trace_file_ops(py: Python<'_>, path_prefix: PathBuf, trace_file: PathBuf) -> PyResult<()> {
    fault::trace(&path_prefix, &trace_file).map_err(|e| super::errors::to_py_err(py, e))
}
