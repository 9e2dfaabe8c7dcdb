//! Column buffers in Arrow's layout for Spark's Kafka-source schema, filled straight from the
//! decoded batches (no Python object per record). Python wraps them with
//! `pyarrow.Array.from_buffers`.

use pyo3::prelude::*;

use super::buffer::OwnedBuffer;
use super::results::py_result;
use crate::record::default_record::Record;
use crate::record::records::AnyBatch;

/// Kafka's `TimestampType` id of a batch's records, as consumers (and Spark's `timestampType`
/// column) see it: 0 CreateTime, 1 LogAppendTime, and -1 (`NO_TIMESTAMP_TYPE`) for magic-0
/// messages, which carry no timestamp (`LegacyRecord.timestampType`).
pub fn timestamp_type_id(batch: &AnyBatch<'_>) -> i32 {
    if batch.magic() == 0 {
        -1
    } else {
        batch.timestamp_type() as i32
    }
}

/// A variable-size binary/string column: validity bitmap, int32 offsets, data.
#[derive(Debug, Default)]
pub struct BinaryColumn {
    pub validity: Vec<u8>,
    pub offsets: Vec<u8>,
    pub data: Vec<u8>,
    pub len: usize,
    pub nulls: usize,
}

impl BinaryColumn {
    fn new() -> Self {
        let mut c = BinaryColumn::default();
        c.offsets.extend_from_slice(&0i32.to_le_bytes());
        c
    }

    #[inline]
    fn push(&mut self, v: Option<&[u8]>) {
        if self.len.is_multiple_of(8) {
            self.validity.push(0);
        }
        match v {
            Some(b) => {
                *self.validity.last_mut().expect("byte pushed above") |= 1 << (self.len % 8);
                self.data.extend_from_slice(b);
            }
            None => self.nulls += 1,
        }
        self.offsets.extend_from_slice(&(self.data.len() as i32).to_le_bytes());
        self.len += 1;
    }
}

/// All columns of a chunk.
#[derive(Debug)]
pub struct KafkaColumns {
    topic_name: Vec<u8>,
    partition_id: i32,
    pub key: BinaryColumn,
    pub value: BinaryColumn,
    pub topic: BinaryColumn,
    pub partition: Vec<u8>,
    pub offset: Vec<u8>,
    pub timestamp_us: Vec<u8>,
    pub timestamp_type: Vec<u8>,
    /// List offsets (int32) into the header entries.
    pub header_offsets: Vec<u8>,
    pub header_key: BinaryColumn,
    pub header_value: BinaryColumn,
    pub rows: usize,
}

impl KafkaColumns {
    /// Empty columns for records of `topic`-`partition`.
    pub fn new(topic: &str, partition: i32) -> Self {
        let mut c = KafkaColumns {
            topic_name: topic.as_bytes().to_vec(),
            partition_id: partition,
            topic: BinaryColumn::new(),
            partition: Vec::new(),
            key: BinaryColumn::new(),
            value: BinaryColumn::new(),
            offset: Vec::new(),
            timestamp_us: Vec::new(),
            timestamp_type: Vec::new(),
            header_offsets: Vec::new(),
            header_key: BinaryColumn::new(),
            header_value: BinaryColumn::new(),
            rows: 0,
        };
        c.header_offsets.extend_from_slice(&0i32.to_le_bytes());
        c
    }

    /// Makes room for `rows` more records carrying about `bytes` of keys and values.
    pub fn reserve(&mut self, rows: usize, bytes: usize) {
        for c in [&mut self.key, &mut self.value] {
            c.offsets.reserve(rows * 4);
            c.validity.reserve(rows / 8 + 1);
        }
        self.value.data.reserve(bytes);
        self.key.data.reserve(rows * 16);
        self.topic.data.reserve(rows * self.topic_name.len());
        self.topic.offsets.reserve(rows * 4);
        self.topic.validity.reserve(rows / 8 + 1);
        self.partition.reserve(rows * 4);
        self.offset.reserve(rows * 8);
        self.timestamp_us.reserve(rows * 8);
        self.timestamp_type.reserve(rows * 4);
        self.header_offsets.reserve(rows * 4);
    }

    /// Bytes of variable data gathered so far.
    pub fn data_bytes(&self) -> usize {
        self.key.data.len() + self.value.data.len() + self.header_key.data.len() + self.header_value.data.len()
    }

    /// Appends one record.
    #[inline]
    pub fn push(&mut self, r: &Record<'_>, ts_type: i32) {
        self.key.push(r.key);
        self.value.push(r.value);
        self.topic.push(Some(&self.topic_name));
        self.partition.extend_from_slice(&self.partition_id.to_le_bytes());
        self.offset.extend_from_slice(&r.offset.to_le_bytes());
        self.timestamp_us.extend_from_slice(&r.timestamp.saturating_mul(1000).to_le_bytes());
        self.timestamp_type.extend_from_slice(&ts_type.to_le_bytes());
        for (k, v) in r.headers() {
            // Header keys are UTF-8 strings in Kafka; invalid bytes are replaced as Java does.
            match std::str::from_utf8(k) {
                Ok(_) => self.header_key.push(Some(k)),
                Err(_) => self.header_key.push(Some(String::from_utf8_lossy(k).as_bytes())),
            }
            self.header_value.push(v);
        }
        self.header_offsets.extend_from_slice(&(self.header_key.len as i32).to_le_bytes());
        self.rows += 1;
    }
}

py_result! { record
    /// A binary or string column of `UnifiedLog.read_columns`, in Arrow's layout.
    #[module = "kafkalog._native"]
    pub struct BinaryBuffers {
        /// The validity bitmap (one bit per row, set = not null).
        validity: Py<OwnedBuffer>,
        /// `rows + 1` little-endian int32 offsets into `data`.
        offsets: Py<OwnedBuffer>,
        data: Py<OwnedBuffer>,
        /// How many rows are null.
        nulls: usize,
    }
}

py_result! { record
    /// One chunk of `UnifiedLog.read_columns`: Spark's Kafka-source columns as Arrow buffers
    /// (`kafkalog.arrow.columns_to_record_batch` wraps them), and where the next chunk starts.
    #[module = "kafkalog._native"]
    pub struct ArrowColumns {
        rows: usize,
        key: Py<BinaryBuffers>,
        value: Py<BinaryBuffers>,
        topic: Py<BinaryBuffers>,
        /// int32 per row.
        partition: Py<OwnedBuffer>,
        /// int64 per row.
        offset: Py<OwnedBuffer>,
        /// int64 microseconds per row.
        timestamp: Py<OwnedBuffer>,
        /// int32 per row.
        timestamp_type: Py<OwnedBuffer>,
        /// `rows + 1` int32 offsets into the header columns.
        header_offsets: Py<OwnedBuffer>,
        header_count: usize,
        header_key: Py<BinaryBuffers>,
        header_value: Py<BinaryBuffers>,
        /// The offset to read next.
        next_offset: i64,
    }
}

fn owned(py: Python<'_>, data: &mut Vec<u8>) -> PyResult<Py<OwnedBuffer>> {
    Py::new(py, OwnedBuffer::new(std::mem::take(data)))
}

fn binary(py: Python<'_>, c: &mut BinaryColumn) -> PyResult<Py<BinaryBuffers>> {
    let buffers = BinaryBuffers {
        validity: owned(py, &mut c.validity)?,
        offsets: owned(py, &mut c.offsets)?,
        data: owned(py, &mut c.data)?,
        nulls: c.nulls,
    };
    Py::new(py, buffers)
}

impl ArrowColumns {
    /// Hands the buffers of `c` to Python without copying them.
    pub(crate) fn new(py: Python<'_>, c: &mut KafkaColumns, next_offset: i64) -> PyResult<Self> {
        Ok(ArrowColumns {
            rows: c.rows,
            key: binary(py, &mut c.key)?,
            value: binary(py, &mut c.value)?,
            topic: binary(py, &mut c.topic)?,
            partition: owned(py, &mut c.partition)?,
            offset: owned(py, &mut c.offset)?,
            timestamp: owned(py, &mut c.timestamp_us)?,
            timestamp_type: owned(py, &mut c.timestamp_type)?,
            header_offsets: owned(py, &mut c.header_offsets)?,
            header_count: c.header_key.len,
            header_key: binary(py, &mut c.header_key)?,
            header_value: binary(py, &mut c.header_value)?,
            next_offset,
        })
    }
}
