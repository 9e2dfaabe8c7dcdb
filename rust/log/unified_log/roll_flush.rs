//! The flush after a roll, off the write lock (Kafka's `UnifiedLog.roll`, which schedules a
//! `flush-log` task running `flushProducerStateSnapshot` and `flushUptoOffsetExclusive`): the
//! roll takes the producer snapshot without an fsync and asks for a flush of everything below
//! the new segment; a background task fsyncs the snapshot, the rolled segments' files and
//! indexes (trimming the indexes first: the roll leaves that to the flush, see
//! `segment/log_segment/inactive.rs`) and the directory, and only then advances the recovery
//! point. A crash between the
//! roll and the flush leaves the recovery point below the rolled segment, so recovery checks it.
//!
//! Rolls coalesce: a task flushes up to the highest base asked for when it starts. A segment
//! that retention or the cleaner removed before (or while) its flush runs is skipped: it is no
//! longer part of the log. A truncation while a flush runs stops that flush from moving the
//! recovery point (offsets below it may have been rewritten since). A failed flush reports the
//! log dir to the `LogDirFailureChannel` (a managed log: the manager takes the dir offline) and
//! makes the log refuse writes, so nothing is built on data the disk may have lost (a second
//! fsync after a failed one may report success without the data).
//!
//! Where the task runs: on the `BackgroundScheduler` lent to the log (a `LogManager`'s, shared
//! by its logs). A log with no scheduler lent (a standalone log) flushes inside the roll, as
//! `Synchronous` does: it has no recovery point on disk (its next open recovers only the active
//! segment), so a rolled segment must be durable before the roll returns, and it starts no
//! thread. `close` waits for a running flush and then flushes everything itself.
//!
//! Before its flush (rolls may come faster than fsyncs), the task creates the next roll's files
//! unnamed (`segment::reserved_files`, and the producer snapshot's file), so the next roll names
//! files instead of creating them under the write lock: creating a file's inode was most of a
//! roll's cost. A log holds at most one reservation (four descriptors), dropped at close, and the
//! process's unnamed files stay within a share of its open-file limit (`util::unnamed_file`):
//! past it, rolls create their files.
//!
//! `RollFlushMode::Synchronous` keeps the old behaviour (the flush under the write lock, inside
//! the roll), as the baseline of `benches/roll_bench.rs`.
//!
//! Thread-safety: `RollFlush` is shared (`Arc`) by the log and its queued tasks; its state is
//! behind a mutex, the flush itself runs holding no lock of the log.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, RwLock};

use super::Offsets;
use crate::error::{Error, Result};
use crate::file_names::producer_snapshot_file;
use crate::log::log_dir_failure_channel::LogDirFailureChannel;
use crate::segment::log_segment::LogSegment;
use crate::segment::log_segments::LogSegments;
use crate::segment::reserved_files::ReservedSegmentFiles;
use crate::util::background::BackgroundScheduler;
use crate::util::clock::SharedClock;
use crate::util::unnamed_file::UnnamedFile;

/// Where a roll's flush runs. Not a Kafka setting: Kafka always flushes in the background.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RollFlushMode {
    /// Kafka's way: a background task after the roll (the default).
    #[default]
    Background,
    /// The flush inside the roll, under the write lock (kafkalog's earlier behaviour; the
    /// baseline of the roll bench).
    Synchronous,
}

/// The task's name in Kafka's scheduler.
const TASK_NAME: &str = "flush-log";

#[derive(Debug, Default)]
struct State {
    /// Flush everything below this offset (the highest base rolled since a task last started;
    /// -1: nothing).
    requested: i64,
    /// Producer snapshots taken at rolls and not yet fsynced.
    snapshots: Vec<i64>,
    /// A task is queued and has not started.
    queued: bool,
    /// A task is flushing.
    running: bool,
    /// The log closed (or its handlers did): tasks do nothing.
    closed: bool,
    /// The first failure of a background flush.
    failure: Option<String>,
}

/// The files of the next roll, created ahead by the flush task (see the module docs).
/// Thread-safety: owned; moved from the task to the roll.
#[derive(Debug)]
pub(super) struct RollReserve {
    /// The new segment's `.log` and indexes.
    pub segment: ReservedSegmentFiles,
    /// The producer snapshot the roll writes.
    pub producer_snapshot: UnnamedFile,
}

impl RollReserve {
    /// Creates the files unnamed in `dir`. `Ok(None)` when the process's unnamed files hold
    /// their descriptor budget.
    ///
    /// # Errors
    /// As `UnnamedFile::create_in` (`ErrorKind::Unsupported`: the file system cannot).
    fn create(dir: &std::path::Path) -> std::io::Result<Option<Self>> {
        let Some(segment) = ReservedSegmentFiles::create(dir)? else { return Ok(None) };
        let Some(producer_snapshot) = UnnamedFile::create_in(dir)? else { return Ok(None) };
        Ok(Some(RollReserve { segment, producer_snapshot }))
    }
}

/// What a log shares with its flush tasks.
#[derive(Debug)]
pub(super) struct RollFlush {
    pub(super) mode: RollFlushMode,
    dir: PathBuf,
    log_dir: PathBuf,
    segments: Arc<LogSegments>,
    offsets: Arc<RwLock<Offsets>>,
    last_flush_ms: Arc<AtomicI64>,
    clock: SharedClock,
    failure_channel: Option<Arc<LogDirFailureChannel>>,
    /// The scheduler lent to the log; `None`: the roll flushes itself.
    scheduler: Mutex<Option<Arc<BackgroundScheduler>>>,
    state: Mutex<State>,
    idle: Condvar,
    /// The next roll's files, created ahead by the task.
    reserve: Mutex<Option<RollReserve>>,
    /// The log's file system cannot create unnamed files: the task stops trying.
    reserve_unsupported: AtomicBool,
}

/// How `RollFlush::new` finds the log's pieces.
pub(super) struct RollFlushParts {
    pub mode: RollFlushMode,
    pub dir: PathBuf,
    pub log_dir: PathBuf,
    pub segments: Arc<LogSegments>,
    pub offsets: Arc<RwLock<Offsets>>,
    pub last_flush_ms: Arc<AtomicI64>,
    pub clock: SharedClock,
    pub failure_channel: Option<Arc<LogDirFailureChannel>>,
    pub scheduler: Option<Arc<BackgroundScheduler>>,
}

impl RollFlush {
    pub(super) fn new(p: RollFlushParts) -> Arc<Self> {
        Arc::new(RollFlush {
            mode: p.mode,
            dir: p.dir,
            log_dir: p.log_dir,
            segments: p.segments,
            offsets: p.offsets,
            last_flush_ms: p.last_flush_ms,
            clock: p.clock,
            failure_channel: p.failure_channel,
            scheduler: Mutex::new(p.scheduler),
            state: Mutex::new(State { requested: -1, ..State::default() }),
            idle: Condvar::new(),
            reserve: Mutex::new(None),
            reserve_unsupported: AtomicBool::new(false),
        })
    }

    /// Runs later flushes on `scheduler` (a `LogManager`'s, lent to a log it loaded).
    pub(super) fn use_scheduler(&self, scheduler: Arc<BackgroundScheduler>) {
        *self.scheduler.lock() = Some(scheduler);
    }

    /// Whether the roll leaves its flush to a background task: `Background` mode with a
    /// scheduler lent (see the module docs).
    pub(super) fn in_background(&self) -> bool {
        self.mode == RollFlushMode::Background && self.scheduler.lock().is_some()
    }

    /// Asks for a flush of everything below `offset` and of the producer snapshot at
    /// `snapshot`, in the background, and for the next roll's files to be created ahead.
    /// Called by the roll, under the write lock, when [`RollFlush::in_background`].
    pub(super) fn request(self: &Arc<Self>, offset: i64, snapshot: i64) {
        let mut state = self.state.lock();
        if state.closed {
            return;
        }
        state.requested = state.requested.max(offset);
        state.snapshots.push(snapshot);
        if std::mem::replace(&mut state.queued, true) {
            return;
        }
        drop(state);
        let this = self.clone();
        // The roll asks only when `in_background`, and a lent scheduler is never taken back.
        let scheduler = self.scheduler.lock().clone().expect("a roll flush requested without a scheduler");
        scheduler.schedule_once(TASK_NAME, Box::new(move || this.run()));
    }

    /// `KafkaStorage` naming the failed background flush, once one failed.
    pub(super) fn check_failed(&self) -> Result<()> {
        match &self.state.lock().failure {
            None => Ok(()),
            Some(reason) => Err(Error::KafkaStorage {
                path: self.log_dir.clone(),
                reason: format!(
                    "the log {} refuses writes after its background flush failed: {reason}",
                    self.dir.display()
                ),
            }),
        }
    }

    /// The files created ahead for this roll, if the task made them.
    pub(super) fn take_reserve(&self) -> Option<RollReserve> {
        self.reserve.lock().take()
    }

    /// Whether the next roll's files are ready (for tests).
    pub(super) fn has_reserve(&self) -> bool {
        self.reserve.lock().is_some()
    }

    /// Stops later tasks and waits for a running one; a closing log then flushes itself.
    /// Queued tasks find the log closed and return at once. The files created ahead are
    /// closed (never named, they vanish).
    pub(super) fn close(&self) {
        let mut state = self.state.lock();
        state.closed = true;
        while state.running {
            self.idle.wait(&mut state);
        }
        drop(state);
        self.reserve.lock().take();
    }

    /// Stops later tasks without waiting for a running one (Kafka's `closeHandlers`: the log
    /// dir failed or the partition is being deleted; a flush still running finds the log
    /// closed and drops its error, and its files created ahead).
    pub(super) fn abandon(&self) {
        self.state.lock().closed = true;
        self.reserve.lock().take();
    }

    /// The task: flush what was asked for, then advance the recovery point.
    fn run(&self) {
        let (target, snapshots) = {
            let mut state = self.state.lock();
            state.queued = false;
            if state.closed || state.failure.is_some() {
                self.idle.notify_all();
                return;
            }
            state.running = true;
            (std::mem::replace(&mut state.requested, -1), std::mem::take(&mut state.snapshots))
        };
        // The next roll's files first: rolls may come faster than the fsyncs below.
        self.reserve_next_roll();
        let result = self.flush_below(target, &snapshots);
        let mut state = self.state.lock();
        if let Err(e) = result {
            if state.closed {
                log::debug!("background flush of {} ended by the close: {e}", self.dir.display());
            } else {
                let reason = e.to_string();
                log::error!("background flush of {} below offset {target} failed: {reason}", self.dir.display());
                if let Some(channel) = &self.failure_channel {
                    channel.maybe_add_offline_log_dir(&self.log_dir, &reason);
                }
                state.failure.get_or_insert(reason);
            }
        }
        state.running = false;
        self.idle.notify_all();
    }

    /// Creates the next roll's files ahead, unless they are there already (or the file
    /// system cannot). Dropped when the log closed meanwhile (`abandon` does not wait for the
    /// task).
    fn reserve_next_roll(&self) {
        if self.reserve_unsupported.load(Ordering::Relaxed) || self.reserve.lock().is_some() {
            return;
        }
        let reserve = match RollReserve::create(&self.dir) {
            Ok(Some(reserve)) => reserve,
            Ok(None) => return,
            Err(e) => {
                if e.kind() == std::io::ErrorKind::Unsupported {
                    self.reserve_unsupported.store(true, Ordering::Relaxed);
                }
                log::debug!("could not create the next roll's files ahead in {}: {e}", self.dir.display());
                return;
            }
        };
        let state = self.state.lock();
        if !state.closed {
            self.reserve.lock().get_or_insert(reserve);
        }
    }

    /// Kafka's `flushUptoOffsetExclusive`: fsyncs the snapshots, the segments holding offsets
    /// from the recovery point up to `target` and (if one of them is new since the recovery
    /// point) the directory; then raises the recovery point to `target`, unless a truncation
    /// ran meanwhile.
    fn flush_below(&self, target: i64, snapshots: &[i64]) -> Result<()> {
        let (recovery_point, truncations) = {
            let o = self.offsets.read();
            (o.recovery_point, o.truncations)
        };
        for &offset in snapshots {
            crate::util::file::fsync_file_if_exists(&producer_snapshot_file(&self.dir, offset))?;
        }
        if target <= recovery_point {
            return Ok(());
        }
        let segments = self.segments.covering(recovery_point, target);
        for s in &segments {
            if let Err(e) = s.flush() {
                if self.is_live(s) {
                    return Err(e);
                }
                log::debug!("skipping the flush of {}, removed meanwhile: {e}", s.path().display());
            }
        }
        if segments.iter().any(|s| s.base_offset() >= recovery_point) {
            crate::util::file::fsync_dir(&self.dir)?;
        }
        let mut o = self.offsets.write();
        if o.truncations == truncations {
            o.recovery_point = o.recovery_point.max(target.min(o.log_end));
            self.last_flush_ms.store(self.clock.milliseconds(), Ordering::Release);
        }
        Ok(())
    }

    /// Whether `segment` is still in the log (not removed by retention, truncation or a clean).
    fn is_live(&self, segment: &Arc<LogSegment>) -> bool {
        self.segments.get(segment.base_offset()).is_some_and(|s| Arc::ptr_eq(&s, segment))
    }

    /// Whether a flush is queued or running (for tests and the bench).
    pub(super) fn pending(&self) -> bool {
        let state = self.state.lock();
        state.queued || state.running
    }

    /// Waits until no flush is queued or running on a threaded scheduler; runs the queued ones
    /// of a manual scheduler here.
    pub(super) fn wait_idle(&self) {
        let scheduler = self.scheduler.lock().clone();
        if let Some(s) = scheduler.filter(|s| s.is_manual()) {
            s.run_pending();
        }
        let mut state = self.state.lock();
        while state.queued || state.running {
            self.idle.wait(&mut state);
        }
    }
}
