//! The `kafkalog._native` extension module (built with the `python` feature by maturin).
//! Glue only: the storage engine knows nothing of Python.

mod arrow;
mod arrow_append;
mod arrow_c;
mod batches;
mod buffer;
mod checkpoints;
mod cleaner;
mod cleaner_status;
mod decode;
mod discovery;
mod dump;
mod errors;
mod fault;
mod inspect;
mod log;
mod logging;
mod manager;
mod metrics;
mod progress;
mod records;
mod results;
mod verify;

use pyo3::prelude::*;

/// Decodes every batch in `data` (bytes holding one or more complete batches) and returns its
/// records, control records included; corrupt input raises `CorruptRecordError` naming the
/// position.
#[pyfunction]
fn decode_batches(py: Python<'_>, data: pyo3::pybacked::PyBackedBytes) -> PyResult<Vec<records::DecodedRecord>> {
    let decoded = errors::run(py, move || Ok(decode::decode(&data, true, i64::MIN, false, None)?.records))?;
    decoded.iter().map(|r| records::DecodedRecord::new(py, r)).collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    logging::install(m.py())?;
    m.add_class::<log::PyUnifiedLog>()?;
    m.add_class::<manager::PyLogManager>()?;
    m.add_class::<cleaner_status::CleanerStatus>()?;
    m.add_class::<cleaner_status::CleanOutcome>()?;
    m.add_class::<cleaner::CleanerStats>()?;
    m.add_class::<cleaner::CleanPass>()?;
    m.add_class::<cleaner::CompactResult>()?;
    m.add_class::<cleaner::DirtyCompactResult>()?;
    m.add_class::<records::AppendInfo>()?;
    m.add_class::<records::SegmentInfo>()?;
    m.add_class::<records::ConsumerRecord>()?;
    m.add_class::<records::ReadResult>()?;
    m.add_class::<records::TimestampAndOffset>()?;
    m.add_class::<records::OffsetAndEpoch>()?;
    m.add_class::<records::DeletedSegment>()?;
    m.add_class::<records::RetentionResult>()?;
    m.add_class::<records::DecodedRecord>()?;
    m.add_class::<records::EpochEntry>()?;
    m.add_class::<records::AbortedTransaction>()?;
    m.add_class::<records::ActiveProducer>()?;
    m.add_class::<records::OngoingTransaction>()?;
    m.add_class::<manager::DirRecoveryProgress>()?;
    m.add_class::<manager::DirLoadSummary>()?;
    m.add_class::<manager::LogDirInfo>()?;
    m.add_class::<metrics::Gauge>()?;
    m.add_class::<metrics::MetricsSnapshot>()?;
    m.add_class::<progress::Progress>()?;
    m.add_class::<arrow::ArrowColumns>()?;
    m.add_class::<arrow::BinaryBuffers>()?;
    m.add_class::<logging::LoggingState>()?;
    m.add_class::<buffer::OwnedBuffer>()?;
    m.add_function(wrap_pyfunction!(decode_batches, m)?)?;
    m.add_function(wrap_pyfunction!(dump::dump_crc32c, m)?)?;
    m.add_function(wrap_pyfunction!(dump::dump_batch_records, m)?)?;
    m.add_function(wrap_pyfunction!(arrow_append::partitions_for_keys, m)?)?;
    m.add_function(wrap_pyfunction!(batches::build_batch, m)?)?;
    m.add_function(wrap_pyfunction!(batches::end_txn_marker, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoints::read_offset_checkpoint, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoints::write_offset_checkpoint, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoints::read_leader_epoch_checkpoint, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoints::read_clean_shutdown, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoints::read_properties, m)?)?;
    m.add_function(wrap_pyfunction!(fault::inject_fault, m)?)?;
    m.add_function(wrap_pyfunction!(fault::crash_after, m)?)?;
    m.add_function(wrap_pyfunction!(fault::trace_file_ops, m)?)?;
    m.add_function(wrap_pyfunction!(fault::clear_faults, m)?)?;
    m.add_function(wrap_pyfunction!(logging::logging_state, m)?)?;
    m.add_class::<discovery::DiscoveredPartition>()?;
    m.add_class::<discovery::LogDirLockProbe>()?;
    m.add_class::<discovery::OnDemandCleanerConfig>()?;
    m.add_function(wrap_pyfunction!(discovery::discover, m)?)?;
    m.add_function(wrap_pyfunction!(discovery::log_dir_partitions, m)?)?;
    m.add_function(wrap_pyfunction!(discovery::probe_log_dir_lock, m)?)?;
    m.add_function(wrap_pyfunction!(discovery::on_demand_cleaner_config, m)?)?;
    m.add_function(wrap_pyfunction!(discovery::validate_topic_config, m)?)?;
    m.add_class::<inspect::CleanableSections>()?;
    m.add_class::<inspect::SegmentTombstones>()?;
    m.add_class::<inspect::RetentionPlan>()?;
    m.add_class::<inspect::LastClean>()?;
    m.add_function(wrap_pyfunction!(inspect::cleaner_sections, m)?)?;
    m.add_function(wrap_pyfunction!(inspect::tombstones, m)?)?;
    m.add_function(wrap_pyfunction!(inspect::retention_plan, m)?)?;
    m.add_function(wrap_pyfunction!(inspect::last_cleans, m)?)?;
    m.add_class::<verify::VerifyFinding>()?;
    m.add_class::<verify::PartitionCheck>()?;
    m.add_function(wrap_pyfunction!(verify::verify_partition, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
