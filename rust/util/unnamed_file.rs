//! Unnamed files (Linux `O_TMPFILE`): a regular file created in a directory's file system with
//! no name, named later with `linkat`. Not a Kafka class: Kafka creates a new segment's files
//! inside the roll, under the log's lock.
//!
//! Creating a file costs its inode far more than its name: ext4's inode allocator walks the
//! inode bitmap and skips every recently deleted inode, reading its inode table block, so on a
//! disk where files were just deleted a create can take a quarter of a millisecond or more,
//! and a roll creates four files. So a log creates the next roll's files unnamed on its
//! background flush task (`segment::reserved_files::ReservedSegmentFiles`), and the roll only
//! names them. A file that is never named disappears when its descriptor closes (at the latest
//! when the process exits, even by SIGKILL; after a power loss or a kernel crash, when the
//! file system is next mounted): it never shows in the directory, so neither Kafka nor a
//! crash recovery ever sees it.
//!
//! Naming passes the fault-injection seam as the operation it replaces: the create of a
//! segment file (`FaultOp::Open`), the rename of a producer snapshot into place
//! (`FaultOp::Rename`), after the write of its contents (`FaultOp::Write`).
//!
//! An unnamed file lives only as long as its descriptor, so files created ahead hold
//! descriptors until they are used. Each [`UnnamedFile`] holds a share of a process-wide
//! budget (a sixteenth of the soft open-file limit, at most 4096), so they never take the
//! descriptors a log's segments need: past the budget nothing is created ahead.
//!
//! A process that forks while holding unnamed files shares them with its child; only the
//! process that owns the log (its directory lock) may name them.
//!
//! Thread-safety: an `UnnamedFile` is owned and moved; the budget is a process-wide atomic.

#![allow(unsafe_code)] // `linkat` and `getrlimit`; see the SAFETY comments

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

/// A file created unnamed, with its share of the descriptor budget (see the module docs).
#[derive(Debug)]
pub struct UnnamedFile {
    file: File,
    _permit: DescriptorPermit,
}

impl UnnamedFile {
    /// Creates an unnamed regular file, open read-write, in the file system of the directory
    /// `dir` (mode 0666 less the umask once named, as an ordinary create). `Ok(None)` when the
    /// process's unnamed files already hold the descriptor budget.
    ///
    /// # Errors
    /// `ErrorKind::Unsupported` when the file system or the kernel cannot (`O_TMPFILE` needs
    /// Linux 3.11 and a file system that supports it: ext4, XFS, Btrfs, tmpfs do); otherwise the
    /// open's error (a missing directory, no space, no inodes).
    pub fn create_in(dir: &Path) -> io::Result<Option<Self>> {
        let Some(permit) = DescriptorPermit::acquire(1) else { return Ok(None) };
        let opened = OpenOptions::new().read(true).write(true).mode(0o666).custom_flags(libc::O_TMPFILE).open(dir);
        match opened {
            Ok(file) => Ok(Some(UnnamedFile { file, _permit: permit })),
            // EOPNOTSUPP: the file system has no O_TMPFILE; EISDIR / EINVAL: the kernel
            // predates it and took the flags for a directory open.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)) => {
                Err(io::Error::new(io::ErrorKind::Unsupported, e))
            }
            Err(e) => Err(e),
        }
    }

    /// Names the file `path`, as the operation `op` (`label` in errors) that would otherwise
    /// create `path` (the fault seam checks `op` on `path` first), and returns it, now an
    /// ordinary file. `Ok(None)` when the name cannot be given here, the file then vanishing:
    /// `path` exists (`EEXIST`), or the kernel cannot link an unnamed file (no `/proc`, a
    /// restricted `linkat`, another file system); the caller creates `path` the usual way.
    ///
    /// # Errors
    /// `Io` naming `path` for an injected fault or a failure of the file system itself (no
    /// space, an I/O error, a read-only file system).
    pub fn name(self, path: &Path, op: FaultOp, label: &'static str) -> Result<Option<File>> {
        check(path, op).map_err(|e| Error::io(path, label, e))?;
        match link(&self.file, path) {
            Ok(()) => Ok(Some(self.file)),
            Err(e) if cannot_link_here(&e) => {
                log::debug!("could not name a file created ahead {} ({e}); creating it", path.display());
                Ok(None)
            }
            Err(e) => Err(Error::io(path, label, e)),
        }
    }

    /// Writes `contents` into the file and names it `path`, nothing fsynced:
    /// `util::file::replace_file(path, contents, false)` with one `linkat` instead of a create,
    /// a write, a close and a rename. The name appears with the whole contents or not at all.
    /// When the name cannot be given here (e.g. `path` exists), falls back to `replace_file`.
    ///
    /// # Errors
    /// `Io` naming the file when the write, the naming or the fallback fails.
    pub fn write_and_name(self, path: &Path, contents: &[u8]) -> Result<()> {
        check(path, FaultOp::Write)
            .and_then(|()| self.file.write_all_at(contents, 0))
            .map_err(|e| Error::io(path, "write", e))?;
        match self.name(path, FaultOp::Rename, "rename")? {
            Some(_) => Ok(()),
            None => crate::util::file::replace_file(path, contents, false),
        }
    }
}

/// Whether a failed `linkat` only means that this file cannot be named `path` here (the name
/// exists, or linking unnamed files is not possible in this process), not that the file system
/// failed.
fn cannot_link_here(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EEXIST | libc::ENOENT | libc::EXDEV | libc::EPERM | libc::EACCES | libc::ENOSYS | libc::EOPNOTSUPP)
    )
}

/// Names the unnamed file `file` `path` (`linkat` through `/proc/self/fd`, which needs no
/// privilege). Fails with `AlreadyExists` when `path` exists.
fn link(file: &File, path: &Path) -> io::Result<()> {
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

/// Descriptors held by unnamed files, in the whole process.
static HELD: AtomicUsize = AtomicUsize::new(0);

/// The most descriptors unnamed files may hold at once: a sixteenth of the soft open-file
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

/// Leave to hold `n` descriptors of unnamed files; released when dropped.
#[derive(Debug)]
struct DescriptorPermit {
    n: usize,
    held: &'static AtomicUsize,
}

impl DescriptorPermit {
    /// A permit for `n` descriptors, or `None` when the budget is spent.
    fn acquire(n: usize) -> Option<Self> {
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

    fn create(dir: &Path) -> UnnamedFile {
        UnnamedFile::create_in(dir).unwrap().expect("within the descriptor budget")
    }

    #[test]
    fn an_unnamed_file_is_invisible_until_named() {
        let dir = tempfile::tempdir().unwrap();
        let unnamed = create(dir.path());
        unnamed.file.write_all_at(b"abc", 0).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing named yet");
        let path = dir.path().join("a.log");
        let file = unnamed.name(&path, FaultOp::Open, "open").unwrap().expect("named");
        assert_eq!(std::fs::read(&path).unwrap(), b"abc");
        // The descriptor is the named file's.
        file.write_all_at(b"d", 3).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"abcd");
    }

    #[test]
    fn a_file_never_named_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        drop(create(dir.path()));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn naming_over_an_existing_file_is_refused_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        std::fs::write(&path, b"old").unwrap();
        let unnamed = create(dir.path());
        assert_eq!(link(&unnamed.file, &path).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert!(unnamed.name(&path, FaultOp::Open, "open").unwrap().is_none());
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
    }

    #[test]
    fn write_and_name_replaces_an_existing_file_by_the_fallback() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("7.snapshot");
        create(dir.path()).write_and_name(&path, b"first").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        create(dir.path()).write_and_name(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["7.snapshot"], "no .tmp file is left");
    }

    #[test]
    fn an_injected_fault_fails_the_naming_with_the_callers_label() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        let _fault = crate::util::fault::inject(&path, FaultOp::Open, libc::EIO, Some(1));
        let err = create(dir.path()).name(&path, FaultOp::Open, "open").unwrap_err();
        assert!(matches!(&err, Error::Io { op: "open", .. }), "{err:?}");
        assert!(err.to_string().contains("a.log"), "{err}");
        assert!(!path.exists());
        let snapshot = dir.path().join("7.snapshot");
        let _fault = crate::util::fault::inject(&snapshot, FaultOp::Rename, libc::EIO, Some(1));
        let err = create(dir.path()).write_and_name(&snapshot, b"x").unwrap_err();
        assert!(matches!(&err, Error::Io { op: "rename", .. }), "{err:?}");
        assert!(!snapshot.exists());
    }

    #[test]
    fn only_the_names_that_cannot_be_given_here_fall_back() {
        for errno in [libc::EEXIST, libc::ENOENT, libc::EXDEV, libc::EPERM] {
            assert!(cannot_link_here(&io::Error::from_raw_os_error(errno)), "{errno}");
        }
        for errno in [libc::EIO, libc::ENOSPC, libc::EDQUOT, libc::EROFS, libc::EMFILE] {
            assert!(!cannot_link_here(&io::Error::from_raw_os_error(errno)), "{errno}");
        }
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
        let err = UnnamedFile::create_in(&dir.path().join("missing")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}
