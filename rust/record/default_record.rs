//! One record inside a v2 batch (Kafka's `DefaultRecord`): decode into borrowed views and encode
//! from slices.
//!
//! Layout: `length varint`, `attributes int8`, `timestampDelta varlong`, `offsetDelta varint`,
//! `keyLength varint` + key, `valueLength varint` + value, `headerCount varint`, then per header
//! `keyLength varint` + key, `valueLength varint` + value. A length of -1 means null.

use super::varint::{
    put_varint, put_varlong, read_varint, read_varlong, size_of_varint, size_of_varlong, write_varint,
};

/// A decoded record, borrowing its key, value and headers from the batch (or from the
/// decompression buffer). Produced for v2 batches and for legacy magic 0/1 messages alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Absolute offset: the batch's base offset plus the record's offset delta.
    pub offset: i64,
    /// Absolute timestamp (for LogAppendTime batches: the batch's max timestamp).
    pub timestamp: i64,
    /// Producer sequence (`baseSequence + offsetDelta`, wrapping), or -1.
    pub sequence: i32,
    /// Key bytes, `None` for a null key.
    pub key: Option<&'a [u8]>,
    /// Value bytes, `None` for a null value (a tombstone).
    pub value: Option<&'a [u8]>,
    /// The encoded headers (already validated), see [`Record::headers`].
    headers_raw: &'a [u8],
    header_count: u32,
    /// Encoded size of the record in the batch, including its length prefix.
    pub size_in_bytes: u32,
}

/// One header of a record: a key (UTF-8 in Kafka, kept as bytes) and a nullable value.
pub type Header<'a> = (&'a [u8], Option<&'a [u8]>);

impl<'a> Record<'a> {
    /// A record without headers (used by the legacy magic 0/1 reader).
    pub fn without_headers(
        offset: i64,
        timestamp: i64,
        key: Option<&'a [u8]>,
        value: Option<&'a [u8]>,
        size_in_bytes: u32,
    ) -> Self {
        Record { offset, timestamp, sequence: -1, key, value, headers_raw: &[], header_count: 0, size_in_bytes }
    }

    /// A record from its decoded parts: `headers` are the encoded, already validated headers
    /// and their count (as [`Record::raw_headers`] returns them). For decoders of the batch
    /// format (`record/uncompressed.rs`).
    pub(crate) fn from_parts(
        offset: i64,
        timestamp: i64,
        sequence: i32,
        key: Option<&'a [u8]>,
        value: Option<&'a [u8]>,
        headers: (&'a [u8], u32),
        size_in_bytes: u32,
    ) -> Self {
        let (headers_raw, header_count) = headers;
        Record { offset, timestamp, sequence, key, value, headers_raw, header_count, size_in_bytes }
    }

    /// Number of headers.
    pub fn header_count(&self) -> usize {
        self.header_count as usize
    }

    /// Iterates over the headers in order.
    pub fn headers(&self) -> HeaderIter<'a> {
        HeaderIter { buf: self.headers_raw, pos: 0, left: self.header_count }
    }

    /// True for a tombstone (null value).
    pub fn is_tombstone(&self) -> bool {
        self.value.is_none()
    }

    /// The encoded headers and their count, for copying them into a new batch unchanged.
    pub fn raw_headers(&self) -> (&'a [u8], u32) {
        (self.headers_raw, self.header_count)
    }
}

/// Iterator over a record's headers; the bytes were validated when the record was decoded.
#[derive(Debug, Clone)]
pub struct HeaderIter<'a> {
    buf: &'a [u8],
    pos: usize,
    left: u32,
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = Header<'a>;

    fn next(&mut self) -> Option<Header<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let key = read_bytes(self.buf, &mut self.pos).ok()??;
        let value = read_bytes(self.buf, &mut self.pos).ok()?;
        Some((key, value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

/// Reads a varint length and that many bytes; -1 is null. Errors carry a reason.
#[inline]
fn read_bytes<'a>(buf: &'a [u8], pos: &mut usize) -> Result<Option<&'a [u8]>, &'static str> {
    let len = read_varint(buf, pos).map_err(|_| "invalid varint length")?;
    if len < 0 {
        return Ok(None);
    }
    let len = len as usize;
    let end = pos.checked_add(len).ok_or("length overflows")?;
    if end > buf.len() {
        return Err("length extends past the end of the record");
    }
    let bytes = &buf[*pos..end];
    *pos = end;
    Ok(Some(bytes))
}

/// Context the batch supplies to turn deltas into absolute values.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordContext {
    pub base_offset: i64,
    pub base_timestamp: i64,
    pub base_sequence: i32,
    /// Some(max_timestamp) when the batch uses LogAppendTime.
    pub log_append_time: Option<i64>,
}

/// Decodes the record starting at `*pos` of `buf`, advancing `*pos` past it.
/// Errors are reasons; the caller adds the position.
pub(crate) fn decode_record<'a>(buf: &'a [u8], pos: &mut usize, ctx: &RecordContext) -> Result<Record<'a>, String> {
    let start = *pos;
    let body_len = read_varint(buf, pos).map_err(|e| e.reason("record length"))?;
    if body_len < 0 {
        return Err(format!("invalid negative record size {body_len}"));
    }
    let body_start = *pos;
    let body_end = body_start.checked_add(body_len as usize).filter(|&end| end <= buf.len()).ok_or_else(|| {
        format!(
            "invalid record size: expected to read {body_len} bytes in record payload, \
                 but only {} bytes remain",
            buf.len() - body_start
        )
    })?;
    let body = &buf[..body_end];
    *pos += 1; // attributes: written 0, ignored on read (as in Kafka)
    let ts_delta = read_varlong(body, pos).map_err(|e| e.reason("record timestamp delta"))?;
    let offset_delta = read_varint(body, pos).map_err(|e| e.reason("record offset delta"))?;
    let key = read_bytes(body, pos).map_err(|e| format!("record key: {e}"))?;
    let value = read_bytes(body, pos).map_err(|e| format!("record value: {e}"))?;
    let header_count = read_varint(body, pos).map_err(|e| e.reason("record header count"))?;
    if header_count < 0 {
        return Err(format!("found invalid number of record headers {header_count}"));
    }
    if header_count as usize > body_end.saturating_sub(*pos) {
        return Err(format!(
            "found invalid number of record headers {header_count}: more than the {} bytes left",
            body_end.saturating_sub(*pos)
        ));
    }
    let headers_start = *pos;
    for _ in 0..header_count {
        let at = *pos;
        let key_len = read_varint(body, pos).map_err(|e| e.reason("header key length"))?;
        if key_len < 0 {
            return Err(format!("invalid negative header key size {key_len}"));
        }
        *pos = at;
        read_bytes(body, pos).map_err(|e| format!("header key: {e}"))?;
        read_bytes(body, pos).map_err(|e| format!("header value: {e}"))?;
    }
    if *pos != body_end {
        return Err(format!(
            "invalid record size: expected to read {body_len} bytes in record payload, but read {}",
            *pos - body_start
        ));
    }
    let sequence = if ctx.base_sequence < 0 { -1 } else { increment_sequence(ctx.base_sequence, offset_delta) };
    let timestamp = ctx.log_append_time.unwrap_or(ctx.base_timestamp.wrapping_add(ts_delta));
    Ok(Record {
        offset: ctx.base_offset.wrapping_add(i64::from(offset_delta)),
        timestamp,
        sequence,
        key,
        value,
        headers_raw: &body[headers_start..body_end],
        header_count: header_count as u32,
        size_in_bytes: (body_end - start) as u32,
    })
}

/// Kafka's `DefaultRecordBatch.incrementSequence`: wraps past `i32::MAX` to 0.
#[inline]
pub fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    // Java int arithmetic: corrupt input (a negative increment) wraps instead of panicking.
    if sequence > i32::MAX.wrapping_sub(increment) {
        increment.wrapping_sub(i32::MAX.wrapping_sub(sequence)).wrapping_sub(1)
    } else {
        sequence.wrapping_add(increment)
    }
}

/// Kafka's `DefaultRecordBatch.decrementSequence`: wraps below 0 to `i32::MAX`.
#[inline]
pub fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    if sequence < decrement {
        i32::MAX.wrapping_sub(decrement.wrapping_sub(sequence)).wrapping_add(1)
    } else {
        sequence.wrapping_sub(decrement)
    }
}

/// Size of the body (everything after the length prefix) of an encoded record.
#[inline]
pub fn record_body_size(
    offset_delta: i32,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[Header<'_>],
) -> usize {
    let mut size = 1 + size_of_varint(offset_delta) + size_of_varlong(timestamp_delta);
    size += bytes_size(key);
    size += bytes_size(value);
    size += size_of_varint(headers.len() as i32);
    for (k, v) in headers {
        size += bytes_size(Some(k)) + bytes_size(*v);
    }
    size
}

#[inline]
fn bytes_size(b: Option<&[u8]>) -> usize {
    match b {
        None => 1,
        Some(b) => size_of_varint(b.len() as i32) + b.len(),
    }
}

#[inline]
fn write_bytes(b: Option<&[u8]>, out: &mut Vec<u8>) {
    match b {
        None => write_varint(-1, out),
        Some(b) => {
            write_varint(b.len() as i32, out);
            out.extend_from_slice(b);
        }
    }
}

/// Appends one encoded record (`DefaultRecord.writeTo`); returns its size including the prefix.
pub fn encode_record(
    offset_delta: i32,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[Header<'_>],
    out: &mut Vec<u8>,
) -> usize {
    let body = record_body_size(offset_delta, timestamp_delta, key, value, headers);
    let before = out.len();
    write_up_to_headers(body, offset_delta, timestamp_delta, key, value, headers.len() as u32, out);
    for (k, v) in headers {
        write_bytes(Some(k), out);
        write_bytes(*v, out);
    }
    out.len() - before
}

/// Appends one encoded record whose headers are already encoded (`headers_raw`, as
/// [`Record::raw_headers`] returns them); the cleaner's rewrite uses this to copy headers
/// without decoding them. Returns its size including the prefix.
pub fn encode_record_raw_headers(
    offset_delta: i32,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers_raw: &[u8],
    header_count: u32,
    out: &mut Vec<u8>,
) -> usize {
    let body = record_body_size(offset_delta, timestamp_delta, key, value, &[]) - size_of_varint(0)
        + size_of_varint(header_count as i32)
        + headers_raw.len();
    let before = out.len();
    write_up_to_headers(body, offset_delta, timestamp_delta, key, value, header_count, out);
    out.extend_from_slice(headers_raw);
    out.len() - before
}

/// Writes a record's length prefix and every field before the headers, then the header count.
fn write_up_to_headers(
    body: usize,
    offset_delta: i32,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    header_count: u32,
    out: &mut Vec<u8>,
) {
    out.reserve(body + 5);
    // The fields around the key and the value are assembled on the stack and copied out in
    // one call each: length (5), attributes (1), timestamp delta (10), offset delta (5) and key
    // length (5); then value length (5); then the header count (5).
    let mut head = [0u8; 26];
    let mut at = put_varint(body as i32, &mut head, 0);
    head[at] = 0; // attributes
    at = put_varlong(timestamp_delta, &mut head, at + 1);
    at = put_varint(offset_delta, &mut head, at);
    at = put_varint(key.map_or(-1, |k| k.len() as i32), &mut head, at);
    out.extend_from_slice(&head[..at]);
    if let Some(k) = key {
        out.extend_from_slice(k);
    }
    let at = put_varint(value.map_or(-1, |v| v.len() as i32), &mut head, 0);
    out.extend_from_slice(&head[..at]);
    if let Some(v) = value {
        out.extend_from_slice(v);
    }
    let at = put_varint(header_count as i32, &mut head, 0);
    out.extend_from_slice(&head[..at]);
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: RecordContext =
        RecordContext { base_offset: 100, base_timestamp: 1000, base_sequence: -1, log_append_time: None };

    fn encoded(key: Option<&[u8]>, value: Option<&[u8]>, headers: &[Header<'_>]) -> Vec<u8> {
        let mut out = Vec::new();
        let n = encode_record(3, -7, key, value, headers, &mut out);
        assert_eq!(n, out.len());
        out
    }

    /// DefaultRecordTest.testBasicSerde: every combination of null / empty / present fields.
    #[test]
    fn basic_serde() {
        let headers: &[Header<'_>] = &[(b"h1", Some(b"v1")), (b"h2", None), (b"", Some(b""))];
        for key in [None, Some(&b""[..]), Some(&b"key"[..])] {
            for value in [None, Some(&b""[..]), Some(&b"value"[..])] {
                for hs in [&[][..], headers] {
                    let buf = encoded(key, value, hs);
                    let mut pos = 0;
                    let r = decode_record(&buf, &mut pos, &CTX).unwrap();
                    assert_eq!(pos, buf.len());
                    assert_eq!((r.offset, r.timestamp, r.key, r.value), (103, 993, key, value));
                    assert_eq!(r.headers().collect::<Vec<_>>(), hs);
                    assert_eq!(r.size_in_bytes as usize, buf.len());
                }
            }
        }
    }

    #[test]
    fn invalid_sizes_are_reported_not_panicked() {
        let buf = encoded(Some(b"key"), Some(b"value"), &[(b"h", Some(b"v"))]);
        // Every truncation fails cleanly.
        for cut in 0..buf.len() {
            let mut pos = 0;
            assert!(decode_record(&buf[..cut], &mut pos, &CTX).is_err(), "cut at {cut}");
        }
        // testInvalidKeySize: key length beyond the body.
        let mut bad = buf.clone();
        bad[4] = 0x7e; // key length 63
        let mut pos = 0;
        let err = decode_record(&bad, &mut pos, &CTX).unwrap_err();
        assert!(err.contains("record key"), "{err}");
        // testInvalidNumHeaders: a negative header count.
        let mut bad = encoded(None, None, &[]);
        let last = bad.len() - 1;
        bad[last] = 0x03; // -2
        let mut pos = 0;
        assert!(decode_record(&bad, &mut pos, &CTX).unwrap_err().contains("headers"));
        // testInvalidSizeOfBodyInBytes: a declared size larger than what is read.
        let mut bad = encoded(None, None, &[]);
        bad[0] += 2;
        bad.extend_from_slice(&[0, 0]);
        let mut pos = 0;
        assert!(decode_record(&bad, &mut pos, &CTX).unwrap_err().contains("but read"));
    }

    #[test]
    fn sequences_wrap_like_kafka() {
        assert_eq!(increment_sequence(i32::MAX - 1, 1), i32::MAX);
        assert_eq!(increment_sequence(i32::MAX, 1), 0);
        assert_eq!(increment_sequence(i32::MAX - 2, 5), 2);
        assert_eq!(decrement_sequence(0, 1), i32::MAX);
        assert_eq!(decrement_sequence(2, 5), i32::MAX - 2);
        assert_eq!(decrement_sequence(7, 5), 2);
    }
}
