//! Durability helpers in one place: atomic replace (tmp + fsync + rename + directory fsync),
//! directory fsync, and I/O errors that name the file. Every write, fsync, rename and delete
//! passes the fault-injection seam (`util::fault::check`) first.

#![allow(unsafe_code)] // see the SAFETY comments; lib.rs lists every module that needs it

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::file_names::{with_suffix, TMP_FILE_SUFFIX};
use crate::util::fault::{check, FaultOp};

/// Writes `contents` to `path` atomically (Kafka's `Utils.atomicMoveWithFallback` after writing a
/// `.tmp` file): write `<path>.tmp`, fsync it, rename it over `path`, fsync the directory.
/// After a crash the file holds either the old or the new contents, never a mix.
pub fn atomic_write(path: &Path, contents: &[u8]) -> Result<()> {
    let tmp = with_suffix(path, TMP_FILE_SUFFIX);
    {
        let mut f = check(&tmp, FaultOp::Open)
            .and_then(|()| OpenOptions::new().write(true).create(true).truncate(true).open(&tmp))
            .map_err(|e| Error::io(&tmp, "create", e))?;
        check(&tmp, FaultOp::Write).and_then(|()| f.write_all(contents)).map_err(|e| Error::io(&tmp, "write", e))?;
        check(&tmp, FaultOp::Fsync).and_then(|()| f.sync_all()).map_err(|e| Error::io(&tmp, "fsync", e))?;
    }
    check(path, FaultOp::Rename).and_then(|()| fs::rename(&tmp, path)).map_err(|e| Error::io(path, "rename", e))?;
    if let Some(dir) = path.parent() {
        fsync_dir(dir)?;
    }
    Ok(())
}

/// Writes `contents` to `<path>.tmp` and renames it over `path`, so `path` always holds a whole
/// file. With `sync`, this is [`atomic_write`] (the file and the directory are fsynced);
/// without, nothing is fsynced: a crash of the process leaves the old or the new file, a power
/// loss may leave a damaged one, which its reader must detect (Kafka's producer snapshots taken
/// at roll, fsynced later by the flush).
pub fn replace_file(path: &Path, contents: &[u8], sync: bool) -> Result<()> {
    if sync {
        return atomic_write(path, contents);
    }
    let tmp = with_suffix(path, TMP_FILE_SUFFIX);
    {
        let mut f = check(&tmp, FaultOp::Open)
            .and_then(|()| OpenOptions::new().write(true).create(true).truncate(true).open(&tmp))
            .map_err(|e| Error::io(&tmp, "create", e))?;
        check(&tmp, FaultOp::Write).and_then(|()| f.write_all(contents)).map_err(|e| Error::io(&tmp, "write", e))?;
    }
    check(path, FaultOp::Rename).and_then(|()| fs::rename(&tmp, path)).map_err(|e| Error::io(path, "rename", e))
}

/// Writes `contents` over the start of `path` (created if missing) and cuts the file to their
/// length, nothing fsynced: a crash may leave it part-written, so only for files that a crash
/// makes their owner rebuild anyway (the indexes of a segment recovery would recover again).
/// The file is not truncated to zero first: ext4 (`auto_da_alloc`) starts writing back a file
/// truncated to zero when it is closed, a disk write per file.
pub fn write_file_in_place(path: &Path, contents: &[u8]) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let f = check(path, FaultOp::Open)
        .and_then(|()| open(path, OpenMode::WriteCreate))
        .map_err(|e| Error::io(path, "create", e))?;
    check(path, FaultOp::Write).and_then(|()| f.write_all_at(contents, 0)).map_err(|e| Error::io(path, "write", e))?;
    let len = f.metadata().map_err(|e| Error::io(path, "stat", e))?.len();
    if len > contents.len() as u64 {
        check(path, FaultOp::Truncate)
            .and_then(|()| f.set_len(contents.len() as u64))
            .map_err(|e| Error::io(path, "truncate", e))?;
    }
    Ok(())
}

/// Whether `path` holds exactly `expected`: one open and one read of `expected.len() + 1`
/// bytes (no `stat`), so a longer file is told apart too (a read of a regular file returns
/// fewer bytes than asked only at its end). Lets a rebuild leave a file whose bytes it would
/// only write again: nothing is dirtied, and no replaced inode is freed (on a file system
/// mounted with `discard`, freeing a file's blocks waits for a discard request). A missing or
/// unreadable file is not a match (the caller's write then reports any error). Reads are not
/// fault-injected: the seam covers the write that follows a mismatch.
#[must_use]
pub fn file_has_contents(path: &Path, expected: &[u8]) -> bool {
    let Ok(file) = open(path, OpenMode::Read) else { return false };
    let mut buf = vec![0u8; expected.len() + 1];
    matches!(read_prefix(&file, &mut buf), Ok(n) if n == expected.len() && buf[..n] == *expected)
}

/// Reads the start of `file` into `buf`; returns the bytes read, fewer than `buf.len()` only
/// when the file is that short (a read of a regular file returns fewer bytes than asked only
/// at its end, so no further call is made to see it return 0).
///
/// # Errors
/// The read's error.
pub fn read_prefix(file: &File, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], done as u64) {
            Ok(0) => break,
            Ok(n) if done + n < buf.len() => return Ok(done + n),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Fsyncs `path` if it exists (Kafka's `Utils.flushFileIfExists`).
pub fn fsync_file_if_exists(path: &Path) -> Result<()> {
    let f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(path, "open", e)),
    };
    check(path, FaultOp::Fsync).and_then(|()| f.sync_all()).map_err(|e| Error::io(path, "fsync", e))
}

/// Fsyncs a directory so that renames and creations in it are durable.
pub fn fsync_dir(dir: &Path) -> Result<()> {
    let d = File::open(dir).map_err(|e| Error::io(dir, "open directory", e))?;
    check(dir, FaultOp::Fsync).and_then(|()| d.sync_all()).map_err(|e| Error::io(dir, "fsync directory", e))
}

/// Deletes `path` if it exists; returns whether it did.
pub fn delete_if_exists(path: &Path) -> Result<bool> {
    match check(path, FaultOp::Delete).and_then(|()| fs::remove_file(path)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(path, "delete", e)),
    }
}

/// Asks the kernel to start writing `len` bytes of `file` from `from` back to disk, without
/// waiting (`sync_file_range(SYNC_FILE_RANGE_WRITE)`). A hint for large sequential writes that
/// end in an fsync (the cleaner's `.cleaned` segments): the disk works while the writer goes
/// on, so the final fsync finds little left and the writer is not throttled for dirty pages.
/// Durability still comes from the fsync; a failed hint is only logged.
pub fn start_writeback(file: &File, path: &Path, from: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(from), Ok(len)) = (i64::try_from(from), i64::try_from(len)) else { return };
        // SAFETY: sync_file_range reads and writes no memory of ours; the descriptor is owned
        // by `file`, open for the whole call.
        let rc = unsafe { libc::sync_file_range(file.as_raw_fd(), from, len, libc::SYNC_FILE_RANGE_WRITE) };
        if rc != 0 {
            log::debug!("write-back hint for {}: {}", path.display(), std::io::Error::last_os_error());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, path, from, len);
}

/// The ways the crate opens a file through [`open`] (`O_CLOEXEC` always, mode `0o666` for a
/// file created).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// `O_RDONLY`.
    Read,
    /// `O_RDWR`.
    ReadWrite,
    /// `O_RDWR | O_CREAT`.
    ReadWriteCreate,
    /// `O_WRONLY | O_CREAT`.
    WriteCreate,
}

impl OpenMode {
    fn options(self) -> OpenOptions {
        let mut o = OpenOptions::new();
        match self {
            OpenMode::Read => o.read(true),
            OpenMode::ReadWrite => o.read(true).write(true),
            OpenMode::ReadWriteCreate => o.read(true).write(true).create(true).truncate(false),
            OpenMode::WriteCreate => o.write(true).create(true).truncate(false),
        };
        o
    }

    fn flags(self) -> libc::c_int {
        libc::O_CLOEXEC
            | match self {
                OpenMode::Read => libc::O_RDONLY,
                OpenMode::ReadWrite => libc::O_RDWR,
                OpenMode::ReadWriteCreate => libc::O_RDWR | libc::O_CREAT,
                OpenMode::WriteCreate => libc::O_WRONLY | libc::O_CREAT,
            }
    }
}

thread_local! {
    /// The directory [`DirLock::scope`] set on this thread: its path and a descriptor of it.
    static DIR_SCOPE: std::cell::RefCell<Option<(std::path::PathBuf, std::os::fd::RawFd)>> =
        const { std::cell::RefCell::new(None) };
}

/// Opens `path` as `mode` says. Inside a [`DirScope`] on this thread, a file directly in the
/// scope's directory is opened by its name relative to the directory's descriptor (`openat`):
/// the kernel resolves one name instead of walking every component of the path, which is most
/// of an open's cost for the small files of a log's load. Any other path is opened as given.
///
/// # Errors
/// The open's error.
pub fn open(path: &Path, mode: OpenMode) -> std::io::Result<File> {
    let scoped = DIR_SCOPE.with(|scope| match &*scope.borrow() {
        Some((dir, fd)) => name_in_dir(path, dir).map(|name| open_at(*fd, name, mode)),
        None => None,
    });
    match scoped {
        Some(Some(result)) => result,
        _ => mode.options().open(path),
    }
}

/// The length of the file at `path` (`stat`), relative to the directory of a [`DirScope`] as
/// [`open`] resolves names.
///
/// # Errors
/// The `stat`'s error.
pub fn file_len(path: &Path) -> std::io::Result<u64> {
    let scoped = DIR_SCOPE.with(|scope| match &*scope.borrow() {
        Some((dir, fd)) => name_in_dir(path, dir).and_then(|name| stat_at(*fd, name)),
        None => None,
    });
    match scoped {
        Some(result) => result,
        None => fs::metadata(path).map(|m| m.len()),
    }
}

/// The whole of a small file (a checkpoint, a producer snapshot): one open and, for a file of
/// up to 4 KiB, one read (no `stat` for a size hint), through [`open`].
///
/// # Errors
/// The open's or a read's error.
pub fn read_small_file(path: &Path) -> std::io::Result<Vec<u8>> {
    let file = open(path, OpenMode::Read)?;
    let mut bytes = vec![0u8; 4096];
    let read = read_prefix(&file, &mut bytes)?;
    if read < bytes.len() {
        bytes.truncate(read);
        return Ok(bytes);
    }
    // A positional read leaves the file's offset at 0: the rest is read from where it ended.
    let mut rest = &file;
    std::io::Seek::seek(&mut rest, std::io::SeekFrom::Start(read as u64))?;
    std::io::Read::read_to_end(&mut rest, &mut bytes)?;
    Ok(bytes)
}

/// Whether `name` in the directory `dir_fd` is a regular file (`fstatat`, not following a
/// symbolic link): for a directory entry whose type the file system does not report.
#[cfg(target_os = "linux")]
fn is_regular_at(dir_fd: std::os::fd::RawFd, name: &[u8]) -> std::io::Result<bool> {
    let Some(c_name) = c_name(name) else { return Ok(false) };
    // SAFETY: `stat` is a plain C struct for which all-zero bytes are a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `c_name` is NUL-terminated and outlives the call; fstatat writes only `st`, which
    // we own; `dir_fd` is the directory descriptor of the caller's `DirLock`.
    let rc = unsafe { libc::fstatat(dir_fd, c_name.as_ptr().cast(), &raw mut st, libc::AT_SYMLINK_NOFOLLOW) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st.st_mode & libc::S_IFMT == libc::S_IFREG)
}

/// The names of the regular files of `dir`, in directory order, through `std::fs` (a listing
/// without the directory's lock, and [`DirLock::list_files`] where `getdents64` is not
/// available). A name that is not UTF-8 is converted lossily.
///
/// # Errors
/// `Io` naming `dir`, or the entry, when it cannot be listed.
pub fn list_files(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, "list directory", e))? {
        let entry = entry.map_err(|e| Error::io(dir, "list directory", e))?;
        let file_type = entry.file_type().map_err(|e| Error::io(entry.path(), "stat", e))?;
        if file_type.is_file() {
            names.push(entry.file_name().into_string().unwrap_or_else(|n| n.to_string_lossy().into_owned()));
        }
    }
    Ok(names)
}

/// `fstatat(dir_fd, name)`'s size; `None` as [`open_at`].
fn stat_at(dir_fd: std::os::fd::RawFd, name: &[u8]) -> Option<std::io::Result<u64>> {
    let c_name = c_name(name)?;
    // SAFETY: `stat` is a plain C struct for which all-zero bytes are a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `c_name` is NUL-terminated and outlives the call; fstatat writes only `st`, which
    // we own; `dir_fd` is the descriptor of the `DirLock` the live `DirScope` borrows.
    let rc = unsafe { libc::fstatat(dir_fd, c_name.as_ptr().cast(), &raw mut st, 0) };
    if rc != 0 {
        return Some(Err(std::io::Error::last_os_error()));
    }
    Some(Ok(u64::try_from(st.st_size).unwrap_or(0)))
}

/// `name` NUL-terminated in a stack buffer, for `openat` and `fstatat`; `None` when it does
/// not fit or holds a NUL (the caller then uses the whole path).
fn c_name(name: &[u8]) -> Option<[u8; 256]> {
    let mut c_name = [0u8; 256];
    if name.len() >= c_name.len() || name.contains(&0) {
        return None;
    }
    c_name[..name.len()].copy_from_slice(name);
    Some(c_name)
}

/// The name of `path` within `dir` when `path` is `dir` + `/` + one plain name.
fn name_in_dir<'p>(path: &'p Path, dir: &Path) -> Option<&'p [u8]> {
    use std::os::unix::ffi::OsStrExt;
    let rest = path.as_os_str().as_bytes().strip_prefix(dir.as_os_str().as_bytes())?.strip_prefix(b"/")?;
    let plain = !rest.is_empty() && !rest.contains(&b'/') && rest != b"." && rest != b"..";
    plain.then_some(rest)
}

/// `openat(dir_fd, name)`; `None` when the name does not fit the stack buffer or holds a NUL
/// (the caller opens the whole path then).
fn open_at(dir_fd: std::os::fd::RawFd, name: &[u8], mode: OpenMode) -> Option<std::io::Result<File>> {
    use std::os::fd::FromRawFd;
    use std::sync::atomic::Ordering;
    let c_name = c_name(name)?;
    let open = |flags| {
        // SAFETY: `c_name` is NUL-terminated (zeroed past `name`, which holds no NUL) and
        // outlives the call; `dir_fd` is the descriptor of the `DirLock` the live `DirScope`
        // borrows.
        unsafe { libc::openat(dir_fd, c_name.as_ptr().cast(), flags, 0o666 as libc::c_uint) }
    };
    // A load reads every file it recovers once: without `O_NOATIME`, each first read after a
    // write dirties the inode for its access time (`relatime`), thousands of journal updates
    // for one recovery. The flag is refused (`EPERM`) for a file of another owner to a process
    // without `CAP_FOWNER`: then opens go without it from there on.
    let no_atime = NO_ATIME_ALLOWED.load(Ordering::Relaxed);
    let mut fd = open(mode.flags() | if no_atime { libc::O_NOATIME } else { 0 });
    if fd < 0 && no_atime && std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) {
        NO_ATIME_ALLOWED.store(false, Ordering::Relaxed);
        fd = open(mode.flags());
    }
    if fd < 0 {
        return Some(Err(std::io::Error::last_os_error()));
    }
    // SAFETY: `fd` was just returned by openat and nothing else owns it.
    Some(Ok(unsafe { File::from_raw_fd(fd) }))
}

/// Whether [`open_at`] still asks for `O_NOATIME` (no open was refused it yet).
static NO_ATIME_ALLOWED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// While alive, [`open`] on this thread opens the files of one directory through the
/// descriptor a [`DirLock`] holds on it (see [`DirLock::scope`]); dropping it restores what was
/// set before. Not `Send`: it belongs to the thread that made it.
#[derive(Debug)]
pub struct DirScope<'a> {
    previous: Option<(std::path::PathBuf, std::os::fd::RawFd)>,
    _lock: std::marker::PhantomData<(&'a DirLock, *const ())>,
}

impl Drop for DirScope<'_> {
    fn drop(&mut self) {
        let previous = self.previous.take();
        DIR_SCOPE.with(|scope| *scope.borrow_mut() = previous);
    }
}

/// An exclusive advisory lock (`flock`) on a directory, held until dropped. Writable logs take
/// one on their partition directory so that a second writer, in this process or another, is
/// refused instead of corrupting the files (and so no mapped index is resized under another
/// writer's mapping). Nothing is written to the directory.
#[derive(Debug)]
pub struct DirLock {
    file: File,
}

impl DirLock {
    /// Takes the lock without waiting; `Error::LogDirLocked` if someone else holds it.
    pub fn try_lock(dir: &Path) -> Result<Self> {
        use std::os::fd::AsRawFd;
        let file = File::open(dir).map_err(|e| Error::io(dir, "open directory", e))?;
        // SAFETY: flock is called on a file descriptor owned by `file`, which stays open for
        // the lifetime of the returned guard; it touches no memory.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            return Err(if err.kind() == std::io::ErrorKind::WouldBlock {
                Error::LogDirLocked {
                    path: dir.to_path_buf(),
                    holder: crate::util::lock_holder::describe(dir),
                    waited_ms: None,
                }
            } else {
                Error::io(dir, "lock directory", err)
            });
        }
        Ok(DirLock { file })
    }

    /// Makes [`open`] on this thread open the files directly in `dir` (the directory this lock
    /// holds) relative to the lock's descriptor, until the returned scope is dropped. For a
    /// load, which opens the same directory's files by the thousand: while the holder of the
    /// lock runs it, nothing renames the directory, so its path and the descriptor name the same
    /// directory.
    pub fn scope(&self, dir: &Path) -> DirScope<'_> {
        use std::os::fd::AsRawFd;
        let fd = self.file.as_raw_fd();
        let previous = DIR_SCOPE.with(|scope| scope.borrow_mut().replace((dir.to_path_buf(), fd)));
        DirScope { previous, _lock: std::marker::PhantomData }
    }

    /// The names of the regular files in `dir`, the directory this lock holds, in directory
    /// order. On Linux they are read with `getdents64` from the lock's own descriptor: no
    /// second open of the directory, no buffer allocated by the C library, one allocation per
    /// name. A name that is not UTF-8 is converted lossily, as `std::fs` listings are here.
    ///
    /// # Errors
    /// `Io` naming `dir` when it cannot be listed.
    pub fn list_files(&self, dir: &Path) -> Result<Vec<String>> {
        #[cfg(target_os = "linux")]
        {
            self.list_files_getdents(dir)
        }
        #[cfg(not(target_os = "linux"))]
        {
            list_files(dir)
        }
    }

    #[cfg(target_os = "linux")]
    fn list_files_getdents(&self, dir: &Path) -> Result<Vec<String>> {
        use std::io::{Seek, SeekFrom};
        use std::os::fd::AsRawFd;
        let list_error = |e| Error::io(dir, "list directory", e);
        // A listing before this one left the descriptor's position at the end.
        (&self.file).seek(SeekFrom::Start(0)).map_err(list_error)?;
        let fd = self.file.as_raw_fd();
        let mut buf = [0u8; 16 * 1024];
        let mut names = Vec::new();
        loop {
            // SAFETY: getdents64 writes at most `buf.len()` bytes into `buf`, which we own and
            // which outlives the call; `fd` is the open directory descriptor this lock owns.
            let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
            let n = usize::try_from(n).map_err(|_| list_error(std::io::Error::last_os_error()))?;
            if n == 0 {
                return Ok(names);
            }
            // Records: d_ino (8 bytes), d_off (8), d_reclen (2), d_type (1), the NUL-terminated name.
            let mut at = 0;
            while at + 19 <= n {
                let reclen = usize::from(u16::from_ne_bytes([buf[at + 16], buf[at + 17]]));
                let record = buf.get(at..at + reclen).filter(|_| reclen > 19).ok_or_else(|| {
                    list_error(std::io::Error::new(std::io::ErrorKind::InvalidData, "malformed directory entry"))
                })?;
                let name = &record[19..];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                let regular = match record[18] {
                    libc::DT_REG => true,
                    libc::DT_UNKNOWN => is_regular_at(fd, name).map_err(list_error)?,
                    _ => false,
                };
                if regular {
                    names.push(String::from_utf8_lossy(name).into_owned());
                }
                at += reclen;
            }
        }
    }

    /// Takes the lock, waiting while someone else holds it: tries again at growing intervals
    /// (1 ms doubling up to 50 ms), calling `on_wait` once when it first finds the lock held.
    /// For locks held only for a moment (a checkpoint's read-modify-write); `LogDirLocked`
    /// with the time waited when it is still held after `timeout`.
    pub fn lock_waiting(dir: &Path, timeout: std::time::Duration, on_wait: &dyn Fn()) -> Result<Self> {
        let start = std::time::Instant::now();
        let mut delay = std::time::Duration::from_millis(1);
        let mut waited = false;
        loop {
            match Self::try_lock(dir) {
                Err(Error::LogDirLocked { path, holder, .. }) => {
                    if !waited {
                        waited = true;
                        on_wait();
                    }
                    let elapsed = start.elapsed();
                    if elapsed >= timeout {
                        let waited_ms = Some(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX));
                        return Err(Error::LogDirLocked { path, holder, waited_ms });
                    }
                    std::thread::sleep(delay.min(timeout.saturating_sub(elapsed)));
                    delay = (delay * 2).min(std::time::Duration::from_millis(50));
                }
                other => return other,
            }
        }
    }
}

/// Kafka's `FileLock` on a log dir's `.lock` file: an exclusive POSIX record lock taken with
/// `fcntl(F_OFD_SETLK)`. It conflicts with the lock a running Kafka broker holds on the same
/// file (Java's `FileChannel.tryLock` is a POSIX record lock), and, being tied to the open file
/// rather than the process, with a second `LogManager` in this process too. Released on drop.
#[derive(Debug)]
pub struct FileLock {
    file: File,
}

impl FileLock {
    /// Creates `path` if needed and locks it without waiting; `Error::LogDirLocked` naming the
    /// file if someone else holds it.
    pub fn try_lock(path: &Path) -> Result<Self> {
        use std::os::fd::AsRawFd;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io(path, "create lock file", e))?;
        // SAFETY: `flock` is a plain C struct for which all-zero bytes are a valid value.
        let mut request: libc::flock = unsafe { std::mem::zeroed() };
        request.l_type = libc::F_WRLCK as libc::c_short;
        request.l_whence = libc::SEEK_SET as libc::c_short;
        // SAFETY: fcntl reads the `flock` struct we own for the duration of the call, on a file
        // descriptor owned by `file`, which stays open for the lifetime of the returned guard.
        let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &raw const request) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            return Err(match err.raw_os_error() {
                Some(libc::EAGAIN | libc::EACCES) => Error::LogDirLocked {
                    path: path.to_path_buf(),
                    holder: crate::util::lock_holder::describe(path),
                    waited_ms: None,
                },
                _ => Error::io(path, "lock", err),
            });
        }
        Ok(FileLock { file })
    }

    /// Whether `path` still names the file this lock is on. A `LogManager` and a Kafka broker
    /// delete `.lock` when they close, so a lock taken on a file opened just before that
    /// deletion guards nothing: whoever creates the file anew locks another one.
    pub fn is_at(&self, path: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        match (self.file.metadata(), fs::metadata(path)) {
            (Ok(held), Ok(named)) => held.dev() == named.dev() && held.ino() == named.ino(),
            _ => false,
        }
    }

    /// Tests whether another open file holds a lock on `path` that [`FileLock::try_lock`] would
    /// conflict with (`fcntl(F_OFD_GETLK)`), without taking one and without creating the file.
    /// A missing file is free.
    pub fn probe(path: &Path) -> Result<LockState> {
        use std::os::fd::AsRawFd;
        let file = match File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LockState::Free),
            Err(e) => return Err(Error::io(path, "open lock file", e)),
        };
        // SAFETY: `flock` is a plain C struct for which all-zero bytes are a valid value.
        let mut request: libc::flock = unsafe { std::mem::zeroed() };
        request.l_type = libc::F_WRLCK as libc::c_short;
        request.l_whence = libc::SEEK_SET as libc::c_short;
        // SAFETY: fcntl reads and overwrites the `flock` struct we own for the duration of the
        // call, on a file descriptor owned by `file`, which outlives the call.
        let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &raw mut request) };
        if rc != 0 {
            return Err(Error::io(path, "test lock", std::io::Error::last_os_error()));
        }
        if request.l_type == libc::F_UNLCK as libc::c_short {
            return Ok(LockState::Free);
        }
        Ok(LockState::Held { pid: u32::try_from(request.l_pid).ok().filter(|pid| *pid > 0) })
    }
}

/// What [`FileLock::probe`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockState {
    /// Nobody holds a conflicting lock.
    Free,
    /// Another open file holds one; `pid` is its process when the lock names it (a
    /// process-owned POSIX lock, as a Kafka broker's; open-file-description locks name none).
    Held { pid: Option<u32> },
}

/// Renames `from` to `to` (through the fault-injection seam), naming `from` on error.
pub fn rename(from: &Path, to: &Path) -> Result<()> {
    crate::util::fault::check(from, crate::util::fault::FaultOp::Rename).map_err(|e| Error::io(from, "rename", e))?;
    fs::rename(from, to).map_err(|e| Error::io(from, "rename", e))
}

/// Creates `dir` and its missing parents (through the fault-injection seam).
pub fn create_dir_all(dir: &Path) -> Result<()> {
    crate::util::fault::check(dir, crate::util::fault::FaultOp::Open)
        .map_err(|e| Error::io(dir, "create directory", e))?;
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))
}

/// Creates (or truncates) `path`, writes `contents` and fsyncs it; the caller makes the name
/// durable (the cleaner's `.cleaned` files become durable with the replace's directory fsync).
pub fn write_new_file(path: &Path, contents: &[u8]) -> Result<()> {
    let mut f = check(path, FaultOp::Open)
        .and_then(|()| OpenOptions::new().write(true).create(true).truncate(true).open(path))
        .map_err(|e| Error::io(path, "create", e))?;
    check(path, FaultOp::Write).and_then(|()| f.write_all(contents)).map_err(|e| Error::io(path, "write", e))?;
    check(path, FaultOp::Fsync).and_then(|()| f.sync_all()).map_err(|e| Error::io(path, "fsync", e))
}

/// Linux's `NAME_MAX`: the longest file name (in bytes) most file systems allow.
pub const DEFAULT_NAME_MAX: usize = 255;

/// The longest file name, in bytes, that the file system holding `dir` allows
/// (`pathconf(dir, _PC_NAME_MAX)`); for a `dir` that does not exist yet, that of its nearest
/// existing ancestor. [`DEFAULT_NAME_MAX`] when the file system sets no limit or cannot say.
pub fn name_max(dir: &Path) -> usize {
    use std::os::unix::ffi::OsStrExt;
    let existing = dir.ancestors().filter(|p| !p.as_os_str().is_empty()).chain([Path::new(".")]).find(|p| p.exists());
    let Some(c_path) = existing.and_then(|p| std::ffi::CString::new(p.as_os_str().as_bytes()).ok()) else {
        return DEFAULT_NAME_MAX;
    };
    // SAFETY: `c_path` is a NUL-terminated string that outlives the call; pathconf only reads it
    // and touches no other memory.
    let limit = unsafe { libc::pathconf(c_path.as_ptr(), libc::_PC_NAME_MAX) };
    // -1: no limit, or the file system cannot say.
    usize::try_from(limit).ok().filter(|&n| n > 0).unwrap_or(DEFAULT_NAME_MAX)
}

#[cfg(test)]
mod name_max_tests {
    use super::*;

    #[test]
    fn name_max_of_existing_and_missing_dirs() {
        let tmp = tempfile::tempdir().unwrap();
        let limit = name_max(tmp.path());
        assert!((14..=4096).contains(&limit), "{limit}");
        assert_eq!(name_max(&tmp.path().join("missing/deeper")), limit, "a missing dir asks its ancestor");
        assert_eq!(name_max(Path::new("relative-missing-dir")), name_max(Path::new(".")));
    }
}

#[cfg(test)]
mod tests {
    use super::file_has_contents;

    /// Only the same bytes at the same length match: a longer or shorter file, one byte
    /// different, or no file at all do not.
    #[test]
    fn file_has_contents_matches_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        assert!(!file_has_contents(&path, b""), "missing");
        std::fs::write(&path, b"").unwrap();
        assert!(file_has_contents(&path, b""));
        std::fs::write(&path, b"abcd").unwrap();
        assert!(file_has_contents(&path, b"abcd"));
        assert!(!file_has_contents(&path, b"abc"), "longer file");
        assert!(!file_has_contents(&path, b"abcde"), "shorter file");
        assert!(!file_has_contents(&path, b"abce"), "other byte");
        let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &big).unwrap();
        assert!(file_has_contents(&path, &big));
        assert!(!file_has_contents(&path, &big[..big.len() - 1]));
        // Lengths around 1 KiB.
        for len in [1022usize, 1023, 1024, 1025] {
            std::fs::write(&path, &big[..len]).unwrap();
            assert!(file_has_contents(&path, &big[..len]), "{len}");
            assert!(!file_has_contents(&path, &big[..len - 1]), "{len}: longer file");
            assert!(!file_has_contents(&path, &big[..=len]), "{len}: shorter file");
        }
    }
}

#[cfg(test)]
mod dir_scope_tests {
    use super::*;

    #[test]
    fn names_directly_in_the_scoped_dir_only() {
        let dir = Path::new("/a/b");
        assert_eq!(name_in_dir(Path::new("/a/b/x.log"), dir), Some(&b"x.log"[..]));
        for other in ["/a/b", "/a/b/", "/a/b/c/x", "/a/bc/x", "/a/x", "/a/b/..", "/a/b/.", "a/b/x"] {
            assert_eq!(name_in_dir(Path::new(other), dir), None, "{other}");
        }
    }

    /// Inside a scope, a file of the locked directory is opened (and measured) through the
    /// lock's descriptor: after the directory is renamed, its old path still reaches it, as the
    /// descriptor does (which is why a scope lives only while nothing renames the directory).
    /// Outside the scope, and once it is dropped, paths resolve as given; scopes nest.
    #[test]
    fn a_scope_opens_files_through_the_locked_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, moved, other) = (tmp.path().join("p-0"), tmp.path().join("p-1"), tmp.path().join("q-0"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(dir.join("f"), b"abc").unwrap();
        std::fs::write(other.join("g"), b"de").unwrap();
        let lock = DirLock::try_lock(&dir).unwrap();
        let other_lock = DirLock::try_lock(&other).unwrap();
        {
            let _scope = lock.scope(&dir);
            std::fs::rename(&dir, &moved).unwrap();
            assert_eq!(std::fs::read(moved.join("f")).unwrap(), b"abc");
            let mut text = String::new();
            std::io::Read::read_to_string(&mut open(&dir.join("f"), OpenMode::Read).unwrap(), &mut text).unwrap();
            assert_eq!(text, "abc", "opened through the descriptor");
            assert_eq!(file_len(&dir.join("f")).unwrap(), 3);
            assert_eq!(read_small_file(&dir.join("f")).unwrap(), b"abc");
            drop(open(&dir.join("new"), OpenMode::ReadWriteCreate).unwrap());
            assert!(moved.join("new").exists(), "created in the locked directory");
            {
                let _inner = other_lock.scope(&other);
                assert_eq!(open(&dir.join("f"), OpenMode::Read).unwrap_err().kind(), std::io::ErrorKind::NotFound);
                assert_eq!(file_len(&other.join("g")).unwrap(), 2);
            }
            assert!(open(&dir.join("f"), OpenMode::Read).is_ok(), "the outer scope is back");
        }
        assert_eq!(open(&dir.join("f"), OpenMode::Read).unwrap_err().kind(), std::io::ErrorKind::NotFound);
        assert_eq!(file_len(&dir.join("f")).unwrap_err().kind(), std::io::ErrorKind::NotFound);
    }

    /// A small file is read whole, and so is one past the first 4 KiB read.
    #[test]
    fn small_files_are_read_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        for len in [0usize, 1, 4095, 4096, 4097, 10_000] {
            let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            std::fs::write(&path, &bytes).unwrap();
            assert!(read_small_file(&path).unwrap() == bytes, "{len}");
        }
    }
}
