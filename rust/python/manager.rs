//! The `_native.LogManager` handle (`kafkalog.LogManager` wraps it). Start-up runs on a
//! helper thread while the calling thread, with the GIL released between updates, forwards
//! recovery progress to the Python callback; every other call that touches the disk releases
//! the GIL through `errors::run`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use super::cleaner::CompactResult;
use super::cleaner_status::{metrics_to_py, CleanOutcome, CleanerStatus};
use super::errors::{run, to_py_err};
use super::log::{parse_topic_id, props_dict, PyUnifiedLog};
use super::metrics::MetricsSnapshot;
use super::progress::run_with_progress;
use super::records::{path_str, RetentionResult};
use super::results::py_result;
use crate::cleaner::cleaner_status::StatusFilter;
use crate::config::LogManagerConfig;
use crate::error::Error;
use crate::file_names::TopicPartition;
use crate::log::unified_log::RetentionOptions;
use crate::manager::loading::{self, ProgressCallback};
use crate::manager::log_manager::{LogManager, LogManagerOptions};
use crate::util::clock::{ManualClock, SharedClock};

py_result! { sequence
    /// Recovery progress of one log dir (Kafka's remainingLogsToRecover and
    /// remainingSegmentsToRecover gauges).
    #[module = "kafkalog"]
    pub struct DirRecoveryProgress {
        dir: Py<PyString>,
        logs_total: usize,
        logs_remaining: usize,
        /// Segments still to recover in the logs being loaded right now.
        segments_remaining: usize,
        /// Partition directories another writer has locked, waited for now.
        waiting_for_lock: Py<PyTuple> = Python::attach(|py| PyTuple::empty(py).unbind()),
    }
}

impl DirRecoveryProgress {
    fn new(py: Python<'_>, d: &loading::DirRecoveryProgress) -> PyResult<Self> {
        let waiting = d.waiting_for_lock.iter().map(|w| path_str(py, w)).collect::<PyResult<Vec<_>>>()?;
        Ok(DirRecoveryProgress {
            dir: path_str(py, &d.dir)?,
            logs_total: d.logs_total,
            logs_remaining: d.logs_remaining,
            segments_remaining: d.segments_remaining,
            waiting_for_lock: PyTuple::new(py, waiting)?.unbind(),
        })
    }
}

py_result! { sequence
    /// What start-up found in one log dir.
    #[module = "kafkalog"]
    pub struct DirLoadSummary {
        dir: Py<PyString>,
        had_clean_shutdown: bool,
        logs_loaded: usize,
        segments_loaded: usize,
        segments_recovered: usize,
        bytes_truncated: u64,
        duration_ms: u64,
        /// Why the dir went offline while loading, if it did.
        error: Option<String>,
    }
}

py_result! { sequence
    /// One configured log dir.
    #[module = "kafkalog"]
    pub struct LogDirInfo {
        path: Py<PyString>,
        online: bool,
        cordoned: bool,
        partitions: usize,
        offline_reason: Option<String>,
        directory_id: Option<String>,
    }
}

/// Native handle of a log manager.
#[pyclass(frozen, name = "LogManager", module = "kafkalog._native")]
pub struct PyLogManager {
    inner: Arc<LogManager>,
    /// Set when the manager runs on a manual clock.
    manual_clock: Option<Arc<ManualClock>>,
}

/// Progress snapshots passed from the loader threads to the Python thread.
#[derive(Default)]
struct Mailbox {
    progress: Option<Vec<loading::DirRecoveryProgress>>,
    done: bool,
}

#[pymethods]
impl PyLogManager {
    /// Opens the log dirs named in `config` (broker keys) and loads every partition.
    #[staticmethod]
    #[pyo3(signature = (config, topic_configs, start_scheduler, mock_time_ms, progress, lock_timeout_ms))]
    #[allow(clippy::needless_pass_by_value)]
    fn open(
        py: Python<'_>,
        config: Vec<(String, String)>,
        topic_configs: HashMap<String, Vec<(String, String)>>,
        start_scheduler: bool,
        mock_time_ms: Option<i64>,
        progress: Option<Py<PyAny>>,
        lock_timeout_ms: u64,
    ) -> PyResult<Self> {
        let config = LogManagerConfig::from_props(config.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .map_err(|e| to_py_err(py, e))?;
        let mut topics = HashMap::new();
        for (topic, pairs) in &topic_configs {
            topics.insert(
                topic.clone(),
                config.log_config().with_overrides(pairs.iter().map(|(k, v)| (k, v))).map_err(|e| to_py_err(py, e))?,
            );
        }
        let manual_clock = mock_time_ms.map(ManualClock::new);
        let clock: SharedClock = match &manual_clock {
            Some(c) => c.clone(),
            None => crate::util::clock::system_clock(),
        };
        let mailbox = Arc::new((Mutex::new(Mailbox::default()), Condvar::new()));
        let callback: Option<ProgressCallback> = progress.is_some().then(|| {
            let mailbox = mailbox.clone();
            Arc::new(move |dirs: &[loading::DirRecoveryProgress]| {
                mailbox.0.lock().progress = Some(dirs.to_vec());
                mailbox.1.notify_all();
            }) as ProgressCallback
        });
        let options = LogManagerOptions {
            clock,
            start_scheduler: start_scheduler && manual_clock.is_none(),
            progress: callback,
            topic_configs: topics,
            partition_lock_timeout: Duration::from_millis(lock_timeout_ms),
        };
        let done = mailbox.clone();
        let loader = std::thread::Builder::new()
            .name("kafkalog-log-manager-open".into())
            .spawn(move || {
                let result = LogManager::open(config, options);
                done.0.lock().done = true;
                done.1.notify_all();
                result
            })
            .map_err(|e| to_py_err(py, Error::io(std::path::Path::new("log manager"), "start thread", e)))?;
        loop {
            let (snapshot, finished) = py.detach(|| {
                let mut m = mailbox.0.lock();
                if m.progress.is_none() && !m.done {
                    mailbox.1.wait_for(&mut m, Duration::from_millis(200));
                }
                (m.progress.take(), m.done)
            });
            if let (Some(snapshot), Some(cb)) = (snapshot, &progress) {
                let dirs = snapshot.iter().map(|d| DirRecoveryProgress::new(py, d)).collect::<PyResult<Vec<_>>>()?;
                cb.call1(py, (dirs,))?;
            }
            if finished {
                break;
            }
        }
        let result = py.detach(|| loader.join());
        super::logging::flush(py)?; // the recovery warnings reach Python's handlers before open returns
        let manager = match result {
            Ok(r) => r.map_err(|e| to_py_err(py, e))?,
            Err(_) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err("the log manager start-up thread panicked"))
            }
        };
        Ok(PyLogManager { inner: Arc::new(manager), manual_clock })
    }

    /// Gets or creates the log of `topic`-`partition`.
    #[pyo3(signature = (topic, partition, config, topic_id))]
    #[allow(clippy::needless_pass_by_value)]
    fn get_or_create_log(
        &self,
        py: Python<'_>,
        topic: String,
        partition: i32,
        config: Option<Vec<(String, String)>>,
        topic_id: Option<String>,
    ) -> PyResult<PyUnifiedLog> {
        let defaults = self.inner.config().log_config();
        let config = config.map(|pairs| defaults.with_overrides(pairs)).transpose().map_err(|e| to_py_err(py, e))?;
        let topic_id = topic_id.map(|id| parse_topic_id(&id)).transpose().map_err(|e| to_py_err(py, e))?;
        let manager = self.inner.clone();
        let tp = TopicPartition::new(topic, partition);
        let log = run(py, move || manager.get_or_create_log(&tp, config, topic_id))?;
        Ok(PyUnifiedLog::new_managed(log))
    }

    fn get_log(&self, py: Python<'_>, topic: String, partition: i32) -> PyResult<Option<PyUnifiedLog>> {
        let log = self.inner.get_log(&TopicPartition::new(topic, partition)).map_err(|e| to_py_err(py, e))?;
        Ok(log.map(PyUnifiedLog::new_managed))
    }

    fn logs(&self, py: Python<'_>) -> PyResult<Vec<PyUnifiedLog>> {
        let logs = self.inner.logs().map_err(|e| to_py_err(py, e))?;
        Ok(logs.into_iter().map(PyUnifiedLog::new_managed).collect())
    }

    fn future_logs(&self) -> Vec<PyUnifiedLog> {
        self.inner.future_logs().into_iter().map(PyUnifiedLog::new_managed).collect()
    }

    fn delete_log(&self, py: Python<'_>, topic: String, partition: i32) -> PyResult<PathBuf> {
        let manager = self.inner.clone();
        run(py, move || manager.delete_log(&TopicPartition::new(topic, partition)))
    }

    #[allow(clippy::needless_pass_by_value)]
    fn update_topic_config(&self, py: Python<'_>, topic: String, config: Vec<(String, String)>) -> PyResult<()> {
        let config = self.inner.config().log_config().with_overrides(config).map_err(|e| to_py_err(py, e))?;
        let manager = self.inner.clone();
        run(py, move || manager.update_topic_config(&topic, config))
    }

    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let manager = self.inner.clone();
        run(py, move || manager.flush())
    }

    fn checkpoint(&self, py: Python<'_>) -> PyResult<()> {
        let manager = self.inner.clone();
        run(py, move || manager.checkpoint())
    }

    /// What retention did on each log it ran on, by (topic, partition).
    #[pyo3(signature = (cap_future_timestamps, progress=None))]
    fn run_retention<'py>(
        &self,
        py: Python<'py>,
        cap_future_timestamps: bool,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let manager = self.inner.clone();
        let options = RetentionOptions { cap_future_timestamps };
        let results =
            run_with_progress(py, progress, move |sink| manager.run_retention_with_progress(options, sink.as_ref()))?;
        let d = PyDict::new(py);
        for (tp, r) in &results {
            d.set_item((tp.topic.as_str(), tp.partition), RetentionResult::new(py, r)?)?;
        }
        Ok(d)
    }

    /// Runs the scheduled tasks that are due; returns the ms until the next one.
    fn tick(&self, py: Python<'_>) -> i64 {
        let manager = self.inner.clone();
        let next = py.detach(move || super::logging::in_call(|| manager.tick()));
        super::logging::flush_in_infallible_call(py);
        next
    }

    /// Moves a manual clock forward and runs what became due.
    fn advance_time(&self, py: Python<'_>, ms: i64) -> PyResult<i64> {
        let Some(clock) = &self.manual_clock else {
            return Err(to_py_err(
                py,
                Error::illegal_state("advance_time needs a LogManager opened with time_ms= (a manual clock)"),
            ));
        };
        clock.advance(ms);
        Ok(self.tick(py))
    }

    #[getter]
    fn time_ms(&self) -> Option<i64> {
        use crate::util::clock::Clock;
        self.manual_clock.as_ref().map(|c| c.milliseconds())
    }

    fn log_dirs(&self, py: Python<'_>) -> PyResult<Vec<LogDirInfo>> {
        let info = |d: crate::manager::log_manager::LogDirInfo| {
            Ok(LogDirInfo {
                path: path_str(py, &d.path)?,
                online: d.online,
                cordoned: d.cordoned,
                partitions: d.partitions,
                offline_reason: d.offline_reason,
                directory_id: d.directory_id,
            })
        };
        self.inner.log_dirs().into_iter().map(info).collect()
    }

    #[allow(clippy::needless_pass_by_value)]
    fn cordon_log_dir(&self, py: Python<'_>, dir: PathBuf, cordoned: bool) -> PyResult<()> {
        self.inner.cordon_log_dir(&dir, cordoned).map_err(|e| to_py_err(py, e))
    }

    fn load_summary(&self, py: Python<'_>) -> PyResult<Vec<DirLoadSummary>> {
        let summary = |s: &loading::DirLoadSummary| {
            Ok(DirLoadSummary {
                dir: path_str(py, &s.dir)?,
                had_clean_shutdown: s.had_clean_shutdown,
                logs_loaded: s.logs_loaded,
                segments_loaded: s.segments_loaded,
                segments_recovered: s.segments_recovered,
                bytes_truncated: s.bytes_truncated,
                duration_ms: s.duration_ms,
                error: s.error.clone(),
            })
        };
        self.inner.load_summary().iter().map(summary).collect()
    }

    fn stray_dirs(&self) -> Vec<PathBuf> {
        self.inner.stray_dirs()
    }

    fn dirs_pending_deletion(&self) -> Vec<PathBuf> {
        self.inner.dirs_pending_deletion()
    }

    /// The broker-level configuration: every key with its value.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        props_dict(py, self.inner.config().to_props())
    }

    /// Compacts `topic`-`partition` now through the cleaner's states (see
    /// `LogManager::compact_now`).
    #[pyo3(signature = (topic, partition, progress=None))]
    fn compact_now(
        &self,
        py: Python<'_>,
        topic: String,
        partition: i32,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<CompactResult> {
        let manager = self.inner.clone();
        let tp = TopicPartition::new(topic, partition);
        let name = tp.to_string();
        let result = run_with_progress(py, progress, move |sink| manager.compact_now_with_progress(&tp, sink))?;
        let thread_id = self.inner.log_cleaner().map_or(0, |c| c.thread_count());
        CompactResult::new(py, &result, thread_id, &name)
    }

    #[pyo3(signature = (topic, partition))]
    fn cleaner_status(
        &self,
        py: Python<'_>,
        topic: Option<String>,
        partition: Option<i32>,
    ) -> PyResult<Vec<CleanerStatus>> {
        let manager = self.inner.clone();
        let filter = StatusFilter { topic, partition };
        let statuses = run(py, move || manager.cleaner_status(&filter))?;
        statuses.into_iter().map(|s| CleanerStatus::new(py, s)).collect()
    }

    fn cleaner_metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let manager = self.inner.clone();
        let metrics = run(py, move || manager.cleaner_metrics())?;
        metrics_to_py(py, &metrics)
    }

    fn metrics(&self, py: Python<'_>) -> PyResult<MetricsSnapshot> {
        let manager = self.inner.clone();
        let snapshot = run(py, move || manager.metrics())?;
        MetricsSnapshot::new(py, &snapshot)
    }

    #[pyo3(signature = (topic, partition))]
    fn retry_uncleanable(
        &self,
        py: Python<'_>,
        topic: Option<String>,
        partition: Option<i32>,
    ) -> PyResult<Vec<(String, i32)>> {
        let manager = self.inner.clone();
        let filter = StatusFilter { topic, partition };
        let retried = run(py, move || manager.retry_uncleanable_matching(&filter))?;
        Ok(retried.into_iter().map(|tp| (tp.topic, tp.partition)).collect())
    }

    fn run_cleaner_once(&self, py: Python<'_>) -> PyResult<Option<CleanOutcome>> {
        let manager = self.inner.clone();
        let outcome = run(py, move || manager.run_cleaner_once())?;
        outcome.map(|o| CleanOutcome::new(py, &o)).transpose()
    }

    /// Applies `log.cleaner.*` keys at run time; returns the cleaner's keys after the change.
    #[allow(clippy::needless_pass_by_value)]
    fn reconfigure_cleaner<'py>(&self, py: Python<'py>, config: Vec<(String, String)>) -> PyResult<Bound<'py, PyDict>> {
        let manager = self.inner.clone();
        let props = run(py, move || {
            let pairs: Vec<(&str, &str)> = config.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            manager.reconfigure_cleaner_props(&pairs)?;
            Ok(manager.cleaner_props())
        })?;
        props_dict(py, props)
    }

    fn close(&self, py: Python<'_>, broker_epoch: i64) -> PyResult<()> {
        let manager = self.inner.clone();
        run(py, move || manager.close(broker_epoch))
    }
}
