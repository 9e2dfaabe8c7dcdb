//! The `kafkalog._native` extension module (built with the `python` feature by maturin).
//! Glue only: the storage engine knows nothing of Python.

mod arrow;
mod buffer;
mod errors;
mod log;

use pyo3::prelude::*;

/// Decodes every batch in `data` (bytes holding one or more complete batches) and returns the
/// records as (offset, timestamp, timestamp_type, key, value, headers) tuples; corrupt input
/// raises `CorruptRecordError` naming the position.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn decode_batches(
    py: Python<'_>,
    data: pyo3::pybacked::PyBackedBytes,
) -> PyResult<Vec<(i64, i64, i32, Option<Vec<u8>>, Option<Vec<u8>>, Vec<(String, Option<Vec<u8>>)>, bool)>> {
    errors::run(py, move || {
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        let mut iter = crate::record::records::BatchIter::new(&data);
        for item in iter.by_ref() {
            let (pos, batch) = item?;
            batch.ensure_valid().map_err(|e| e.with_position_offset(pos as u64))?;
            let ts_type = arrow::timestamp_type_id(&batch);
            let control = batch.is_control();
            batch
                .for_each_record(&mut scratch, |r| {
                    let headers = r
                        .headers()
                        .map(|(k, v)| (String::from_utf8_lossy(k).into_owned(), v.map(<[u8]>::to_vec)))
                        .collect();
                    out.push((
                        r.offset,
                        r.timestamp,
                        ts_type,
                        r.key.map(<[u8]>::to_vec),
                        r.value.map(<[u8]>::to_vec),
                        headers,
                        control,
                    ));
                    Ok(())
                })
                .map_err(|e| e.with_position_offset(pos as u64))?;
        }
        if iter.position() != data.len() {
            return Err(crate::error::Error::corrupt(
                iter.position() as u64,
                format!(
                    "{} bytes after the last complete batch do not form a record batch",
                    data.len() - iter.position()
                ),
            ));
        }
        Ok(out)
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<log::PyUnifiedLog>()?;
    m.add_class::<buffer::OwnedBuffer>()?;
    m.add_function(wrap_pyfunction!(decode_batches, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
