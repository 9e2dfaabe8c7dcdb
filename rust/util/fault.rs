//! A fault-injection seam for file I/O, so tests can make a disk fail on purpose (EIO, ENOSPC on
//! write, a failed fsync) instead of waiting for one.
//!
//! Every place kafkalog creates, writes, syncs, resizes, maps, renames or deletes a file calls
//! [`check`] just before the real system call, with the path it is about to touch. When a rule
//! installed with [`inject`] matches (the path starts with the rule's prefix, compared component
//! by component, and the operation is the rule's), `check` returns the rule's errno as an
//! `io::Error` and the call site reports it through `Error::io` exactly as it would report the
//! real failure: same path, same operation name. The `.log` file's positional reads are guarded
//! too ([`FaultOp::Read`]); other reads are not.
//!
//! Nothing in Kafka mirrors this: Kafka's tests inject failures with mocks (a mocked
//! `FileChannel` or `LogSegment` throwing `IOException`). Rust has no such mocks, so the seam is
//! compiled in always. It costs one relaxed atomic load per I/O call while no rule is installed.
//!
//! Prefixes are compared as given, without canonicalising: inject on the same path spelling the
//! log was opened with (a temporary directory, say). Writes to a mapped index go through memory,
//! not a system call, and are not guarded; the mapping itself ([`FaultOp::Mmap`]) and its
//! `msync` ([`FaultOp::Fsync`]) are.
//!
//! For crash tests, [`trace`] also writes every file operation under a prefix that goes through
//! (one line each, `<op> <path>`, in the order of the `check` calls) to a trace file, so a test
//! can see after a SIGKILL which writes were followed by an fsync before a checkpoint named
//! their offsets. A line is written just before its system call and only if no rule failed or
//! crashed it.
//!
//! Thread-safety: the rule list is process-global and guarded by a mutex; every function here
//! may be called from any thread. A rule installed by one thread is seen by another thread's
//! next `check` once the two have synchronised (the relaxed fast path may miss a rule installed
//! concurrently with no happens-before edge, which only tests that race themselves could see).

#![allow(unsafe_code)] // see the SAFETY comments; lib.rs lists every module that needs it

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

/// The file operations that can be made to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultOp {
    /// Creating a file or directory, or opening a file for writing.
    Open,
    /// Writing bytes through a file descriptor (appends, checkpoint contents).
    Write,
    /// `fsync` / `fdatasync` of a file or directory, and `msync` of a mapped index.
    Fsync,
    /// Renaming a file.
    Rename,
    /// Unlinking a file.
    Delete,
    /// A positional read of a segment's `.log` file.
    Read,
    /// Changing a file's length (`ftruncate`): truncation, trim, preallocation, index resize.
    Truncate,
    /// Memory-mapping an index file.
    Mmap,
}

impl FaultOp {
    /// Every operation, in the order of [`FaultOp::NAMES`].
    pub const ALL: [FaultOp; 8] = [
        FaultOp::Open,
        FaultOp::Write,
        FaultOp::Fsync,
        FaultOp::Rename,
        FaultOp::Delete,
        FaultOp::Read,
        FaultOp::Truncate,
        FaultOp::Mmap,
    ];

    /// The lower-case names [`FaultOp::from_name`] accepts.
    pub const NAMES: [&'static str; 8] = ["open", "write", "fsync", "rename", "delete", "read", "truncate", "mmap"];

    /// The operation's lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            FaultOp::Open => "open",
            FaultOp::Write => "write",
            FaultOp::Fsync => "fsync",
            FaultOp::Rename => "rename",
            FaultOp::Delete => "delete",
            FaultOp::Read => "read",
            FaultOp::Truncate => "truncate",
            FaultOp::Mmap => "mmap",
        }
    }

    /// The operation called `name` (one of [`FaultOp::NAMES`]), if any.
    pub fn from_name(name: &str) -> Option<Self> {
        FaultOp::ALL.into_iter().find(|op| op.name() == name)
    }
}

impl std::fmt::Display for FaultOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a matching rule does.
#[derive(Debug, Clone, Copy)]
enum Action {
    /// `op` fails with this errno.
    Fail { op: FaultOp, errno: i32 },
    /// The process kills itself with SIGKILL just before a file operation that changes
    /// something, once `skip` of them have gone through (see [`crash_after`]).
    Crash { skip: u64 },
}

/// One installed rule.
#[derive(Debug)]
struct Rule {
    id: u64,
    prefix: PathBuf,
    action: Action,
    /// Failures left before the rule removes itself; `None` = until cleared.
    remaining: Option<u64>,
}

/// The installed rules, in installation order (the first matching rule fires).
static RULES: Mutex<Vec<Rule>> = Mutex::new(Vec::new());
/// `RULES.len()`, kept beside it so that [`check`] needs no lock while no rule is installed.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Removes the rules `keep` refuses, keeping [`ACTIVE`] in step (the rules, and one for a
/// trace). Callers hold the lock.
fn retain(rules: &mut Vec<Rule>, keep: impl FnMut(&Rule) -> bool) {
    rules.retain(keep);
    let traced = usize::from(TRACE.lock().is_some());
    ACTIVE.store(rules.len() + traced, Ordering::Relaxed);
}

/// An installed rule. Dropping the handle removes the rule (if it has not already run out);
/// [`FaultHandle::persist`] keeps it until [`clear_all`], [`clear_under`] or its count runs out.
#[derive(Debug)]
#[must_use = "dropping the handle removes the rule at once; call persist() to keep it"]
pub struct FaultHandle {
    id: u64,
}

impl FaultHandle {
    /// Removes the rule now (the same as dropping the handle).
    pub fn clear(self) {}

    /// Keeps the rule installed after the handle is gone.
    pub fn persist(self) {
        std::mem::forget(self);
    }
}

impl Drop for FaultHandle {
    fn drop(&mut self) {
        let id = self.id;
        retain(&mut RULES.lock(), |r| r.id != id);
    }
}

/// Makes `op` on every path under `path_prefix` fail with `errno` (e.g. `libc::EIO`), `times`
/// times or, with `None`, until the rule is removed. Returns the rule's handle.
pub fn inject(path_prefix: &Path, op: FaultOp, errno: i32, times: Option<u64>) -> FaultHandle {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let mut rules = RULES.lock();
    if times != Some(0) {
        rules.push(Rule {
            id,
            prefix: path_prefix.to_path_buf(),
            action: Action::Fail { op, errno },
            remaining: times,
        });
        retain(&mut rules, |_| true);
    }
    FaultHandle { id }
}

/// For crash tests: the process kills itself with SIGKILL just before the file operation under
/// `path_prefix` that would change something (every [`FaultOp`] but `Read`) after `skip` of
/// them have gone through. A crash at a chosen, repeatable point of the work, between any two
/// system calls, instead of a kill sent after a wall-clock delay; what was written before it
/// stays in the page cache, as after a real SIGKILL.
pub fn crash_after(path_prefix: &Path, skip: u64) -> FaultHandle {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let mut rules = RULES.lock();
    rules.push(Rule { id, prefix: path_prefix.to_path_buf(), action: Action::Crash { skip }, remaining: None });
    retain(&mut rules, |_| true);
    FaultHandle { id }
}

/// Removes every rule (and the trace) whose prefix lies under `path_prefix` (or equals it).
pub fn clear_under(path_prefix: &Path) {
    let mut rules = RULES.lock();
    let mut trace = TRACE.lock();
    if trace.as_ref().is_some_and(|(prefix, _)| prefix.starts_with(path_prefix)) {
        *trace = None;
    }
    drop(trace);
    retain(&mut rules, |r| !r.prefix.starts_with(path_prefix));
}

/// Removes every rule and the trace. Tests that share the process should prefer
/// [`clear_under`] or the handle.
pub fn clear_all() {
    let mut rules = RULES.lock();
    *TRACE.lock() = None;
    retain(&mut rules, |_| false);
}

/// Where [`trace`] writes: the prefix traced and the trace file (opened `O_APPEND`).
static TRACE: Mutex<Option<(PathBuf, std::fs::File)>> = Mutex::new(None);

/// For crash tests: appends `<op> <path>` to `trace_file` for every file operation under
/// `path_prefix` that goes through (see the module docs), until [`clear_all`] or
/// [`clear_under`] a prefix of it. One `write` per line, so a SIGKILL leaves whole lines; a
/// second call replaces the first.
///
/// # Errors
/// `Io` if `trace_file` cannot be opened for appending.
pub fn trace(path_prefix: &Path, trace_file: &Path) -> crate::error::Result<()> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(trace_file)
        .map_err(|e| crate::error::Error::io(trace_file, "open fault trace", e))?;
    let mut rules = RULES.lock();
    *TRACE.lock() = Some((path_prefix.to_path_buf(), file));
    retain(&mut rules, |_| true);
    Ok(())
}

/// Writes the trace line of `op` on `path`, if traced. A failed write only loses the line.
fn trace_op(path: &Path, op: FaultOp) {
    use std::io::Write;
    if let Some((prefix, file)) = TRACE.lock().as_mut() {
        if path.starts_with(prefix.as_path()) {
            let _ = file.write_all(format!("{} {}\n", op.name(), path.display()).as_bytes());
        }
    }
}

/// The seam: `Err(errno)` when an installed rule matches `op` on `path` (counting the failure
/// against the rule), `Ok(())` otherwise. Call it just before the system call it stands for.
#[inline]
pub fn check(path: &Path, op: FaultOp) -> io::Result<()> {
    if ACTIVE.load(Ordering::Relaxed) == 0 {
        return Ok(());
    }
    check_rules(path, op)
}

#[cold]
fn check_rules(path: &Path, op: FaultOp) -> io::Result<()> {
    let result = apply_rules(path, op);
    if result.is_ok() {
        trace_op(path, op);
    }
    result
}

fn apply_rules(path: &Path, op: FaultOp) -> io::Result<()> {
    let mut rules = RULES.lock();
    let matches = |r: &Rule| {
        path.starts_with(&r.prefix)
            && match r.action {
                Action::Fail { op: rule_op, .. } => rule_op == op,
                Action::Crash { .. } => op != FaultOp::Read,
            }
    };
    let Some(i) = rules.iter().position(matches) else {
        return Ok(());
    };
    let errno = match &mut rules[i].action {
        Action::Fail { errno, .. } => *errno,
        Action::Crash { skip: 0 } => {
            // SAFETY: getpid and kill take no pointers; SIGKILL ends the process here.
            unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            unreachable!("SIGKILL returned");
        }
        Action::Crash { skip } => {
            *skip -= 1;
            return Ok(());
        }
    };
    if let Some(remaining) = &mut rules[i].remaining {
        *remaining = remaining.saturating_sub(1);
        if *remaining == 0 {
            rules.remove(i);
            retain(&mut rules, |_| true);
        }
    }
    Err(io::Error::from_raw_os_error(errno))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (op, name) in FaultOp::ALL.into_iter().zip(FaultOp::NAMES) {
            assert_eq!(op.name(), name);
            assert_eq!(FaultOp::from_name(name), Some(op));
        }
        assert_eq!(FaultOp::from_name("Write"), None);
    }

    #[test]
    fn rules_match_prefix_and_op_and_count_down() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a").join("00000000000000000000.log");
        let handle = inject(&dir.path().join("a"), FaultOp::Write, libc::ENOSPC, Some(2));
        assert!(check(&file, FaultOp::Fsync).is_ok(), "another op");
        assert!(check(&dir.path().join("ab"), FaultOp::Write).is_ok(), "prefixes compare whole components");
        for _ in 0..2 {
            assert_eq!(check(&file, FaultOp::Write).unwrap_err().raw_os_error(), Some(libc::ENOSPC));
        }
        assert!(check(&file, FaultOp::Write).is_ok(), "the rule ran out");
        drop(handle);
    }

    #[test]
    fn a_trace_lists_the_operations_that_went_through() {
        let dir = tempfile::tempdir().unwrap();
        let (traced, trace_file) = (dir.path().join("a"), dir.path().join("trace"));
        trace(&traced, &trace_file).unwrap();
        let fail = inject(&traced.join("f"), FaultOp::Fsync, libc::EIO, Some(1));
        check(&traced.join("f"), FaultOp::Write).unwrap();
        assert!(check(&traced.join("f"), FaultOp::Fsync).is_err(), "failed: not traced");
        check(&traced.join("f"), FaultOp::Fsync).unwrap();
        check(&dir.path().join("b"), FaultOp::Write).unwrap();
        drop(fail);
        clear_under(&traced);
        check(&traced.join("f"), FaultOp::Rename).unwrap();
        let f = traced.join("f").display().to_string();
        assert_eq!(std::fs::read_to_string(&trace_file).unwrap(), format!("write {f}\nfsync {f}\n"));
    }

    #[test]
    fn handles_and_clear_under_remove_rules() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        let handle = inject(dir.path(), FaultOp::Delete, libc::EIO, None);
        assert!(check(&file, FaultOp::Delete).is_err());
        assert!(check(&file, FaultOp::Delete).is_err(), "no count: fails until cleared");
        handle.clear();
        assert!(check(&file, FaultOp::Delete).is_ok());

        inject(&file, FaultOp::Rename, libc::EIO, None).persist();
        assert!(check(&file, FaultOp::Rename).is_err());
        clear_under(dir.path());
        assert!(check(&file, FaultOp::Rename).is_ok());
        let _none = inject(&file, FaultOp::Open, libc::EIO, Some(0));
        assert!(check(&file, FaultOp::Open).is_ok(), "a zero count installs nothing");
    }
}
