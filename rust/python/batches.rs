//! Building raw v2 batches from Python: producer-style data batches with any header fields
//! (transactional, idempotent, a KIP-534 delete horizon) and COMMIT / ABORT markers, for
//! follower appends, tools and tests. `kafkalog.batches` wraps these.

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::PyBytes;

use super::errors::{run, to_py_err};
use crate::error::Error;
use crate::record::builder::{write_end_txn_marker, BatchBuilder, BatchHeader};
use crate::record::control::ControlRecordType;

/// (offset, timestamp, key, value, headers) of one record to encode.
type PyBatchRecord =
    (i64, i64, Option<PyBackedBytes>, Option<PyBackedBytes>, Vec<(PyBackedBytes, Option<PyBackedBytes>)>);

/// Encodes one v2 batch whose first offset is `base_offset`; records carry absolute offsets.
#[pyfunction]
#[pyo3(signature = (base_offset, records, compression, producer_id, producer_epoch, base_sequence,
                    transactional, partition_leader_epoch, delete_horizon_ms))]
#[allow(clippy::too_many_arguments, clippy::needless_pass_by_value)]
pub fn build_batch<'py>(
    py: Python<'py>,
    base_offset: i64,
    records: Vec<PyBatchRecord>,
    compression: &str,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    transactional: bool,
    partition_leader_epoch: i32,
    delete_horizon_ms: Option<i64>,
) -> PyResult<Bound<'py, PyBytes>> {
    let codec = super::log::parse_compression(compression).map_err(|e| to_py_err(py, e))?;
    let out = run(py, move || {
        let mut b = BatchBuilder::new(BatchHeader {
            base_offset,
            partition_leader_epoch,
            compression: codec,
            producer_id,
            producer_epoch,
            base_sequence,
            is_transactional: transactional,
            delete_horizon_ms,
            ..BatchHeader::default()
        });
        for (offset, ts, key, value, headers) in &records {
            let headers: Vec<_> = headers.iter().map(|(k, v)| (&k[..], v.as_deref())).collect();
            b.append(*offset, *ts, key.as_deref(), value.as_deref(), &headers)?;
        }
        if records.is_empty() {
            return Err(Error::invalid_record("a batch needs at least one record"));
        }
        b.build()
    })?;
    Ok(PyBytes::new(py, &out))
}

/// Encodes a COMMIT (`commit=True`) or ABORT end-transaction marker batch at `offset`.
#[pyfunction]
#[pyo3(signature = (offset, timestamp, producer_id, producer_epoch, commit, coordinator_epoch, partition_leader_epoch))]
#[allow(clippy::too_many_arguments)]
pub fn end_txn_marker(
    py: Python<'_>,
    offset: i64,
    timestamp: i64,
    producer_id: i64,
    producer_epoch: i16,
    commit: bool,
    coordinator_epoch: i32,
    partition_leader_epoch: i32,
) -> PyResult<Bound<'_, PyBytes>> {
    let marker = if commit { ControlRecordType::Commit } else { ControlRecordType::Abort };
    let mut out = Vec::new();
    write_end_txn_marker(
        &mut out,
        offset,
        timestamp,
        partition_leader_epoch,
        producer_id,
        producer_epoch,
        marker,
        coordinator_epoch,
    )
    .map_err(|e| to_py_err(py, e))?;
    Ok(PyBytes::new(py, &out))
}
