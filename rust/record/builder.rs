//! Building v2 batches (Kafka's `MemoryRecordsBuilder`), end-transaction markers
//! (`MemoryRecords.writeEndTransactionalMarker`) and empty batch headers (`writeEmptyHeader`).

use super::batch::{
    crc32c, ATTRIBUTES_OFFSET, CONTROL_FLAG_MASK, CRC_OFFSET, DELETE_HORIZON_FLAG_MASK, LOG_OVERHEAD, MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP, RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK, TRANSACTIONAL_FLAG_MASK,
};
use super::compression::{compress, CompressionType};
use super::control::{ControlRecordType, END_TXN_MARKER_VALUE_SIZE};
use super::default_record::{encode_record, encode_record_raw_headers, Header, Record};
use super::timestamp_type::TimestampType;
use crate::error::{Error, Result};

/// The fixed header fields of a batch being built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// First offset of the batch.
    pub base_offset: i64,
    /// Partition leader epoch, -1 when unknown.
    pub partition_leader_epoch: i32,
    /// Codec for the records section.
    pub compression: CompressionType,
    /// Codec level (`None` = the codec's default).
    pub compression_level: Option<i32>,
    /// CreateTime or LogAppendTime.
    pub timestamp_type: TimestampType,
    /// Producer id, -1 for none.
    pub producer_id: i64,
    /// Producer epoch, -1 for none.
    pub producer_epoch: i16,
    /// Sequence of the first record, -1 for none.
    pub base_sequence: i32,
    /// Transactional flag.
    pub is_transactional: bool,
    /// Control flag.
    pub is_control: bool,
    /// Delete horizon (ms) to stamp into `baseTimestamp` (KIP-534), if any.
    pub delete_horizon_ms: Option<i64>,
}

impl Default for BatchHeader {
    fn default() -> Self {
        BatchHeader {
            base_offset: 0,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            compression: CompressionType::None,
            compression_level: None,
            timestamp_type: TimestampType::CreateTime,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            is_transactional: false,
            is_control: false,
            delete_horizon_ms: None,
        }
    }
}

impl BatchHeader {
    fn attributes(&self) -> u8 {
        let mut a = self.compression.id();
        if self.timestamp_type == TimestampType::LogAppendTime {
            a |= TIMESTAMP_TYPE_MASK;
        }
        if self.is_transactional {
            a |= TRANSACTIONAL_FLAG_MASK;
        }
        if self.is_control {
            a |= CONTROL_FLAG_MASK;
        }
        if self.delete_horizon_ms.is_some() {
            a |= DELETE_HORIZON_FLAG_MASK;
        }
        a
    }
}

/// Accumulates records and writes one v2 batch. Mirrors Kafka's `MemoryRecordsBuilder` for magic 2.
/// Not thread-safe; reuse one builder per thread with [`BatchBuilder::reset`] to keep its buffers.
#[derive(Debug)]
pub struct BatchBuilder {
    header: BatchHeader,
    records: Vec<u8>,
    compressed: Vec<u8>,
    count: i32,
    first_timestamp: Option<i64>,
    max_timestamp: i64,
    last_offset_delta: Option<i32>,
}

impl BatchBuilder {
    /// A builder for a batch with `header`.
    pub fn new(header: BatchHeader) -> Self {
        BatchBuilder {
            header,
            records: Vec::new(),
            compressed: Vec::new(),
            count: 0,
            first_timestamp: None,
            max_timestamp: NO_TIMESTAMP,
            last_offset_delta: None,
        }
    }

    /// Starts a new batch, keeping allocated buffers.
    pub fn reset(&mut self, header: BatchHeader) {
        self.header = header;
        self.records.clear();
        self.count = 0;
        self.first_timestamp = None;
        self.max_timestamp = NO_TIMESTAMP;
        self.last_offset_delta = None;
    }

    /// The header this batch will carry.
    pub fn header(&self) -> &BatchHeader {
        &self.header
    }

    /// Records appended so far.
    pub fn count(&self) -> i32 {
        self.count
    }

    /// Uncompressed size of the batch so far (header plus encoded records).
    pub fn estimated_size(&self) -> usize {
        RECORD_BATCH_OVERHEAD + self.records.len()
    }

    /// Appends a record at absolute `offset` (which must exceed the previous one).
    pub fn append(
        &mut self,
        offset: i64,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header<'_>],
    ) -> Result<()> {
        let (delta, ts_delta) = self.next_deltas(offset, timestamp)?;
        encode_record(delta, ts_delta, key, value, headers, &mut self.records);
        self.appended(delta, timestamp);
        Ok(())
    }

    /// Appends a decoded record at its own offset and timestamp with its headers copied as
    /// they are encoded (Kafka's `MemoryRecordsBuilder.append(Record)`, as the cleaner uses it).
    pub fn append_record(&mut self, record: &Record<'_>) -> Result<()> {
        let (delta, ts_delta) = self.next_deltas(record.offset, record.timestamp)?;
        let (headers, count) = record.raw_headers();
        encode_record_raw_headers(delta, ts_delta, record.key, record.value, headers, count, &mut self.records);
        self.appended(delta, record.timestamp);
        Ok(())
    }

    /// The offset and timestamp deltas of the next record, checked.
    fn next_deltas(&mut self, offset: i64, timestamp: i64) -> Result<(i32, i64)> {
        let delta = offset - self.header.base_offset;
        let delta = i32::try_from(delta)
            .ok()
            .filter(|d| *d >= 0)
            .ok_or(Error::OffsetOverflow { base_offset: self.header.base_offset, offset })?;
        if let Some(last) = self.last_offset_delta {
            if delta <= last {
                return Err(Error::invalid_offset(format!(
                    "offset {offset} is not larger than the previous offset {} in the batch",
                    self.header.base_offset + i64::from(last)
                )));
            }
        }
        if timestamp < 0 && timestamp != NO_TIMESTAMP {
            return Err(Error::invalid_record(format!("invalid negative timestamp {timestamp}")));
        }
        let base_ts = match (self.header.delete_horizon_ms, self.first_timestamp) {
            (Some(h), _) => h,
            (None, Some(first)) => first,
            (None, None) => timestamp,
        };
        Ok((delta, timestamp.wrapping_sub(base_ts)))
    }

    fn appended(&mut self, delta: i32, timestamp: i64) {
        self.first_timestamp.get_or_insert(timestamp);
        self.max_timestamp = self.max_timestamp.max(timestamp);
        self.last_offset_delta = Some(delta);
        self.count += 1;
    }

    /// Appends a record at the next offset (base offset + record count).
    pub fn append_next(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header<'_>],
    ) -> Result<()> {
        let offset = self.header.base_offset + i64::from(self.last_offset_delta.map_or(0, |d| d + 1));
        self.append(offset, timestamp, key, value, headers)
    }

    /// Writes the finished batch to the end of `out`. `last_offset_delta` overrides the
    /// delta of the last appended record (the cleaner keeps the original batch's value);
    /// `log_append_time` sets the max timestamp for LogAppendTime batches.
    pub fn build_into(
        &mut self,
        out: &mut Vec<u8>,
        last_offset_delta: Option<i32>,
        log_append_time: Option<i64>,
    ) -> Result<()> {
        if self.count == 0 && last_offset_delta.is_none() {
            return Err(Error::illegal_state("cannot build a batch with no records"));
        }
        let h = self.header;
        let payload: &[u8] = if h.compression == CompressionType::None {
            &self.records
        } else {
            self.compressed.clear();
            compress(h.compression, h.compression_level, &self.records, &mut self.compressed)
                .map_err(|e| Error::illegal_state(format!("{} compression failed: {e}", h.compression.name())))?;
            &self.compressed
        };
        let base_timestamp = h.delete_horizon_ms.or(self.first_timestamp).unwrap_or(NO_TIMESTAMP);
        let max_timestamp = match (h.timestamp_type, log_append_time) {
            (TimestampType::LogAppendTime, Some(t)) => t,
            _ => self.max_timestamp,
        };
        let last_delta = last_offset_delta.or(self.last_offset_delta).unwrap_or(0);
        let start = out.len();
        write_header(
            out,
            &h,
            RECORD_BATCH_OVERHEAD + payload.len(),
            last_delta,
            base_timestamp,
            max_timestamp,
            self.count,
        );
        out.extend_from_slice(payload);
        finish_crc(out, start);
        Ok(())
    }

    /// Builds the batch into a new vector.
    pub fn build(&mut self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.estimated_size());
        self.build_into(&mut out, None, None)?;
        Ok(out)
    }
}

/// Writes the 61-byte header at the end of `out` with a zero CRC; the caller appends the
/// records and calls [`finish_crc`].
fn write_header(
    out: &mut Vec<u8>,
    h: &BatchHeader,
    size: usize,
    last_offset_delta: i32,
    base_timestamp: i64,
    max_timestamp: i64,
    count: i32,
) {
    out.reserve(size);
    out.extend_from_slice(&header_bytes(h, size, last_offset_delta, base_timestamp, max_timestamp, count));
}

/// The 61-byte header of a batch of `size` bytes, with a zero CRC.
fn header_bytes(
    h: &BatchHeader,
    size: usize,
    last_offset_delta: i32,
    base_timestamp: i64,
    max_timestamp: i64,
    count: i32,
) -> [u8; RECORD_BATCH_OVERHEAD] {
    let mut b = [0u8; RECORD_BATCH_OVERHEAD];
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        b[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    put(&h.base_offset.to_be_bytes());
    put(&((size - LOG_OVERHEAD) as i32).to_be_bytes());
    put(&h.partition_leader_epoch.to_be_bytes());
    put(&[MAGIC_V2]);
    put(&[0; 4]);
    put(&[0, h.attributes()]);
    put(&last_offset_delta.to_be_bytes());
    put(&base_timestamp.to_be_bytes());
    put(&max_timestamp.to_be_bytes());
    put(&h.producer_id.to_be_bytes());
    put(&h.producer_epoch.to_be_bytes());
    put(&h.base_sequence.to_be_bytes());
    put(&count.to_be_bytes());
    b
}

/// Completes an uncompressed batch whose records were encoded in place: `out[start..start +
/// 61]` was set aside for the header, and the `count` records (offset deltas `0..count`, as
/// [`BatchBuilder::append_next`] gives them) follow it to the end of `out`. Writes the header
/// and the CRC: the bytes [`BatchBuilder::build_into`] writes for the same records and
/// `header`, without copying the records. `log_append_time` sets the max timestamp of a
/// LogAppendTime batch, as there.
pub fn finish_uncompressed_in_place(
    out: &mut [u8],
    start: usize,
    header: &BatchHeader,
    count: i32,
    first_timestamp: i64,
    max_timestamp: i64,
    log_append_time: Option<i64>,
) -> Result<()> {
    if header.compression != CompressionType::None || count <= 0 || out.len() < start + RECORD_BATCH_OVERHEAD {
        return Err(Error::illegal_state(format!(
            "an in-place batch must be uncompressed with records after its header ({:?}, {count} records)",
            header.compression
        )));
    }
    let base_timestamp = header.delete_horizon_ms.unwrap_or(first_timestamp);
    let max_timestamp = match (header.timestamp_type, log_append_time) {
        (TimestampType::LogAppendTime, Some(t)) => t,
        _ => max_timestamp,
    };
    let size = out.len() - start;
    out[start..start + RECORD_BATCH_OVERHEAD].copy_from_slice(&header_bytes(
        header,
        size,
        count - 1,
        base_timestamp,
        max_timestamp,
        count,
    ));
    finish_crc(out, start);
    Ok(())
}

/// Computes and stores the CRC of the batch that starts at `start` and ends `out`.
fn finish_crc(out: &mut [u8], start: usize) {
    let crc = crc32c(&out[start + ATTRIBUTES_OFFSET..]);
    out[start + CRC_OFFSET..start + CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Writes a 61-byte batch with no records (`DefaultRecordBatch.writeEmptyHeader`), as the
/// cleaner does for a producer's last batch when every record was removed.
#[allow(clippy::too_many_arguments)]
pub fn write_empty_header(
    out: &mut Vec<u8>,
    base_offset: i64,
    last_offset: i64,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    partition_leader_epoch: i32,
    timestamp_type: TimestampType,
    max_timestamp: i64,
    is_transactional: bool,
    is_control: bool,
) -> Result<()> {
    let delta = i32::try_from(last_offset - base_offset)
        .ok()
        .filter(|d| *d >= 0)
        .ok_or(Error::OffsetOverflow { base_offset, offset: last_offset })?;
    let h = BatchHeader {
        base_offset,
        partition_leader_epoch,
        compression: CompressionType::None,
        compression_level: None,
        timestamp_type,
        producer_id,
        producer_epoch,
        base_sequence,
        is_transactional,
        is_control,
        delete_horizon_ms: None,
    };
    let start = out.len();
    write_header(out, &h, RECORD_BATCH_OVERHEAD, delta, NO_TIMESTAMP, max_timestamp, 0);
    finish_crc(out, start);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
/// Writes a COMMIT or ABORT control batch (`MemoryRecords.withEndTransactionMarker`):
/// control + transactional flags, no compression, CreateTime, one record whose key is
/// (version 0, type) and whose value is (version 0, coordinator epoch).
pub fn write_end_txn_marker(
    out: &mut Vec<u8>,
    offset: i64,
    timestamp: i64,
    partition_leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    marker: ControlRecordType,
    coordinator_epoch: i32,
) -> Result<()> {
    if !matches!(marker, ControlRecordType::Commit | ControlRecordType::Abort) {
        return Err(Error::illegal_state(format!("{marker:?} is not an end-transaction marker")));
    }
    let mut key = [0u8; 4];
    key[2..].copy_from_slice(&marker.id().to_be_bytes());
    let mut value = [0u8; END_TXN_MARKER_VALUE_SIZE];
    value[2..].copy_from_slice(&coordinator_epoch.to_be_bytes());
    let mut b = BatchBuilder::new(BatchHeader {
        base_offset: offset,
        partition_leader_epoch,
        producer_id,
        producer_epoch,
        is_transactional: true,
        is_control: true,
        ..BatchHeader::default()
    });
    b.append(offset, timestamp, Some(&key), Some(&value), &[])?;
    b.build_into(out, None, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::batch::RecordBatch;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// Encoding and decoding agree, and the header fields land where Kafka reads them.
    #[test]
    fn built_batch_round_trips() {
        let header = BatchHeader {
            base_offset: 40,
            partition_leader_epoch: 7,
            producer_id: 99,
            producer_epoch: 2,
            base_sequence: 11,
            ..BatchHeader::default()
        };
        let mut b = BatchBuilder::new(header);
        b.append(40, 1_000, Some(b"k1"), Some(b"v1"), &[(b"h", Some(b"x"))]).unwrap();
        b.append(42, 900, None, None, &[]).unwrap();
        assert!(b.append(42, 900, None, None, &[]).is_err(), "offsets must increase");
        let out = b.build().unwrap();
        let batch = RecordBatch::new(&out).unwrap();
        batch.ensure_valid().unwrap();
        assert_eq!((batch.base_offset(), batch.last_offset(), batch.partition_leader_epoch()), (40, 42, 7));
        assert_eq!((batch.base_timestamp(), batch.max_timestamp(), batch.records_count()), (1_000, 1_000, 2));
        assert_eq!((batch.producer_id(), batch.producer_epoch(), batch.last_sequence()), (99, 2, 13));
        let mut scratch = Vec::new();
        let records = batch.records(&mut scratch).unwrap();
        assert_eq!(records[0].headers().collect::<Vec<_>>(), vec![(&b"h"[..], Some(&b"x"[..]))]);
        assert_eq!((records[1].offset, records[1].timestamp, records[1].sequence), (42, 900, 13));
        assert!(records[1].key.is_none() && records[1].value.is_none());
    }

    /// A batch encoded in place is byte for byte the one the builder builds, LogAppendTime too.
    #[test]
    fn in_place_batch_matches_the_builder() {
        use crate::record::default_record::encode_record;
        type Row<'a> = (i64, Option<&'a [u8]>, Option<&'a [u8]>);
        for (ts_type, lat) in [(TimestampType::CreateTime, None), (TimestampType::LogAppendTime, Some(9_999))] {
            let header = BatchHeader {
                base_offset: 7,
                partition_leader_epoch: 3,
                timestamp_type: ts_type,
                ..BatchHeader::default()
            };
            let rows: [Row<'_>; 3] = [(500, Some(b"k"), Some(b"v")), (400, None, Some(b"vv")), (900, Some(b""), None)];
            let mut b = BatchBuilder::new(header);
            for (ts, k, v) in rows {
                b.append_next(ts, k, v, &[(b"h", Some(b"x"))]).unwrap();
            }
            let mut built = vec![1, 2];
            b.build_into(&mut built, None, lat).unwrap();
            let mut out = vec![1, 2];
            out.extend_from_slice(&[0xee; RECORD_BATCH_OVERHEAD]);
            for (i, (ts, k, v)) in rows.into_iter().enumerate() {
                encode_record(i as i32, ts - 500, k, v, &[(b"h", Some(b"x"))], &mut out);
            }
            finish_uncompressed_in_place(&mut out, 2, &header, 3, 500, 900, lat).unwrap();
            assert_eq!(out, built, "{ts_type:?}");
        }
    }

    /// The COMMIT marker vector of spec section 11.4.
    #[test]
    fn commit_marker_matches_vector() {
        let mut out = Vec::new();
        write_end_txn_marker(&mut out, 10, 1_700_000_000_000, 3, 42, 1, ControlRecordType::Commit, 5).unwrap();
        let expected = hex("000000000000000a000000420000000302b5fd92c40030000000000000018bcfe568000000018bcfe56800000000000000002a0001ffffffff000000012000000008000000010c00000000000500");
        assert_eq!(out, expected);
    }

    /// DefaultRecordBatchTest.testWriteEmptyHeader.
    #[test]
    fn empty_header_keeps_offsets_and_producer() {
        let mut out = Vec::new();
        write_empty_header(&mut out, 15, 30, 23, 3, 10, 99, TimestampType::CreateTime, 1234, true, false).unwrap();
        let b = RecordBatch::new(&out).unwrap();
        b.ensure_valid().unwrap();
        assert_eq!((b.base_offset(), b.last_offset(), b.producer_id(), b.producer_epoch()), (15, 30, 23, 3));
        assert_eq!((b.base_sequence(), b.last_sequence(), b.partition_leader_epoch()), (10, 25, 99));
        assert_eq!((b.base_timestamp(), b.max_timestamp(), b.records_count()), (-1, 1234, 0));
        assert!(b.is_transactional() && !b.is_control() && !b.has_delete_horizon());
        let mut scratch = Vec::new();
        assert!(b.records(&mut scratch).unwrap().is_empty());
    }
}
