//! `OwnedBuffer`: a read-only Python buffer over a `Vec<u8>` built in Rust, so column data
//! reaches `pyarrow.py_buffer` without a copy.
//!
//! Thread-safety: frozen and immutable; the bytes never change or move while the object lives.

#![allow(unsafe_code)] // see the SAFETY comments; lib.rs lists every module that needs it

use std::ffi::{c_int, c_void};

use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;

/// Bytes owned by Rust, exposed through the buffer protocol (read-only).
#[pyclass(frozen, module = "kafkalog._native")]
pub struct OwnedBuffer {
    data: Vec<u8>,
}

impl OwnedBuffer {
    /// Wraps `data` without copying it.
    pub fn new(data: Vec<u8>) -> Self {
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
        let data = &slf.get().data;
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
