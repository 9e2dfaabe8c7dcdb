//! Python functions over the checkpoint files (`kafkalog.checkpoints` wraps them). Each call
//! releases the GIL for its file I/O.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::errors::run;
use crate::checkpoint::checkpoint_file::{self, EpochEntry};
use crate::checkpoint::log_dir_files;
use crate::error::Error;
use crate::log::file_names::{validate_topic_name, TopicPartition};
use crate::log::unified_log::check_offset;

/// The offsets of an offset checkpoint file by (topic, partition).
#[pyfunction]
pub fn read_offset_checkpoint(py: Python<'_>, path: PathBuf) -> PyResult<Bound<'_, PyDict>> {
    let entries = run(py, move || checkpoint_file::read_offset_checkpoint(&path))?;
    let d = PyDict::new(py);
    for (tp, offset) in entries {
        d.set_item((tp.topic, tp.partition), offset)?;
    }
    Ok(d)
}

/// Writes an offset checkpoint file atomically. Every topic must be a valid Kafka topic name (a
/// space or a newline would make the file unreadable), every partition and offset non-negative;
/// a refused entry writes nothing.
#[pyfunction]
pub fn write_offset_checkpoint(py: Python<'_>, path: PathBuf, entries: Vec<(String, i32, i64)>) -> PyResult<()> {
    let entries: Vec<(TopicPartition, i64)> =
        entries.into_iter().map(|(t, p, o)| (TopicPartition::new(t, p), o)).collect();
    run(py, move || {
        for (tp, offset) in &entries {
            validate_topic_name(&tp.topic)?;
            if tp.partition < 0 {
                let allowed = format!("must be a partition number in [0, {}]", i32::MAX);
                return Err(Error::invalid_argument(&format!("partition of {}", tp.topic), tp.partition, allowed));
            }
            check_offset(&format!("offset of {tp}"), *offset, "a checkpointed offset")?;
        }
        checkpoint_file::write_offset_checkpoint(&path, &entries)
    })
}

/// The entries of a `leader-epoch-checkpoint`.
#[pyfunction]
pub fn read_leader_epoch_checkpoint(py: Python<'_>, path: PathBuf) -> PyResult<Vec<super::records::EpochEntry>> {
    let entries = run(py, move || checkpoint_file::read_leader_epoch_checkpoint(&path))?;
    Ok(entries
        .into_iter()
        .map(|EpochEntry { epoch, start_offset }| super::records::EpochEntry { epoch, start_offset })
        .collect())
}

/// The broker epoch in a `.kafka_cleanshutdown` file.
#[pyfunction]
pub fn read_clean_shutdown(py: Python<'_>, path: PathBuf) -> PyResult<i64> {
    run(py, move || log_dir_files::read_clean_shutdown(&path))
}

/// The key/value pairs of a Java properties file such as `meta.properties`.
#[pyfunction]
pub fn read_properties(py: Python<'_>, path: PathBuf) -> PyResult<BTreeMap<String, String>> {
    run(py, move || log_dir_files::read_properties(&path))
}
