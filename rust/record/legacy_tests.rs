//! Unit tests of the legacy (magic 0 and 1) message formats (legacy.rs).

use super::*;
use crate::record::compression::compress;
use proptest::prelude::*;
use CompressionType::{Gzip, Lz4, Snappy};
use TimestampType::{CreateTime, LogAppendTime};

type In<'a> = (i64, i64, Option<&'a [u8]>, Option<&'a [u8]>);
type Owned = (i64, i64, Option<Vec<u8>>, Option<Vec<u8>>);
const RECORDS: [In; 3] = [(100, 10, Some(b"a"), Some(b"1")), (101, 30, None, Some(b"2")), (102, 20, Some(b"c"), None)];

fn one(magic: u8, offset: i64, ts: i64, key: Option<&[u8]>, value: Option<&[u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    write_legacy_entry(&mut out, magic, offset, ts, CreateTime, key, value).unwrap();
    out
}

fn wrapped(magic: u8, codec: CompressionType, tt: TimestampType, records: &[In]) -> Vec<u8> {
    let mut out = Vec::new();
    write_legacy_compressed(&mut out, magic, codec, tt, records).unwrap();
    out
}

/// A gzip wrapper at offset 9 whose value is `value` (a gzip stream, or not).
fn gzip_wrapper(magic: u8, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    write_message(&mut out, magic, Gzip.id(), 9, 0, None, Some(value)).unwrap();
    out
}

fn gzip(inner: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    compress(Gzip, None, inner, &mut out).unwrap();
    out
}

/// The records of the entry in `buf`, and their sizes.
fn read_sized(buf: &[u8]) -> Result<(Vec<Owned>, Vec<u32>)> {
    let (mut scratch, mut got, mut sizes) = (Vec::new(), Vec::new(), Vec::new());
    LegacyEntry::new(buf)?.for_each_record(&mut scratch, |r| {
        got.push((r.offset, r.timestamp, own(r.key), own(r.value)));
        sizes.push(r.size_in_bytes);
        Ok(())
    })?;
    Ok((got, sizes))
}

fn read(buf: &[u8]) -> Result<Vec<Owned>> {
    read_sized(buf).map(|(records, _)| records)
}

fn sizes(buf: &[u8]) -> Vec<u32> {
    read_sized(buf).unwrap().1
}

fn offsets(buf: &[u8]) -> Vec<i64> {
    read(buf).unwrap().iter().map(|r| r.0).collect()
}

fn own(bytes: Option<&[u8]>) -> Option<Vec<u8>> {
    bytes.map(<[u8]>::to_vec)
}

fn owned(records: &[In]) -> Vec<Owned> {
    records.iter().map(|&(o, t, k, v)| (o, t, own(k), own(v))).collect()
}

/// The error's text, which starts "corrupt record batch at position P: ".
fn error<T: std::fmt::Debug>(result: Result<T>) -> String {
    result.unwrap_err().to_string()
}

#[test]
fn uncompressed_round_trip_v0_and_v1() {
    let big = vec![1u8; 1000];
    for magic in [0u8, 1] {
        for key in [None, Some(&b""[..]), Some(b"key"), Some(&big)] {
            for value in [None, Some(&b""[..]), Some(b"value"), Some(&big)] {
                let buf = one(magic, 42, 7, key, value);
                let e = LegacyEntry::new(&buf).unwrap();
                let ts = if magic == 0 { -1 } else { 7 };
                assert_eq!((e.magic(), e.last_offset(), e.base_offset().unwrap()), (magic, 42, 42));
                assert_eq!((e.key(), e.value(), e.max_timestamp()), (key, value, ts));
                assert_eq!(e.compression_type().unwrap(), CompressionType::None);
                assert!(e.is_valid() && e.ensure_valid().is_ok() && e.bytes() == buf);
                assert_eq!(read(&buf).unwrap(), owned(&[(42, ts, key, value)]));
                assert_eq!(sizes(&buf), [buf.len() as u32]);
            }
        }
    }
}

#[test]
fn hand_built_v1_vector_matches_layout() {
    let buf = one(1, 5, 0x0102_0304_0506_0708, Some(b"k"), Some(b"hi"));
    // magic, attributes, timestamp, key length, "k", value length, "hi"
    let body = [
        0x01, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x00, 0x00, 0x00, 0x01, 0x6b, 0x00, 0x00, 0x00,
        0x02, 0x68, 0x69,
    ];
    let mut expected = vec![0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 25]; // offset, size
    expected.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
    expected.extend_from_slice(&body);
    assert_eq!(buf, expected);
    let crc = LegacyEntry::new(&buf).unwrap().checksum();
    assert_eq!(crc, crc32fast::hash(&body));
    let mut lat = Vec::new();
    write_legacy_entry(&mut lat, 1, 5, 9, LogAppendTime, None, None).unwrap();
    let tt = LegacyEntry::new(&lat).unwrap().timestamp_type();
    assert_eq!((lat[17], tt), (8, LogAppendTime));
    // Magic 0: no timestamp field and no timestamp-type bit.
    let mut v0 = Vec::new();
    write_legacy_entry(&mut v0, 0, 5, -1, LogAppendTime, None, None).unwrap();
    assert_eq!(v0[16..], [0, 0, 255, 255, 255, 255, 255, 255, 255, 255]);
}

#[test]
fn compressed_round_trip_and_stored_inner_offsets() {
    for codec in [Gzip, Snappy, Lz4] {
        for (magic, stored) in [(0u8, [100, 101, 102]), (1, [0, 1, 2])] {
            let buf = wrapped(magic, codec, CreateTime, &RECORDS);
            let e = LegacyEntry::new(&buf).unwrap();
            e.ensure_valid().unwrap();
            assert_eq!((e.key(), e.compression_type().unwrap()), (None, codec));
            assert_eq!((e.last_offset(), e.base_offset().unwrap()), (102, 100));
            let mut expect = owned(&RECORDS);
            for r in expect.iter_mut().filter(|_| magic == 0) {
                r.1 = -1;
            }
            assert_eq!((e.max_timestamp(), read(&buf).unwrap()), (expect[1].1, expect));
            let (mut raw, mut pos, mut got) = (Vec::new(), 0, Vec::new());
            decompress(codec, magic, e.value().unwrap(), 1 << 20, &mut raw).unwrap();
            while let Some(inner) = e.next_inner(&raw, &mut pos, true).unwrap() {
                got.push(inner.last_offset());
            }
            assert_eq!(got, stored, "{codec:?} v{magic}");
            let inner_sizes = if magic == 0 { [28, 27, 27] } else { [36, 35, 35] };
            assert_eq!(sizes(&buf), inner_sizes);
            if codec == Lz4 {
                // Kafka's frame header; magic 0 carries the KAFKA-3160 header checksum.
                let hc = if magic == 0 { 0x1a } else { 0x82 };
                assert_eq!(e.value().unwrap()[..7], [4, 0x22, 0x4d, 0x18, 0x60, 0x40, hc]);
            }
        }
    }
}

#[test]
fn wrapper_offset_places_v1_records_only() {
    // The wrapper offset lies outside the CRC, as the broker rewrites it in place.
    for (magic, at_500, at_0) in [(1u8, [498, 499, 500], [0, 1, 2]), (0, [100, 101, 102], [100, 101, 102])] {
        let mut buf = wrapped(magic, Gzip, CreateTime, &RECORDS);
        buf[..8].copy_from_slice(&500i64.to_be_bytes());
        assert_eq!(
            (offsets(&buf), LegacyEntry::new(&buf).unwrap().base_offset().unwrap()),
            (at_500.to_vec(), at_500[0])
        );
        // Offset 0 (some librdkafka versions): inner offsets are taken as they are.
        buf[..8].copy_from_slice(&0i64.to_be_bytes());
        assert_eq!(offsets(&buf), at_0);
    }
    let mut buf = wrapped(1, Gzip, CreateTime, &RECORDS);
    buf[..8].copy_from_slice(&1i64.to_be_bytes());
    assert!(error(read(&buf)).contains("wrapper offset 1 is below the last inner offset 2"));
}

#[test]
fn log_append_time_wrapper_overrides_inner_timestamps() {
    let buf = wrapped(1, Gzip, LogAppendTime, &RECORDS);
    let e = LegacyEntry::new(&buf).unwrap();
    assert_eq!((e.timestamp_type(), e.max_timestamp()), (LogAppendTime, 30));
    assert!(read(&buf).unwrap().iter().all(|r| r.1 == 30));
    // A v0 wrapper has no timestamp type: the attribute bit is ignored.
    let mut v0 = wrapped(0, Gzip, CreateTime, &RECORDS);
    v0[ATTRIBUTES_OFFSET] |= TIMESTAMP_TYPE_MASK;
    let e = LegacyEntry::new(&v0).unwrap();
    assert_eq!((e.timestamp_type(), e.max_timestamp()), (CreateTime, -1));
    assert!(read(&v0).unwrap().iter().all(|r| r.1 == -1));
    // The broker's in-place rewrite (`setMaxTimestamp`): attributes, timestamp, then CRC.
    let mut buf = wrapped(1, Gzip, CreateTime, &RECORDS);
    buf[ATTRIBUTES_OFFSET] |= TIMESTAMP_TYPE_MASK;
    buf[TIMESTAMP_OFFSET..TIMESTAMP_OFFSET + 8].copy_from_slice(&15i64.to_be_bytes());
    let crc = crc32fast::hash(&buf[MAGIC_OFFSET..]);
    buf[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    LegacyEntry::new(&buf).unwrap().ensure_valid().unwrap();
    assert!(read(&buf).unwrap().iter().all(|r| r.1 == 15));
}

#[test]
fn crc_mismatch_is_reported() {
    let mut buf = one(1, 77, 5, Some(b"k"), Some(b"value"));
    let stored = LegacyEntry::new(&buf).unwrap().checksum();
    *buf.last_mut().unwrap() ^= 1;
    let e = LegacyEntry::new(&buf).unwrap();
    let computed = crc32fast::hash(&buf[16..]);
    assert!(!e.is_valid() && stored != computed);
    let want = format!("position 12: legacy message at offset 77 is corrupt (stored crc = {stored}, computed crc = ");
    assert_eq!(error(e.ensure_valid()), format!("corrupt record batch at {want}{computed})"));
    let mut inner = one(1, 0, 5, None, Some(b"x"));
    *inner.last_mut().unwrap() ^= 1;
    assert!(error(read(&gzip_wrapper(1, &gzip(&inner)))).contains("inner message at offset 0 is corrupt (stored crc"));
}

/// KAFKA-4298: inner messages of another magic than their wrapper read as Kafka's read path reads them (offsets
/// by the wrapper's magic, a timestamp only for v1 inner messages), under either timestamp type.
#[test]
fn inner_messages_of_another_magic_are_read() {
    let mut v0_inner = one(0, 0, -1, Some(b"k"), Some(b"x"));
    v0_inner.extend(one(0, 1, -1, Some(b"l"), Some(b"y")));
    let want = owned(&[(8, -1, Some(b"k"), Some(b"x")), (9, -1, Some(b"l"), Some(b"y"))]);
    assert_eq!(read(&gzip_wrapper(1, &gzip(&v0_inner))).unwrap(), want);
    let mut log_append = Vec::new();
    write_message(&mut log_append, 1, Gzip.id() | TIMESTAMP_TYPE_MASK, 9, 77, None, Some(&gzip(&v0_inner))).unwrap();
    assert_eq!(read(&log_append).unwrap(), want, "v0 inner messages have no timestamp, even under LogAppendTime");
    // A v0 wrapper around v1 messages: absolute inner offsets, the messages' own timestamps.
    let mut v1_inner = one(1, 4, 40, Some(b"k"), Some(b"x"));
    v1_inner.extend(one(1, 5, 50, Some(b"l"), Some(b"y")));
    let want = owned(&[(4, 40, Some(b"k"), Some(b"x")), (5, 50, Some(b"l"), Some(b"y"))]);
    assert_eq!(read(&gzip_wrapper(0, &gzip(&v1_inner))).unwrap(), want);
}

#[test]
fn malformed_inner_sets_are_rejected() {
    let nested = wrapped(1, Gzip, CreateTime, &RECORDS[..1]);
    let v0 = one(0, 0, -1, None, Some(b"x"));
    let mut tiny = v0.clone();
    tiny[8..12].copy_from_slice(&13i32.to_be_bytes());
    for (value, want) in [
        (gzip(&nested), "is compressed; inner messages must not be"),
        (gzip(&[]), "no inner messages"),
        (gzip(&tiny), "inner entry at byte 0 has size 13, below 14"),
        (b"not gzip".to_vec(), "gzip decompression failed"),
    ] {
        let text = error(read(&gzip_wrapper(1, &value)));
        let prefix = "position 34: compressed message set at offset 9: ";
        assert!(text.contains(prefix) && text.contains(want), "{text}");
    }
    let mut null = Vec::new();
    write_message(&mut null, 1, Gzip.id(), 3, 0, None, None).unwrap();
    assert!(error(read(&null)).ends_with("position 30: wrapper at offset 3 has a null value"));
    // As in Kafka, a truncated trailing inner entry ends the set quietly.
    let mut two = one(1, 0, 5, None, Some(b"x"));
    two.extend_from_slice(&one(1, 1, 5, None, Some(b"y"))[..20]);
    let expect = owned(&[(9, 5, None, Some(b"x"))]);
    assert_eq!(read(&gzip_wrapper(1, &gzip(&two))).unwrap(), expect);
}

#[test]
fn truncated_and_bad_framing_rejected() {
    for magic in [0u8, 1] {
        let buf = one(magic, 1, 2, Some(b"key"), Some(b"value"));
        for len in 0..buf.len() {
            let text = error(LegacyEntry::new(&buf[..len]));
            assert!(text.contains("position 0: legacy entry") || text.contains("position 8: size field"));
        }
        let mut bad = buf.clone();
        let key_pos = if magic == 0 { 18 } else { 26 };
        bad[key_pos..key_pos + 4].copy_from_slice(&100i32.to_be_bytes());
        let want = format!("position {key_pos}: key length 100 runs past the message end");
        assert!(error(LegacyEntry::new(&bad)).contains(&want));
        // Any negative length reads as null, as in Kafka.
        bad[key_pos..key_pos + 4].copy_from_slice(&(-7i32).to_be_bytes());
        bad.drain(key_pos + 4..key_pos + 7);
        let size = (bad.len() - 12) as i32;
        bad[8..12].copy_from_slice(&size.to_be_bytes());
        assert_eq!(LegacyEntry::new(&bad).unwrap().key(), None);
    }
    let mut v0 = one(0, 1, -1, None, None);
    v0[MAGIC_OFFSET] = 1;
    assert!(error(LegacyEntry::new(&v0)).contains("position 8: magic 1 message of 14 bytes is below the minimum of 22"));
}

#[test]
fn wrong_magic_and_codec_rejected() {
    let mut buf = one(1, 1, 2, None, Some(b"v"));
    for magic in [2u8, 3, 0xff] {
        buf[MAGIC_OFFSET] = magic;
        let want = format!("position 16: invalid legacy magic {magic}, expected 0 or 1");
        assert!(error(LegacyEntry::new(&buf)).ends_with(&want));
    }
    buf[MAGIC_OFFSET] = 1;
    let zstd = "zstd is not supported for magic 1";
    for (id, want) in [(4u8, zstd), (7, "unknown compression type id 7")] {
        buf[ATTRIBUTES_OFFSET] = id;
        let e = LegacyEntry::new(&buf).unwrap();
        assert!(error(e.compression_type()).ends_with(&format!("position 17: {want}")));
        assert!(error(e.for_each_record(&mut Vec::new(), |_| Ok(()))).ends_with(want));
        assert!(error(e.base_offset()).ends_with(want));
    }
}

#[test]
fn writers_reject_what_kafka_rejects() {
    let mut out = Vec::new();
    assert!(write_legacy_entry(&mut out, 2, 0, 0, CreateTime, None, None).is_err());
    assert!(write_legacy_entry(&mut out, 1, 0, -2, CreateTime, None, None).is_err());
    for codec in [CompressionType::Zstd, CompressionType::None] {
        assert!(write_legacy_compressed(&mut out, 1, codec, CreateTime, &RECORDS).is_err());
    }
    assert!(write_legacy_compressed(&mut out, 1, Gzip, CreateTime, &[]).is_err());
    let backwards = write_legacy_compressed(&mut out, 1, Gzip, CreateTime, &[RECORDS[1], RECORDS[0]]);
    assert!(matches!(backwards, Err(Error::InvalidOffset { .. })) && out.is_empty());
}

fn exercise(buf: &[u8]) {
    if let Ok(e) = LegacyEntry::new(buf) {
        let _ = (e.ensure_valid(), e.base_offset(), e.key(), e.value());
        let _ = e.for_each_record(&mut Vec::new(), |r| {
            assert!(r.size_in_bytes as usize >= LOG_OVERHEAD + RECORD_OVERHEAD_V0);
            Ok(())
        });
    }
}

fn valid_entry() -> impl Strategy<Value = Vec<u8>> {
    (0u8..2, any::<bool>()).prop_map(|(magic, compressed)| {
        if compressed {
            wrapped(magic, Gzip, CreateTime, &RECORDS)
        } else {
            one(magic, 5, 6, Some(b"key"), Some(b"value"))
        }
    })
}

proptest! {
    #![proptest_config(crate::util::proptest_config())]

    #[test]
    fn fuzz_random_bytes_never_panic(buf in proptest::collection::vec(any::<u8>(), 0..200)) {
        exercise(&buf);
    }

    #[test]
    fn fuzz_truncations_and_bit_flips_never_panic(
        buf in valid_entry(),
        cut in any::<prop::sample::Index>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4),
    ) {
        exercise(&buf[..cut.index(buf.len() + 1)]);
        let mut flipped = buf.clone();
        for (at, bit) in flips {
            flipped[at.index(buf.len())] ^= 1 << bit;
        }
        exercise(&flipped);
        // Keep the size field consistent so flips reach the parser and the inflater.
        let size = (flipped.len() - LOG_OVERHEAD) as i32;
        flipped[8..12].copy_from_slice(&size.to_be_bytes());
        exercise(&flipped);
    }

    #[test]
    fn fuzz_damaged_inner_streams_never_panic(
        magic in 0u8..2,
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..8), 0..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut inner = one(magic, 0, 5, Some(b"key"), None);
        inner.extend_from_slice(&one(magic, 1, 6, None, Some(b"value")));
        for (at, bit) in flips {
            let at = at.index(inner.len());
            inner[at] ^= 1 << bit;
        }
        exercise(&gzip_wrapper(magic, &gzip(&inner[..cut.index(inner.len() + 1)])));
    }
}
