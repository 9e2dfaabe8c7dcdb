//! Unit tests of the codecs: Kafka's framing of each, round trips and refused input (compression.rs).

use super::CompressionType::{Gzip, Lz4, None as Plain, Snappy, Zstd};
use super::*;
use proptest::prelude::*;

const ALL: [CompressionType; 5] = CompressionType::ALL;
const RECORDS: &str = "28000a00080102030406050607020608090a040b0c";

fn hex(s: &str) -> Vec<u8> {
    let s = s.replace(' ', "");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn enc(codec: CompressionType, magic: u8, input: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    compress_with_magic(codec, None, magic, input, &mut out).unwrap();
    out
}

/// Decompresses after a prefix, checking that `out` is left untouched on error.
fn dec(c: CompressionType, magic: u8, input: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    let mut out = b"prefix".to_vec();
    let r = decompress(c, magic, input, limit, &mut out);
    assert!(r.is_ok() || out == b"prefix", "out restored on error");
    r.map(|()| out.split_off(6))
}

fn err(c: CompressionType, magic: u8, input: &[u8]) -> String {
    dec(c, magic, input, 1 << 20).unwrap_err()
}

#[test]
fn ids_names_levels() {
    for c in ALL {
        assert_eq!(CompressionType::from_id(c.id()), Some(c));
        assert_eq!(CompressionType::from_name(&c.name().to_uppercase()), Some(c));
        assert!(c.validate_level(c.default_level()).is_ok());
    }
    assert_eq!(CompressionType::from_id(5), None);
    assert_eq!(CompressionType::from_name("Uncompressed"), Some(Plain));
    assert_eq!(CompressionType::from_name("brotli"), None);
    assert_eq!([Gzip, Lz4, Zstd, Snappy].map(CompressionType::default_level), [-1, 9, 3, 0]);
    for (c, bad, good) in [(Gzip, [0, 10], [1, 9]), (Lz4, [0, 18], [1, 17]), (Zstd, [-131_073, 23], [-131_072, 22])] {
        assert!(bad.iter().all(|&l| c.validate_level(l).is_err()), "{c:?}");
        assert!(good.iter().all(|&l| c.validate_level(l).is_ok()), "{c:?}");
    }
    assert_eq!(Gzip.validate_level(10).unwrap_err(), "gzip doesn't support given compression level: 10");
    assert!(compress(Lz4, Some(0), b"x", &mut Vec::new()).is_err());
    assert!(compress_with_magic(Zstd, None, 1, b"x", &mut Vec::new()).is_err());
}

#[test]
fn round_trips_and_limits() {
    let text: Vec<u8> = (0..200 * 1024).map(|i| b"kafka log segment "[i % 18] ^ u8::from(i % 999 == 0)).collect();
    let mut x = 0x9e37_79b9_u32;
    let noise: Vec<u8> = (0..150_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x.to_le_bytes()[0]
        })
        .collect();
    let inputs = [&[][..], b"x", &hex(RECORDS), &text[..32 * 1024], &text[..64 * 1024], &text, &noise];
    for (input, c) in inputs.iter().flat_map(|i| ALL.map(|c| (i, c))) {
        for level in [None, Some(1)].into_iter().filter(|l| c.validate_level(l.unwrap_or(0)).is_ok()) {
            let mut z = vec![7u8; 3]; // compress appends
            compress(c, level, input, &mut z).unwrap();
            let n = input.len();
            assert!(dec(c, 2, &z[3..], n).unwrap() == *input, "{c:?} {n}");
            if n > 0 {
                assert!(dec(c, 2, &z[3..], n - 1).unwrap_err().contains("limit"), "{c:?} {n}");
            }
        }
    }
}

#[test]
fn exact_bytes() {
    assert_eq!(enc(Lz4, 2, b""), hex("04224d18604082 00000000"));
    assert_eq!(enc(Lz4, 1, b"abc"), hex("04224d18604082 03000080 616263 00000000")); // stored raw
    assert_eq!(enc(Lz4, 0, b"abc")[..7], hex("04224d1860401a"));
    let xerial = hex("82534e4150505900 00000001 00000001");
    assert_eq!(enc(Snappy, 2, b""), xerial);
    let s = enc(Snappy, 2, &vec![b'a'; 4 * SNAPPY_BLOCK]); // four identical 32 KiB blocks
    assert_eq!((&s[..16], u32_be(&s, 16)), (&xerial[..], u32::try_from((s.len() - 16) / 4 - 4).ok()));
    assert_eq!(enc(Gzip, 2, b""), [&GZIP_HEADER[..], &[3, 0], &[0; 8]].concat());
    assert_eq!(enc(Zstd, 2, b""), hex("28b52ffd2000010000"));
}

#[test]
fn lz4_reader() {
    let v0 = enc(Lz4, 0, b"hello hello hello hello");
    assert_eq!(dec(Lz4, 0, &v0, 100).unwrap(), b"hello hello hello hello");
    assert!(err(Lz4, 2, &v0).contains("descriptor checksum") && dec(Lz4, 1, &v0, 99).is_err());
    let frame = enc(Lz4, 2, b"data");
    assert_eq!(dec(Lz4, 0, &frame, 4).unwrap(), b"data"); // magic 0 ignores HC entirely
    let patched = |i: usize, v: u8| [&frame[..i], &[v], &frame[i + 1..]].concat();
    for (at, v, why) in [
        (4, 0x61, "reserved"),
        (4, 0x40, "dependent"),
        (4, 0xa0, "version"),
        (5, 0x30, "code 3"),
        (5, 0x41, "BD 0x41"),
        (0, 5, "magic"),
    ] {
        assert!(err(Lz4, 0, &patched(at, v)).contains(why), "{why}");
    }
    let big = [&frame[..7], &99_999u32.to_le_bytes()].concat();
    assert_eq!(err(Lz4, 2, &big), "lz4: block size 99999 exceeds the 65536-byte maximum of the frame");
    // FLG 0x70: block checksums verified
    let mut f = [hex("04224d187040"), vec![lz4_hc(&[0x70, 0x40])], hex("04000080 61626364")].concat();
    f.extend_from_slice(&XxHash32::oneshot(0, b"abcd").to_le_bytes());
    f.extend_from_slice(&[0; 4]);
    assert_eq!(dec(Lz4, 2, &f, 4).unwrap(), b"abcd");
    f[12] ^= 1;
    assert!(err(Lz4, 2, &f).contains("block checksum"));
    // FLG 0x68: content size skipped but covered by HC; data after the end mark ignored
    let mut f = hex("04224d186840 0400000000000000");
    f.push(lz4_hc(&f[4..]));
    f.extend_from_slice(&hex("04000080 61626364 00000000 ffff"));
    assert_eq!(dec(Lz4, 2, &f, 4).unwrap(), b"abcd");
}

#[test]
fn sarama_vectors() {
    let batches = [
            (Snappy, "000000000000000000000048000000000215009f61000200000000000001588dcd59380000000000000000000000000000000000000000000000000001155028000a00080102030406050607020608090a040b0c"),
            (Lz4, "0000000000000000000000590000000002a94a77c5000300000000000001588dcd5938000000000000000000000000000000000000000000000000000104224d186470b91500008028000a00080102030406050607020608090a040b0c000000000c3bef92"),
            (Gzip, "00000000000000000000005f0000000002e74acea5000100000000000001588dcd593800000000000000000000000000000000000000000000000000011f8b080000096e8800ff001500eaff28000a00080102030406050607020608090a040b0c0300adc9586715000000"),
        ];
    for (c, batch) in batches {
        let payload = hex(batch).split_off(61);
        assert_eq!(dec(c, 2, &payload, 21).unwrap(), hex(RECORDS), "{c:?}");
        for cut in 0..payload.len() {
            assert!(dec(c, 2, &payload[..cut], 99).is_err(), "{c:?} cut {cut}");
        }
    }
}

#[test]
fn truncation_and_concatenation() {
    let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 / 13).to_le_bytes()[0]).collect();
    for c in [Gzip, Snappy, Lz4, Zstd] {
        let z = enc(c, 2, &data);
        for cut in [1, 5, 15, 21, z.len() / 2, z.len() - 1] {
            assert!(dec(c, 2, &z[..cut], usize::MAX).is_err(), "{c:?} cut {cut}");
        }
        let two = [enc(c, 2, b"first "), enc(c, 2, b"second")].concat();
        let want: &[u8] = if c == Lz4 { b"first " } else { b"first second" }; // Kafka reads one lz4 frame
        assert_eq!(dec(c, 2, &two, 12).unwrap(), want, "{c:?}");
        let bomb = enc(c, 2, &vec![0; 8 << 20]);
        let mut out = Vec::new();
        assert!(decompress(c, 2, &bomb, 1000, &mut out).unwrap_err().contains("1000-byte limit"));
        assert!(out.is_empty() && out.capacity() <= 1 << 17, "{c:?} {}", out.capacity());
    }
    let gz = [enc(Gzip, 2, b"first "), enc(Gzip, 2, b"second"), b"junk".to_vec()].concat();
    assert_eq!(dec(Gzip, 2, &gz, 99).unwrap(), b"first second"); // as GZIPInputStream
    let sn = [enc(Snappy, 2, b"abc"), vec![0, 0, 0]].concat(); // snappy-java ignores 1-3 bytes
    assert_eq!(dec(Snappy, 2, &sn, 99).unwrap(), b"abc");
    assert_eq!(dec(Zstd, 2, b"", 0).unwrap(), b""); // as zstd-jni
    assert!(err(Zstd, 1, &enc(Zstd, 2, b"x")).contains("magic 2"));
    assert_eq!(dec(Plain, 0, b"abc", 3).unwrap(), b"abc");
    assert!(dec(Plain, 0, b"abc", 2).is_err());
}

proptest! {
    #![proptest_config(crate::util::proptest_config())]

    #[test]
    fn never_panics(bytes in prop::collection::vec(any::<u8>(), 0..300), limit in 0usize..5000,
                    seed in prop::collection::vec(0u8..4, 0..3000), magic in 0u8..3,
                    cut in any::<usize>(), flip in any::<usize>(), bit in 0u8..8) {
        for c in ALL {
            let (z, framed) = (enc(c, 2, &seed), enc(c, if c == Zstd { 2 } else { magic }, &bytes));
            let truncated = z[..cut % (z.len() + 1)].to_vec();
            let mut flipped = z.clone();
            if let Some(b) = flipped.get_mut(flip % z.len().max(1)) {
                *b ^= 1 << bit;
            }
            let junk = [&framed[..framed.len().min(16)], &bytes[..]].concat();
            for input in [&bytes, &flipped, &truncated, &junk] {
                let mut out = vec![1, 2];
                let _ = decompress(c, magic, input, limit, &mut out);
                prop_assert!(out.len() <= limit + 2);
            }
        }
    }
}
