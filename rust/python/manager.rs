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

use pyo3::types::PyDict;

use super::cleaner::compact_result_to_py;
use super::cleaner_status::{metrics_to_py, outcome_to_py, PyCleanerStatus, PyOutcome};
use super::errors::{run, to_py_err};
use super::log::{parse_topic_id, retention_tuple, PyRetention, PyUnifiedLog};
use crate::cleaner::cleaner_status::StatusFilter;
use crate::config::LogManagerConfig;
use crate::error::Error;
use crate::file_names::TopicPartition;
use crate::log::unified_log::RetentionOptions;
use crate::manager::loading::{DirRecoveryProgress, ProgressCallback};
use crate::manager::log_manager::{LogManager, LogManagerOptions};
use crate::util::clock::{ManualClock, SharedClock};

/// (dir, logs_total, logs_remaining, segments_remaining) for each log dir.
type PyProgress = Vec<(PathBuf, usize, usize, usize, Vec<PathBuf>)>;
/// (path, online, cordoned, partitions, offline_reason, directory_id).
type PyLogDir = (PathBuf, bool, bool, usize, Option<String>, Option<String>);
/// (dir, had_clean_shutdown, logs, segments, segments_recovered, bytes_truncated, ms, error).
type PyLoadSummary = (PathBuf, bool, usize, usize, usize, u64, u64, Option<String>);

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
    progress: Option<PyProgress>,
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
            Arc::new(move |dirs: &[DirRecoveryProgress]| {
                let snapshot = dirs
                    .iter()
                    .map(|d| {
                        (
                            d.dir.clone(),
                            d.logs_total,
                            d.logs_remaining,
                            d.segments_remaining,
                            d.waiting_for_lock.clone(),
                        )
                    })
                    .collect();
                mailbox.0.lock().progress = Some(snapshot);
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
                cb.call1(py, (snapshot,))?;
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

    /// (topic, partition, retention) for each log retention ran on.
    fn run_retention(&self, py: Python<'_>, cap_future_timestamps: bool) -> PyResult<Vec<(String, i32, PyRetention)>> {
        let manager = self.inner.clone();
        let options = RetentionOptions { cap_future_timestamps };
        let results = run(py, move || manager.run_retention(options))?;
        Ok(results.into_iter().map(|(tp, r)| (tp.topic.clone(), tp.partition, retention_tuple(&r))).collect())
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

    fn log_dirs(&self) -> Vec<PyLogDir> {
        self.inner
            .log_dirs()
            .into_iter()
            .map(|d| (d.path, d.online, d.cordoned, d.partitions, d.offline_reason, d.directory_id))
            .collect()
    }

    #[allow(clippy::needless_pass_by_value)]
    fn cordon_log_dir(&self, py: Python<'_>, dir: PathBuf, cordoned: bool) -> PyResult<()> {
        self.inner.cordon_log_dir(&dir, cordoned).map_err(|e| to_py_err(py, e))
    }

    fn load_summary(&self) -> Vec<PyLoadSummary> {
        self.inner
            .load_summary()
            .iter()
            .map(|s| {
                (
                    s.dir.clone(),
                    s.had_clean_shutdown,
                    s.logs_loaded,
                    s.segments_loaded,
                    s.segments_recovered,
                    s.bytes_truncated,
                    s.duration_ms,
                    s.error.clone(),
                )
            })
            .collect()
    }

    fn stray_dirs(&self) -> Vec<PathBuf> {
        self.inner.stray_dirs()
    }

    fn dirs_pending_deletion(&self) -> Vec<PathBuf> {
        self.inner.dirs_pending_deletion()
    }

    fn config(&self) -> Vec<(String, String)> {
        self.inner.config().to_props().into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    /// Compacts `topic`-`partition` now through the cleaner's states (see
    /// `LogManager::compact_now`).
    fn compact_now<'py>(&self, py: Python<'py>, topic: String, partition: i32) -> PyResult<Bound<'py, PyAny>> {
        let manager = self.inner.clone();
        let tp = TopicPartition::new(topic, partition);
        let name = tp.to_string();
        let result = run(py, move || manager.compact_now(&tp))?;
        let thread_id = self.inner.log_cleaner().map_or(0, |c| c.thread_count());
        compact_result_to_py(py, &result, thread_id, &name)
    }

    #[pyo3(signature = (topic, partition))]
    fn cleaner_status(
        &self,
        py: Python<'_>,
        topic: Option<String>,
        partition: Option<i32>,
    ) -> PyResult<Vec<PyCleanerStatus>> {
        let manager = self.inner.clone();
        let filter = StatusFilter { topic, partition };
        let statuses = run(py, move || manager.cleaner_status(&filter))?;
        statuses.into_iter().map(|s| PyCleanerStatus::new(py, s)).collect()
    }

    fn cleaner_metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let manager = self.inner.clone();
        let metrics = run(py, move || manager.cleaner_metrics())?;
        metrics_to_py(py, &metrics)
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

    fn run_cleaner_once(&self, py: Python<'_>) -> PyResult<Option<PyOutcome>> {
        let manager = self.inner.clone();
        let outcome = run(py, move || manager.run_cleaner_once())?;
        outcome.map(|o| outcome_to_py(py, &o)).transpose()
    }

    /// Applies `log.cleaner.*` keys at run time; returns the cleaner's keys after the change.
    #[allow(clippy::needless_pass_by_value)]
    fn reconfigure_cleaner(&self, py: Python<'_>, config: Vec<(String, String)>) -> PyResult<Vec<(String, String)>> {
        let manager = self.inner.clone();
        run(py, move || {
            let pairs: Vec<(&str, &str)> = config.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            manager.reconfigure_cleaner_props(&pairs)?;
            Ok(manager.cleaner_props())
        })
    }

    fn close(&self, py: Python<'_>, broker_epoch: i64) -> PyResult<()> {
        let manager = self.inner.clone();
        run(py, move || manager.close(broker_epoch))
    }
}
