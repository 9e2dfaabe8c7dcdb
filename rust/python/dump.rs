//! Native support for `kafkalog dump` (Kafka's `DumpLogSegments`): the two things the Python
//! side cannot do quickly itself, a batch's CRC-32C over a range of a buffer (its `isvalid`)
//! and the records of one batch decoded *without* a CRC check (Kafka's deep iteration prints
//! the records of a batch whose CRC fails, when they decode). The framing, header fields and
//! output formats are Python's (`kafkalog.cli.dump_log`). Stateless; the GIL is released
//! around the work.

use std::path::Path;

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;

use super::arrow::timestamp_type_id;
use super::decode::{owned_record, OwnedRecord};
use super::errors::run;
use super::records::DecodedRecord;
use crate::error::{Error, Result};
use crate::record::batch::crc32c;
use crate::record::records::AnyBatch;

/// `data[start..end]`, or an error naming the range (a caller's mistake, never a panic).
fn range(data: &[u8], start: usize, end: usize) -> Result<&[u8]> {
    data.get(start..end).ok_or_else(|| {
        Error::corrupt(start as u64, format!("range [{start}, {end}) is outside the {} bytes given", data.len()))
    })
}

/// The CRC-32C (Castagnoli) of `data[start:end]`, as Kafka's `Crc32C.compute`.
#[pyfunction]
pub fn dump_crc32c(py: Python<'_>, data: PyBackedBytes, start: usize, end: usize) -> PyResult<u32> {
    run(py, move || Ok(crc32c(range(&data, start, end)?)))
}

/// The records of the one batch in `data[start:end]` (v2 or legacy), control records included,
/// decoded as Kafka's batch iterator decodes them: the CRC is not checked. A record that does
/// not decode raises `CorruptRecordError` naming `path` and the file position (the batch is at
/// `position` in the file).
#[pyfunction]
pub fn dump_batch_records(
    py: Python<'_>,
    data: PyBackedBytes,
    start: usize,
    end: usize,
    path: String,
    position: u64,
) -> PyResult<Vec<DecodedRecord>> {
    let owned =
        run(py, move || decode_unchecked(&data, start, end).map_err(|e| e.in_file(Path::new(&path), position)))?;
    owned.iter().map(|r| DecodedRecord::new(py, r)).collect()
}

fn decode_unchecked(data: &[u8], start: usize, end: usize) -> Result<Vec<OwnedRecord>> {
    let batch = AnyBatch::new(range(data, start, end)?)?;
    let ts_type = timestamp_type_id(&batch);
    let control = batch.is_control();
    let mut records = Vec::new();
    let mut scratch = Vec::new();
    batch.for_each_record(&mut scratch, |r| {
        records.push(owned_record(&r, ts_type, control));
        Ok(())
    })?;
    Ok(records)
}
