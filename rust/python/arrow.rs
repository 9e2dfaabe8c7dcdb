//! Column buffers in Arrow's layout for Spark's Kafka-source schema, filled straight from the
//! decoded batches (no Python object per record). Python wraps them with
//! `pyarrow.Array.from_buffers`.

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
