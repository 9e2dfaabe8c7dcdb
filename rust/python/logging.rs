//! Routes the crate's `log` events to Python's `logging`, under the `kafkalog` logger
//! hierarchy (the Rust module path becomes the logger name: `kafkalog.log.log_loader`,
//! `kafkalog.cleaner.log_cleaner`; see `util/log_bridge.rs`). Installed once, when
//! `kafkalog._native` is imported; it starts no thread then. No Kafka counterpart: Kafka logs
//! through SLF4J.
//!
//! **Level filter on the Rust side.** `log::max_level()` (one atomic, read by the `log` macros
//! before the message is formatted) holds the most verbose level any `kafkalog` logger would
//! accept, so a disabled level costs one relaxed load. It follows Python's configuration: it is
//! computed at install, and again each time `logging` clears its level caches, which
//! `Logger.setLevel` and `logging.disable` (and so `dictConfig`, `fileConfig`, pytest's
//! `caplog.set_level`) do: the bridge wraps `logging.Logger.manager._clear_cache` on the
//! manager instance (the recomputation walks `loggerDict` once per level change, which programs
//! make rarely). Limits: a level assigned directly (`logger.level = 10`,
//! `manager.disable = 0`) is seen at the next `setLevel` / `disable` anywhere; and the filter is
//! a superset (the lowest level of all `kafkalog.*` loggers, ignoring `Logger.disabled`,
//! `propagate` and handler levels), so the exact `Logger.isEnabledFor` check is repeated on
//! delivery and an event Python would not handle is dropped there.
//!
//! **Delivery without deadlocks.** An event is never handed to Python where it is logged: the
//! logging thread may hold an engine lock that a thread holding the GIL is waiting for (a
//! thread inside `py.detach`, a cleaner, scheduler or loader thread). It is kept, and delivered
//! later by a thread that holds the GIL and no engine lock:
//! - events logged by a call from Python (inside `errors::run`, marked by `in_call`) wait in a
//!   buffer of that thread and are delivered by the same thread before the call returns
//!   (`flush`): a call's own warnings are in the handlers when it returns, with its thread's
//!   name, and no other thread is involved;
//! - events of kafkalog's own threads (cleaner, scheduler, loader threads) go to a bounded
//!   global queue (a short mutex, never held while waiting for the GIL or calling Python),
//!   delivered by the next call's `flush` or by a `kafkalog-logging` thread, started by the
//!   first such event (never at import), which takes the GIL to deliver them.
//!
//! Deliveries are serialised by a flag (`EMITTING`): a thread that finds another delivering
//! waits with the GIL released, so a returning call sees the other's batch fully handled.
//!
//! **Shutdown and fork.** An `atexit` hook (it runs before the interpreter finalizes) delivers
//! what is queued, stops the `kafkalog-logging` thread and joins it with the GIL released; from
//! then on events are not queued: WARNING and ERROR events are written to stderr (so none is
//! lost silently) and lower ones dropped and counted. The thread attaches with
//! `Python::try_attach`, which declines once the interpreter is finalizing. `os.register_at_fork`
//! hooks hold the bridge's two mutexes across `fork()` so a child never inherits one locked,
//! and the child forgets its parent's queue and thread.
//!
//! Thread-safety: every item here is safe from any thread.

use std::cell::{Cell, RefCell};
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use log::{Level, Log, Metadata, Record};
use parking_lot::{Condvar, Mutex, MutexGuard};
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyDict, PyTuple};

use crate::util::log_bridge::{self, Event, EventQueue, QUEUE_CAPACITY, ROOT_LOGGER};

/// The queue and the delivery thread.
struct Queue {
    events: EventQueue,
    /// The `kafkalog-logging` thread and the process that started it (a forked child has none).
    drainer: Option<(u32, JoinHandle<()>)>,
    /// Tells the thread to exit.
    stop: bool,
    /// The interpreter is shutting down: events are no longer queued.
    shutdown: bool,
}

static QUEUE: Mutex<Queue> =
    Mutex::new(Queue { events: EventQueue::new(QUEUE_CAPACITY), drainer: None, stop: false, shutdown: false });
/// Wakes the `kafkalog-logging` thread.
static WAKE: Condvar = Condvar::new();
/// Whether a thread is delivering events (the `emit` flag), and its condition.
static EMITTING: Mutex<bool> = Mutex::new(false);
static EMIT_DONE: Condvar = Condvar::new();
/// Queued events not yet taken (a cheap test for `flush`).
static PENDING: AtomicU64 = AtomicU64::new(0);
/// Counters for tests and operators: events the Rust filter let through, events handed to a
/// Python logger, events dropped (queue full, or below WARNING after shutdown).
static ACCEPTED: AtomicU64 = AtomicU64::new(0);
static DELIVERED: AtomicU64 = AtomicU64::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Depth of `in_call` on this thread: its events wait in `LOCAL` for its own `flush`.
    static IN_CALL: Cell<u32> = const { Cell::new(0) };
    /// The events of the call this thread is running.
    static LOCAL: RefCell<EventQueue> = const { RefCell::new(EventQueue::new(QUEUE_CAPACITY)) };
    /// This thread is delivering events (a handler that calls back into kafkalog must not
    /// wait for itself).
    static DELIVERING: Cell<bool> = const { Cell::new(false) };
    /// The mutexes held across `fork()` by the thread that forks.
    static FORK_GUARDS: RefCell<Option<(MutexGuard<'static, bool>, MutexGuard<'static, Queue>)>> =
        const { RefCell::new(None) };
}

/// The `log::Log` the crate's events go to.
struct Bridge;

static BRIDGE: Bridge = Bridge;

impl Log for Bridge {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        ACCEPTED.fetch_add(1, Ordering::Relaxed);
        let thread = std::thread::current();
        let event = Event {
            level: record.level(),
            target: record.target().to_string(),
            message: record.args().to_string(),
            file: record.file_static(),
            line: record.line().unwrap_or(0),
            // Threads Rust did not start (Python's) have no name here, except Rust's "main".
            thread: thread.name().filter(|n| *n != "main").map(str::to_string),
            time: SystemTime::now(),
        };
        // A call's own event waits for the call's flush (`try_with`: not during TLS teardown).
        let mut event = Some(event);
        if IN_CALL.try_with(Cell::get).unwrap_or(0) > 0 {
            let _ = LOCAL.try_with(|l| {
                if let Some(e) = event.take() {
                    if !l.borrow_mut().push(e) {
                        DROPPED.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
        if let Some(event) = event {
            push(event);
        }
    }

    fn flush(&self) {}
}

/// Runs `f` (a call from Python, with the GIL released) so that the events it logs on this
/// thread wait for this thread's `flush` instead of the global queue.
pub fn in_call<T>(f: impl FnOnce() -> T) -> T {
    struct Depth;
    impl Drop for Depth {
        fn drop(&mut self) {
            IN_CALL.with(|d| d.set(d.get() - 1));
        }
    }
    IN_CALL.with(|d| d.set(d.get() + 1));
    let _depth = Depth;
    f()
}

/// Queues `event` and wakes (or starts) the delivery thread; after shutdown, writes it to
/// stderr instead (WARNING and above) or counts it as dropped.
fn push(event: Event) {
    let mut q = QUEUE.lock();
    if q.shutdown {
        drop(q);
        write_to_stderr(&event);
        return;
    }
    if !q.events.push(event) {
        DROPPED.fetch_add(1, Ordering::Relaxed);
        DROPPED_UNREPORTED.store(true, Ordering::Release);
        return;
    }
    PENDING.fetch_add(1, Ordering::Release);
    let pid = std::process::id();
    if q.drainer.as_ref().is_none_or(|(p, _)| *p != pid) {
        // If the thread cannot start, the events wait for the next call's flush.
        q.drainer =
            std::thread::Builder::new().name("kafkalog-logging".into()).spawn(drain_thread).ok().map(|h| (pid, h));
    }
    drop(q);
    WAKE.notify_one();
}

/// An event that can no longer reach Python: WARNING and ERROR go to stderr (as Python's
/// `logging.lastResort` would print them), the rest are counted as dropped.
fn write_to_stderr(event: &Event) {
    if event.level <= Level::Warn {
        let name = log_bridge::logger_name(&event.target);
        let _ = writeln!(std::io::stderr(), "{} {name}: {} (logged during shutdown)", event.level, event.message);
    } else {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

/// The `kafkalog-logging` thread: waits for events, then takes the GIL and delivers them.
fn drain_thread() {
    loop {
        {
            let mut q = QUEUE.lock();
            while q.events.is_empty() && !q.stop {
                WAKE.wait(&mut q);
            }
            if q.stop {
                return;
            }
        }
        let attached = Python::try_attach(|py| {
            if let Err(e) = deliver(py) {
                e.write_unraisable(py, None);
            }
        });
        if attached.is_none() {
            // The interpreter is finalizing (or gone): nothing can be delivered any more.
            let leftover: Vec<Event> = {
                let mut q = QUEUE.lock();
                q.shutdown = true;
                std::iter::from_fn(|| q.events.pop()).collect()
            };
            PENDING.store(0, Ordering::Release);
            leftover.iter().for_each(write_to_stderr);
            return;
        }
    }
}

/// Delivers what is queued; called by every call that released the GIL through `errors::run`,
/// before it returns. A `KeyboardInterrupt` raised in a handler is returned (the call raises
/// it); the events after it stay queued.
pub fn flush(py: Python<'_>) -> PyResult<()> {
    let local = LOCAL.try_with(|l| !l.borrow().is_empty()).unwrap_or(false);
    if !local && PENDING.load(Ordering::Acquire) == 0 && !DROPPED_UNREPORTED.load(Ordering::Acquire) {
        return Ok(());
    }
    deliver(py)
}

/// `flush` for a call that cannot raise: a `KeyboardInterrupt` from a handler is raised again
/// at the caller's next bytecode (`_thread.interrupt_main`), any other error is reported as
/// unraisable.
pub fn flush_in_infallible_call(py: Python<'_>) {
    if let Err(e) = flush(py) {
        let interrupted = e.is_instance_of::<PyKeyboardInterrupt>(py);
        let reraised = interrupted && py.import("_thread").and_then(|t| t.call_method0("interrupt_main")).is_ok();
        if !reraised {
            e.write_unraisable(py, None);
        }
    }
}

/// Set when events were dropped from a full queue and no WARNING has said so yet.
static DROPPED_UNREPORTED: AtomicBool = AtomicBool::new(false);

/// Marks this thread as the one delivering; undone on drop.
struct EmitGuard;

impl EmitGuard {
    /// Waits (with the GIL released) until no other thread is delivering. `None` when this
    /// thread is already delivering (a handler called back into kafkalog).
    fn acquire(py: Python<'_>) -> Option<EmitGuard> {
        if DELIVERING.get() {
            return None;
        }
        let free = {
            let mut busy = EMITTING.lock();
            !std::mem::replace(&mut *busy, true)
        };
        if !free {
            py.detach(|| {
                let mut busy = EMITTING.lock();
                while *busy {
                    EMIT_DONE.wait(&mut busy);
                }
                *busy = true;
            });
        }
        DELIVERING.set(true);
        Some(EmitGuard)
    }
}

impl Drop for EmitGuard {
    fn drop(&mut self) {
        DELIVERING.set(false);
        *EMITTING.lock() = false;
        EMIT_DONE.notify_all();
    }
}

/// The next event to deliver (this thread's own first, then the global queue's, each oldest
/// first) and the number dropped from the queue it came from.
fn next_event() -> (Option<Event>, u64) {
    let local = LOCAL
        .try_with(|l| {
            let mut l = l.borrow_mut();
            (l.pop(), l.take_dropped())
        })
        .unwrap_or((None, 0));
    if local.0.is_some() || local.1 > 0 {
        return local;
    }
    let mut q = QUEUE.lock();
    let event = q.events.pop();
    if event.is_some() {
        PENDING.fetch_sub(1, Ordering::AcqRel);
    }
    (event, q.events.take_dropped())
}

/// Delivers every waiting event with the GIL held: this thread's, then the global queue's.
fn deliver(py: Python<'_>) -> PyResult<()> {
    let Some(_guard) = EmitGuard::acquire(py) else { return Ok(()) };
    let logging = py.import("logging")?;
    loop {
        let (event, dropped) = next_event();
        if dropped > 0 {
            DROPPED_UNREPORTED.store(false, Ordering::Release);
            let warning = Event {
                level: Level::Warn,
                target: "kafkalog::python::logging".into(),
                message: format!(
                    "{dropped} kafkalog log events were dropped: more than {QUEUE_CAPACITY} were waiting \
                     to be delivered to Python"
                ),
                file: Some(file!()),
                line: line!(),
                thread: None,
                time: SystemTime::now(),
            };
            emit_or_report(py, &logging, &warning)?;
        }
        match event {
            Some(event) => emit_or_report(py, &logging, &event)?,
            None if dropped > 0 => {}
            None => return Ok(()),
        }
    }
}

/// Emits one event; a failure other than `KeyboardInterrupt` is reported as unraisable (as
/// `logging` reports a failing handler) and delivery goes on.
fn emit_or_report(py: Python<'_>, logging: &Bound<'_, PyModule>, event: &Event) -> PyResult<()> {
    match emit(py, logging, event) {
        Err(e) if e.is_instance_of::<PyKeyboardInterrupt>(py) => Err(e),
        Err(e) => {
            e.write_unraisable(py, None);
            Ok(())
        }
        Ok(()) => Ok(()),
    }
}

/// Hands one event to its Python logger, if that logger is enabled for its level: a
/// `LogRecord` with the Rust file and line, the time and thread name of the event.
fn emit(py: Python<'_>, logging: &Bound<'_, PyModule>, event: &Event) -> PyResult<()> {
    let name = log_bridge::logger_name(&event.target);
    let level = log_bridge::python_level(event.level);
    let logger = logging.call_method1("getLogger", (&name,))?;
    if !logger.call_method1("isEnabledFor", (level,))?.is_truthy()? {
        return Ok(());
    }
    let record = logger.call_method1(
        "makeRecord",
        (&name, level, event.file.unwrap_or("<rust>"), event.line, &event.message, PyTuple::empty(py), py.None()),
    )?;
    // The record was made now; the event happened earlier (it waited in the queue).
    let at = event.time.duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    let made: f64 = record.getattr("created")?.extract()?;
    let relative: f64 = record.getattr("relativeCreated")?.extract()?;
    record.setattr("created", at)?;
    record.setattr("msecs", (at.fract() * 1000.0).floor())?;
    record.setattr("relativeCreated", relative - (made - at) * 1000.0)?;
    // A kafkalog thread's name (`kafka-log-cleaner-thread-0`); the record's own thread fields
    // name the thread delivering it, so the id goes.
    if let Some(thread) = &event.thread {
        record.setattr("threadName", thread)?;
        record.setattr("thread", py.None())?;
    }
    logger.call_method1("handle", (record,))?;
    DELIVERED.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Recomputes the Rust-side level filter from Python's configuration: the lowest effective
/// level of `kafkalog` and of every `kafkalog.*` logger, and `logging.disable`'s level.
fn refresh_level(py: Python<'_>) -> PyResult<()> {
    let logging = py.import("logging")?;
    let manager = logging.getattr("Logger")?.getattr("manager")?;
    let disable: i64 = manager.getattr("disable")?.extract().unwrap_or(0);
    let logger_class = logging.getattr("Logger")?;
    let mut lowest: i64 =
        logging.call_method1("getLogger", (ROOT_LOGGER,))?.call_method0("getEffectiveLevel")?.extract()?;
    // A copy: getEffectiveLevel runs Python code, during which another thread may add loggers.
    let loggers = manager.getattr("loggerDict")?.cast_into::<PyDict>()?.copy()?;
    for (name, logger) in loggers.iter() {
        let is_ours = name.extract::<String>().is_ok_and(|n| n.starts_with("kafkalog."));
        if is_ours && logger.is_instance(&logger_class)? {
            lowest = lowest.min(logger.call_method0("getEffectiveLevel")?.extract()?);
        }
    }
    log::set_max_level(log_bridge::level_filter(lowest, disable));
    Ok(())
}

/// Installs the bridge (once per process; later calls do nothing): the `log` logger, the level
/// filter and its hook on `logging`'s cache clearing, the `atexit` and at-fork hooks. Starts no
/// thread.
pub fn install(py: Python<'_>) -> PyResult<()> {
    if INSTALLED.swap(true, Ordering::AcqRel) {
        return refresh_level(py);
    }
    // Only this module sets the `log` logger of this library (the extension links its own copy
    // of the `log` crate), so this fails only if the module was initialised before.
    let _ = log::set_logger(&BRIDGE);
    let logging = py.import("logging")?;
    let manager = logging.getattr("Logger")?.getattr("manager")?;
    if !manager.hasattr("_clear_cache")? {
        // A Python whose logging no longer has the hook point: the filter stays as computed now.
        PyErr::warn(
            py,
            &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(),
            c"kafkalog: logging.Manager._clear_cache is missing; later logging level changes will not reach \
              kafkalog's Rust-side level filter",
            1,
        )?;
    } else if !manager.hasattr("_kafkalog_level_hook")? {
        let original = manager.getattr("_clear_cache")?.unbind();
        let hook = PyCFunction::new_closure(
            py,
            Some(c"_clear_cache"),
            Some(c"logging's _clear_cache, then kafkalog's Rust-side level filter recomputed"),
            move |args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>| -> PyResult<()> {
                let py = args.py();
                original.bind(py).call(args, kwargs)?;
                // Never let kafkalog break a caller's logging configuration.
                if let Err(e) = refresh_level(py) {
                    e.write_unraisable(py, None);
                }
                Ok(())
            },
        )?;
        manager.setattr("_clear_cache", hook)?;
        manager.setattr("_kafkalog_level_hook", true)?;
    }
    refresh_level(py)?;
    let at_exit = PyCFunction::new_closure(py, Some(c"_kafkalog_logging_shutdown"), None, |args, _| {
        shutdown(args.py());
    })?;
    py.import("atexit")?.call_method1("register", (at_exit,))?;
    register_fork_hooks(py)
}

/// The `atexit` hook: delivers what is queued, stops and joins the `kafkalog-logging` thread
/// (with the GIL released, so a delivery it started can finish), and turns queueing off.
fn shutdown(py: Python<'_>) {
    if let Err(e) = deliver(py) {
        e.write_unraisable(py, None);
    }
    let drainer = {
        let mut q = QUEUE.lock();
        q.shutdown = true;
        q.stop = true;
        q.drainer.take()
    };
    WAKE.notify_all();
    if let Some((pid, handle)) = drainer {
        if pid == std::process::id() {
            py.detach(move || {
                let _ = handle.join();
            });
        }
    }
    // Events queued before `shutdown` was set.
    if let Err(e) = deliver(py) {
        e.write_unraisable(py, None);
    }
}

/// `os.register_at_fork` hooks: the forking thread holds both mutexes across `fork()`; the
/// child forgets the parent's queue (the parent delivers it) and its thread.
fn register_fork_hooks(py: Python<'_>) -> PyResult<()> {
    let before = PyCFunction::new_closure(py, Some(c"_kafkalog_logging_before_fork"), None, |_, _| {
        // Holders of these mutexes never wait for the GIL, so waiting here with it is safe.
        let guards = (EMITTING.lock(), QUEUE.lock());
        FORK_GUARDS.with(|g| *g.borrow_mut() = Some(guards));
    })?;
    let parent = PyCFunction::new_closure(py, Some(c"_kafkalog_logging_after_fork_parent"), None, |_, _| {
        FORK_GUARDS.with(|g| g.borrow_mut().take());
    })?;
    let child = PyCFunction::new_closure(py, Some(c"_kafkalog_logging_after_fork_child"), None, |_, _| {
        FORK_GUARDS.with(|g| {
            if let Some((mut emitting, mut q)) = g.borrow_mut().take() {
                *emitting = false;
                q.events.clear();
                q.drainer = None;
                q.stop = false;
            }
        });
        PENDING.store(0, Ordering::Release);
        DROPPED_UNREPORTED.store(false, Ordering::Release);
    })?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("before", before)?;
    kwargs.set_item("after_in_parent", parent)?;
    kwargs.set_item("after_in_child", child)?;
    py.import("os")?.getattr("register_at_fork")?.call((), Some(&kwargs))?;
    Ok(())
}

/// The Rust-side filter (`"OFF"`, `"ERROR"` ... `"TRACE"`), the events it let through, those
/// handed to a Python logger, and those dropped. For tests: an event of a level the filter
/// refuses is never counted as accepted.
#[pyfunction]
#[pyo3(name = "_logging_state")]
pub fn logging_state() -> LoggingState {
    LoggingState {
        level: log::max_level().to_string().to_uppercase(),
        accepted: ACCEPTED.load(Ordering::Relaxed),
        delivered: DELIVERED.load(Ordering::Relaxed),
        dropped: DROPPED.load(Ordering::Relaxed),
    }
}

super::results::py_result! { sequence
    /// The bridge's state, for tests.
    #[module = "kafkalog._native"]
    pub struct LoggingState {
        /// The Rust-side level filter: "OFF", "ERROR", "WARN", "INFO", "DEBUG" or "TRACE".
        level: String,
        /// Events the filter let through.
        accepted: u64,
        /// Events handed to a Python logger.
        delivered: u64,
        /// Events dropped (the queue was full).
        dropped: u64,
    }
}
