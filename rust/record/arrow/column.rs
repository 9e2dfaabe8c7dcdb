//! Read-only, typed views of Arrow arrays (Arrow's columnar format, as the C data interface
//! hands it over): the few types Spark's Kafka sink columns use, over borrowed buffers. Sliced
//! arrays (a non-zero offset) are views like any other. Every constructor checks what a row
//! access relies on (buffer sizes, offsets that never decrease and stay inside their data), so
//! reading a row never panics.
//!
//! Buffers are read as bytes in native byte order, so no alignment is assumed.
//!
//! Thread-safety: immutable views, `Send + Sync`.

use crate::error::{Error, Result};

/// Arrow's `TimeUnit` of a timestamp column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Second,
    Millisecond,
    Microsecond,
    Nanosecond,
}

/// A validity bitmap: row `i` is valid when bit `offset + i` is set (least significant first).
#[derive(Clone, Copy, Debug)]
pub struct Validity<'a> {
    bits: &'a [u8],
    offset: usize,
}

impl<'a> Validity<'a> {
    /// The bitmap of `len` rows starting at bit `offset` of `bits`.
    pub fn new(bits: &'a [u8], offset: usize, len: usize) -> Result<Self> {
        if bits.len() * 8 < offset + len {
            return Err(bad_array(format!(
                "validity bitmap of {} bytes is too short for rows {offset}..{}",
                bits.len(),
                offset + len
            )));
        }
        Ok(Validity { bits, offset })
    }

    #[inline]
    pub fn is_valid(&self, i: usize) -> bool {
        let bit = self.offset + i;
        self.bits[bit / 8] & (1 << (bit % 8)) != 0
    }
}

/// Whether row `i` of a column with optional validity is valid.
#[inline]
fn valid(validity: Option<&Validity<'_>>, i: usize) -> bool {
    validity.is_none_or(|v| v.is_valid(i))
}

/// `len + 1` offsets (int32 or int64, native order) into a data buffer or a child array,
/// already positioned at the array's offset.
#[derive(Clone, Copy, Debug)]
pub enum Offsets<'a> {
    I32(&'a [u8]),
    I64(&'a [u8]),
}

impl Offsets<'_> {
    /// Entry `i`: checked non-negative by [`Offsets::check`].
    #[inline]
    pub fn get(&self, i: usize) -> usize {
        match self {
            Offsets::I32(b) => i32::from_ne_bytes(b[i * 4..i * 4 + 4].try_into().expect("4 bytes")) as usize,
            Offsets::I64(b) => i64::from_ne_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes")) as usize,
        }
    }

    fn raw(&self, i: usize) -> i64 {
        match self {
            Offsets::I32(b) => i64::from(i32::from_ne_bytes(b[i * 4..i * 4 + 4].try_into().expect("4 bytes"))),
            Offsets::I64(b) => i64::from_ne_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes")),
        }
    }

    fn entries(&self) -> usize {
        match self {
            Offsets::I32(b) => b.len() / 4,
            Offsets::I64(b) => b.len() / 8,
        }
    }

    /// Checks that there are `len + 1` entries, that they never decrease, and that they lie in
    /// `[0, end]`.
    fn check(&self, len: usize, end: usize) -> Result<()> {
        if self.entries() < len + 1 {
            return Err(bad_array(format!("{} offsets for {len} rows (need {})", self.entries(), len + 1)));
        }
        let mut previous = self.raw(0);
        if previous < 0 {
            return Err(bad_array(format!("negative offset {previous}")));
        }
        for i in 1..=len {
            let o = self.raw(i);
            if o < previous {
                return Err(bad_array(format!("offset {o} of row {i} is below the previous one, {previous}")));
            }
            previous = o;
        }
        if previous as u64 > end as u64 {
            return Err(bad_array(format!("last offset {previous} is past the end of the data ({end})")));
        }
        Ok(())
    }
}

/// A binary or string column (`binary`, `large_binary`, `string`, `large_string`).
#[derive(Clone, Copy, Debug)]
pub struct BinaryColumn<'a> {
    validity: Option<Validity<'a>>,
    offsets: Offsets<'a>,
    data: &'a [u8],
    len: usize,
}

impl<'a> BinaryColumn<'a> {
    /// `len` rows; `offsets` holds `len + 1` entries into `data`.
    pub fn new(validity: Option<Validity<'a>>, offsets: Offsets<'a>, data: &'a [u8], len: usize) -> Result<Self> {
        offsets.check(len, data.len())?;
        Ok(BinaryColumn { validity, offsets, data, len })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many data bytes the rows span.
    pub fn data_bytes(&self) -> usize {
        self.offsets.get(self.len) - self.offsets.get(0)
    }

    /// Row `i`'s bytes, or None for a null.
    #[inline]
    pub fn value(&self, i: usize) -> Option<&'a [u8]> {
        if !valid(self.validity.as_ref(), i) {
            return None;
        }
        Some(&self.data[self.offsets.get(i)..self.offsets.get(i + 1)])
    }
}

/// A fixed-width column of int32 or int64 values (`int32`, `int64`, `timestamp[unit]`).
#[derive(Clone, Copy, Debug)]
pub struct IntColumn<'a> {
    validity: Option<Validity<'a>>,
    /// The rows' values, already positioned at the array's offset.
    values: &'a [u8],
    width: usize,
    len: usize,
}

impl<'a> IntColumn<'a> {
    /// `len` values of `width` bytes (4 or 8).
    pub fn new(validity: Option<Validity<'a>>, values: &'a [u8], width: usize, len: usize) -> Result<Self> {
        assert!(width == 4 || width == 8, "int columns are 4 or 8 bytes wide");
        if values.len() < len * width {
            return Err(bad_array(format!("{} value bytes for {len} rows of {width} bytes", values.len())));
        }
        Ok(IntColumn { validity, values, width, len })
    }

    /// Row `i`'s value, or None for a null.
    #[inline]
    pub fn value(&self, i: usize) -> Option<i64> {
        if !valid(self.validity.as_ref(), i) {
            return None;
        }
        let b = &self.values[i * self.width..(i + 1) * self.width];
        Some(if self.width == 4 {
            i64::from(i32::from_ne_bytes(b.try_into().expect("4 bytes")))
        } else {
            i64::from_ne_bytes(b.try_into().expect("8 bytes"))
        })
    }
}

/// One named child of a struct column.
#[derive(Debug)]
pub struct Field<'a> {
    pub name: String,
    pub column: Column<'a>,
}

/// An Arrow array of one of the types the Kafka sink columns use, or the name of another type.
#[derive(Debug)]
pub enum Column<'a> {
    /// Arrow's `null` type: every row null.
    Null {
        len: usize,
    },
    Binary {
        column: BinaryColumn<'a>,
        utf8: bool,
        large: bool,
    },
    Int32(IntColumn<'a>),
    Int64(IntColumn<'a>),
    Timestamp(IntColumn<'a>, TimeUnit),
    /// `list` / `large_list`: row `i` is child rows `offsets[i]..offsets[i + 1]`.
    List {
        validity: Option<Validity<'a>>,
        offsets: Offsets<'a>,
        child: Box<Column<'a>>,
        len: usize,
        large: bool,
    },
    /// `struct`: its children hold the same rows (already positioned at the struct's offset).
    Struct {
        validity: Option<Validity<'a>>,
        fields: Vec<Field<'a>>,
        len: usize,
    },
    /// Another type, by its name (for the error that refuses it).
    Other {
        type_name: String,
        len: usize,
    },
}

impl<'a> Column<'a> {
    /// A list column: `offsets` holds `len + 1` entries into `child`'s rows.
    pub fn list(validity: Option<Validity<'a>>, offsets: Offsets<'a>, child: Column<'a>, len: usize) -> Result<Self> {
        offsets.check(len, child.len())?;
        let large = matches!(offsets, Offsets::I64(_));
        Ok(Column::List { validity, offsets, child: Box::new(child), len, large })
    }

    /// A struct column of `len` rows; every field must hold at least `len` rows.
    pub fn structure(validity: Option<Validity<'a>>, fields: Vec<Field<'a>>, len: usize) -> Result<Self> {
        if let Some(f) = fields.iter().find(|f| f.column.len() < len) {
            return Err(bad_array(format!(
                "struct field {:?} has {} rows, fewer than the struct's {len}",
                f.name,
                f.column.len()
            )));
        }
        Ok(Column::Struct { validity, fields, len })
    }

    /// How many rows the column holds.
    pub fn len(&self) -> usize {
        match self {
            Column::Binary { column, .. } => column.len,
            Column::Int32(c) | Column::Int64(c) | Column::Timestamp(c, _) => c.len,
            Column::Null { len }
            | Column::Other { len, .. }
            | Column::List { len, .. }
            | Column::Struct { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether row `i` is valid (not null).
    pub fn is_valid(&self, i: usize) -> bool {
        match self {
            Column::Null { .. } => false,
            Column::Other { .. } => true,
            Column::Binary { column, .. } => valid(column.validity.as_ref(), i),
            Column::Int32(c) | Column::Int64(c) | Column::Timestamp(c, _) => valid(c.validity.as_ref(), i),
            Column::List { validity, .. } | Column::Struct { validity, .. } => valid(validity.as_ref(), i),
        }
    }

    /// The type's name as pyarrow prints it (`large_binary`, `list<item: ...>` shortened to
    /// `list<...>`, `timestamp[us]`), for error messages.
    pub fn type_name(&self) -> String {
        match self {
            Column::Null { .. } => "null".into(),
            Column::Binary { utf8, large, .. } => {
                format!("{}{}", if *large { "large_" } else { "" }, if *utf8 { "string" } else { "binary" })
            }
            Column::Int32(_) => "int32".into(),
            Column::Int64(_) => "int64".into(),
            Column::Timestamp(_, unit) => {
                let unit = match unit {
                    TimeUnit::Second => "s",
                    TimeUnit::Millisecond => "ms",
                    TimeUnit::Microsecond => "us",
                    TimeUnit::Nanosecond => "ns",
                };
                format!("timestamp[{unit}]")
            }
            Column::List { child, large, .. } => {
                format!("{}list<{}>", if *large { "large_" } else { "" }, child.type_name())
            }
            Column::Struct { fields, .. } => {
                let inner: Vec<String> =
                    fields.iter().map(|f| format!("{}: {}", f.name, f.column.type_name())).collect();
                format!("struct<{}>", inner.join(", "))
            }
            Column::Other { type_name, .. } => type_name.clone(),
        }
    }

    /// The struct field named `name`, if this is a struct that has one.
    pub fn field(&self, name: &str) -> Option<&Column<'a>> {
        match self {
            Column::Struct { fields, .. } => fields.iter().find(|f| f.name == name).map(|f| &f.column),
            _ => None,
        }
    }
}

/// An array that breaks Arrow's layout rules.
fn bad_array(reason: impl std::fmt::Display) -> Error {
    Error::invalid_argument("data", "(an Arrow array)", format!("is not a valid Arrow array: {reason}"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Arrow buffers of a binary column built from `rows` (offsets from `base`), kept alive by
    /// the test while views borrow them.
    pub(crate) struct BinaryBuffers {
        pub validity: Vec<u8>,
        pub offsets: Vec<u8>,
        pub data: Vec<u8>,
        pub len: usize,
    }

    impl BinaryBuffers {
        pub(crate) fn new(rows: &[Option<&[u8]>]) -> Self {
            let mut b = BinaryBuffers {
                validity: vec![0; rows.len().div_ceil(8)],
                offsets: Vec::new(),
                data: Vec::new(),
                len: rows.len(),
            };
            b.offsets.extend_from_slice(&0i32.to_ne_bytes());
            for (i, r) in rows.iter().enumerate() {
                if let Some(v) = r {
                    b.validity[i / 8] |= 1 << (i % 8);
                    b.data.extend_from_slice(v);
                }
                b.offsets.extend_from_slice(&(b.data.len() as i32).to_ne_bytes());
            }
            b
        }

        /// Rows `offset..offset + len` as a column (a slice, as pyarrow's `slice` makes one).
        pub(crate) fn slice(&self, offset: usize, len: usize) -> BinaryColumn<'_> {
            let validity = Validity::new(&self.validity, offset, len).unwrap();
            BinaryColumn::new(Some(validity), Offsets::I32(&self.offsets[offset * 4..]), &self.data, len).unwrap()
        }

        pub(crate) fn column(&self) -> Column<'_> {
            Column::Binary { column: self.slice(0, self.len), utf8: false, large: false }
        }
    }

    #[test]
    fn a_sliced_binary_column_reads_its_own_rows() {
        let b = BinaryBuffers::new(&[Some(b"a"), None, Some(b""), Some(b"xyz"), Some(b"q")]);
        let c = b.slice(1, 3);
        assert_eq!((0..3).map(|i| c.value(i)).collect::<Vec<_>>(), vec![None, Some(&b""[..]), Some(&b"xyz"[..])]);
    }

    #[test]
    fn decreasing_or_out_of_range_offsets_are_refused() {
        let offsets: Vec<u8> = [0i32, 3, 2].iter().flat_map(|o| o.to_ne_bytes()).collect();
        let e = BinaryColumn::new(None, Offsets::I32(&offsets), b"abc", 2).unwrap_err().to_string();
        assert!(e.contains("offset 2 of row 2 is below the previous one, 3"), "{e}");
        let offsets: Vec<u8> = [0i64, 4].iter().flat_map(|o| o.to_ne_bytes()).collect();
        let e = BinaryColumn::new(None, Offsets::I64(&offsets), b"abc", 1).unwrap_err().to_string();
        assert!(e.contains("last offset 4 is past the end of the data (3)"), "{e}");
        let e = BinaryColumn::new(None, Offsets::I64(&offsets), b"abcd", 2).unwrap_err().to_string();
        assert!(e.contains("2 offsets for 2 rows (need 3)"), "{e}");
        let bits = [0xffu8];
        assert!(Validity::new(&bits, 3, 6).is_err());
        assert!(Validity::new(&bits, 2, 6).is_ok());
    }

    #[test]
    fn int_columns_read_native_order_values_with_nulls() {
        let values: Vec<u8> = [7i64, -1, 9].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let bits = [0b101u8];
        let c = IntColumn::new(Some(Validity::new(&bits, 0, 3).unwrap()), &values, 8, 3).unwrap();
        assert_eq!([c.value(0), c.value(1), c.value(2)], [Some(7), None, Some(9)]);
        assert!(IntColumn::new(None, &values, 8, 4).is_err());
        let narrow: Vec<u8> = [-3i32, 4].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let c = IntColumn::new(None, &narrow[4..], 4, 1).unwrap();
        assert_eq!(c.value(0), Some(4));
    }

    #[test]
    fn type_names_follow_pyarrow() {
        let b = BinaryBuffers::new(&[Some(b"k")]);
        let key = Column::Binary { column: b.slice(0, 1), utf8: true, large: false };
        let value = Column::Binary { column: b.slice(0, 1), utf8: false, large: true };
        let fields = vec![Field { name: "key".into(), column: key }, Field { name: "value".into(), column: value }];
        let entry = Column::structure(None, fields, 1).unwrap();
        let offsets: Vec<u8> = [0i32, 1].iter().flat_map(|o| o.to_ne_bytes()).collect();
        let list = Column::list(None, Offsets::I32(&offsets), entry, 1).unwrap();
        assert_eq!(list.type_name(), "list<struct<key: string, value: large_binary>>");
        assert!(list.field("key").is_none());
    }
}
