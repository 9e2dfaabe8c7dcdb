//! Who holds a lock on a file or directory, for error messages: a partition directory's
//! `flock` (a writable `UnifiedLog`, a LogManager's log, a Spark task) or a log dir's `.lock`
//! (a LogManager's open-file-description lock, or a Kafka broker's POSIX lock). Linux only:
//! read from `/proc/locks`, and for open-file-description locks (which `/proc/locks` lists
//! without a pid) from the `lock:` lines of `/proc/<pid>/fdinfo`. Elsewhere, or when `/proc`
//! tells nothing, the holder is unknown.
//!
//! Thread-safety: stateless; reads `/proc` on each call (error paths only).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// A description of the process holding a lock on `path` ("process 1234 (python -m app)",
/// "this process (pid 1234)"), or `None` when it cannot be told.
pub fn describe(path: &Path) -> Option<String> {
    holder_pid(path).map(describe_pid)
}

/// The process holding a lock on `path`, or `None` when it cannot be told.
pub fn holder_pid(path: &Path) -> Option<u32> {
    let meta = std::fs::metadata(path).ok()?;
    let key = format!("{:02x}:{:02x}:{}", libc_major(meta.dev()), libc_minor(meta.dev()), meta.ino());
    pid_from_proc_locks(&key).or_else(|| pid_from_fdinfo(&meta))
}

/// `pid` as [`describe`] names it: "this process (pid 1234)" or "process 1234 (its command)".
pub fn describe_pid(pid: u32) -> String {
    if pid == std::process::id() {
        return format!("this process (pid {pid})");
    }
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<String> =
        cmdline.split(|b| *b == 0).filter(|w| !w.is_empty()).map(|w| String::from_utf8_lossy(w).into_owned()).collect();
    let mut command: String = words.join(" ").chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if command.len() > 120 {
        let cut = (0..=117).rev().find(|&i| command.is_char_boundary(i)).unwrap_or(0);
        command.truncate(cut);
        command.push_str("...");
    }
    if command.is_empty() {
        format!("process {pid}")
    } else {
        format!("process {pid} ({command})")
    }
}

/// `/proc/locks` lines look like `1: FLOCK  ADVISORY  WRITE 28020 fe:00:10063717 0 EOF`; an
/// open-file-description lock has pid -1.
fn pid_from_proc_locks(key: &str) -> Option<u32> {
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let at = fields.iter().position(|f| *f == key)?;
        let pid: i64 = fields.get(at.checked_sub(1)?)?.parse().ok()?;
        u32::try_from(pid).ok().filter(|p| *p > 0)
    })
}

/// Scans every process's open files for one on the same inode whose `fdinfo` lists a lock.
fn pid_from_fdinfo(meta: &std::fs::Metadata) -> Option<u32> {
    for proc_entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = proc_entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(fds) = std::fs::read_dir(proc_entry.path().join("fd")) else { continue };
        for fd in fds.flatten() {
            let Ok(target) = std::fs::metadata(fd.path()) else { continue };
            if target.dev() != meta.dev() || target.ino() != meta.ino() {
                continue;
            }
            let info = proc_entry.path().join("fdinfo").join(fd.file_name());
            if std::fs::read_to_string(info).is_ok_and(|s| s.lines().any(|l| l.starts_with("lock:"))) {
                return Some(pid);
            }
        }
    }
    None
}

/// glibc's `gnu_dev_major` / `gnu_dev_minor` encoding of a `dev_t`.
fn libc_major(dev: u64) -> u64 {
    ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff)
}

fn libc_minor(dev: u64) -> u64 {
    ((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_this_process_for_its_own_flock() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(describe(dir.path()), None);
        let _lock = crate::util::file::DirLock::try_lock(dir.path()).unwrap();
        let me = std::process::id();
        assert_eq!(describe(dir.path()), Some(format!("this process (pid {me})")));
    }

    #[test]
    fn names_this_process_for_its_own_ofd_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(crate::file_names::LOCK_FILE);
        let _lock = crate::util::file::FileLock::try_lock(&path).unwrap();
        let me = std::process::id();
        assert_eq!(describe(&path), Some(format!("this process (pid {me})")));
    }
}
