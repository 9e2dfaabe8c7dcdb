//! The engine's rules for tools (the Spark data source and maintenance jobs, the command line):
//! `discover` / `log_dir_partitions` (which directories hold partitions,
//! `manager/discovery.rs`), `probe_log_dir_lock` (whether a `LogManager` or a Kafka broker
//! holds a log dir's `.lock`), and `on_demand_cleaner_config` (the `log.cleaner.*` keys of an
//! on-demand clean, read through the broker key table and checked by the compactor). Glue
//! only; results are frozen classes (`py_result!`).

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use super::errors::{run, to_py_err};
use super::log::props_dict;
use super::records::path_str;
use super::results::py_result;
use crate::cleaner::compactor::check_sizes;
use crate::config::{LogConfig, LogManagerConfig};
use crate::error::Error;
use crate::manager::discovery::{self, DiscoveredPartition as Found};

py_result! { sequence
    /// One partition directory `discover` found (Kafka's TopicPartition and where it lives);
    /// ordered and unpacked as (topic, partition, path, log_dir).
    #[module = "kafkalog"]
    pub struct DiscoveredPartition {
        topic: String,
        partition: i32,
        /// The partition directory, as found (the path given, or `<log dir>/<name>`).
        path: Py<PyString>,
        /// The directory holding it, whose `.lock` a LogManager takes.
        log_dir: Py<PyString>,
    }
}

impl DiscoveredPartition {
    fn new(py: Python<'_>, d: &Found) -> PyResult<Self> {
        Ok(DiscoveredPartition {
            topic: d.topic_partition.topic.clone(),
            partition: d.topic_partition.partition,
            path: path_str(py, &d.dir)?,
            log_dir: path_str(py, &d.log_dir)?,
        })
    }

    fn all(py: Python<'_>, found: &[Found]) -> PyResult<Vec<Self>> {
        found.iter().map(|d| Self::new(py, d)).collect()
    }
}

/// The partition directories `path` names: `path` itself when it is one, else those directly
/// inside it (a log dir), sorted by topic and partition. `KafkaLogIOError` (ENOENT, ENOTDIR)
/// when `path` is not a directory.
#[pyfunction]
#[allow(clippy::needless_pass_by_value)]
pub fn discover(py: Python<'_>, path: PathBuf) -> PyResult<Vec<DiscoveredPartition>> {
    let found = run(py, || discovery::discover(&path))?;
    DiscoveredPartition::all(py, &found)
}

/// The partition directories directly inside `log_dir`, sorted by topic and partition (never
/// `log_dir` itself).
#[pyfunction]
#[allow(clippy::needless_pass_by_value)]
pub fn log_dir_partitions(py: Python<'_>, log_dir: PathBuf) -> PyResult<Vec<DiscoveredPartition>> {
    let found = run(py, || discovery::log_dir_partitions(&log_dir))?;
    DiscoveredPartition::all(py, &found)
}

py_result! { record
    /// What `probe_log_dir_lock` found: the lock file, whether it is held, and by which process
    /// when that can be told.
    #[module = "kafkalog"]
    pub struct LogDirLockProbe {
        /// `<log dir>/.lock`.
        lock_file: Py<PyString>,
        held: bool,
        /// The holder's process id, when known.
        pid: Option<u32>,
        /// The holder as error messages name it ("process 1234 (java ...)"), when known.
        holder: Option<String>,
    }
}

/// Whether a `LogManager` or a Kafka broker holds `<log_dir>/.lock` (the lock `LogManager`
/// takes), tested without taking it or creating the file.
#[pyfunction]
#[allow(clippy::needless_pass_by_value)]
pub fn probe_log_dir_lock(py: Python<'_>, log_dir: PathBuf) -> PyResult<LogDirLockProbe> {
    let p = run(py, || discovery::probe_log_dir_lock(&log_dir))?;
    Ok(LogDirLockProbe { lock_file: path_str(py, &p.lock_file)?, held: p.held, pid: p.pid, holder: p.holder })
}

/// The broker keys an on-demand clean (`UnifiedLog.compact_now`) takes, in the order of its
/// arguments.
const ON_DEMAND_CLEANER_KEYS: [&str; 4] = [
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size",
    "log.cleaner.io.max.bytes.per.second",
];

py_result! { record
    /// The sizes of an on-demand clean read from Kafka's broker keys: the arguments of
    /// `UnifiedLog.compact_now`.
    #[module = "kafkalog"]
    pub struct OnDemandCleanerConfig {
        dedupe_buffer_size: i64,
        load_factor: f64,
        io_buffer_size: i32,
        max_io_bytes_per_second: f64,
    }
    impl {
        /// The keys `on_demand_cleaner_config` takes.
        #[classattr]
        #[allow(non_snake_case)]
        fn KEYS() -> Vec<&'static str> {
            ON_DEMAND_CLEANER_KEYS.to_vec()
        }
    }
}

/// The sizes of an on-demand clean from `config` (keys of `OnDemandCleanerConfig.KEYS` to
/// string values; Kafka's defaults for the keys left out): each value parsed and range-checked
/// by the broker key table, then by the compactor's size checks. `InvalidConfigError` naming
/// the key, the value and the rule; for any other key too.
#[pyfunction]
#[allow(clippy::needless_pass_by_value)]
pub fn on_demand_cleaner_config(py: Python<'_>, config: Vec<(String, String)>) -> PyResult<OnDemandCleanerConfig> {
    let parse = || -> crate::error::Result<OnDemandCleanerConfig> {
        let mut broker = LogManagerConfig::default();
        for (key, value) in &config {
            if !ON_DEMAND_CLEANER_KEYS.contains(&key.as_str()) {
                let rule =
                    format!("not a setting of an on-demand clean (those are {})", ON_DEMAND_CLEANER_KEYS.join(", "));
                return Err(Error::invalid_config(key, value, rule));
            }
            broker.set(key, value)?;
        }
        let c = &broker.cleaner;
        check_sizes(c)?;
        Ok(OnDemandCleanerConfig {
            dedupe_buffer_size: c.dedupe_buffer_size,
            load_factor: c.dedupe_buffer_load_factor,
            io_buffer_size: c.io_buffer_size,
            max_io_bytes_per_second: c.max_io_bytes_per_second,
        })
    };
    parse().map_err(|e| to_py_err(py, e))
}

/// Checks topic configs (Kafka's `LogConfig.validate`) without opening a log, and returns the
/// config a log opened with them would have (every key, as `UnifiedLog.config` shows it). Each
/// key must be a topic config and each value in its range: `InvalidConfigError` naming the key,
/// the value and the rule, exactly as `UnifiedLog.open` would raise it.
#[pyfunction]
#[allow(clippy::needless_pass_by_value)]
pub fn validate_topic_config(py: Python<'_>, config: Vec<(String, String)>) -> PyResult<Bound<'_, PyDict>> {
    let resolved =
        LogConfig::from_props(config.iter().map(|(k, v)| (k.as_str(), v.as_str()))).map_err(|e| to_py_err(py, e))?;
    props_dict(py, resolved.to_props())
}
