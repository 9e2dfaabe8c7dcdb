//! `kafkalog verify`'s native checks (`log::verify`) for the command: one partition directory
//! checked read-only, with the GIL released. Glue only; results are frozen classes
//! (`py_result!`).

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use super::errors::run;
use super::records::path_str;
use super::results::py_result;
use crate::log::verify as engine;
use crate::segment::verify::{Finding, Severity};

py_result! { record
    /// One finding of `verify_partition`: a problem (recovery changes it; `verify` exits 1) or
    /// a note (expected on a live directory), the file, the byte position when there is one,
    /// and what is wrong.
    #[module = "kafkalog"]
    pub struct VerifyFinding {
        /// "problem" or "note".
        severity: String,
        file: Py<PyString>,
        position: Option<u64>,
        message: String,
    }
}

impl VerifyFinding {
    fn new(py: Python<'_>, f: &Finding) -> PyResult<Self> {
        let severity = match f.severity {
            Severity::Problem => "problem",
            Severity::Note => "note",
        };
        Ok(VerifyFinding {
            severity: severity.to_string(),
            file: path_str(py, &f.file)?,
            position: f.position,
            message: f.message.clone(),
        })
    }
}

py_result! { record
    /// What `verify_partition` found in one partition directory.
    #[module = "kafkalog"]
    pub struct PartitionCheck {
        dir: Py<PyString>,
        /// Another process held the directory (its active segment's tail may be an append in
        /// progress).
        live: bool,
        /// list[VerifyFinding].
        findings: Py<PyList>,
        segment_bases: Vec<i64>,
        /// Offset after the last valid batch.
        log_end_offset: i64,
        /// The first segment with a problem in its `.log` or index files: recovery from its
        /// base offset repairs it.
        first_damaged_segment: Option<i64>,
        /// The topic id `partition.metadata` holds, when it can be read.
        topic_id: Option<String>,
    }
}

/// Checks the partition directory `path` without writing or locking anything: every segment
/// (batch framing, CRC, offsets, magic), its offset, time and transaction indexes, leftover
/// files, producer snapshots, `leader-epoch-checkpoint` and `partition.metadata`.
/// `recovery_point`: the partition's entry in its log dir's `recovery-point-offset-checkpoint`
/// when the dir has no clean-shutdown marker (the segments the next load recovers).
#[pyfunction]
#[pyo3(signature = (path, recovery_point=None))]
#[allow(clippy::needless_pass_by_value)]
pub fn verify_partition(py: Python<'_>, path: PathBuf, recovery_point: Option<i64>) -> PyResult<PartitionCheck> {
    let (live, check) = run(py, || {
        let live = engine::is_live(&path);
        Ok((live, engine::verify_partition(&path, live, recovery_point)?))
    })?;
    let findings = check.findings.iter().map(|f| VerifyFinding::new(py, f)).collect::<PyResult<Vec<_>>>()?;
    Ok(PartitionCheck {
        dir: path_str(py, &check.dir)?,
        live,
        findings: PyList::new(py, findings)?.unbind(),
        segment_bases: check.segment_bases,
        log_end_offset: check.log_end_offset,
        first_damaged_segment: check.first_damaged_segment,
        topic_id: check.topic_id,
    })
}
