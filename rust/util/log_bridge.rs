//! The pure half of the bridge from the crate's `log` events to Python's `logging`
//! (`python/logging.rs` holds the half that needs the interpreter): logger names, level
//! numbers, the level filter that follows Python's configuration, and the bounded queue that
//! holds events until a thread holding the GIL delivers them. Kept free of pyo3 so that plain
//! `cargo test` covers it. No Kafka counterpart (Kafka logs through SLF4J).
//!
//! Thread-safety: pure functions; `EventQueue` is plain data, shared behind the bridge's mutex.

use std::collections::VecDeque;
use std::time::SystemTime;

use log::{Level, LevelFilter};

/// The Python logger every kafkalog logger descends from.
pub const ROOT_LOGGER: &str = "kafkalog";

/// The loggers users configure, one per component (the crate's top-level module), with what
/// logs there. Events go to the module-path child (`kafkalog.log.log_loader`), which inherits
/// its component's level and handlers.
pub const COMPONENT_LOGGERS: [(&str, &str); 8] = [
    ("kafkalog.log", "UnifiedLog, LogLoader (recovery), LocalLog, producer state, leader epochs, retention"),
    ("kafkalog.segment", "LogSegment and FileRecords: torn tails, damaged batches, index entries"),
    ("kafkalog.index", "offset, time and transaction indexes"),
    ("kafkalog.checkpoint", "offset checkpoints, cleaner-offset-checkpoint, meta.properties"),
    ("kafkalog.cleaner", "LogCleaner, LogCleanerManager: the stats block after each clean, uncleanable partitions"),
    ("kafkalog.manager", "LogManager: loading log dirs, offline dirs, partition creation and deletion"),
    ("kafkalog.util", "file operations and locks"),
    ("kafkalog.python", "the bridge itself (events dropped from a full queue)"),
];

/// The Python level number of Rust's `TRACE` (Python has no name for it; `logging.DEBUG` is 10).
pub const PYTHON_TRACE: i64 = 5;

/// Events held at most while no thread can deliver them; later ones are counted, and the count
/// is logged as a WARNING when delivery resumes.
pub const QUEUE_CAPACITY: usize = 10_000;

/// The Python logger of an event's `target` (by default the Rust module path): `::` becomes
/// `.`, so `kafkalog::log::log_loader` logs to `kafkalog.log.log_loader`. A target outside the
/// crate (a dependency's events) is placed under `kafkalog.` so one logger configures them all.
pub fn logger_name(target: &str) -> String {
    let dotted = target.replace("::", ".");
    let dotted = dotted.trim_matches('.');
    if dotted.is_empty() {
        ROOT_LOGGER.to_string()
    } else if dotted == ROOT_LOGGER || dotted.starts_with("kafkalog.") {
        dotted.to_string()
    } else {
        format!("{ROOT_LOGGER}.{dotted}")
    }
}

/// The Python level number of a Rust level (`logging.ERROR` 40 ... `logging.DEBUG` 10, trace 5).
pub fn python_level(level: Level) -> i64 {
    match level {
        Level::Error => 40,
        Level::Warn => 30,
        Level::Info => 20,
        Level::Debug => 10,
        Level::Trace => PYTHON_TRACE,
    }
}

/// The most verbose Rust level Python could accept, given the lowest effective level among the
/// `kafkalog` loggers (`Logger.getEffectiveLevel()`, 0 when every level up to the root is
/// NOTSET) and `logging.disable`'s level (`logging.root.manager.disable`, 0 when not disabled).
/// Python passes a record of level `n` when `n >= effective` and `n > disable`; events of a
/// level below this filter are dropped by the `log` macros before their message is formatted.
pub fn level_filter(min_effective_level: i64, disable_level: i64) -> LevelFilter {
    let threshold = min_effective_level.max(disable_level.saturating_add(1));
    [Level::Trace, Level::Debug, Level::Info, Level::Warn, Level::Error]
        .into_iter()
        .find(|l| python_level(*l) >= threshold)
        .map_or(LevelFilter::Off, |l| l.to_level_filter())
}

/// One event, captured where it happened and delivered to Python later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The Rust level.
    pub level: Level,
    /// The `log` target (a module path unless the call named another).
    pub target: String,
    /// The formatted message.
    pub message: String,
    /// The Rust source file and line, for the record's `pathname` and `lineno`.
    pub file: Option<&'static str>,
    /// Line in `file`.
    pub line: u32,
    /// The name of the thread that logged it (`kafka-log-cleaner-thread-0`), if it has one.
    pub thread: Option<String>,
    /// When it was logged.
    pub time: SystemTime,
}

/// Events waiting for delivery, oldest first, at most `capacity` of them.
#[derive(Debug)]
pub struct EventQueue {
    events: VecDeque<Event>,
    capacity: usize,
    dropped: u64,
}

impl EventQueue {
    /// An empty queue holding at most `capacity` events.
    pub const fn new(capacity: usize) -> Self {
        EventQueue { events: VecDeque::new(), capacity, dropped: 0 }
    }

    /// Queues `event`; a full queue drops it and counts it instead. Returns whether it was queued.
    pub fn push(&mut self, event: Event) -> bool {
        if self.events.len() >= self.capacity {
            self.dropped += 1;
            return false;
        }
        self.events.push_back(event);
        true
    }

    /// The oldest event.
    pub fn pop(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The number of events dropped since the last call, reset to 0.
    pub fn take_dropped(&mut self) -> u64 {
        std::mem::take(&mut self.dropped)
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// No event waiting.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Forgets every waiting event and the drop count (a forked child: its parent delivers them).
    pub fn clear(&mut self) {
        self.events.clear();
        self.dropped = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_paths_map_to_dotted_loggers_under_kafkalog() {
        assert_eq!(logger_name("kafkalog::log::log_loader"), "kafkalog.log.log_loader");
        assert_eq!(logger_name("kafkalog::cleaner::log_cleaner"), "kafkalog.cleaner.log_cleaner");
        assert_eq!(logger_name("kafkalog"), "kafkalog");
        assert_eq!(logger_name("kafkalog.manager"), "kafkalog.manager");
        assert_eq!(logger_name(""), "kafkalog");
        // A dependency's events, and a crate whose name merely starts with "kafkalog".
        assert_eq!(logger_name("zstd::stream"), "kafkalog.zstd.stream");
        assert_eq!(logger_name("kafkalogger::x"), "kafkalog.kafkalogger.x");
    }

    /// Every module of the crate that logs, logs under one of the documented component loggers.
    #[test]
    fn every_logging_module_is_under_a_component_logger() {
        fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(path);
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("rust");
        let mut files = Vec::new();
        walk(&root, &mut files);
        let macros = ["log::info!", "log::warn!", "log::error!", "log::debug!", "log::trace!"];
        let mut checked = 0;
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            if !macros.iter().any(|m| text.contains(m)) {
                continue;
            }
            let module = file.strip_prefix(&root).unwrap().with_extension("");
            let target = format!("kafkalog::{}", module.to_string_lossy().replace('/', "::"));
            let name = logger_name(&target);
            assert!(
                COMPONENT_LOGGERS.iter().any(|(c, _)| name.starts_with(&format!("{c}."))),
                "{} logs to {name}, under no documented component logger",
                file.display()
            );
            checked += 1;
        }
        assert!(checked > 10, "{checked} files");
    }

    #[test]
    fn levels_map_to_python_numbers() {
        assert_eq!(python_level(Level::Error), 40);
        assert_eq!(python_level(Level::Warn), 30);
        assert_eq!(python_level(Level::Info), 20);
        assert_eq!(python_level(Level::Debug), 10);
        assert_eq!(python_level(Level::Trace), 5);
    }

    #[test]
    fn the_filter_follows_the_lowest_effective_level_and_logging_disable() {
        // Python's default: the root logger at WARNING, nothing disabled.
        assert_eq!(level_filter(30, 0), LevelFilter::Warn);
        assert_eq!(level_filter(20, 0), LevelFilter::Info);
        assert_eq!(level_filter(10, 0), LevelFilter::Debug);
        // Every logger NOTSET up to the root: everything passes, trace included.
        assert_eq!(level_filter(0, 0), LevelFilter::Trace);
        assert_eq!(level_filter(5, 0), LevelFilter::Trace);
        // Levels between the named ones: a record passes when its number is at least the level.
        assert_eq!(level_filter(15, 0), LevelFilter::Info);
        assert_eq!(level_filter(31, 0), LevelFilter::Error);
        assert_eq!(level_filter(50, 0), LevelFilter::Off);
        // logging.disable(n) drops records of level n and below.
        assert_eq!(level_filter(10, 20), LevelFilter::Warn);
        assert_eq!(level_filter(0, 30), LevelFilter::Error);
        assert_eq!(level_filter(0, 50), LevelFilter::Off);
        assert_eq!(level_filter(i64::MIN, i64::MAX), LevelFilter::Off);
    }

    fn event(message: &str) -> Event {
        Event {
            level: Level::Warn,
            target: "kafkalog::x".into(),
            message: message.into(),
            file: Some(file!()),
            line: line!(),
            thread: None,
            time: SystemTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn a_full_queue_counts_what_it_drops_and_keeps_the_order() {
        let mut q = EventQueue::new(2);
        assert!(q.push(event("a")) && q.push(event("b")));
        assert!(!q.push(event("c")) && !q.push(event("d")));
        assert_eq!(q.len(), 2);
        assert_eq!(q.take_dropped(), 2);
        assert_eq!(q.take_dropped(), 0);
        assert_eq!(q.pop().unwrap().message, "a");
        assert!(q.push(event("e")));
        assert_eq!(q.pop().unwrap().message, "b");
        assert_eq!(q.pop().unwrap().message, "e");
        assert!(q.pop().is_none() && q.is_empty());
        q.push(event("f"));
        q.push(event("g"));
        q.push(event("h"));
        q.clear();
        assert!(q.is_empty());
        assert_eq!(q.take_dropped(), 0);
    }
}
