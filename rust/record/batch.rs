//! The v2 record batch (Kafka's `DefaultRecordBatch`): a read-only view over the bytes of one
//! complete batch, its validation, record iteration, and the in-place header updates a broker
//! makes on append.

use super::compression::{decompress, CompressionType};
use super::default_record::{decode_record, increment_sequence, Record, RecordContext};
use super::timestamp_type::TimestampType;
use crate::error::{Error, Result};

/// Position of `baseOffset` (int64).
pub const BASE_OFFSET_OFFSET: usize = 0;
/// Position of `batchLength` (int32): bytes after this field.
pub const LENGTH_OFFSET: usize = 8;
/// Position of `partitionLeaderEpoch` (int32), outside the CRC.
pub const PARTITION_LEADER_EPOCH_OFFSET: usize = 12;
/// Position of `magic` (int8).
pub const MAGIC_OFFSET: usize = 16;
/// Position of `crc` (uint32, CRC-32C over `[ATTRIBUTES_OFFSET, end)`).
pub const CRC_OFFSET: usize = 17;
/// Position of `attributes` (int16).
pub const ATTRIBUTES_OFFSET: usize = 21;
/// Position of `lastOffsetDelta` (int32).
pub const LAST_OFFSET_DELTA_OFFSET: usize = 23;
/// Position of `baseTimestamp` (int64).
pub const BASE_TIMESTAMP_OFFSET: usize = 27;
/// Position of `maxTimestamp` (int64).
pub const MAX_TIMESTAMP_OFFSET: usize = 35;
/// Position of `producerId` (int64).
pub const PRODUCER_ID_OFFSET: usize = 43;
/// Position of `producerEpoch` (int16).
pub const PRODUCER_EPOCH_OFFSET: usize = 51;
/// Position of `baseSequence` (int32).
pub const BASE_SEQUENCE_OFFSET: usize = 53;
/// Position of `recordsCount` (int32).
pub const RECORDS_COUNT_OFFSET: usize = 57;
/// Size of the v2 batch header (`RECORD_BATCH_OVERHEAD`).
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// Offset + length prefix shared by every magic (`Records.LOG_OVERHEAD`).
pub const LOG_OVERHEAD: usize = 12;
/// Bytes up to and including the magic byte (`Records.HEADER_SIZE_UP_TO_MAGIC`).
pub const HEADER_SIZE_UP_TO_MAGIC: usize = 17;
/// The smallest legal value of the size field (legacy magic 0 message overhead).
pub const MIN_RECORD_SIZE: i32 = 14;
/// Current magic.
pub const MAGIC_V2: u8 = 2;

/// Attribute bits (low byte).
pub const COMPRESSION_CODEC_MASK: u8 = 0x07;
/// Timestamp type bit: set for LogAppendTime.
pub const TIMESTAMP_TYPE_MASK: u8 = 0x08;
/// Transactional bit.
pub const TRANSACTIONAL_FLAG_MASK: u8 = 0x10;
/// Control bit.
pub const CONTROL_FLAG_MASK: u8 = 0x20;
/// Delete-horizon bit (KIP-534): `baseTimestamp` holds the horizon.
pub const DELETE_HORIZON_FLAG_MASK: u8 = 0x40;

/// Producer id meaning "none".
pub const NO_PRODUCER_ID: i64 = -1;
/// Producer epoch meaning "none".
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// Sequence meaning "none".
pub const NO_SEQUENCE: i32 = -1;
/// Partition leader epoch meaning "unknown".
pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;
/// Timestamp meaning "none".
pub const NO_TIMESTAMP: i64 = -1;

#[inline]
pub(crate) fn be_i64(buf: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(buf[at..at + 8].try_into().expect("8 bytes"))
}
#[inline]
pub(crate) fn be_i32(buf: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(buf[at..at + 4].try_into().expect("4 bytes"))
}
#[inline]
pub(crate) fn be_i16(buf: &[u8], at: usize) -> i16 {
    i16::from_be_bytes(buf[at..at + 2].try_into().expect("2 bytes"))
}

/// CRC-32C as Kafka computes it for v2 batches (`Crc32C`).
#[inline]
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

/// A borrowed, complete v2 record batch. Mirrors Kafka's `DefaultRecordBatch`.
/// Immutable and `Copy`; safe to share between threads.
#[derive(Clone, Copy, Debug)]
pub struct RecordBatch<'a> {
    buf: &'a [u8],
}

impl<'a> RecordBatch<'a> {
    /// Wraps `buf`, which must hold exactly one v2 batch: at least 61 bytes, magic 2, and a
    /// length field that matches. The CRC is not checked here: see [`RecordBatch::ensure_valid`].
    pub fn new(buf: &'a [u8]) -> Result<Self> {
        if buf.len() < RECORD_BATCH_OVERHEAD {
            return Err(Error::corrupt(
                0,
                format!(
                    "record batch is {} bytes, smaller than the minimum v2 batch size {RECORD_BATCH_OVERHEAD}",
                    buf.len()
                ),
            ));
        }
        let magic = buf[MAGIC_OFFSET];
        if magic != MAGIC_V2 {
            return Err(Error::corrupt(MAGIC_OFFSET as u64, format!("expected magic 2, found {magic}")));
        }
        let declared = i64::from(be_i32(buf, LENGTH_OFFSET)) + LOG_OVERHEAD as i64;
        if declared != buf.len() as i64 {
            return Err(Error::corrupt(
                LENGTH_OFFSET as u64,
                format!("batch length field says {declared} bytes but the batch is {} bytes", buf.len()),
            ));
        }
        Ok(RecordBatch { buf })
    }

    /// The batch's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.buf
    }
    /// Total size in bytes (`sizeInBytes`).
    pub fn size_in_bytes(&self) -> usize {
        self.buf.len()
    }
    /// First offset of the original batch (kept through compaction).
    pub fn base_offset(&self) -> i64 {
        be_i64(self.buf, BASE_OFFSET_OFFSET)
    }
    /// `lastOffsetDelta`.
    pub fn last_offset_delta(&self) -> i32 {
        be_i32(self.buf, LAST_OFFSET_DELTA_OFFSET)
    }
    /// Last offset: base offset + last offset delta.
    pub fn last_offset(&self) -> i64 {
        self.base_offset().wrapping_add(i64::from(self.last_offset_delta()))
    }
    /// Offset after the batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }
    /// `partitionLeaderEpoch`.
    pub fn partition_leader_epoch(&self) -> i32 {
        be_i32(self.buf, PARTITION_LEADER_EPOCH_OFFSET)
    }
    /// Always 2.
    pub fn magic(&self) -> u8 {
        self.buf[MAGIC_OFFSET]
    }
    /// The stored CRC.
    pub fn checksum(&self) -> u32 {
        be_i32(self.buf, CRC_OFFSET) as u32
    }
    /// The CRC of the bytes as they are.
    pub fn compute_checksum(&self) -> u32 {
        crc32c(&self.buf[ATTRIBUTES_OFFSET..])
    }
    /// True when the stored CRC matches (`isValid`).
    pub fn is_valid(&self) -> bool {
        self.checksum() == self.compute_checksum()
    }
    /// Kafka's `ensureValid`: the CRC must match.
    pub fn ensure_valid(&self) -> Result<()> {
        let (stored, computed) = (self.checksum(), self.compute_checksum());
        if stored != computed {
            return Err(Error::corrupt(
                CRC_OFFSET as u64,
                format!(
                    "record batch at offset {} is corrupt (stored crc = 0x{stored:08x}, computed crc = 0x{computed:08x})",
                    self.base_offset()
                ),
            ));
        }
        Ok(())
    }
    /// The attribute low byte (the high byte is unused).
    pub fn attributes(&self) -> u8 {
        self.buf[ATTRIBUTES_OFFSET + 1]
    }
    /// The codec, or an error for ids 5-7.
    pub fn compression_type(&self) -> Result<CompressionType> {
        let id = self.attributes() & COMPRESSION_CODEC_MASK;
        CompressionType::from_id(id)
            .ok_or_else(|| Error::corrupt(ATTRIBUTES_OFFSET as u64, format!("unknown compression type id {id}")))
    }
    /// CreateTime or LogAppendTime.
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes() & TIMESTAMP_TYPE_MASK == 0 {
            TimestampType::CreateTime
        } else {
            TimestampType::LogAppendTime
        }
    }
    /// Transactional flag.
    pub fn is_transactional(&self) -> bool {
        self.attributes() & TRANSACTIONAL_FLAG_MASK != 0
    }
    /// Control flag.
    pub fn is_control(&self) -> bool {
        self.attributes() & CONTROL_FLAG_MASK != 0
    }
    /// Whether `baseTimestamp` holds a delete horizon.
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes() & DELETE_HORIZON_FLAG_MASK != 0
    }
    /// The delete horizon (ms), when set.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        self.has_delete_horizon().then(|| self.base_timestamp())
    }
    /// `baseTimestamp` as stored (the delete horizon when that flag is set).
    pub fn base_timestamp(&self) -> i64 {
        be_i64(self.buf, BASE_TIMESTAMP_OFFSET)
    }
    /// `maxTimestamp`.
    pub fn max_timestamp(&self) -> i64 {
        be_i64(self.buf, MAX_TIMESTAMP_OFFSET)
    }
    /// `producerId`.
    pub fn producer_id(&self) -> i64 {
        be_i64(self.buf, PRODUCER_ID_OFFSET)
    }
    /// `producerEpoch`.
    pub fn producer_epoch(&self) -> i16 {
        be_i16(self.buf, PRODUCER_EPOCH_OFFSET)
    }
    /// `baseSequence`.
    pub fn base_sequence(&self) -> i32 {
        be_i32(self.buf, BASE_SEQUENCE_OFFSET)
    }
    /// Last sequence, wrapping past `i32::MAX` (`lastSequence`), or -1.
    pub fn last_sequence(&self) -> i32 {
        let base = self.base_sequence();
        if base == NO_SEQUENCE {
            NO_SEQUENCE
        } else {
            increment_sequence(base, self.last_offset_delta())
        }
    }
    /// `recordsCount` as stored (may be negative in corrupt input).
    pub fn records_count(&self) -> i32 {
        be_i32(self.buf, RECORDS_COUNT_OFFSET)
    }
    /// True when the batch is idempotent/transactional (has a producer id).
    pub fn has_producer_id(&self) -> bool {
        self.producer_id() != NO_PRODUCER_ID
    }

    /// Decodes the records. Compressed batches are inflated into `scratch` (cleared first),
    /// whose capacity is reused between calls. Every check Kafka makes while iterating is
    /// made here up front, so the returned records are all valid: counts, sizes, trailing
    /// bytes. Errors are positioned relative to the start of this batch.
    pub fn records<'s>(&self, scratch: &'s mut Vec<u8>) -> Result<Vec<Record<'s>>>
    where
        'a: 's,
    {
        let mut out = Vec::new();
        self.for_each_record(scratch, |r| {
            out.push(r);
            Ok(())
        })?;
        Ok(out)
    }

    /// Calls `f` for every record in order, without collecting them (the bulk-read path).
    pub fn for_each_record<'s, F>(&self, scratch: &'s mut Vec<u8>, mut f: F) -> Result<()>
    where
        'a: 's,
        F: FnMut(Record<'s>) -> Result<()>,
    {
        let count = self.records_count();
        if count < 0 {
            return Err(Error::corrupt(
                RECORDS_COUNT_OFFSET as u64,
                format!("found invalid record count {count} in batch at offset {}", self.base_offset()),
            ));
        }
        let codec = self.compression_type()?;
        let ctx = RecordContext {
            base_offset: self.base_offset(),
            base_timestamp: self.base_timestamp(),
            base_sequence: self.base_sequence(),
            log_append_time: (self.timestamp_type() == TimestampType::LogAppendTime).then(|| self.max_timestamp()),
        };
        let payload = &self.buf[RECORD_BATCH_OVERHEAD..];
        let (data, base_pos, what): (&'s [u8], usize, &str) = if codec == CompressionType::None {
            (payload, RECORD_BATCH_OVERHEAD, "bytes")
        } else {
            scratch.clear();
            // Bound the inflated size: every record takes at least 7 bytes encoded, and Kafka
            // caps a batch at max.message.bytes; 64 MiB beyond the smallest legal size is ample.
            let limit = (count as usize).saturating_mul(7).saturating_add(64 << 20);
            decompress(codec, MAGIC_V2, payload, limit, scratch).map_err(|reason| {
                Error::corrupt(RECORD_BATCH_OVERHEAD as u64, format!("batch at offset {}: {reason}", ctx.base_offset))
            })?;
            (&scratch[..], RECORD_BATCH_OVERHEAD, "decompressed bytes")
        };
        // Positions inside decompressed bytes mean nothing in the file: errors there point at
        // the start of the compressed records.
        let position_of =
            |pos: usize| if codec == CompressionType::None { (base_pos + pos) as u64 } else { base_pos as u64 };
        let mut pos = 0usize;
        for i in 0..count {
            if pos >= data.len() {
                return Err(Error::corrupt(
                    position_of(pos),
                    format!(
                        "incorrect declared batch size: batch at offset {} declares {count} records \
                         but its data ends after {i}",
                        ctx.base_offset
                    ),
                ));
            }
            let at = pos;
            let record = decode_record(data, &mut pos, &ctx).map_err(|reason| {
                let position = position_of(at);
                Error::corrupt(position, format!("record {i} of batch at offset {}: {reason}", ctx.base_offset))
            })?;
            f(record)?;
        }
        if pos != data.len() {
            return Err(Error::corrupt(
                position_of(pos),
                format!(
                    "incorrect declared batch size: {} {what} remain after the {count} records of batch at offset {}",
                    data.len() - pos,
                    ctx.base_offset
                ),
            ));
        }
        Ok(())
    }
}

/// In-place updates of a v2 batch header, as the broker makes them on append.
/// Mirrors the setters of Kafka's `DefaultRecordBatch` / `MutableRecordBatch`.
pub struct RecordBatchMut<'a> {
    buf: &'a mut [u8],
}

impl<'a> RecordBatchMut<'a> {
    /// Wraps a buffer already checked by [`RecordBatch::new`].
    pub fn new(buf: &'a mut [u8]) -> Result<Self> {
        RecordBatch::new(buf)?;
        Ok(RecordBatchMut { buf })
    }
    /// Read view.
    pub fn view(&self) -> RecordBatch<'_> {
        RecordBatch { buf: self.buf }
    }
    /// Sets the base offset so that the last offset becomes `last_offset` (`setLastOffset`).
    /// The base offset is outside the CRC.
    pub fn set_last_offset(&mut self, last_offset: i64) {
        let base = last_offset - i64::from(self.view().last_offset_delta());
        self.buf[BASE_OFFSET_OFFSET..BASE_OFFSET_OFFSET + 8].copy_from_slice(&base.to_be_bytes());
    }
    /// Sets the base offset.
    pub fn set_base_offset(&mut self, base_offset: i64) {
        self.buf[BASE_OFFSET_OFFSET..BASE_OFFSET_OFFSET + 8].copy_from_slice(&base_offset.to_be_bytes());
    }
    /// Sets the partition leader epoch (outside the CRC, so the CRC is unchanged).
    pub fn set_partition_leader_epoch(&mut self, epoch: i32) {
        self.buf[PARTITION_LEADER_EPOCH_OFFSET..PARTITION_LEADER_EPOCH_OFFSET + 4]
            .copy_from_slice(&epoch.to_be_bytes());
    }
    /// Sets the timestamp type and max timestamp and recomputes the CRC (`setMaxTimestamp`).
    /// A no-op when both already match, as in Kafka.
    pub fn set_max_timestamp(&mut self, timestamp_type: TimestampType, max_timestamp: i64) {
        let view = self.view();
        if view.max_timestamp() == max_timestamp && view.timestamp_type() == timestamp_type {
            return;
        }
        let mut attrs = self.buf[ATTRIBUTES_OFFSET + 1] & !TIMESTAMP_TYPE_MASK;
        if timestamp_type == TimestampType::LogAppendTime {
            attrs |= TIMESTAMP_TYPE_MASK;
        }
        self.buf[ATTRIBUTES_OFFSET + 1] = attrs;
        self.buf[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8].copy_from_slice(&max_timestamp.to_be_bytes());
        self.update_crc();
    }
    /// Rewrites the CRC field from the current bytes.
    pub fn update_crc(&mut self) {
        let crc = crc32c(&self.buf[ATTRIBUTES_OFFSET..]);
        self.buf[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::builder::{BatchBuilder, BatchHeader};

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// Batches written by IBM/sarama, a client tested against Kafka (spec section 11.3).
    const SARAMA: &[(&str, CompressionType, u32)] = &[
        ("0000000000000000000000460000000002547961fd000000000000000001588dcd5938000000000000000000000000000000000000000000000000000128000a00080102030406050607020608090a040b0c", CompressionType::None, 0x5479_61FD),
        ("000000000000000000000048000000000215009f61000200000000000001588dcd59380000000000000000000000000000000000000000000000000001155028000a00080102030406050607020608090a040b0c", CompressionType::Snappy, 0x1500_9F61),
        ("0000000000000000000000590000000002a94a77c5000300000000000001588dcd5938000000000000000000000000000000000000000000000000000104224d186470b91500008028000a00080102030406050607020608090a040b0c000000000c3bef92", CompressionType::Lz4, 0xA94A_77C5),
        ("00000000000000000000005f0000000002e74acea5000100000000000001588dcd593800000000000000000000000000000000000000000000000000011f8b080000096e8800ff001500eaff28000a00080102030406050607020608090a040b0c0300adc9586715000000", CompressionType::Gzip, 0xE74A_CEA5),
    ];

    #[test]
    fn crc32c_matches_kafka_vector() {
        assert_eq!(crc32c(b"Some String"), 608_512_271);
    }

    #[test]
    fn sarama_batches_decode_for_every_codec() {
        for (h, codec, crc) in SARAMA {
            let bytes = hex(h);
            let b = RecordBatch::new(&bytes).unwrap();
            b.ensure_valid().unwrap();
            assert_eq!((b.checksum(), b.compression_type().unwrap()), (*crc, *codec));
            let mut scratch = Vec::new();
            let records = b.records(&mut scratch).unwrap();
            assert_eq!(records.len(), 1);
            let r = records[0];
            assert_eq!((r.offset, r.timestamp), (0, 1_479_847_795_005));
            assert_eq!((r.key, r.value), (Some(&[1u8, 2, 3, 4][..]), Some(&[5u8, 6, 7][..])));
            assert_eq!(r.headers().collect::<Vec<_>>(), vec![(&[8u8, 9, 10][..], Some(&[11u8, 12][..]))]);
        }
    }

    #[test]
    fn empty_batch_vectors() {
        let mut bytes = hex(&format!("0000000000000000000000310000000002595fb7dd{}", "00".repeat(40)));
        let b = RecordBatch::new(&bytes).unwrap();
        b.ensure_valid().unwrap();
        let mut scratch = Vec::new();
        assert!(b.records(&mut scratch).unwrap().is_empty());
        bytes[22] = 0x20; // control flag
        let mut m = RecordBatchMut::new(&mut bytes).unwrap();
        m.update_crc();
        assert_eq!(m.view().checksum(), 0x512E_43D9);
    }

    fn sample(codec: CompressionType, count: i32) -> Vec<u8> {
        let mut b = BatchBuilder::new(BatchHeader { compression: codec, ..BatchHeader::default() });
        for i in 0..count {
            b.append_next(1_000 + i64::from(i), Some(format!("key{i}").as_bytes()), Some(b"value"), &[]).unwrap();
        }
        b.build().unwrap()
    }

    /// testInvalidCrc: any flipped bit in the CRC-covered range is detected.
    #[test]
    fn corrupt_bytes_fail_the_crc() {
        let good = sample(CompressionType::None, 3);
        for i in ATTRIBUTES_OFFSET..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x10;
            let err = RecordBatch::new(&bad).unwrap().ensure_valid().unwrap_err().to_string();
            assert!(err.contains("stored crc"), "{err}");
        }
    }

    /// testInvalidRecordCountTooMany/TooLittle{Non,}CompressedV2.
    #[test]
    fn record_count_must_match_the_data() {
        for codec in [CompressionType::None, CompressionType::Gzip, CompressionType::Lz4] {
            for declared in [2, 4, -1] {
                let mut bytes = sample(codec, 3);
                bytes[RECORDS_COUNT_OFFSET..RECORDS_COUNT_OFFSET + 4].copy_from_slice(&i32::to_be_bytes(declared));
                let mut m = RecordBatchMut::new(&mut bytes).unwrap();
                m.update_crc();
                let b = m.view();
                b.ensure_valid().unwrap();
                let mut scratch = Vec::new();
                let err = b.records(&mut scratch).unwrap_err();
                assert!(matches!(err, Error::CorruptRecord { .. }), "{codec:?} {declared}: {err}");
            }
        }
    }

    /// testSetPartitionLeaderEpoch (no CRC change), testSetLastOffset, testSetLogAppendTime.
    #[test]
    fn header_setters_behave_like_kafka() {
        let mut bytes = sample(CompressionType::None, 3);
        let crc = RecordBatch::new(&bytes).unwrap().checksum();
        let mut m = RecordBatchMut::new(&mut bytes).unwrap();
        m.set_partition_leader_epoch(15);
        m.set_last_offset(1_000);
        assert_eq!(m.view().checksum(), crc);
        assert_eq!((m.view().base_offset(), m.view().last_offset()), (998, 1_000));
        m.set_max_timestamp(TimestampType::LogAppendTime, 5_000);
        let b = m.view();
        b.ensure_valid().unwrap();
        assert_eq!(
            (b.timestamp_type(), b.max_timestamp(), b.partition_leader_epoch()),
            (TimestampType::LogAppendTime, 5_000, 15)
        );
        let mut scratch = Vec::new();
        assert!(b.records(&mut scratch).unwrap().iter().all(|r| r.timestamp == 5_000));
    }

    #[test]
    fn unknown_codec_and_bad_sizes_are_errors() {
        let mut bytes = sample(CompressionType::None, 1);
        bytes[22] |= 0x07;
        let mut m = RecordBatchMut::new(&mut bytes).unwrap();
        m.update_crc();
        assert!(m.view().compression_type().unwrap_err().to_string().contains("unknown compression"));
        let good = sample(CompressionType::None, 1);
        assert!(RecordBatch::new(&good[..good.len() - 1]).is_err());
        assert!(RecordBatch::new(&good[..40]).is_err());
    }
}
