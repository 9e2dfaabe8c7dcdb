//! Legacy magic 0 and magic 1 log entries (Kafka's `LegacyRecord` and `AbstractLegacyRecordBatch`), so that segments
//! written before message format v2 stay readable.
//!
//! A log entry is `offset int64`, `size int32`, then a message of `size` bytes: `crc uint32` (CRC-32/IEEE over the rest
//! of the message), `magic int8`, `attributes int8` (bits 0-2 codec, bit 3 timestamp type for v1), `timestamp int64`
//! (v1 only), `keyLength int32` + key, `valueLength int32` + value (a negative length means null). A compressed entry,
//! the *wrapper*, has a null key and a value holding a compressed stream of inner log entries; its offset is that of
//! the last inner message. Inner offsets are relative for v1 (0, 1, ...) and absolute for v0.
//!
//! Where Kafka's reader is lenient this one is too: bytes after the value are allowed (the CRC covers them), any
//! negative length means null, a truncated inner entry at the end of a decompressed stream ends it silently, and a v1
//! wrapper with offset 0 (written by some librdkafka versions) takes its inner offsets as they are. As in Kafka's read
//! path (not its produce-time validation), an inner message may have another magic than its wrapper: cleaners before
//! KAFKA-4298 wrote magic 1 wrappers around magic 0 messages. The wrapper's magic decides how inner offsets read, the
//! inner message's whether it has a timestamp. Beyond Kafka's read path, inner CRCs must hold.

// Casts are between on-disk int32 lengths and sizes already checked against the buffer; the record tuple type is the
// public API's.
#![allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap, clippy::cast_sign_loss)]
#![allow(clippy::must_use_candidate, clippy::type_complexity)]

use std::ops::Range;

use super::compression::{compress_with_magic, decompress, CompressionType};
use super::default_record::Record;
use super::timestamp_type::TimestampType;
use crate::error::{Error, Result};

/// Offset + size prefix of every log entry (`Records.LOG_OVERHEAD`).
const LOG_OVERHEAD: usize = 12;
const SIZE_OFFSET: usize = 8;
const CRC_OFFSET: usize = 12;
const MAGIC_OFFSET: usize = 16;
const ATTRIBUTES_OFFSET: usize = 17;
const TIMESTAMP_OFFSET: usize = 18;
/// Smallest magic 0 message: crc, magic, attributes, key length, value length.
pub const RECORD_OVERHEAD_V0: usize = 14;
/// Smallest magic 1 message: the v0 fields plus the timestamp.
pub const RECORD_OVERHEAD_V1: usize = 22;
const CODEC_MASK: u8 = 0x07;
const TIMESTAMP_TYPE_MASK: u8 = 0x08;

/// One legacy log entry: a single magic 0/1 message, or a compressed wrapper holding several. Mirrors Kafka's
/// `AbstractLegacyRecordBatch` over a `LegacyRecord`. An immutable borrowed view: `Copy`, and safe to share between
/// threads.
#[derive(Clone, Copy, Debug)]
pub struct LegacyEntry<'a> {
    buf: &'a [u8],
}

/// A framing error: position in the entry and reason.
type Bad = (usize, String);
/// The next inner entry of a decompressed stream, if any.
type Inner<'s> = Result<Option<LegacyEntry<'s>>>;

/// Where a message's key and value lie in its entry (`None` = null).
struct Layout {
    key: Option<Range<usize>>,
    value: Option<Range<usize>>,
    /// Position of the value length field.
    vpos: usize,
}

fn be<const N: usize>(buf: &[u8], pos: usize) -> Option<[u8; N]> {
    buf.get(pos..pos.checked_add(N)?)?.try_into().ok()
}

fn be_i32(buf: &[u8], pos: usize) -> Option<i32> {
    be(buf, pos).map(i32::from_be_bytes)
}

fn be_i64(buf: &[u8], pos: usize) -> Option<i64> {
    be(buf, pos).map(i64::from_be_bytes)
}

/// Reads a length-prefixed field at `pos`: its range (`None` if null) and the next position.
fn sized_field(buf: &[u8], pos: usize, what: &str) -> Result<(Option<Range<usize>>, usize), Bad> {
    let Some(len) = be_i32(buf, pos) else { return Err((pos, format!("message ends inside the {what} length"))) };
    let start = pos + 4;
    if len < 0 {
        return Ok((None, start));
    }
    match start.checked_add(len as usize) {
        Some(end) if end <= buf.len() => Ok((Some(start..end), end)),
        _ => {
            let left = buf.len() - start;
            Err((pos, format!("{what} length {len} runs past the message end ({left} left)")))
        }
    }
}

/// Checks the framing of the entry in `buf`.
fn parse(buf: &[u8]) -> Result<Layout, Bad> {
    let (len, min) = (buf.len(), LOG_OVERHEAD + RECORD_OVERHEAD_V0);
    if len < min {
        return Err((0, format!("legacy entry is {len} bytes, below the minimum of {min}")));
    }
    let size = be_i32(buf, SIZE_OFFSET).unwrap_or(-1);
    if i64::from(size) != (len - LOG_OVERHEAD) as i64 {
        let reason = format!("size field says {size} but the message is {} bytes", len - 12);
        return Err((SIZE_OFFSET, reason));
    }
    let magic = buf[MAGIC_OFFSET];
    let (min, key_size_pos) = match magic {
        0 => (RECORD_OVERHEAD_V0, TIMESTAMP_OFFSET),
        1 => (RECORD_OVERHEAD_V1, TIMESTAMP_OFFSET + 8),
        m => return Err((MAGIC_OFFSET, format!("invalid legacy magic {m}, expected 0 or 1"))),
    };
    if (size as usize) < min {
        let reason = format!("magic {magic} message of {size} bytes is below the minimum of {min}");
        return Err((SIZE_OFFSET, reason));
    }
    let (key, vpos) = sized_field(buf, key_size_pos, "key")?;
    let (value, _) = sized_field(buf, vpos, "value")?;
    Ok(Layout { key, value, vpos })
}

impl<'a> LegacyEntry<'a> {
    /// Wraps `buf`, which must hold exactly one entry: a size field matching `buf`, a message of at least 14 (v0) / 22
    /// (v1) bytes, magic 0 or 1, and key and value lengths within the message. The CRC is not checked here: see
    /// [`LegacyEntry::ensure_valid`].
    ///
    /// # Errors
    /// [`Error::CorruptRecord`] with the position in `buf` of the offending field.
    pub fn new(buf: &'a [u8]) -> Result<Self> {
        parse(buf).map_err(|(pos, reason)| Error::corrupt(pos as u64, reason))?;
        Ok(LegacyEntry { buf })
    }

    /// The entry's bytes, log overhead included.
    pub fn bytes(&self) -> &'a [u8] {
        self.buf
    }

    /// The magic byte, 0 or 1.
    pub fn magic(&self) -> u8 {
        self.buf[MAGIC_OFFSET]
    }

    fn attributes(&self) -> u8 {
        self.buf[ATTRIBUTES_OFFSET]
    }

    /// The entry's offset: for a wrapper, the offset of its last inner message.
    pub fn last_offset(&self) -> i64 {
        be_i64(self.buf, 0).unwrap_or(-1)
    }

    /// The first offset: the entry's own, or for a wrapper its first inner message's absolute offset (Kafka's
    /// `baseOffset()`, which decompresses too).
    ///
    /// # Errors
    /// As [`LegacyEntry::for_each_record`], for a wrapper.
    pub fn base_offset(&self) -> Result<i64> {
        match self.compression_type()? {
            CompressionType::None => Ok(self.last_offset()),
            codec => Ok(self.inflate(codec, &mut Vec::new())?.1),
        }
    }

    /// The message timestamp for v1 (the wrapper's for a compressed entry); -1 for v0.
    pub fn max_timestamp(&self) -> i64 {
        match self.magic() {
            0 => -1,
            _ => be_i64(self.buf, TIMESTAMP_OFFSET).unwrap_or(-1),
        }
    }

    /// Attribute bit 3 for v1; `CreateTime` for v0 (Kafka's `NO_TIMESTAMP_TYPE`).
    pub fn timestamp_type(&self) -> TimestampType {
        if self.magic() > 0 && self.attributes() & TIMESTAMP_TYPE_MASK != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// The codec in attribute bits 0-2.
    ///
    /// # Errors
    /// [`Error::CorruptRecord`] for ids 5-7 (unknown) and 4 (zstd, illegal before magic 2).
    pub fn compression_type(&self) -> Result<CompressionType> {
        let id = self.attributes() & CODEC_MASK;
        let reason = match CompressionType::from_id(id) {
            Some(CompressionType::Zstd) => {
                format!("zstd is not supported for magic {}", self.magic())
            }
            Some(codec) => return Ok(codec),
            None => format!("unknown compression type id {id}"),
        };
        Err(Error::corrupt(ATTRIBUTES_OFFSET as u64, reason))
    }

    /// The stored CRC.
    pub fn checksum(&self) -> u32 {
        be(self.buf, CRC_OFFSET).map_or(0, u32::from_be_bytes)
    }

    /// The CRC-32 (IEEE) of the message from the magic byte to the end.
    pub fn compute_checksum(&self) -> u32 {
        crc32fast::hash(&self.buf[MAGIC_OFFSET..])
    }

    /// True when the stored CRC matches the contents.
    pub fn is_valid(&self) -> bool {
        self.checksum() == self.compute_checksum()
    }

    /// Checks the CRC (Kafka's `LegacyRecord.ensureValid`).
    ///
    /// # Errors
    /// [`Error::CorruptRecord`] naming the stored and computed CRCs and the entry's offset.
    pub fn ensure_valid(&self) -> Result<()> {
        if self.is_valid() {
            return Ok(());
        }
        let (offset, stored, computed) = (self.last_offset(), self.checksum(), self.compute_checksum());
        let reason =
            format!("legacy message at offset {offset} is corrupt (stored crc = {stored}, computed crc = {computed})");
        Err(Error::corrupt(CRC_OFFSET as u64, reason))
    }

    fn layout(&self) -> Option<Layout> {
        parse(self.buf).ok()
    }

    /// The key, `None` when null.
    pub fn key(&self) -> Option<&'a [u8]> {
        self.layout()?.key.map(|r| &self.buf[r])
    }

    /// The value, `None` when null (for a wrapper: the compressed inner entries).
    pub fn value(&self) -> Option<&'a [u8]> {
        self.layout()?.value.map(|r| &self.buf[r])
    }

    /// Calls `f` for every record: an uncompressed entry yields itself; a wrapper is inflated into `scratch` (cleared
    /// first) and yields each inner message with its absolute offset and its timestamp (the wrapper's for a v1
    /// `LogAppendTime` wrapper, -1 for v0). All inner messages are validated before the first is yielded, as Kafka's
    /// `DeepRecordsIterator` reads the whole set up front.
    ///
    /// # Errors
    /// [`Error::CorruptRecord`] for a bad codec, a null or undecodable wrapper value, no inner messages, an inner
    /// message that is malformed, of another magic, compressed, or fails its CRC, or a v1 wrapper offset (other than 0)
    /// below the last inner offset; and what `f` returns.
    pub fn for_each_record<'s, F>(&self, scratch: &'s mut Vec<u8>, mut f: F) -> Result<()>
    where
        'a: 's,
        F: FnMut(Record<'s>) -> Result<()>,
    {
        let codec = self.compression_type()?;
        if codec == CompressionType::None {
            let (offset, timestamp) = (self.last_offset(), self.max_timestamp());
            let (key, value, size) = (self.key(), self.value(), self.buf.len() as u32);
            return f(Record::without_headers(offset, timestamp, key, value, size));
        }
        let (base, _) = self.inflate(codec, scratch)?;
        let data: &'s [u8] = scratch;
        let log_append = self.timestamp_type() == TimestampType::LogAppendTime;
        let wrapper_timestamp = log_append.then_some(self.max_timestamp());
        let mut pos = 0;
        while let Some(inner) = self.next_inner(data, &mut pos, false)? {
            let offset = base + inner.last_offset();
            // Kafka's DeepRecordsIterator gives a v1 inner message the wrapper's LogAppendTime; a v0 one (KAFKA-4298)
            // has no timestamp whatever its wrapper.
            let timestamp = match inner.magic() {
                0 => -1,
                _ => wrapper_timestamp.unwrap_or_else(|| inner.max_timestamp()),
            };
            let (key, value, size) = (inner.key(), inner.value(), inner.buf.len() as u32);
            f(Record::without_headers(offset, timestamp, key, value, size))?;
        }
        Ok(())
    }

    /// An error about the wrapper's inner set, placed at the start of the compressed stream.
    fn inner_error(&self, reason: &str) -> Error {
        let pos = self.layout().map_or(0, |l| l.vpos + 4) as u64;
        let reason = format!("compressed message set at offset {}: {reason}", self.last_offset());
        Error::corrupt(pos, reason)
    }

    /// Decompresses the wrapper value into `scratch` and validates every inner message. Returns what to add to each
    /// inner offset (for v1 the absolute offset of relative offset 0, for v0 0) and the absolute offset of the first
    /// inner message.
    fn inflate(&self, codec: CompressionType, scratch: &mut Vec<u8>) -> Result<(i64, i64)> {
        scratch.clear();
        let Some(value) = self.value() else {
            let pos = self.layout().map_or(0, |l| l.vpos) as u64;
            let reason = format!("wrapper at offset {} has a null value", self.last_offset());
            return Err(Error::corrupt(pos, reason));
        };
        // Kafka sets no bound; this one stops decompression bombs without hurting real data.
        let limit = value.len().saturating_mul(64).saturating_add(64 << 20);
        if let Err(r) = decompress(codec, self.magic(), value, limit, scratch) {
            return Err(self.inner_error(&format!("{} decompression failed: {r}", codec.name())));
        }
        let (mut pos, mut first, mut last, mut max) = (0, None, 0, i64::MIN);
        while let Some(inner) = self.next_inner(scratch, &mut pos, true)? {
            let offset = inner.last_offset();
            first.get_or_insert(offset);
            (last, max) = (offset, max.max(offset));
        }
        let Some(first) = first else { return Err(self.inner_error("no inner messages")) };
        if self.magic() == 0 {
            return Ok((0, first));
        }
        let wrapper = self.last_offset();
        if wrapper != 0 && wrapper < last {
            let reason = format!("wrapper offset {wrapper} is below the last inner offset {last}");
            return Err(self.inner_error(&reason));
        }
        // A wrapper offset of 0 (some librdkafka versions) keeps the inner offsets as they are.
        let lead = if wrapper == 0 { 0 } else { last };
        match wrapper.checked_sub(lead).filter(|b| b.checked_add(max).is_some()) {
            Some(base) => Ok((base, base + first)),
            None => Err(self.inner_error("inner offsets overflow")),
        }
    }

    /// The inner entry at `*pos` of the decompressed `data`, advancing `*pos`; `None` at the end. As in Kafka's
    /// `DataLogInputStream`, fewer than 12 bytes or a truncated last entry end the stream quietly, while a size below
    /// 14 is corrupt.
    fn next_inner<'s>(&self, data: &'s [u8], pos: &mut usize, crc: bool) -> Inner<'s> {
        let at = *pos;
        let rest = data.get(at..).unwrap_or_default();
        let Some(size) = be_i32(rest, SIZE_OFFSET) else { return Ok(None) };
        if size < RECORD_OVERHEAD_V0 as i32 {
            let reason = format!("inner entry at byte {at} has size {size}, below 14");
            return Err(self.inner_error(&reason));
        }
        let Some(buf) = rest.get(..LOG_OVERHEAD + size as usize) else { return Ok(None) };
        if let Err((p, reason)) = parse(buf) {
            return Err(self.inner_error(&format!("inner entry at byte {}: {reason}", at + p)));
        }
        let inner = LegacyEntry { buf };
        let offset = inner.last_offset();
        let reason = if inner.attributes() & CODEC_MASK != 0 {
            format!("inner message at offset {offset} is compressed; inner messages must not be")
        } else if crc && !inner.is_valid() {
            let (stored, computed) = (inner.checksum(), inner.compute_checksum());
            format!("inner message at offset {offset} is corrupt (stored crc = {stored}, computed crc = {computed})")
        } else {
            *pos = at + buf.len();
            return Ok(Some(inner));
        };
        Err(self.inner_error(&reason))
    }
}

/// Appends one entry: log overhead, then the message with its CRC filled in. Appends nothing on error.
fn write_message(
    out: &mut Vec<u8>,
    magic: u8,
    attributes: u8,
    offset: i64,
    timestamp: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Result<()> {
    if magic > 1 || timestamp < -1 {
        let reason = format!("cannot write a magic {magic} message with timestamp {timestamp}");
        return Err(Error::illegal_state(reason));
    }
    let overhead = [RECORD_OVERHEAD_V0, RECORD_OVERHEAD_V1][usize::from(magic)];
    let size = overhead + key.map_or(0, <[u8]>::len) + value.map_or(0, <[u8]>::len);
    let Ok(size) = i32::try_from(size) else { return Err(Error::illegal_state("legacy message over 2 GiB")) };
    out.extend_from_slice(&offset.to_be_bytes());
    out.extend_from_slice(&size.to_be_bytes());
    let crc_pos = out.len();
    out.extend_from_slice(&[0, 0, 0, 0, magic, attributes]);
    if magic == 1 {
        out.extend_from_slice(&timestamp.to_be_bytes());
    }
    for field in [key, value] {
        out.extend_from_slice(&field.map_or(-1, |b| b.len() as i32).to_be_bytes());
        out.extend_from_slice(field.unwrap_or_default());
    }
    let crc = crc32fast::hash(&out[crc_pos + 4..]);
    out[crc_pos..crc_pos + 4].copy_from_slice(&crc.to_be_bytes());
    Ok(())
}

fn timestamp_bit(magic: u8, timestamp_type: TimestampType) -> u8 {
    match (magic, timestamp_type) {
        (1, TimestampType::LogAppendTime) => TIMESTAMP_TYPE_MASK,
        _ => 0,
    }
}

/// Writes one uncompressed legacy entry (Kafka no longer writes these; tests and converters do). The timestamp and
/// timestamp type are stored only for magic 1.
///
/// # Errors
/// [`Error::IllegalState`] for a magic other than 0/1, a timestamp below -1, or a message over 2 GiB. Nothing is
/// appended on error.
pub fn write_legacy_entry(
    out: &mut Vec<u8>,
    magic: u8,
    offset: i64,
    timestamp: i64,
    timestamp_type: TimestampType,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Result<()> {
    let attributes = timestamp_bit(magic, timestamp_type);
    write_message(out, magic, attributes, offset, timestamp, key, value)
}

/// Writes a compressed wrapper holding `records` as `(offset, timestamp, key, value)`, the way Kafka's
/// `MemoryRecordsBuilder` did for magic 0/1: inner offsets relative to the first record for v1 and absolute for v0; the
/// wrapper has the last record's offset, a null key and, for v1, the largest record timestamp. Inner messages keep
/// their own timestamps (and the type bit), as after a broker's in-place `LogAppendTime` rewrite, so a `LogAppendTime`
/// set reads back with every record at the wrapper timestamp. For magic 0 with LZ4 the frame header checksum also
/// covers the frame magic number, as Kafka's old writer made it (KAFKA-3160).
///
/// # Errors
/// [`Error::IllegalState`] for no records, no codec, zstd, or as [`write_legacy_entry`]; [`Error::InvalidOffset`] for
/// offsets that do not increase or span more than `i32::MAX`. Nothing is appended on error.
pub fn write_legacy_compressed(
    out: &mut Vec<u8>,
    magic: u8,
    codec: CompressionType,
    timestamp_type: TimestampType,
    records: &[(i64, i64, Option<&[u8]>, Option<&[u8]>)],
) -> Result<()> {
    let name = codec.name();
    if matches!(codec, CompressionType::None | CompressionType::Zstd) {
        let reason = format!("{name} cannot compress a magic {magic} message set");
        return Err(Error::illegal_state(reason));
    }
    let (Some(&(first, ..)), Some(&(last, ..))) = (records.first(), records.last()) else {
        return Err(Error::illegal_state("no records to compress"));
    };
    let bit = timestamp_bit(magic, timestamp_type);
    let (mut inner, mut prev, mut max_timestamp) = (Vec::new(), None, -1);
    for &(offset, timestamp, key, value) in records {
        let delta = offset.checked_sub(first).unwrap_or(i64::MAX);
        if prev.is_some_and(|p| offset <= p) || delta > i64::from(i32::MAX) {
            let reason = format!("offset {offset} cannot follow {prev:?} in a set from {first}");
            return Err(Error::invalid_offset(reason));
        }
        prev = Some(offset);
        let stored = if magic == 0 { offset } else { delta };
        write_message(&mut inner, magic, bit, stored, timestamp, key, value)?;
        max_timestamp = max_timestamp.max(timestamp);
    }
    // With magic 0, LZ4 writes Kafka's old (KAFKA-3160) frame header checksum.
    let mut compressed = Vec::new();
    compress_with_magic(codec, None, magic, &inner, &mut compressed)
        .map_err(|e| Error::illegal_state(format!("{name} compression failed: {e}")))?;
    // For magic 0 the timestamp is not written.
    let (attributes, value) = (codec.id() | bit, Some(&compressed[..]));
    write_message(out, magic, attributes, last, max_timestamp, None, value)
}

#[cfg(test)]
#[path = "legacy_tests.rs"]
mod tests;
