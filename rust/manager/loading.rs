//! Loading every partition of the log dirs at start-up (Kafka's `LogManager.loadLogs`): per
//! log dir, the clean-shutdown marker is taken, the recovery-point and log-start checkpoints are
//! read, and the partition directories are loaded by `num.recovery.threads.per.data.dir`
//! threads (`log-recovery-<dir>-<n>`), all dirs at once. Progress (logs and segments left per
//! dir) is published as it changes.
//!
//! Errors: an I/O error takes its log dir offline and loading goes on; anything else (a
//! directory whose name is not `<topic>-<partition>`, the same partition in two dirs) fails the
//! start-up, as in Kafka.
//!
//! A partition directory another writer holds (a distributed clean, a standalone open) is
//! waited for, up to `LoadContext::partition_lock_timeout`, as a broker at start-up waits for
//! nothing but would otherwise fail: then the start-up fails naming the partition and the
//! holder. The wait is on the wall clock (the holder is another process), polling the lock.
//!
//! Thread-safety: `load_log_dirs` blocks its caller until every loader thread has finished.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::discovery::{log_dir_children, PartitionDirKind};
use crate::checkpoint::checkpoint_file::read_checkpoint_or_empty;
use crate::checkpoint::log_dir_files::take_clean_shutdown_marker;
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::file_names::{
    with_suffix, TopicPartition, LOG_DIR_ATOMIC_FILES, LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE, TMP_FILE_SUFFIX,
};
use crate::log::log_dir_failure_channel::LogDirFailureChannel;
use crate::log::unified_log::{LogOpenOptions, RecoveryProgressFn, UnifiedLog};
use crate::util::clock::SharedClock;

/// Directory names the log loading skips (Kafka's metadata log and the remote index cache).
const SKIPPED_TOPIC: &str = "__cluster_metadata";
const REMOTE_INDEX_CACHE_DIR: &str = "remote-log-index-cache";

/// Recovery progress of one log dir (Kafka's `remainingLogsToRecover` and
/// `remainingSegmentsToRecover` gauges).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirRecoveryProgress {
    /// The log dir.
    pub dir: PathBuf,
    /// Partition directories found.
    pub logs_total: usize,
    /// Partition directories not yet loaded.
    pub logs_remaining: usize,
    /// Segments still to recover in the logs being loaded right now.
    pub segments_remaining: usize,
    /// Partition directories whose lock another writer holds, waited for now.
    pub waiting_for_lock: Vec<PathBuf>,
}

/// Called with the progress of every dir each time it changes.
pub type ProgressCallback = Arc<dyn Fn(&[DirRecoveryProgress]) + Send + Sync>;

/// What loading one log dir found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirLoadSummary {
    /// The log dir.
    pub dir: PathBuf,
    /// It held `.kafka_cleanshutdown`, so nothing was recovered past the checkpoints.
    pub had_clean_shutdown: bool,
    /// Logs loaded (not counting `-delete` dirs).
    pub logs_loaded: usize,
    /// Segments loaded.
    pub segments_loaded: usize,
    /// Segments recovered (batches re-validated, indexes rebuilt).
    pub segments_recovered: usize,
    /// Bytes cut from torn or corrupt tails.
    pub bytes_truncated: u64,
    /// Time spent, in milliseconds.
    pub duration_ms: u64,
    /// Why the dir went offline while loading, if it did.
    pub error: Option<String>,
}

/// One loaded partition directory.
#[derive(Debug)]
pub enum LoadedDir {
    /// A live partition.
    Current(Arc<UnifiedLog>),
    /// A `-future` partition (being moved here from another log dir).
    Future(Arc<UnifiedLog>),
    /// A `-delete` directory, queued for deletion.
    Delete(PathBuf),
    /// A `-stray` directory, kept but not served.
    Stray(PathBuf),
}

/// What the manager passes in.
pub struct LoadContext<'a> {
    /// Topic configs by topic; others get `default_config`.
    pub topic_configs: &'a HashMap<String, LogConfig>,
    /// Config of topics without an override.
    pub default_config: &'a LogConfig,
    /// Loader threads per log dir.
    pub threads_per_dir: usize,
    /// The clock.
    pub clock: SharedClock,
    /// Where I/O errors are reported.
    pub failure_channel: Arc<LogDirFailureChannel>,
    /// Progress listener.
    pub progress: Option<ProgressCallback>,
    /// How long to wait for a partition directory locked by another writer.
    pub partition_lock_timeout: Duration,
    /// The producer-state settings every log opens with (`producer.id.expiration.ms`).
    pub producer_state: crate::log::producer_state::ProducerStateManagerConfig,
    /// `transaction.max.timeout.ms`.
    pub max_transaction_timeout_ms: i32,
}

/// The first pause between two attempts to take a partition's lock; it doubles up to
/// [`LOCK_POLL_MAX`].
const LOCK_POLL_START: Duration = Duration::from_millis(10);
const LOCK_POLL_MAX: Duration = Duration::from_millis(200);

struct Tracker {
    dirs: Vec<DirRecoveryProgress>,
    /// Segments left per loader thread (keyed by dir index and thread number).
    per_thread: HashMap<(usize, usize), usize>,
}

/// The shared progress state and its listener.
struct Progress {
    tracker: Mutex<Tracker>,
    callback: Option<ProgressCallback>,
}

impl Progress {
    /// Applies `f` and hands the result to the listener. Without a listener nothing reads the
    /// tracker: nothing is done (the loader threads update it per segment, and would contend
    /// for its lock).
    fn update(&self, f: impl FnOnce(&mut Tracker)) {
        if self.callback.is_none() {
            return;
        }
        let mut t = self.tracker.lock();
        f(&mut t);
        if let Some(cb) = &self.callback {
            cb(&t.dirs);
        }
    }
}

/// Loads every dir in `dirs` (all online); returns the partitions found per dir and a summary.
pub fn load_log_dirs(dirs: &[PathBuf], ctx: &LoadContext<'_>) -> Result<Vec<(Vec<LoadedDir>, DirLoadSummary)>> {
    let started = Instant::now();
    let mut plans = Vec::with_capacity(dirs.len());
    for dir in dirs {
        plans.push(plan_dir(dir));
    }
    let tracker = Mutex::new(Tracker {
        dirs: dirs
            .iter()
            .zip(&plans)
            .map(|(dir, plan)| DirRecoveryProgress {
                dir: dir.clone(),
                logs_total: plan.as_ref().map_or(0, |p| p.children.len()),
                logs_remaining: plan.as_ref().map_or(0, |p| p.children.len()),
                segments_remaining: 0,
                waiting_for_lock: Vec::new(),
            })
            .collect(),
        per_thread: HashMap::new(),
    });
    let progress = Arc::new(Progress { tracker, callback: ctx.progress.clone() });
    progress.update(|_| {});
    let results: Vec<Result<(Vec<LoadedDir>, DirLoadSummary)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = plans
            .into_iter()
            .enumerate()
            .map(|(i, plan)| {
                let dir = &dirs[i];
                let progress = progress.clone();
                scope.spawn(move || load_dir(i, dir, plan, ctx, &progress))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Error::illegal_state("a log loading thread panicked"))))
            .collect()
    });
    let results: Vec<(Vec<LoadedDir>, DirLoadSummary)> = results.into_iter().collect::<Result<_>>()?;
    let unclean: Vec<String> = results
        .iter()
        .filter(|(items, s)| !items.is_empty() && !s.had_clean_shutdown)
        .map(|(_, s)| s.dir.display().to_string())
        .collect();
    log::info!(
        "Loaded {} logs in {}ms{}",
        results.iter().map(|(_, s)| s.logs_loaded).sum::<usize>(),
        started.elapsed().as_millis(),
        if unclean.is_empty() { String::new() } else { format!(" (unclean log dirs = [{}])", unclean.join(", ")) }
    );
    Ok(results)
}

/// A dir's marker, checkpoints and partition directories, read before any log is loaded.
struct DirPlan {
    had_clean_shutdown: bool,
    recovery_points: HashMap<TopicPartition, i64>,
    log_starts: HashMap<TopicPartition, i64>,
    /// Sorted by path.
    children: Vec<(PathBuf, TopicPartition, PartitionDirKind)>,
}

fn plan_dir(dir: &Path) -> Result<DirPlan> {
    for name in LOG_DIR_ATOMIC_FILES {
        let tmp = with_suffix(&dir.join(name), TMP_FILE_SUFFIX);
        if crate::util::file::delete_if_exists(&tmp)? {
            log::info!("deleted {}, left by an interrupted write", tmp.display());
        }
    }
    let had_clean_shutdown = take_clean_shutdown_marker(dir)?;
    let recovery_points = read_checkpoint_or_empty(dir, RECOVERY_POINT_CHECKPOINT_FILE);
    let log_starts = read_checkpoint_or_empty(dir, LOG_START_OFFSET_CHECKPOINT_FILE);
    let mut children = Vec::new();
    for child in log_dir_children(dir)? {
        // kafkalog's loading has never followed a symbolic link to a partition (Kafka does).
        if child.symlink || child.name() == REMOTE_INDEX_CACHE_DIR {
            continue;
        }
        let tp = child.topic_partition?;
        if tp.topic == SKIPPED_TOPIC {
            continue;
        }
        children.push((child.path, tp, child.kind));
    }
    Ok(DirPlan { had_clean_shutdown, recovery_points, log_starts, children })
}

fn load_dir(
    index: usize,
    dir: &Path,
    plan: Result<DirPlan>,
    ctx: &LoadContext<'_>,
    progress: &Arc<Progress>,
) -> Result<(Vec<LoadedDir>, DirLoadSummary)> {
    let started = Instant::now();
    let mut summary = DirLoadSummary { dir: dir.to_path_buf(), ..DirLoadSummary::default() };
    let plan = match plan {
        Ok(plan) => plan,
        Err(e @ Error::Io { .. }) => {
            ctx.failure_channel.maybe_add_offline_log_dir(dir, &e.to_string());
            summary.error = Some(e.to_string());
            return Ok((Vec::new(), summary));
        }
        Err(e) => return Err(e),
    };
    summary.had_clean_shutdown = plan.had_clean_shutdown;
    log_load_start(dir, &plan);
    let next = AtomicUsize::new(0);
    let completed = AtomicUsize::new(0);
    let out = Mutex::new((Vec::new(), summary, None::<Error>));
    let threads = ctx.threads_per_dir.max(1).min(plan.children.len().max(1));
    std::thread::scope(|scope| {
        for thread in 0..threads {
            let (next, completed, out, plan, progress) = (&next, &completed, &out, &plan, progress);
            let name = format!("log-recovery-{}-{thread}", dir.display());
            let work = move || loop {
                let i = next.fetch_add(1, Ordering::AcqRel);
                let Some((path, tp, kind)) = plan.children.get(i) else { break };
                if out.lock().2.is_some() {
                    break;
                }
                let shared = progress.clone();
                let on_segments = RecoveryProgressFn(Arc::new(move |n: usize| {
                    shared.update(|t| {
                        t.per_thread.insert((index, thread), n);
                        t.dirs[index].segments_remaining =
                            t.per_thread.iter().filter(|((d, _), _)| *d == index).map(|(_, n)| n).sum();
                    });
                }));
                let waiting = |on: bool| {
                    progress.update(|t| {
                        let w = &mut t.dirs[index].waiting_for_lock;
                        w.retain(|p| p != path);
                        if on {
                            w.push(path.clone());
                        }
                    });
                };
                let started = Instant::now();
                let loaded = load_partition(path, tp, *kind, plan, ctx, on_segments.clone(), &waiting);
                let done = completed.fetch_add(1, Ordering::AcqRel) + 1;
                log_load_completed(&loaded, dir, started, done, plan.children.len());
                // A failed load leaves no segments to recover in this thread either.
                (on_segments.0)(0);
                let mut o = out.lock();
                match loaded {
                    Ok((item, load)) => {
                        if let Some(load) = load {
                            o.1.logs_loaded += 1;
                            o.1.segments_loaded += load.segments_loaded;
                            o.1.segments_recovered += load.segments_recovered;
                            o.1.bytes_truncated += load.bytes_truncated;
                        }
                        o.0.push(item);
                    }
                    Err(e @ Error::Io { .. }) => {
                        log::error!("error while loading log dir {}: {e}", dir.display());
                        ctx.failure_channel.maybe_add_offline_log_dir(dir, &e.to_string());
                        o.1.error.get_or_insert_with(|| e.to_string());
                    }
                    Err(e) => {
                        o.2.get_or_insert(e);
                    }
                }
                drop(o);
                progress.update(|t| t.dirs[index].logs_remaining -= 1);
            };
            // A scoped thread with Kafka's name; the name is only for operators.
            if let Err(e) = std::thread::Builder::new().name(name).spawn_scoped(scope, work) {
                out.lock().2.get_or_insert(Error::io(dir, "start a log recovery thread", e));
            }
        }
    });
    let (items, mut summary, fatal) = out.into_inner();
    if let Some(e) = fatal {
        for item in &items {
            if let LoadedDir::Current(log) | LoadedDir::Future(log) = item {
                log.close_handlers();
            }
        }
        return Err(e);
    }
    summary.duration_ms = started.elapsed().as_millis() as u64;
    Ok((items, summary))
}

/// Kafka's line before a dir's logs load: none to load, or whether recovery is skipped.
fn log_load_start(dir: &Path, plan: &DirPlan) {
    if plan.children.is_empty() {
        log::info!("No logs found to be loaded in {}", dir.display());
    } else if plan.had_clean_shutdown {
        log::info!(
            "Skipping recovery of {} logs from {} since clean shutdown file was found",
            plan.children.len(),
            dir.display()
        );
    } else {
        log::info!(
            "Recovering {} logs from {} since no clean shutdown file was found",
            plan.children.len(),
            dir.display()
        );
    }
}

/// Kafka's line after each partition's load (`LogManager.loadLogs`): the log's segments and
/// offsets and how many of the dir's logs are done, or that the load failed.
fn log_load_completed(
    loaded: &Result<(LoadedDir, Option<crate::log::unified_log::LoadResult>)>,
    dir: &Path,
    started: Instant,
    done: usize,
    total: usize,
) {
    let ms = started.elapsed().as_millis();
    match loaded {
        Ok((LoadedDir::Current(log) | LoadedDir::Future(log), _)) => log::info!(
            "Completed load of log {} with {} segments, local-log-start-offset {} and log-end-offset {} in {ms}ms \
             ({done}/{total} completed in {})",
            log.dir().display(),
            log.number_of_segments(),
            log.log_start_offset(),
            log.log_end_offset(),
            dir.display()
        ),
        Ok(_) => {}
        Err(_) => {
            log::info!(
                "Error while loading logs in {} in {ms}ms ({done}/{total} completed in {})",
                dir.display(),
                dir.display()
            );
        }
    }
}

fn load_partition(
    path: &Path,
    tp: &TopicPartition,
    kind: PartitionDirKind,
    plan: &DirPlan,
    ctx: &LoadContext<'_>,
    progress: RecoveryProgressFn,
    waiting: &dyn Fn(bool),
) -> Result<(LoadedDir, Option<crate::log::unified_log::LoadResult>)> {
    match kind {
        PartitionDirKind::Delete => return Ok((LoadedDir::Delete(path.to_path_buf()), None)),
        PartitionDirKind::Stray => {
            log::warn!("found stray log {}; it is kept but not served", path.display());
            return Ok((LoadedDir::Stray(path.to_path_buf()), None));
        }
        PartitionDirKind::Current | PartitionDirKind::Future => {}
    }
    let config = ctx.topic_configs.get(&tp.topic).unwrap_or(ctx.default_config).clone();
    let options = LogOpenOptions {
        read_only: false,
        create: true,
        had_clean_shutdown: plan.had_clean_shutdown,
        recovery_point: Some(plan.recovery_points.get(tp).copied().unwrap_or(0)),
        log_start_offset: plan.log_starts.get(tp).copied(),
        clock: ctx.clock.clone(),
        log_dir_failure_channel: Some(ctx.failure_channel.clone()),
        progress: Some(progress),
        producer_state: ctx.producer_state,
        max_transaction_timeout_ms: ctx.max_transaction_timeout_ms,
        // The manager lends the log its flush scheduler once loaded (`LogManager::open`).
        ..LogOpenOptions::default()
    };
    let log = Arc::new(open_when_unlocked(path, &config, &options, ctx.partition_lock_timeout, waiting)?);
    let load = log.load_result();
    let item = if kind == PartitionDirKind::Future { LoadedDir::Future(log) } else { LoadedDir::Current(log) };
    Ok((item, Some(load)))
}

/// Opens a partition, waiting up to `timeout` while another writer holds its directory's lock;
/// `waiting` is told when the wait starts and ends. The error after the timeout names the
/// partition, the holder and the time waited.
fn open_when_unlocked(
    path: &Path,
    config: &LogConfig,
    options: &LogOpenOptions,
    timeout: Duration,
    waiting: &dyn Fn(bool),
) -> Result<UnifiedLog> {
    let started = Instant::now();
    let mut pause = LOCK_POLL_START;
    let mut waited = false;
    loop {
        match UnifiedLog::open(path, config.clone(), options.clone()) {
            Err(Error::LogDirLocked { path: locked, holder, .. }) if locked == path => {
                let elapsed = started.elapsed();
                if elapsed >= timeout {
                    if waited {
                        waiting(false);
                    }
                    let waited_ms = Some(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX));
                    return Err(Error::LogDirLocked { path: locked, holder, waited_ms });
                }
                if !waited {
                    log::warn!(
                        "{} is locked by another writer ({}); waiting up to {} ms for it",
                        path.display(),
                        holder.as_deref().unwrap_or("holder unknown"),
                        timeout.as_millis()
                    );
                    waiting(true);
                    waited = true;
                }
                std::thread::sleep(pause.min(timeout.saturating_sub(elapsed)));
                pause = (pause * 2).min(LOCK_POLL_MAX);
            }
            other => {
                if waited {
                    waiting(false);
                    log::info!("{} is free after {} ms", path.display(), started.elapsed().as_millis());
                }
                return other;
            }
        }
    }
}
