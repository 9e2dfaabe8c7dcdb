//! `OwnedBuffer`: a read-only Python buffer over bytes built in Rust, so column data reaches
//! `pyarrow.py_buffer` without a copy; and `ColumnBytes`, the growable bytes the Arrow column
//! builders fill (`to_arrow`).
//!
//! Thread-safety: `OwnedBuffer` is frozen and immutable; the bytes never change or move while
//! the object lives. `ColumnBytes` is a plain owned value (`Send`, `Sync`), mutated through
//! `&mut` only.

#![allow(unsafe_code)] // see the SAFETY comments; lib.rs lists every module that needs it

use std::ffi::{c_int, c_void};

use memmap2::{MmapMut, MmapOptions, RemapOptions, UncheckedAdvice};
use parking_lot::Mutex;
use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;

/// Columns at least this large move from the heap into their own memory map.
const MAP_FROM: usize = 1 << 20;
/// Mapped columns grow in steps of this many bytes.
const MAP_STEP: usize = 2 << 20;
/// The most bytes of released column maps kept for reuse. Kept pages count in the process's
/// address space (Spark's `spark.executor.pyspark.memory` is an `RLIMIT_AS`) and, until the
/// kernel takes them back, in its resident size: half a GiB bounds what a reader holds (a read of
/// about 250 MB of records needs about 300 MB of columns).
const POOL_BYTES: usize = 512 << 20;

/// Column maps whose `OwnedBuffer` Python released, kept (up to [`POOL_BYTES`]) for the next
/// columns: memory reused this way is already faulted in, where a fresh map costs a page fault
/// and a zeroed page per page written, as much time as decoding the records. A kept map is
/// advised `MADV_FREE`, so the kernel may still take its pages back under memory pressure
/// (a write then faults in a zero page, as for a fresh map).
///
/// Thread-safety: one process-wide mutex, held only to push or pop a map.
struct Pool {
    maps: Vec<MmapMut>,
    bytes: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool { maps: Vec::new(), bytes: 0 });

impl Pool {
    /// The smallest kept map of at least `len` bytes; else the largest kept, grown to `len`;
    /// else a fresh map.
    fn take(len: usize) -> Option<MmapMut> {
        let kept = {
            let mut pool = POOL.lock();
            let fits = (0..pool.maps.len()).filter(|&i| pool.maps[i].len() >= len).min_by_key(|&i| pool.maps[i].len());
            let pick = fits.or_else(|| (0..pool.maps.len()).max_by_key(|&i| pool.maps[i].len()));
            pick.map(|i| {
                let m = pool.maps.swap_remove(i);
                pool.bytes -= m.len();
                m
            })
        };
        match kept {
            Some(mut m) if m.len() < len => {
                // SAFETY: as in `ColumnBytes::grow`: an anonymous private map owned here and
                // borrowed by no one; its bytes stay valid, the grown part is zero-filled.
                unsafe { m.remap(len, RemapOptions::new().may_move(true)) }.ok()?;
                Some(m)
            }
            Some(m) => Some(m),
            None => MmapOptions::new().len(len).map_anon().ok(),
        }
    }

    /// Keeps `m` for reuse, or unmaps it when the pool is full.
    fn release(m: MmapMut) {
        let mut pool = POOL.lock();
        if pool.bytes + m.len() > POOL_BYTES {
            return;
        }
        // SAFETY: `m` is an anonymous private map owned here; nothing reads it until a column
        // takes it, and a column only ever reads bytes it wrote itself, so contents that
        // MADV_FREE may replace with zeros are never observed.
        if unsafe { m.unchecked_advise(UncheckedAdvice::Free) }.is_ok() {
            pool.bytes += m.len();
            pool.maps.push(m);
        }
    }
}

/// Appends into a [`ColumnBytes`]'s capacity without growing it, its length a local value
/// rather than a field re-read after every copy. The column's own length is unchanged until
/// [`ColumnBytes::commit`] takes the cursor's, so appends abandoned halfway leave no trace. A
/// put that does not fit the capacity writes nothing and returns false.
pub struct Cursor<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Cursor<'_> {
    /// Appends `bytes`; false (nothing written) when they do not fit the capacity.
    // Always inlined: called for every column of every record.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn put(&mut self, bytes: &[u8]) -> bool {
        let end = self.len + bytes.len();
        match self.buf.get_mut(self.len..end) {
            Some(out) => {
                crate::util::copy::copy_short(out, bytes);
                self.len = end;
                true
            }
            None => false,
        }
    }

    /// The column's length with what was put so far.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }
}

enum Store {
    /// Zero-filled to its full length: the capacity.
    Heap(Vec<u8>),
    /// An anonymous private map.
    Map(MmapMut),
}

/// Growable bytes of one Arrow column. Small columns live on the heap; past 1 MiB a column
/// moves (once) into an anonymous memory map, reused from the [`Pool`] when one is kept, which
/// then grows with `mremap`: a large column is never copied as it grows (a `Vec` below glibc's
/// mmap threshold is), and reused memory is not faulted in again. Where a map cannot be made or
/// grown, the bytes stay on (or go back to) the heap.
pub struct ColumnBytes {
    store: Store,
    len: usize,
}

impl Default for ColumnBytes {
    fn default() -> Self {
        ColumnBytes { store: Store::Heap(Vec::new()), len: 0 }
    }
}

impl std::fmt::Debug for ColumnBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mapped = matches!(self.store, Store::Map(_));
        f.debug_struct("ColumnBytes").field("len", &self.len).field("mapped", &mapped).finish()
    }
}

impl From<Vec<u8>> for ColumnBytes {
    fn from(v: Vec<u8>) -> Self {
        let len = v.len();
        ColumnBytes { store: Store::Heap(v), len }
    }
}

impl ColumnBytes {
    /// The bytes written so far.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        &self.all()[..self.len]
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn all(&self) -> &[u8] {
        match &self.store {
            Store::Heap(v) => v,
            Store::Map(m) => m,
        }
    }

    #[inline]
    fn all_mut(&mut self) -> &mut [u8] {
        match &mut self.store {
            Store::Heap(v) => v,
            Store::Map(m) => m,
        }
    }

    /// Shortens to `len` bytes (no-op when already shorter); the capacity stays.
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Makes room for `len` bytes in all.
    #[inline]
    pub fn reserve_total(&mut self, len: usize) {
        self.reserve(len.saturating_sub(self.len));
    }

    /// Makes room for `additional` more bytes.
    #[inline]
    pub fn reserve(&mut self, additional: usize) {
        if additional > self.all().len() - self.len {
            self.grow(self.len.checked_add(additional).expect("column size overflows usize"));
        }
    }

    /// Appends `bytes`.
    #[inline]
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        let end = self.len + bytes.len();
        let at = self.len;
        self.all_mut()[at..end].copy_from_slice(bytes);
        self.len = end;
    }

    /// A cursor appending into the capacity past the bytes written (see [`Cursor`]).
    #[inline]
    pub fn cursor(&mut self) -> Cursor<'_> {
        let len = self.len;
        Cursor { buf: self.all_mut(), len }
    }

    /// Takes the bytes a [`Cursor`] appended: `len` is its [`Cursor::len`] (never past the
    /// capacity; every byte of which is initialized, zero-filled when the store was made).
    #[inline]
    pub fn commit(&mut self, len: usize) {
        self.len = len.min(self.all().len());
    }

    /// Appends one byte.
    #[inline]
    pub fn push(&mut self, byte: u8) {
        self.extend_from_slice(&[byte]);
    }

    /// The last byte written, if any.
    #[inline]
    pub fn last_mut(&mut self) -> Option<&mut u8> {
        let len = self.len;
        len.checked_sub(1).map(|i| &mut self.all_mut()[i])
    }

    /// Appends `bytes` `n` times: one byte by a fill, longer patterns by copying what is
    /// written so far after itself (about log2(n) copies, not one per repetition: a column of
    /// a million rows' topic or partition takes a few dozen `memcpy` calls).
    pub fn extend_repeated(&mut self, bytes: &[u8], n: usize) {
        if bytes.is_empty() || n == 0 {
            return;
        }
        let total = bytes.len().checked_mul(n).expect("column size overflows usize");
        self.reserve(total);
        let at = self.len;
        let out = &mut self.all_mut()[at..at + total];
        if let [byte] = bytes {
            out.fill(*byte);
        } else {
            out[..bytes.len()].copy_from_slice(bytes);
            // `filled` and `total` are whole repetitions, so every copy is too.
            let mut filled = bytes.len();
            while filled < total {
                let copied = filled.min(total - filled);
                out.copy_within(..copied, filled);
                filled += copied;
            }
        }
        self.len += total;
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, needed: usize) {
        let capacity = self.all().len();
        let wanted = needed.max(capacity.saturating_mul(2)).max(64);
        if wanted < MAP_FROM {
            self.grow_on_heap(wanted);
            return;
        }
        let wanted = wanted.div_ceil(MAP_STEP).saturating_mul(MAP_STEP);
        let grown = match &mut self.store {
            // SAFETY: the map is anonymous and private, owned by `self` and borrowed by no one
            // (`&mut self`); mremap keeps its bytes (moving the pages, not copying them) and the
            // grown part is fresh zero-filled anonymous memory, all of it valid to read and write.
            // No pointer into the old mapping survives: every access goes through `all()`.
            Store::Map(m) => unsafe { m.remap(wanted, RemapOptions::new().may_move(true)) }.is_ok(),
            Store::Heap(v) => match Pool::take(wanted) {
                Some(mut m) => {
                    m[..self.len].copy_from_slice(&v[..self.len]);
                    self.store = Store::Map(m);
                    true
                }
                None => false,
            },
        };
        if !grown {
            self.grow_on_heap(wanted);
        }
    }

    /// Grows to `capacity` on the heap (moving a map's bytes back there).
    fn grow_on_heap(&mut self, capacity: usize) {
        if let Store::Map(m) = &self.store {
            let mut v = Vec::with_capacity(capacity);
            v.extend_from_slice(&m[..self.len]);
            self.store = Store::Heap(v);
        }
        if let Store::Heap(v) = &mut self.store {
            v.resize(capacity, 0);
        }
    }
}

impl Drop for ColumnBytes {
    fn drop(&mut self) {
        if let Store::Map(m) = std::mem::replace(&mut self.store, Store::Heap(Vec::new())) {
            Pool::release(m);
        }
    }
}

/// Bytes owned by Rust, exposed through the buffer protocol (read-only).
#[pyclass(frozen, module = "kafkalog._native")]
pub struct OwnedBuffer {
    data: ColumnBytes,
}

impl OwnedBuffer {
    /// Wraps `data` without copying it.
    pub fn new(data: Vec<u8>) -> Self {
        OwnedBuffer { data: data.into() }
    }

    /// Wraps a column's bytes without copying them.
    pub fn from_column(data: ColumnBytes) -> Self {
        OwnedBuffer { data }
    }
}

#[pymethods]
impl OwnedBuffer {
    /// Fills a read-only `Py_buffer` that points at the vector's bytes.
    ///
    /// # Safety
    /// Called by CPython with a valid `view` pointer, per the buffer protocol.
    #[allow(clippy::needless_pass_by_value)]
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("kafkalog buffers are read-only"));
        }
        let data = slf.get().data.as_slice();
        let len = ffi::Py_ssize_t::try_from(data.len()).map_err(|_| PyBufferError::new_err("buffer too large"))?;
        // SAFETY: `view` is the valid Py_buffer CPython passed in. The pointer and length
        // describe `data`, which is owned by this frozen object and never mutated or reallocated
        // after construction; PyBuffer_FillInfo stores a new reference to `slf` in `view.obj`, so
        // the object (and the vector) outlive every consumer of the view. The buffer is
        // exported read-only (readonly = 1), so the `*mut` cast is never written through.
        let rc = unsafe { ffi::PyBuffer_FillInfo(view, slf.as_ptr(), data.as_ptr() as *mut c_void, len, 1, flags) };
        if rc == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    fn __len__(&self) -> usize {
        self.data.len()
    }
}
