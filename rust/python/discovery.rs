//! The engine's rules for tools (the Spark data source and maintenance jobs, the command line):
//! `discover` / `log_dir_partitions` (which directories hold partitions,
//! `manager/discovery.rs`), `probe_log_dir_lock` (whether a `LogManager` or a Kafka broker
//! holds a log dir's `.lock`), and `on_demand_cleaner_config` (the `log.cleaner.*` keys of an
//! on-demand clean, read through the broker key table). Glue only; results are frozen classes.

use std::ffi::OsString;
use std::path::PathBuf;

use pyo3::prelude::*;

use super::errors::{run, to_py_err};
use crate::error::Error;
use crate::manager::config::LogManagerConfig;
use crate::manager::discovery::{self, DiscoveredPartition, LockProbe};

/// One partition directory `discover` found: its topic, partition, directory and log dir. A
/// frozen value, ordered by (topic, partition, path); safe to share between threads.
#[pyclass(frozen, eq, ord, hash, name = "DiscoveredPartition", module = "kafkalog._native")]
#[derive(PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PyDiscoveredPartition {
    #[pyo3(get)]
    topic: String,
    #[pyo3(get)]
    partition: i32,
    #[pyo3(get)]
    path: OsString,
    #[pyo3(get)]
    log_dir: OsString,
}

impl From<DiscoveredPartition> for PyDiscoveredPartition {
    fn from(d: DiscoveredPartition) -> Self {
        PyDiscoveredPartition {
            topic: d.topic_partition.topic,
            partition: d.topic_partition.partition,
            path: d.dir.into_os_string(),
            log_dir: d.log_dir.into_os_string(),
        }
    }
}

#[pymethods]
impl PyDiscoveredPartition {
    #[new]
    fn new(topic: String, partition: i32, path: PathBuf, log_dir: PathBuf) -> Self {
        PyDiscoveredPartition { topic, partition, path: path.into_os_string(), log_dir: log_dir.into_os_string() }
    }

    fn __getnewargs__(&self) -> (String, i32, OsString, OsString) {
        (self.topic.clone(), self.partition, self.path.clone(), self.log_dir.clone())
    }

    fn __repr__(&self) -> String {
        format!(
            "DiscoveredPartition(topic={:?}, partition={}, path={:?}, log_dir={:?})",
            self.topic,
            self.partition,
            self.path.to_string_lossy(),
            self.log_dir.to_string_lossy()
        )
    }
}

/// The partition directories `path` names: `path` itself when it is one, else those directly
/// inside it (a log dir), sorted by topic and partition. `KafkaLogIOError` (ENOENT, ENOTDIR)
/// when `path` is not a directory.
#[pyfunction]
#[allow(clippy::needless_pass_by_value)]
pub fn discover(py: Python<'_>, path: PathBuf) -> PyResult<Vec<PyDiscoveredPartition>> {
    let found = run(py, || discovery::discover(&path))?;
    Ok(found.into_iter().map(Into::into).collect())
}

/// The partition directories directly inside `log_dir`, sorted by topic and partition (never
/// `log_dir` itself).
#[pyfunction]
#[allow(clippy::needless_pass_by_value)]
pub fn log_dir_partitions(py: Python<'_>, log_dir: PathBuf) -> PyResult<Vec<PyDiscoveredPartition>> {
    let found = run(py, || discovery::log_dir_partitions(&log_dir))?;
    Ok(found.into_iter().map(Into::into).collect())
}

/// What `probe_log_dir_lock` found: the lock file, whether it is held, and by which process
/// when that can be told. A frozen value.
#[pyclass(frozen, eq, name = "LogDirLockProbe", module = "kafkalog._native")]
#[derive(PartialEq, Eq)]
pub struct PyLogDirLockProbe {
    #[pyo3(get)]
    lock_file: OsString,
    #[pyo3(get)]
    held: bool,
    #[pyo3(get)]
    pid: Option<u32>,
    #[pyo3(get)]
    holder: Option<String>,
}

#[pymethods]
impl PyLogDirLockProbe {
    fn __repr__(&self) -> String {
        format!(
            "LogDirLockProbe(lock_file={:?}, held={}, pid={}, holder={:?})",
            self.lock_file.to_string_lossy(),
            if self.held { "True" } else { "False" },
            self.pid.map_or_else(|| "None".to_string(), |p| p.to_string()),
            self.holder
        )
    }
}

impl From<LockProbe> for PyLogDirLockProbe {
    fn from(p: LockProbe) -> Self {
        PyLogDirLockProbe { lock_file: p.lock_file.into_os_string(), held: p.held, pid: p.pid, holder: p.holder }
    }
}

/// Whether a `LogManager` or a Kafka broker holds `<log_dir>/.lock` (the lock `LogManager`
/// takes), tested without taking it or creating the file.
#[pyfunction]
#[allow(clippy::needless_pass_by_value)]
pub fn probe_log_dir_lock(py: Python<'_>, log_dir: PathBuf) -> PyResult<PyLogDirLockProbe> {
    Ok(run(py, || discovery::probe_log_dir_lock(&log_dir))?.into())
}

/// The broker keys an on-demand clean (`UnifiedLog.compact_now`) takes, in the order of its
/// arguments.
const ON_DEMAND_CLEANER_KEYS: [&str; 4] = [
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size",
    "log.cleaner.io.max.bytes.per.second",
];

/// The sizes of an on-demand clean, read from Kafka's broker keys: the arguments of
/// `UnifiedLog.compact_now`. A frozen value.
#[pyclass(frozen, name = "OnDemandCleanerConfig", module = "kafkalog._native")]
pub struct PyOnDemandCleanerConfig {
    #[pyo3(get)]
    dedupe_buffer_size: i64,
    #[pyo3(get)]
    load_factor: f64,
    #[pyo3(get)]
    io_buffer_size: i64,
    #[pyo3(get)]
    max_io_bytes_per_second: f64,
}

#[pymethods]
impl PyOnDemandCleanerConfig {
    /// The keys `on_demand_cleaner_config` takes.
    #[classattr]
    #[allow(non_snake_case)]
    fn KEYS() -> Vec<&'static str> {
        ON_DEMAND_CLEANER_KEYS.to_vec()
    }

    fn __repr__(&self) -> String {
        format!(
            "OnDemandCleanerConfig(dedupe_buffer_size={}, load_factor={}, io_buffer_size={}, max_io_bytes_per_second={})",
            self.dedupe_buffer_size, self.load_factor, self.io_buffer_size, self.max_io_bytes_per_second
        )
    }
}

/// The sizes of an on-demand clean from `config` (keys of `OnDemandCleanerConfig.KEYS` to
/// string values; Kafka's defaults for the keys left out): each value parsed and range-checked
/// by the broker key table, then held to the limits of an on-demand clean. `InvalidConfigError`
/// naming the key, the value and the rule; for any other key too.
#[pyfunction]
#[allow(clippy::needless_pass_by_value)]
pub fn on_demand_cleaner_config(py: Python<'_>, config: Vec<(String, String)>) -> PyResult<PyOnDemandCleanerConfig> {
    let parse = || -> crate::error::Result<PyOnDemandCleanerConfig> {
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
        let sizes = super::cleaner::OnDemandCleaner {
            dedupe_buffer_size: c.dedupe_buffer_size,
            load_factor: c.dedupe_buffer_load_factor,
            io_buffer_size: i64::from(c.io_buffer_size),
            max_io_bytes_per_second: Some(c.max_io_bytes_per_second),
        };
        sizes.check()?;
        Ok(PyOnDemandCleanerConfig {
            dedupe_buffer_size: sizes.dedupe_buffer_size,
            load_factor: sizes.load_factor,
            io_buffer_size: sizes.io_buffer_size,
            max_io_bytes_per_second: c.max_io_bytes_per_second,
        })
    };
    parse().map_err(|e| to_py_err(py, e))
}
