//! Fuzz targets (`fuzz_` prefix; `make fuzz` runs them with `PROPTEST_CASES=200000` in release,
//! which overrides the modest case counts below; a few minutes on two cores):
//! random and mutated bytes fed to the batch decoder and, as a segment file, to `UnifiedLog::open`
//! read-write (recovery runs) and read-only. Nothing may panic; corruption of CRC-covered bytes
//! must be reported, never decoded into different records; errors about a file must name it.

use kafkalog::error::Error;
use kafkalog::log::unified_log::{LogOpenOptions, MAX_TIMESTAMP};
use kafkalog::record::batch::{crc32c, ATTRIBUTES_OFFSET, CRC_OFFSET};
use kafkalog::record::records::BatchIter;
use kafkalog::record::CompressionType;
use kafkalog::{FetchIsolation, LogConfig, UnifiedLog};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

use crate::common::{batch, config, proptest_config, scan_all, Rec};

/// What decoding one buffer gave, batch by batch: its CRC check and its records (or the error).
#[derive(Debug, PartialEq)]
struct Decoded {
    crc_ok: bool,
    records: Result<Vec<Rec>, String>,
}

/// Runs every decoder entry point over `bytes`, touching every header field and every record.
fn exercise(bytes: &[u8]) -> Vec<Decoded> {
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    for item in BatchIter::new(bytes) {
        let Ok((_, b)) = item else { break };
        let _ = (b.base_offset(), b.last_offset(), b.next_offset(), b.max_timestamp(), b.timestamp_type());
        let _ = (b.compression_type(), b.is_control(), b.is_transactional(), b.partition_leader_epoch());
        let _ = (b.magic(), b.size_in_bytes(), b.bytes().len());
        let crc_ok = b.ensure_valid().is_ok();
        let mut recs = Vec::new();
        let result = b.for_each_record(&mut scratch, |r| {
            let headers = r.headers().count();
            assert_eq!(headers, r.header_count());
            recs.push(Rec::of(&r));
            Ok(())
        });
        out.push(Decoded { crc_ok, records: result.map(|()| recs).map_err(|e| e.to_string()) });
    }
    out
}

/// A record's key and value.
type KeyValue = (Option<Vec<u8>>, Option<Vec<u8>>);

/// Records for a batch: small keys and values, some null.
fn records_strategy(max: usize) -> impl Strategy<Value = Vec<KeyValue>> {
    vec((option::of(vec(any::<u8>(), 0..12)), option::of(vec(any::<u8>(), 0..64))), 1..max)
}

fn build(base: i64, codec: usize, records: &[KeyValue], ts: i64) -> Vec<u8> {
    let specs: Vec<_> =
        records.iter().enumerate().map(|(i, (k, v))| (k.as_deref(), v.as_deref(), ts + i as i64)).collect();
    batch(base, CompressionType::ALL[codec], &specs)
}

#[derive(Debug, Clone)]
enum Mutation {
    /// Keep the first `pick % len` bytes.
    Truncate(u64),
    /// XOR one byte with a non-zero mask.
    Flip(u64, u8),
    /// Overwrite the batch length field.
    Length(i32),
    /// Overwrite the records count.
    Count(i32),
    /// Overwrite the last offset delta.
    LastOffsetDelta(i32),
    /// Overwrite the base offset (outside the CRC).
    BaseOffset(i64),
    /// Overwrite `n` bytes from a position with random bytes.
    Splat(u64, Vec<u8>),
}

fn interesting_i32() -> impl Strategy<Value = i32> {
    prop_oneof![Just(0), Just(-1), Just(i32::MIN), Just(i32::MAX), Just(13), Just(14), Just(48), Just(49), any::<i32>()]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<u64>().prop_map(Mutation::Truncate),
        (any::<u64>(), 1..=255u8).prop_map(|(p, m)| Mutation::Flip(p, m)),
        interesting_i32().prop_map(Mutation::Length),
        interesting_i32().prop_map(Mutation::Count),
        interesting_i32().prop_map(Mutation::LastOffsetDelta),
        prop_oneof![Just(i64::MAX), Just(i64::MIN), Just(-1), Just(i64::MAX - 1), any::<i64>()]
            .prop_map(Mutation::BaseOffset),
        (any::<u64>(), vec(any::<u8>(), 1..24)).prop_map(|(p, b)| Mutation::Splat(p, b)),
    ]
}

/// Applies `m` to the batch starting at `at` in `bytes`; returns the range of bytes it changed
/// without changing the length (`None` for a truncation).
fn mutate(bytes: &mut Vec<u8>, at: usize, m: &Mutation) -> Option<std::ops::Range<usize>> {
    let put = |bytes: &mut Vec<u8>, pos: usize, v: &[u8]| {
        let end = (pos + v.len()).min(bytes.len());
        bytes[pos..end].copy_from_slice(&v[..end - pos]);
        pos..end
    };
    match m {
        Mutation::Truncate(p) => {
            bytes.truncate((*p % bytes.len() as u64) as usize);
            None
        }
        Mutation::Flip(p, mask) => {
            let pos = (*p % bytes.len() as u64) as usize;
            bytes[pos] ^= mask;
            Some(pos..pos + 1)
        }
        Mutation::Length(v) => Some(put(bytes, at + 8, &v.to_be_bytes())),
        Mutation::Count(v) => Some(put(bytes, at + 57, &v.to_be_bytes())),
        Mutation::LastOffsetDelta(v) => Some(put(bytes, at + 23, &v.to_be_bytes())),
        Mutation::BaseOffset(v) => Some(put(bytes, at, &v.to_be_bytes())),
        Mutation::Splat(p, v) => {
            let pos = (*p % bytes.len() as u64) as usize;
            Some(put(bytes, pos, v))
        }
    }
}

/// Recomputes the CRC of the (single, complete) batch in `bytes`, when its framing allows.
fn fix_crc(bytes: &mut [u8]) {
    if bytes.len() > ATTRIBUTES_OFFSET {
        let crc = crc32c(&bytes[ATTRIBUTES_OFFSET..]);
        bytes[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..proptest_config() })]

    /// Arbitrary bytes, and arbitrary bytes dressed up with a plausible v2 header (length field
    /// matching, magic 2, optionally a correct CRC) so the record parser sees them.
    #[test]
    fn fuzz_batch_decoder_random_bytes(
        mut bytes in vec(any::<u8>(), 0..1200),
        dress in any::<bool>(),
        crc in any::<bool>(),
        codec in 0..8u8,
    ) {
        if dress && bytes.len() >= 61 {
            let len = (bytes.len() - 12) as i32;
            bytes[8..12].copy_from_slice(&len.to_be_bytes());
            bytes[16] = 2;
            bytes[22] = (bytes[22] & !0x07) | codec;
            if crc {
                fix_crc(&mut bytes);
            }
        }
        exercise(&bytes);
    }

    /// Valid batches of every codec, truncated, bit-flipped, or with header fields edited.
    /// Without a recomputed CRC, any change to bytes 17.. (the CRC and what it covers) must fail
    /// the CRC check; with one, decoding must still never panic.
    #[test]
    fn fuzz_batch_decoder_mutated_batches(
        codec in 0..5usize,
        first in records_strategy(12),
        second in records_strategy(6),
        base in prop_oneof![Just(0i64), any::<u32>().prop_map(i64::from)],
        m in mutation(),
        in_second in any::<bool>(),
        recompute_crc in any::<bool>(),
    ) {
        let a = build(base, codec, &first, 1_700_000_000_000);
        let b = build(base + first.len() as i64, codec, &second, 1_700_000_000_100);
        let original = exercise(&[a.clone(), b.clone()].concat());
        prop_assert!(original.iter().all(|d| d.crc_ok && d.records.is_ok()), "valid batches decode");
        let at = if in_second { a.len() } else { 0 };
        let regions = [0..a.len(), a.len()..a.len() + b.len()];
        let mut bytes = [a.clone(), b].concat();
        let before = bytes.clone();
        let changed = mutate(&mut bytes, at, &m);
        if recompute_crc && changed.is_some() {
            let r = regions[usize::from(in_second)].clone();
            fix_crc(&mut bytes[r]);
        }
        let got = exercise(&bytes);
        let (Some(range), false) = (changed, recompute_crc) else { return Ok(()) };
        if before[range.clone()] == bytes[range.clone()] {
            prop_assert_eq!(got, original, "nothing changed");
            return Ok(());
        }
        // The batch whose bytes changed, if the change stayed inside one batch and left its
        // framing (length field, magic byte) alone.
        let Some(idx) = regions.iter().position(|r| r.start <= range.start && range.end <= r.end) else {
            return Ok(());
        };
        let rel: Vec<usize> = range.filter(|&p| before[p] != bytes[p]).map(|p| p - regions[idx].start).collect();
        let touches = |from: usize, to: usize| rel.iter().any(|&p| from <= p && p < to);
        if touches(8, 12) || touches(16, 17) {
            return Ok(());
        }
        prop_assert_eq!(got.len(), original.len(), "framing unchanged");
        if touches(CRC_OFFSET, usize::MAX) {
            prop_assert!(!got[idx].crc_ok, "a change at {:?} of batch {} passed the CRC check", rel, idx);
        } else if !touches(0, 8) {
            // Only the partition leader epoch changed: the records are the same.
            prop_assert_eq!(&got[idx], &original[idx]);
        }
        // The other batch is untouched.
        prop_assert_eq!(&got[1 - idx], &original[1 - idx]);
    }
}

/// Bytes for a segment file: random, or valid batches (any codec, consecutive offsets) with one
/// batch mutated and a tail appended (half a batch, garbage or zeros, as a crash leaves it).
#[derive(Debug, Clone)]
enum SegmentFile {
    Random(Vec<u8>),
    Batches { batches: Vec<(usize, Vec<KeyValue>)>, mutation: Option<(usize, Mutation)>, tail: Vec<u8> },
}

fn segment_file() -> impl Strategy<Value = SegmentFile> {
    let tail = prop_oneof![Just(Vec::new()), vec(any::<u8>(), 1..80), (1..200usize).prop_map(|n| vec![0u8; n])];
    prop_oneof![
        1 => vec(any::<u8>(), 0..3000).prop_map(SegmentFile::Random),
        3 => (vec((0..5usize, records_strategy(6)), 1..6), option::of((any::<usize>(), mutation())), tail)
            .prop_map(|(batches, mutation, tail)| SegmentFile::Batches { batches, mutation, tail }),
    ]
}

/// The file's bytes and, when nothing but a tail was added, the records it must keep.
fn render(f: &SegmentFile) -> (Vec<u8>, Option<Vec<Rec>>) {
    match f {
        SegmentFile::Random(bytes) => (bytes.clone(), None),
        SegmentFile::Batches { batches, mutation, tail } => {
            let mut out = Vec::new();
            let mut starts = Vec::new();
            let mut next = 0i64;
            for (codec, records) in batches {
                starts.push(out.len());
                out.extend(build(next, *codec, records, 1_700_000_000_000 + next));
                next += records.len() as i64;
            }
            let kept = if mutation.is_none() { Some(crate::common::decode(&out)) } else { None };
            if let Some((which, m)) = mutation {
                let at = starts[which % starts.len()];
                mutate(&mut out, at, m);
            }
            // A half-written batch, as a crash mid-append leaves it, is a tail like any other.
            out.extend_from_slice(tail);
            (out, kept)
        }
    }
}

fn file_config() -> LogConfig {
    config(&[("index.interval.bytes", "64"), ("segment.index.bytes", "1024")])
}

const SEGMENT: &str = "00000000000000000000.log";

/// An error about the data must say which file it is in.
fn assert_names_file(e: &Error, what: &str) -> Result<(), TestCaseError> {
    match e {
        Error::OffsetOutOfRange { .. } => Ok(()),
        _ => {
            prop_assert!(e.to_string().contains(SEGMENT), "{}: the error does not name the file: {}", what, e);
            Ok(())
        }
    }
}

/// Reads, scans and looks up timestamps over a log; every error must name the file.
fn poke(log: &UnifiedLog, picks: &[u64]) -> Result<(), TestCaseError> {
    let (start, end) = (log.log_start_offset(), log.log_end_offset());
    if let Err(e) = log.scan(0, i64::MAX, FetchIsolation::LogEnd, |b| {
        let mut scratch = Vec::new();
        b.ensure_valid()?;
        b.for_each_record(&mut scratch, |_| Ok(()))?;
        Ok(true)
    }) {
        assert_names_file(&e, "scan")?;
    }
    for &p in picks {
        let span = end.wrapping_sub(start).unsigned_abs().saturating_add(3);
        let offset = start.wrapping_add((p % span) as i64).wrapping_sub(1);
        if let Err(e) = log.read(offset, p % 5000, FetchIsolation::LogEnd, p % 2 == 0) {
            assert_names_file(&e, "read")?;
        }
        if let Err(e) = log.offset_for_timestamp((p % 3000) as i64 + 1_700_000_000_000 - 10) {
            assert_names_file(&e, "offset_for_timestamp")?;
        }
    }
    if let Err(e) = log.offset_for_timestamp(MAX_TIMESTAMP) {
        assert_names_file(&e, "offset_for_timestamp(-3)")?;
    }
    if let Err(e) = log.segment_infos() {
        assert_names_file(&e, "segment_infos")?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..proptest_config() })]

    /// A segment file of random or damaged bytes: a read-write open recovers it to the valid
    /// prefix (never fails, never panics), and a read-only open reads what it can, naming the
    /// file in every error.
    #[test]
    fn fuzz_log_open_with_a_damaged_segment(file in segment_file(), picks in vec(any::<u64>(), 4)) {
        let (bytes, kept) = render(&file);
        let cfg = file_config();
        // Read-only first, on its own copy: it must leave the file alone.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("topic-0");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(SEGMENT), &bytes).unwrap();
        let options = LogOpenOptions { read_only: true, ..LogOpenOptions::default() };
        match UnifiedLog::open(&dir, cfg.clone(), options) {
            Ok(log) => poke(&log, &picks)?,
            Err(e) => assert_names_file(&e, "read-only open")?,
        }
        prop_assert_eq!(std::fs::read(dir.join(SEGMENT)).unwrap(), bytes.clone(), "read-only open changed the file");

        let log = UnifiedLog::open(&dir, cfg.clone(), LogOpenOptions::default())
            .map_err(|e| TestCaseError::fail(format!("read-write open failed: {e}")))?;
        // Recovery keeps the valid prefix; a batch too far from the segment's base (a base
        // offset changed outside the CRC) splits the segment as Kafka's LogLoader does, so the
        // surviving bytes are the segments' files in order.
        let mut recovered = Vec::new();
        for s in log.segments() {
            let mut part = std::fs::read(s.path()).unwrap();
            part.truncate(s.size() as usize);
            for item in BatchIter::new(&part) {
                let (_, b) = item.map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert!(b.ensure_valid().is_ok());
                prop_assert!(s.can_convert_to_relative_offset(b.last_offset()), "every batch fits its segment");
            }
            recovered.extend_from_slice(&part);
        }
        prop_assert_eq!(log.load_result().bytes_truncated, (bytes.len() - recovered.len()) as u64);
        prop_assert!(bytes.starts_with(&recovered), "recovery only cuts");
        let mut last = -1i64;
        let mut iter = BatchIter::new(&recovered);
        for item in iter.by_ref() {
            let (_, b) = item.map_err(|e| TestCaseError::fail(e.to_string()))?;
            last = b.last_offset();
        }
        prop_assert_eq!(iter.position(), recovered.len(), "no partial batch survives");
        let got = scan_all(&log, 0).map_err(|e| TestCaseError::fail(format!("scan after recovery: {e}")))?;
        prop_assert_eq!(log.log_end_offset(), if recovered.is_empty() { 0 } else { last + 1 });
        if let Some(kept) = kept {
            prop_assert_eq!(got, kept, "a damaged tail must not cost the batches before it");
        }
        poke(&log, &picks)?;
        log.close().unwrap();
    }
}
