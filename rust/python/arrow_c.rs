//! Arrow's C data interface (`ArrowSchema`, `ArrowArray`), imported from the PyCapsules of the
//! Arrow PyCapsule interface (`__arrow_c_array__`: an `arrow_schema` and an `arrow_array`
//! capsule), into the safe column views of `record::arrow::column`. No copy: the views borrow
//! the producer's buffers, which the imported structs keep alive until they are dropped.
//!
//! Thread-safety: an `ImportedArray` owns its structs (moved out of the capsules, as the
//! interface asks of a consumer) and releases them on drop, on the thread that holds the GIL;
//! the views it lends are `Send + Sync` and read immutable memory, so they may be read with the
//! GIL released while the `ImportedArray` stays alive.

#![allow(unsafe_code)] // see the SAFETY comments; lib.rs lists every module that needs it

use std::ffi::{c_char, c_void, CStr};

use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::error::{Error, Result};
use crate::record::arrow::column::{BinaryColumn, Column, Field, IntColumn, Offsets, TimeUnit, Validity};

/// Arrow's `struct ArrowSchema` (C data interface).
#[repr(C)]
struct ArrowSchema {
    format: *const c_char,
    name: *const c_char,
    metadata: *const c_char,
    flags: i64,
    n_children: i64,
    children: *mut *mut ArrowSchema,
    dictionary: *mut ArrowSchema,
    release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    private_data: *mut c_void,
}

/// Arrow's `struct ArrowArray` (C data interface).
#[repr(C)]
struct ArrowArray {
    length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: i64,
    n_children: i64,
    buffers: *mut *const c_void,
    children: *mut *mut ArrowArray,
    dictionary: *mut ArrowArray,
    release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    private_data: *mut c_void,
}

/// A schema and an array moved out of their capsules; both released on drop.
pub struct ImportedArray {
    schema: Box<ArrowSchema>,
    array: Box<ArrowArray>,
}

// SAFETY: shared access only reads the structs and the buffers they point to, which the
// C data interface makes immutable while the array is alive; the one mutation, `release`, takes
// `&mut self` in `Drop`, so it never overlaps a shared borrow on another thread. (Not `Send`:
// the release runs where the import was made, with the GIL.)
unsafe impl Sync for ImportedArray {}

impl Drop for ImportedArray {
    fn drop(&mut self) {
        if let Some(release) = self.array.release {
            // SAFETY: the struct was moved out of its capsule, whose own release was cleared, so
            // this is the one release of it, as the C data interface requires of its owner.
            unsafe { release(&raw mut *self.array) };
        }
        if let Some(release) = self.schema.release {
            // SAFETY: as above, for the schema.
            unsafe { release(&raw mut *self.schema) };
        }
    }
}

/// Moves the struct out of a capsule named `name` and clears the capsule's `release`, so that
/// its destructor does nothing (the "move" the C data interface describes).
fn take<T>(capsule: &Bound<'_, PyCapsule>, name: &CStr, release_of: impl Fn(&mut T)) -> PyResult<Box<T>> {
    let ptr = capsule.pointer_checked(Some(name))?.cast::<T>();
    // SAFETY: a capsule named `arrow_schema` / `arrow_array` holds a valid `ArrowSchema` /
    // `ArrowArray` (the Arrow PyCapsule interface); the struct is bit-copied (structs of the
    // C data interface may be moved) and the original's `release` cleared right after, with
    // the GIL held, so the struct has exactly one owner. A released one (release NULL) is
    // refused by the caller.
    let owned = unsafe { std::ptr::read(ptr.as_ptr()) };
    // SAFETY: same pointer; writing the `release` field of the capsule's struct to NULL marks
    // it as moved, which the capsule's destructor checks.
    release_of(unsafe { &mut *ptr.as_ptr() });
    Ok(Box::new(owned))
}

impl ImportedArray {
    /// Takes the structs of an `__arrow_c_array__` pair of capsules.
    pub fn from_capsules(schema: &Bound<'_, PyCapsule>, array: &Bound<'_, PyCapsule>) -> PyResult<Self> {
        let schema = take::<ArrowSchema>(schema, c"arrow_schema", |s| s.release = None)?;
        let array = match take::<ArrowArray>(array, c"arrow_array", |a| a.release = None) {
            Ok(a) => a,
            Err(e) => {
                drop(ImportedArray { schema, array: Box::new(released_array()) });
                return Err(e);
            }
        };
        let imported = ImportedArray { schema, array };
        if imported.schema.release.is_none() || imported.array.release.is_none() {
            return Err(pyo3::exceptions::PyValueError::new_err("the Arrow capsules were already consumed (released)"));
        }
        Ok(imported)
    }

    /// The array as a typed view (types the Kafka sink columns do not use become
    /// `Column::Other`, named for the error that refuses them).
    pub fn column(&self) -> Result<Column<'_>> {
        let (length, offset) = (self.array.length, self.array.offset);
        // SAFETY: both structs are owned, unreleased and valid per the C data interface (checked
        // non-released in `from_capsules`); what they point to lives until `self` is dropped.
        unsafe { view(&self.schema, &self.array, offset, length) }
    }
}

fn released_array() -> ArrowArray {
    ArrowArray {
        length: 0,
        null_count: 0,
        offset: 0,
        n_buffers: 0,
        n_children: 0,
        buffers: std::ptr::null_mut(),
        children: std::ptr::null_mut(),
        dictionary: std::ptr::null_mut(),
        release: None,
        private_data: std::ptr::null_mut(),
    }
}

fn bad(reason: impl std::fmt::Display) -> Error {
    Error::invalid_argument("data", "(an Arrow array)", format!("is not a valid Arrow array: {reason}"))
}

fn usize_of(v: i64, what: &str) -> Result<usize> {
    usize::try_from(v).map_err(|_| bad(format!("negative {what} {v}")))
}

/// A view of `array` (described by `schema`) at rows `offset..offset + length`: the array's
/// own offset and length, or a struct parent's applied to its child.
///
/// # Safety
/// `schema` and `array` are valid, unreleased structs of the C data interface that describe the
/// same array, and everything they point to stays valid and unchanged for `'a`.
unsafe fn view<'a>(schema: &'a ArrowSchema, array: &'a ArrowArray, offset: i64, length: i64) -> Result<Column<'a>> {
    if schema.format.is_null() {
        return Err(bad("a schema without a format"));
    }
    // SAFETY: the format is a NUL-terminated string owned by the schema (C data interface).
    let format = unsafe { CStr::from_ptr(schema.format) }.to_str().map_err(|_| bad("a format that is not UTF-8"))?;
    let (offset, len) = (usize_of(offset, "offset")?, usize_of(length, "length")?);
    if !schema.dictionary.is_null() {
        // SAFETY: a schema's dictionary points to a valid schema of the dictionary's values.
        let dictionary = unsafe { &*schema.dictionary };
        let values = if dictionary.format.is_null() {
            "?".to_string()
        } else {
            // SAFETY: a schema's format is a NUL-terminated string it owns.
            type_name(&unsafe { CStr::from_ptr(dictionary.format) }.to_string_lossy())
        };
        return Ok(Column::Other {
            type_name: format!("dictionary<values={values}, indices={}>", type_name(format)),
            len,
        });
    }
    // SAFETY: the caller's guarantee, passed on.
    let b = unsafe { Buffers::new(array, offset, len)? };
    let column = match format {
        "n" => Column::Null { len },
        "z" | "u" | "Z" | "U" => {
            let large = format == "Z" || format == "U";
            // SAFETY: the caller's guarantee, passed on.
            let column = unsafe { b.binary(large)? };
            Column::Binary { column, utf8: format == "u" || format == "U", large }
        }
        "i" => {
            // SAFETY: the caller's guarantee, passed on.
            Column::Int32(unsafe { b.fixed(4)? })
        }
        "l" => {
            // SAFETY: the caller's guarantee, passed on.
            Column::Int64(unsafe { b.fixed(8)? })
        }
        f if f.starts_with("ts") && f.len() >= 4 && f.as_bytes()[3] == b':' => {
            let unit = match f.as_bytes()[2] {
                b's' => TimeUnit::Second,
                b'm' => TimeUnit::Millisecond,
                b'u' => TimeUnit::Microsecond,
                b'n' => TimeUnit::Nanosecond,
                _ => return Ok(Column::Other { type_name: format!("Arrow format {f:?}"), len }),
            };
            // SAFETY: the caller's guarantee, passed on.
            Column::Timestamp(unsafe { b.fixed(8)? }, unit)
        }
        "+l" | "+L" => {
            // SAFETY: the caller's guarantee, passed on.
            let offsets = unsafe { b.offsets(format == "+L")? };
            let (child_schema, child) = children(schema, array, 1)?[0];
            // SAFETY: children of valid structs are valid structs of the same lifetime.
            let child = unsafe { view(child_schema, child, child.offset, child.length)? };
            Column::list(b.validity()?, offsets, child, len)?
        }
        "+s" => {
            let mut fields = Vec::new();
            for (child_schema, child) in children(schema, array, usize_of(schema.n_children, "n_children")?)? {
                let name = if child_schema.name.is_null() {
                    String::new()
                } else {
                    // SAFETY: a schema's name is a NUL-terminated string it owns.
                    unsafe { CStr::from_ptr(child_schema.name) }.to_string_lossy().into_owned()
                };
                // SAFETY: as for a list's child; a struct's rows are its children's rows at the
                // struct's offset (plus their own).
                let column = unsafe { view(child_schema, child, child.offset + offset as i64, length)? };
                fields.push(Field { name, column });
            }
            Column::structure(b.validity()?, fields, len)?
        }
        other => Column::Other { type_name: type_name(other), len },
    };
    Ok(column)
}

/// The first `n` children of a schema and its array, checked to agree.
fn children<'a>(
    schema: &'a ArrowSchema,
    array: &'a ArrowArray,
    n: usize,
) -> Result<Vec<(&'a ArrowSchema, &'a ArrowArray)>> {
    if schema.n_children != n as i64
        || array.n_children != n as i64
        || (n > 0 && (schema.children.is_null() || array.children.is_null()))
    {
        return Err(bad(format!(
            "{} schema children and {} array children where {n} belong",
            schema.n_children, array.n_children
        )));
    }
    (0..n)
        .map(|i| {
            // SAFETY: `children` holds `n_children` pointers to valid structs (C data interface),
            // which live as long as their parent.
            let (s, a) = unsafe { (&**schema.children.add(i), &**array.children.add(i)) };
            Ok((s, a))
        })
        .collect()
}

/// An array's buffers, sized from its type and rows.
struct Buffers<'a> {
    array: &'a ArrowArray,
    offset: usize,
    len: usize,
}

impl<'a> Buffers<'a> {
    /// # Safety
    /// As for [`view`].
    unsafe fn new(array: &'a ArrowArray, offset: usize, len: usize) -> Result<Self> {
        if array.n_buffers > 0 && array.buffers.is_null() {
            return Err(bad("a NULL buffer list"));
        }
        if usize_of(array.offset, "offset")? + usize_of(array.length, "length")? < offset + len {
            return Err(bad(format!(
                "rows {offset}..{} of an array of {} rows",
                offset + len,
                array.offset + array.length
            )));
        }
        Ok(Buffers { array, offset, len })
    }

    /// Buffer `i` as `size` bytes; None when the pointer is NULL (allowed for a buffer of no bytes,
    /// and for a validity bitmap when nothing is null).
    fn raw(&self, i: usize, size: usize) -> Result<Option<&'a [u8]>> {
        if i as i64 >= self.array.n_buffers {
            return Err(bad(format!("{} buffers where buffer {i} is needed", self.array.n_buffers)));
        }
        // SAFETY: `buffers` holds `n_buffers` pointers (checked non-NULL in `new`).
        let ptr = unsafe { *self.array.buffers.add(i) }.cast::<u8>();
        if ptr.is_null() {
            return Ok(None);
        }
        if size == 0 {
            return Ok(Some(&[]));
        }
        // SAFETY: per the C data interface a buffer holds at least the bytes its type's layout
        // needs for rows up to `offset + length` of the array (which covers `size`, computed from
        // that layout); the memory is immutable and owned by the array, which outlives 'a.
        Ok(Some(unsafe { std::slice::from_raw_parts(ptr, size) }))
    }

    /// A buffer that must be there unless it is empty.
    fn required(&self, i: usize, size: usize) -> Result<&'a [u8]> {
        match self.raw(i, size)? {
            Some(b) => Ok(b),
            None if size == 0 => Ok(&[]),
            None => Err(bad(format!("buffer {i} is NULL for {} rows", self.len))),
        }
    }

    fn validity(&self) -> Result<Option<Validity<'a>>> {
        if self.array.null_count == 0 {
            return Ok(None);
        }
        match self.raw(0, (self.offset + self.len).div_ceil(8))? {
            Some(bits) => Ok(Some(Validity::new(bits, self.offset, self.len)?)),
            None if self.array.null_count < 0 => Ok(None), // unknown count and no bitmap: no nulls
            None => Err(bad(format!("{} nulls and no validity bitmap", self.array.null_count))),
        }
    }

    /// # Safety
    /// As for [`view`].
    unsafe fn offsets(&self, large: bool) -> Result<Offsets<'a>> {
        /// The one offset of an array of no rows whose offsets buffer is NULL.
        static ZERO: [u8; 8] = [0; 8];
        let width = if large { 8 } else { 4 };
        let size = (self.offset + self.len + 1) * width;
        let all = match self.raw(1, size)? {
            Some(b) => b,
            None if self.len == 0 => return Ok(if large { Offsets::I64(&ZERO) } else { Offsets::I32(&ZERO[..4]) }),
            None => return Err(bad(format!("buffer 1 is NULL for {} rows", self.len))),
        };
        let mine = all.get(self.offset * width..).unwrap_or(&[]);
        Ok(if large { Offsets::I64(mine) } else { Offsets::I32(mine) })
    }

    /// # Safety
    /// As for [`view`].
    unsafe fn binary(&self, large: bool) -> Result<BinaryColumn<'a>> {
        // SAFETY: passed on.
        let offsets = unsafe { self.offsets(large)? };
        let data = self.required(2, last(&offsets, self.len)?)?;
        BinaryColumn::new(self.validity()?, offsets, data, self.len)
    }

    /// # Safety
    /// As for [`view`].
    unsafe fn fixed(&self, width: usize) -> Result<IntColumn<'a>> {
        let all = self.required(1, (self.offset + self.len) * width)?;
        IntColumn::new(self.validity()?, all.get(self.offset * width..).unwrap_or(&[]), width, self.len)
    }
}

/// The last of `len + 1` offsets: how many data bytes the rows use.
fn last(offsets: &Offsets<'_>, len: usize) -> Result<usize> {
    let (b, w) = match offsets {
        Offsets::I32(b) => (b, 4),
        Offsets::I64(b) => (b, 8),
    };
    let bytes = b.get(len * w..(len + 1) * w).ok_or_else(|| bad(format!("too few offsets for {len} rows")))?;
    let v = if w == 4 {
        i64::from(i32::from_ne_bytes(bytes.try_into().expect("4")))
    } else {
        i64::from_ne_bytes(bytes.try_into().expect("8"))
    };
    usize_of(v, "offset")
}

/// pyarrow's name of a type by its C data interface format, for the error that refuses it.
fn type_name(format: &str) -> String {
    let name = match format {
        "n" => "null",
        "z" => "binary",
        "Z" => "large_binary",
        "u" => "string",
        "U" => "large_string",
        "i" => "int32",
        "l" => "int64",
        "b" => "bool",
        "c" => "int8",
        "C" => "uint8",
        "s" => "int16",
        "S" => "uint16",
        "I" => "uint32",
        "L" => "uint64",
        "e" => "halffloat",
        "f" => "float",
        "g" => "double",
        "vz" => "binary_view",
        "vu" => "string_view",
        "+vl" => "list_view",
        "+m" => "map",
        "tdD" => "date32",
        "tdm" => "date64",
        _ if format.starts_with('w') => "fixed_size_binary",
        _ if format.starts_with("+w") => "fixed_size_list",
        _ if format.starts_with('d') => "decimal",
        _ => return format!("Arrow format {format:?}"),
    };
    name.to_string()
}
