//! MD5 of up to eight short keys at once. The cleaner hashes every keyed record twice (once
//! per pass), and MD5 dominates its time; keys of at most 55 bytes fit one 64-byte MD5 block,
//! so eight of them can go through the compression function side by side, one key per 32-bit
//! lane. The code is plain Rust over `[u32; 8]` arrays, which the compiler turns into SIMD
//! instructions; the digests are exactly MD5's (tests check them against the `md-5` crate,
//! which hashes every longer key).
//!
//! Thread-safety: pure functions.

// MD5 is specified with one-letter names (a, b, c, d, f, g, k, m, s); the code keeps them.
#![allow(clippy::many_single_char_names, clippy::inline_always)]

use super::offset_map::KeyHash;

/// Longest key that fits one block (64 bytes minus the 0x80 pad byte and the 8-byte length).
pub const MAX_SHORT_KEY: usize = 55;
/// Keys hashed together.
pub const LANES: usize = 8;

type V = [u32; LANES];

const S: [u32; 64] = [
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15,
    21,
];

/// `floor(abs(sin(i + 1)) * 2^32)`, RFC 1321.
const K: [u32; 64] = [
    0xd76a_a478,
    0xe8c7_b756,
    0x2420_70db,
    0xc1bd_ceee,
    0xf57c_0faf,
    0x4787_c62a,
    0xa830_4613,
    0xfd46_9501,
    0x6980_98d8,
    0x8b44_f7af,
    0xffff_5bb1,
    0x895c_d7be,
    0x6b90_1122,
    0xfd98_7193,
    0xa679_438e,
    0x49b4_0821,
    0xf61e_2562,
    0xc040_b340,
    0x265e_5a51,
    0xe9b6_c7aa,
    0xd62f_105d,
    0x0244_1453,
    0xd8a1_e681,
    0xe7d3_fbc8,
    0x21e1_cde6,
    0xc337_07d6,
    0xf4d5_0d87,
    0x455a_14ed,
    0xa9e3_e905,
    0xfcef_a3f8,
    0x676f_02d9,
    0x8d2a_4c8a,
    0xfffa_3942,
    0x8771_f681,
    0x6d9d_6122,
    0xfde5_380c,
    0xa4be_ea44,
    0x4bde_cfa9,
    0xf6bb_4b60,
    0xbebf_bc70,
    0x289b_7ec6,
    0xeaa1_27fa,
    0xd4ef_3085,
    0x0488_1d05,
    0xd9d4_d039,
    0xe6db_99e5,
    0x1fa2_7cf8,
    0xc4ac_5665,
    0xf429_2244,
    0x432a_ff97,
    0xab94_23a7,
    0xfc93_a039,
    0x655b_59c3,
    0x8f0c_cc92,
    0xffef_f47d,
    0x8584_5dd1,
    0x6fa8_7e4f,
    0xfe2c_e6e0,
    0xa301_4314,
    0x4e08_11a1,
    0xf753_7e82,
    0xbd3a_f235,
    0x2ad7_d2bb,
    0xeb86_d391,
];

/// The message word each step reads.
const G: [usize; 64] = {
    let mut g = [0usize; 64];
    let mut i = 0;
    while i < 64 {
        g[i] = match i / 16 {
            0 => i,
            1 => (5 * i + 1) % 16,
            2 => (3 * i + 5) % 16,
            _ => (7 * i) % 16,
        };
        i += 1;
    }
    g
};

#[inline(always)]
fn splat(x: u32) -> V {
    [x; LANES]
}

/// One MD5 step on every lane: `a = b + rotl(a + f(b, c, d) + K[i] + M[G[i]], S[i])`, then
/// the state rotates (a, b, c, d) -> (d, a', b, c).
#[inline(always)]
fn step(st: &mut [V; 4], i: usize, m: &[V; 16], f: impl Fn(u32, u32, u32) -> u32) {
    let [a, b, c, d] = *st;
    let w = &m[G[i]];
    let (k, s) = (K[i], S[i]);
    let mut nb = [0u32; LANES];
    for l in 0..LANES {
        let x = a[l].wrapping_add(f(b[l], c[l], d[l])).wrapping_add(k).wrapping_add(w[l]);
        nb[l] = b[l].wrapping_add(x.rotate_left(s));
    }
    *st = [d, nb, b, c];
}

/// Hashes `keys` (each at most [`MAX_SHORT_KEY`] bytes, at most [`LANES`] of them) into
/// `out[..keys.len()]`.
pub fn md5_short_keys(keys: &[&[u8]], out: &mut [KeyHash]) {
    debug_assert!(keys.len() <= LANES && out.len() >= keys.len());
    // The padded block of every lane, as 16 little-endian words per lane, word-major.
    let mut m: [V; 16] = [[0; LANES]; 16];
    for (lane, key) in keys.iter().enumerate() {
        debug_assert!(key.len() <= MAX_SHORT_KEY);
        let mut block = [0u8; 64];
        block[..key.len()].copy_from_slice(key);
        block[key.len()] = 0x80;
        block[56..64].copy_from_slice(&((key.len() as u64) * 8).to_le_bytes());
        for (w, chunk) in block.chunks_exact(4).enumerate() {
            m[w][lane] = u32::from_le_bytes(chunk.try_into().expect("4 bytes"));
        }
    }
    let init = [0x6745_2301u32, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
    let mut st = [splat(init[0]), splat(init[1]), splat(init[2]), splat(init[3])];
    for i in 0..16 {
        step(&mut st, i, &m, |b, c, d| (b & c) | (!b & d));
    }
    for i in 16..32 {
        step(&mut st, i, &m, |b, c, d| (d & b) | (!d & c));
    }
    for i in 32..48 {
        step(&mut st, i, &m, |b, c, d| b ^ c ^ d);
    }
    for i in 48..64 {
        step(&mut st, i, &m, |b, c, d| c ^ (b | !d));
    }
    let [a, b, c, d] = st;
    for (lane, digest) in out.iter_mut().enumerate().take(keys.len()) {
        let words = [
            init[0].wrapping_add(a[lane]),
            init[1].wrapping_add(b[lane]),
            init[2].wrapping_add(c[lane]),
            init[3].wrapping_add(d[lane]),
        ];
        for (w, word) in words.iter().enumerate() {
            digest[w * 4..w * 4 + 4].copy_from_slice(&word.to_le_bytes());
        }
    }
}

/// Hashes every key of `keys` (any lengths) into `out`, eight short keys at a time.
pub fn md5_keys(keys: &[&[u8]], out: &mut Vec<KeyHash>) {
    out.clear();
    out.resize(keys.len(), [0; 16]);
    let mut lane_keys: [&[u8]; LANES] = [&[]; LANES];
    let mut lane_index = [0usize; LANES];
    let mut n = 0;
    let mut digests = [[0u8; 16]; LANES];
    for (i, key) in keys.iter().enumerate() {
        if key.len() > MAX_SHORT_KEY {
            out[i] = super::offset_map::hash_key(key);
            continue;
        }
        lane_keys[n] = key;
        lane_index[n] = i;
        n += 1;
        if n == LANES {
            md5_short_keys(&lane_keys, &mut digests);
            for l in 0..LANES {
                out[lane_index[l]] = digests[l];
            }
            n = 0;
        }
    }
    if n > 0 {
        md5_short_keys(&lane_keys[..n], &mut digests);
        for l in 0..n {
            out[lane_index[l]] = digests[l];
        }
    }
}

/// For each record: the MD5 of its key if `wanted` says so (else `None`), computed eight at
/// a time. `keys` and `digests` are scratch space kept by the caller.
pub fn hash_record_keys<'r>(
    records: &[crate::record::default_record::Record<'r>],
    wanted: impl Fn(&crate::record::default_record::Record<'r>) -> bool,
    keys: &mut Vec<&'r [u8]>,
    digests: &mut Vec<KeyHash>,
    out: &mut Vec<Option<KeyHash>>,
) {
    keys.clear();
    for r in records {
        if let Some(k) = r.key.filter(|_| wanted(r)) {
            keys.push(k);
        }
    }
    md5_keys(keys, digests);
    out.clear();
    let mut next = digests.iter();
    for r in records {
        out.push(if r.key.is_some() && wanted(r) { next.next().copied() } else { None });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cleaner::offset_map::hash_key;

    #[test]
    fn rfc1321_vectors() {
        let cases: [(&[u8], &str); 4] = [
            (b"", "d41d8cd98f00b204e9800998ecf8427e"),
            (b"a", "0cc175b9c0f1b6a831c399e269772661"),
            (b"abc", "900150983cd24fb0d6963f7d28e17f72"),
            (b"message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
        ];
        let keys: Vec<&[u8]> = cases.iter().map(|(k, _)| *k).collect();
        let mut out = [[0u8; 16]; LANES];
        md5_short_keys(&keys, &mut out);
        for (i, (_, hex)) in cases.iter().enumerate() {
            let got: String = out[i].iter().fold(String::new(), |acc, b| acc + &format!("{b:02x}"));
            assert_eq!(&got, hex);
        }
    }

    #[test]
    fn matches_md5_crate_for_every_length() {
        let data: Vec<u8> = (0..200u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let keys: Vec<&[u8]> = (0..=120).map(|n| &data[n % 7..n % 7 + n]).collect();
        let mut out = Vec::new();
        md5_keys(&keys, &mut out);
        for (k, h) in keys.iter().zip(&out) {
            assert_eq!(*h, hash_key(k), "key of {} bytes", k.len());
        }
    }
}
