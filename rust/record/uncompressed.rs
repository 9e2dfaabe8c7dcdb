//! The bulk-read fast path over an uncompressed v2 batch: its records walked in one inlined
//! loop, with the one- and two-byte varints of small records read in line. `to_arrow` and the
//! cleaner's passes (through [`super::records::AnyBatch::records_into`]) read with it.
//!
//! The walk accepts only what [`RecordBatch::for_each_record`] accepts, and gives up on anything
//! else (a count or a length that does not fit, a varint it cannot read, bytes left over): the
//! caller then undoes what it did with the records so far and decodes the batch the general
//! way, which reports the problem with its position. It never produces an error of its own.
//!
//! Mirrors no Kafka class (Kafka's `DefaultRecordBatch` iterator is the general path).
//! Thread-safety: pure functions over borrowed bytes.

use super::batch::{RecordBatch, COMPRESSION_CODEC_MASK, RECORD_BATCH_OVERHEAD};
use super::default_record::{increment_sequence, Record};
use super::timestamp_type::TimestampType;
use super::varint::{read_varint, read_varlong};

/// Calls `f` with each record of `batch`, an uncompressed v2 batch, in order. Returns false
/// when the batch is compressed or something in it is not as a valid batch has it (`f` may then
/// have seen some of its records): decode it with [`RecordBatch::for_each_record`] instead.
#[inline]
pub fn try_for_each_record<'a, F>(batch: &RecordBatch<'a>, mut f: F) -> bool
where
    F: FnMut(Record<'a>),
{
    if batch.attributes() & COMPRESSION_CODEC_MASK != 0 {
        return false;
    }
    let Ok(count) = usize::try_from(batch.records_count()) else { return false };
    let data = &batch.bytes()[RECORD_BATCH_OVERHEAD..];
    let base_offset = batch.base_offset();
    let base_timestamp = batch.base_timestamp();
    let base_sequence = batch.base_sequence();
    let log_append_time = (batch.timestamp_type() == TimestampType::LogAppendTime).then(|| batch.max_timestamp());
    let mut pos = 0usize;
    for _ in 0..count {
        let start = pos;
        let Some(body_len) = varint(data, &mut pos).and_then(|l| usize::try_from(l).ok()) else { return false };
        let body_end = pos.saturating_add(body_len);
        if body_end > data.len() {
            return false;
        }
        let body = &data[..body_end];
        pos += 1; // attributes: ignored on read, as in Kafka
        let Some(ts_delta) = varlong(body, &mut pos) else { return false };
        let Some(offset_delta) = varint(body, &mut pos) else { return false };
        let Some(key) = bytes(body, &mut pos) else { return false };
        let Some(value) = bytes(body, &mut pos) else { return false };
        let Some(header_count) = varint(body, &mut pos).and_then(|c| u32::try_from(c).ok()) else { return false };
        if header_count as usize > body_end.saturating_sub(pos) {
            return false;
        }
        let headers_start = pos;
        for _ in 0..header_count {
            // A header key is never null; its value may be.
            let Some(Some(_)) = bytes(body, &mut pos) else { return false };
            let Some(_) = bytes(body, &mut pos) else { return false };
        }
        if pos != body_end {
            return false;
        }
        let sequence = if base_sequence < 0 { -1 } else { increment_sequence(base_sequence, offset_delta) };
        f(Record::from_parts(
            base_offset.wrapping_add(i64::from(offset_delta)),
            log_append_time.unwrap_or(base_timestamp.wrapping_add(ts_delta)),
            sequence,
            key,
            value,
            (&body[headers_start..body_end], header_count),
            (body_end - start) as u32,
        ));
    }
    pos == data.len()
}

#[inline]
fn zigzag32(u: u32) -> i32 {
    ((u >> 1) as i32) ^ -((u & 1) as i32)
}

/// A zigzag int32; one and two bytes in line, longer ones (and the errors) by `read_varint`.
// Always inlined: a call per field costs as much as the rest of the walk.
#[allow(clippy::inline_always)]
#[inline(always)]
fn varint(buf: &[u8], pos: &mut usize) -> Option<i32> {
    let b0 = *buf.get(*pos)?;
    if b0 < 0x80 {
        *pos += 1;
        return Some(zigzag32(u32::from(b0)));
    }
    match buf.get(*pos + 1) {
        Some(&b1) if b1 < 0x80 => {
            *pos += 2;
            Some(zigzag32(u32::from(b0 & 0x7f) | (u32::from(b1) << 7)))
        }
        _ => read_varint(buf, pos).ok(),
    }
}

/// A zigzag int64; one and two bytes in line, longer ones (and the errors) by `read_varlong`.
#[allow(clippy::inline_always)]
#[inline(always)]
fn varlong(buf: &[u8], pos: &mut usize) -> Option<i64> {
    let b0 = *buf.get(*pos)?;
    if b0 < 0x80 {
        *pos += 1;
        return Some(i64::from(zigzag32(u32::from(b0))));
    }
    match buf.get(*pos + 1) {
        Some(&b1) if b1 < 0x80 => {
            *pos += 2;
            Some(i64::from(zigzag32(u32::from(b0 & 0x7f) | (u32::from(b1) << 7))))
        }
        _ => read_varlong(buf, pos).ok(),
    }
}

/// A varint length and that many bytes (-1 and below: null, as Kafka reads them); `None` when
/// the bytes run past `buf`. `Some(None)` is a null.
#[allow(clippy::option_option, clippy::inline_always)]
#[inline(always)]
fn bytes<'a>(buf: &'a [u8], pos: &mut usize) -> Option<Option<&'a [u8]>> {
    let len = varint(buf, pos)?;
    let Ok(len) = usize::try_from(len) else { return Some(None) };
    let end = pos.checked_add(len).filter(|&end| end <= buf.len())?;
    let b = &buf[*pos..end];
    *pos = end;
    Some(Some(b))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::record::batch::{ATTRIBUTES_OFFSET, LENGTH_OFFSET};
    use crate::record::builder::{BatchBuilder, BatchHeader};
    use crate::record::compression::CompressionType;
    use crate::record::records::AnyBatch;

    type Owned = (i64, i64, i32, Option<Vec<u8>>, Option<Vec<u8>>, Vec<(Vec<u8>, Option<Vec<u8>>)>, u32);

    fn owned(r: &Record<'_>) -> Owned {
        let headers = r.headers().map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec))).collect();
        (
            r.offset,
            r.timestamp,
            r.sequence,
            r.key.map(<[u8]>::to_vec),
            r.value.map(<[u8]>::to_vec),
            headers,
            r.size_in_bytes,
        )
    }

    fn fast(bytes: &[u8]) -> Option<Vec<Owned>> {
        let batch = RecordBatch::new(bytes).ok()?;
        let mut out = Vec::new();
        try_for_each_record(&batch, |r| out.push(owned(&r))).then_some(out)
    }

    fn general(bytes: &[u8]) -> Option<Vec<Owned>> {
        let batch = RecordBatch::new(bytes).ok()?;
        let mut out = Vec::new();
        batch
            .for_each_record(&mut Vec::new(), |r| {
                out.push(owned(&r));
                Ok(())
            })
            .ok()?;
        Some(out)
    }

    type Rec = (u32, i64, Option<Vec<u8>>, Option<Vec<u8>>, Vec<(Vec<u8>, Option<Vec<u8>>)>);

    fn record() -> impl Strategy<Value = Rec> {
        let bytes = |max: usize| proptest::option::weighted(0.8, proptest::collection::vec(any::<u8>(), 0..max));
        let header = (proptest::collection::vec(any::<u8>(), 0..8), bytes(10));
        // Offset gaps and timestamp steps of one, two and three varint bytes.
        (
            prop_oneof![Just(1u32), 1u32..200, 1u32..20_000],
            -70_000i64..70_000,
            bytes(40),
            bytes(300),
            proptest::collection::vec(header, 0..3),
        )
    }

    fn build(records: &[Rec], header: BatchHeader) -> Vec<u8> {
        let mut b = BatchBuilder::new(header);
        let (mut offset, mut ts) = (header.base_offset, 1_700_000_000_000i64);
        for (gap, step, key, value, headers) in records {
            let headers: Vec<_> = headers.iter().map(|(k, v)| (k.as_slice(), v.as_deref())).collect();
            b.append(offset, ts, key.as_deref(), value.as_deref(), &headers).expect("append");
            offset += i64::from(*gap);
            ts += step;
        }
        b.build().expect("build")
    }

    fn header(base_offset: i64, log_append: bool, sequence: i32) -> BatchHeader {
        BatchHeader {
            base_offset,
            timestamp_type: if log_append { TimestampType::LogAppendTime } else { TimestampType::CreateTime },
            producer_id: if sequence >= 0 { 7 } else { -1 },
            producer_epoch: if sequence >= 0 { 0 } else { -1 },
            base_sequence: sequence,
            ..BatchHeader::default()
        }
    }

    /// Sets the length field to the buffer's size (after a truncation).
    fn fix_length(bytes: &mut [u8]) {
        let len = (bytes.len() - 12) as i32;
        bytes[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&len.to_be_bytes());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// The fast walk gives exactly the general decoder's records.
        #[test]
        fn same_records_as_the_general_decoder(
            records in proptest::collection::vec(record(), 1..40),
            base in 0i64..1 << 40,
            log_append in any::<bool>(),
            sequence in prop_oneof![Just(-1i32), 0..i32::MAX],
        ) {
            let bytes = build(&records, header(base, log_append, sequence));
            let want = general(&bytes).expect("a valid batch");
            prop_assert_eq!(want.len(), records.len());
            prop_assert_eq!(fast(&bytes), Some(want));
        }

        /// On damaged records (a byte changed, or the batch cut short), the fast walk either
        /// gives up or agrees with the general decoder: it never accepts what that rejects.
        #[test]
        fn never_accepts_what_the_general_decoder_rejects(
            records in proptest::collection::vec(record(), 1..8),
            at in any::<prop::sample::Index>(),
            byte in prop_oneof![Just(0xffu8), Just(0x80), Just(0x7f), Just(0x01), Just(0x00), any::<u8>()],
            cut in any::<bool>(),
        ) {
            let mut bytes = build(&records, header(0, false, -1));
            let at = RECORD_BATCH_OVERHEAD + at.index(bytes.len() - RECORD_BATCH_OVERHEAD);
            if cut {
                bytes.truncate(at);
                fix_length(&mut bytes);
            } else {
                bytes[at] = byte;
            }
            let (fast, general) = (fast(&bytes), general(&bytes));
            if fast.is_some() {
                prop_assert_eq!(fast, general);
            }
        }

        /// `AnyBatch::records_into` (the fast walk, the general decoder when it gives up) gives
        /// the general decoder's records for every batch, intact, damaged or compressed, and
        /// its error, word for word, for one it rejects. (Where the walk gives up, both sides
        /// decode the general way: what this adds to the tests above is the output buffer's
        /// handling and the dispatch on compression.)
        #[test]
        fn records_into_answers_as_the_general_decoder(
            records in proptest::collection::vec(record(), 1..8),
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
            damage in 0u8..3,
            lz4 in any::<bool>(),
        ) {
            let compression = if lz4 { CompressionType::Lz4 } else { CompressionType::None };
            let mut bytes = build(&records, BatchHeader { compression, ..header(3, false, -1) });
            let at = RECORD_BATCH_OVERHEAD + at.index(bytes.len() - RECORD_BATCH_OVERHEAD);
            match damage {
                0 => {}
                1 => bytes[at] = byte,
                _ => {
                    bytes.truncate(at);
                    fix_length(&mut bytes);
                }
            }
            let Ok(batch) = RecordBatch::new(&bytes) else { return Ok(()) };
            let batch = AnyBatch::V2(batch);
            let mut out = vec![];
            let got = batch.records_into(&mut Vec::new(), &mut out).map(|()| out.iter().map(owned).collect::<Vec<_>>());
            let mut want = vec![];
            let expected = batch
                .for_each_record(&mut Vec::new(), |r| {
                    want.push(owned(&r));
                    Ok(())
                })
                .map(|()| want);
            prop_assert_eq!(got.map_err(|e| e.to_string()), expected.map_err(|e| e.to_string()));
        }
    }

    #[test]
    fn gives_up_on_compressed_batches() {
        let records: Vec<Rec> = (0..5).map(|i| (1, 1, Some(vec![i]), Some(vec![i; 50]), vec![])).collect();
        let compressed = build(&records, BatchHeader { compression: CompressionType::Lz4, ..BatchHeader::default() });
        assert_ne!(compressed[ATTRIBUTES_OFFSET + 1] & COMPRESSION_CODEC_MASK, 0);
        assert_eq!(fast(&compressed), None);
        assert_eq!(general(&compressed).map(|r| r.len()), Some(5));
    }

    #[test]
    fn gives_up_on_a_negative_record_count_and_on_bytes_left_over() {
        let records: Vec<Rec> = (0..3).map(|i| (1, 1, None, Some(vec![i; 10]), vec![])).collect();
        let bytes = build(&records, BatchHeader::default());
        let count_at = RECORD_BATCH_OVERHEAD - 4;
        let mut negative = bytes.clone();
        negative[count_at..count_at + 4].copy_from_slice(&(-1i32).to_be_bytes());
        assert_eq!((fast(&negative), general(&negative)), (None, None));
        let mut fewer = bytes.clone();
        fewer[count_at..count_at + 4].copy_from_slice(&2i32.to_be_bytes());
        assert_eq!((fast(&fewer), general(&fewer)), (None, None));
    }

    #[test]
    fn gives_up_on_a_record_longer_than_its_fields() {
        let bytes = build(&[(1, 1, Some(b"k".to_vec()), Some(b"v".to_vec()), vec![])], BatchHeader::default());
        // One byte more in the record, and in its length (zigzag: +2 in a one-byte varint).
        let mut longer = bytes.clone();
        longer[RECORD_BATCH_OVERHEAD] += 2;
        longer.push(0);
        fix_length(&mut longer);
        assert_eq!(general(&bytes).map(|r| r.len()), Some(1));
        assert_eq!((fast(&longer), general(&longer)), (None, None));
    }
}
