//! Unnamed files (Linux `O_TMPFILE`): a regular file created in a directory's file system with
//! no name, named later with `linkat`. Not a Kafka class: Kafka creates a new segment's files
//! inside the roll, under the log's lock.
//!
//! Creating a file costs its inode far more than its name: ext4's inode allocator walks the
//! inode bitmap and skips recently deleted inodes, about a quarter of a millisecond per file on a
//! directory where retention deletes segments, and a roll creates four files. So a log creates
//! the next roll's files unnamed on its background flush task
//! (`segment::reserved_files::ReservedSegmentFiles`), and the roll only names them. A file
//! that is never named disappears when its descriptor closes (or, after a crash, when the file
//! system is next mounted): it never shows in the directory, so neither Kafka nor a crash
//! recovery ever sees it.
//!
//! Every step passes the fault-injection seam: naming a file is the roll's create
//! (`FaultOp::Open` on the new name), writing it is `FaultOp::Write`.
//!
//! An unnamed file lives only as long as its descriptor, so files created ahead hold
//! descriptors until they are used. [`DescriptorPermit`] bounds how many the whole process
//! holds this way, so they never take the descriptors a log's segments need.
//!
//! Thread-safety: free functions on descriptors the caller owns; the permits' count is a
//! process-wide atomic.

#![allow(unsafe_code)] // `linkat`; see the SAFETY comment

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::util::fault::{check, FaultOp};

/// Creates an unnamed regular file, open read-write, in the file system of the directory `dir`
/// (mode 0666 less the umask once named, as an ordinary create). `Ok(None)` when the file
/// system or the kernel cannot (`O_TMPFILE` needs Linux 3.11 and a file system that supports
/// it: ext4, XFS, Btrfs, tmpfs do).
///
/// # Errors
/// The open's error, other than "not supported" (a missing directory, no space, no inodes).
pub fn create_in(dir: &Path) -> io::Result<Option<File>> {
    let opened = OpenOptions::new().read(true).write(true).mode(0o666).custom_flags(libc::O_TMPFILE).open(dir);
    match opened {
        Ok(file) => Ok(Some(file)),
        // EOPNOTSUPP: the file system has no O_TMPFILE; EISDIR / EINVAL: the kernel predates it
        // and took the flags for a directory open.
        Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Names the unnamed file `file` `path` (`linkat` through `/proc/self/fd`, which needs no
/// privilege). Fails with `AlreadyExists` when `path` exists, and with the kernel's error
/// when it cannot link (another file system, no `/proc`).
///
/// # Errors
/// As `linkat(2)`.
pub fn link(file: &File, path: &Path) -> io::Result<()> {
    let source = std::ffi::CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
    let target = std::ffi::CString::new(path.as_os_str().as_bytes())?;
    let (from, to) = (source.as_ptr(), target.as_ptr());
    // SAFETY: `from` and `to` point into NUL-terminated C strings that outlive the call;
    // linkat reads them and touches no memory of ours.
    let rc = unsafe { libc::linkat(libc::AT_FDCWD, from, libc::AT_FDCWD, to, libc::AT_SYMLINK_FOLLOW) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Names `reserved` `path` as the create of a new file would make it, through the fault seam
/// (`FaultOp::Open` on `path`: an injected fault fails the create). Returns `Ok(false)` when
/// the kernel refused the link (the name exists, another file system, no `/proc`): the caller
/// then creates `path` the usual way, and `reserved` is dropped unnamed.
///
/// # Errors
/// An injected fault, as `Io` naming `path`.
pub fn name_as_new(reserved: &File, path: &Path) -> Result<bool> {
    check(path, FaultOp::Open).map_err(|e| Error::io(path, "create", e))?;
    match link(reserved, path) {
        Ok(()) => Ok(true),
        Err(e) => {
            log::debug!("could not name a file created ahead as {} ({e}); creating it", path.display());
            Ok(false)
        }
    }
}

/// Writes `contents` into the unnamed file `reserved` and names it `path`, nothing fsynced:
/// `util::file::replace_file(path, contents, false)` in one `linkat` instead of a create, a
/// write, a close and a rename. The name appears with the whole contents or not at all. When
/// the link is refused (e.g. `path` exists), falls back to `replace_file`.
///
/// # Errors
/// `Io` naming the file when a write, the link's fault check or the fallback fails.
pub fn write_and_name(reserved: File, path: &Path, contents: &[u8]) -> Result<()> {
    check(path, FaultOp::Write)
        .and_then(|()| reserved.write_all_at(contents, 0))
        .map_err(|e| Error::io(path, "write", e))?;
    let named = name_as_new(&reserved, path)?;
    // Closed either way: named, it is the file at `path`; unnamed, it vanishes.
    drop(reserved);
    if named {
        return Ok(());
    }
    crate::util::file::replace_file(path, contents, false)
}

/// Descriptors held by files created ahead, in the whole process.
static HELD: AtomicUsize = AtomicUsize::new(0);

/// The most descriptors files created ahead may hold at once: a sixteenth of the soft open-file
/// limit (`RLIMIT_NOFILE`), at most 4096 (64 with the common default limit of 1024).
fn descriptor_budget() -> usize {
    static BUDGET: OnceLock<usize> = OnceLock::new();
    *BUDGET.get_or_init(|| {
        // SAFETY: `rlimit` is a plain C struct for which all-zero bytes are a valid value.
        let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
        // SAFETY: getrlimit writes only `limit`, which we own.
        let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) };
        let soft = if rc == 0 { usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX) } else { 1024 };
        (soft / 16).min(4096)
    })
}

/// Leave to hold `n` descriptors of files created ahead; released when dropped.
#[derive(Debug)]
pub struct DescriptorPermit {
    n: usize,
    held: &'static AtomicUsize,
}

impl DescriptorPermit {
    /// A permit for `n` descriptors, or `None` when the process's files created ahead already
    /// hold the budget (the caller then creates its files when it needs them).
    pub fn acquire(n: usize) -> Option<Self> {
        Self::acquire_from(&HELD, descriptor_budget(), n)
    }

    fn acquire_from(held: &'static AtomicUsize, budget: usize, n: usize) -> Option<Self> {
        held.fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| (h + n <= budget).then_some(h + n))
            .ok()
            .map(|_| DescriptorPermit { n, held })
    }
}

impl Drop for DescriptorPermit {
    fn drop(&mut self) {
        self.held.fetch_sub(self.n, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unnamed_file_is_invisible_until_named() {
        let dir = tempfile::tempdir().unwrap();
        let Some(file) = create_in(dir.path()).unwrap() else {
            panic!("the test directory's file system has no O_TMPFILE");
        };
        file.write_all_at(b"abc", 0).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing named yet");
        let path = dir.path().join("a.log");
        assert!(name_as_new(&file, &path).unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"abc");
        // The descriptor is the named file's.
        file.write_all_at(b"d", 3).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"abcd");
    }

    #[test]
    fn a_file_never_named_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        drop(create_in(dir.path()).unwrap().expect("O_TMPFILE"));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn naming_over_an_existing_file_is_refused_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        std::fs::write(&path, b"old").unwrap();
        let file = create_in(dir.path()).unwrap().expect("O_TMPFILE");
        assert_eq!(link(&file, &path).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert!(!name_as_new(&file, &path).unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
    }

    #[test]
    fn write_and_name_replaces_an_existing_file_by_the_fallback() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("7.snapshot");
        write_and_name(create_in(dir.path()).unwrap().unwrap(), &path, b"first").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        write_and_name(create_in(dir.path()).unwrap().unwrap(), &path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["7.snapshot"], "no .tmp file is left");
    }

    #[test]
    fn an_injected_create_fault_fails_the_naming() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        let file = create_in(dir.path()).unwrap().unwrap();
        let _fault = crate::util::fault::inject(&path, FaultOp::Open, libc::EIO, Some(1));
        let err = name_as_new(&file, &path).unwrap_err();
        assert!(err.to_string().contains("a.log"), "{err}");
        assert!(!path.exists());
    }

    #[test]
    fn permits_stay_within_the_budget_and_return_on_drop() {
        static TEST_HELD: AtomicUsize = AtomicUsize::new(0);
        let a = DescriptorPermit::acquire_from(&TEST_HELD, 10, 4).expect("4 of 10");
        let b = DescriptorPermit::acquire_from(&TEST_HELD, 10, 4).expect("8 of 10");
        assert!(DescriptorPermit::acquire_from(&TEST_HELD, 10, 4).is_none(), "12 > 10");
        drop(a);
        let c = DescriptorPermit::acquire_from(&TEST_HELD, 10, 4).expect("8 of 10 again");
        drop((b, c));
        assert_eq!(TEST_HELD.load(Ordering::Acquire), 0);
        assert!(descriptor_budget() >= 1024 / 16, "the test machine's limit is at least 1024");
    }

    #[test]
    fn create_in_a_missing_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(create_in(&dir.path().join("missing")).is_err());
    }
}
