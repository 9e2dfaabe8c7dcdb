//! MD5 of many short keys at once. The cleaner hashes every keyed record (in pass 1, and in
//! pass 2 where it must look the key up), and MD5 would dominate its time; keys of at most 55
//! bytes fit one 64-byte MD5 block, so several of them can go through the compression function
//! side by side, one key per 32-bit lane: sixteen with AVX-512 ([`super::md5x16_avx512`],
//! chosen at run time), else eight with plain Rust over `[u32; 8]` arrays, which the compiler
//! turns into baseline SIMD. The digests are exactly MD5's (tests check both against the
//! `md-5` crate, which hashes every longer key).
//!
//! Thread-safety: pure functions.

// MD5 is specified with one-letter names (a, b, c, d, f, g, k, m, s); the code keeps them.
#![allow(clippy::many_single_char_names, clippy::inline_always)]

use super::offset_map::KeyHash;

/// Longest key that fits one block (64 bytes minus the 0x80 pad byte and the 8-byte length).
pub const MAX_SHORT_KEY: usize = 55;
/// Keys hashed together by the portable code (the AVX-512 code hashes sixteen).
pub const LANES: usize = 8;

pub(super) const S: [u32; 64] = [
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15,
    21,
];

/// `floor(abs(sin(i + 1)) * 2^32)`, RFC 1321.
pub(super) const K: [u32; 64] = [
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

/// MD5's initial state (a, b, c, d).
pub(super) const INIT: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];

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

/// One MD5 step on every lane: `a = b + rotl(a + f(b, c, d) + K[i] + M[G[i]], S[i])`, then
/// the state rotates (a, b, c, d) -> (d, a', b, c).
#[inline(always)]
fn step<const N: usize>(st: &mut [[u32; N]; 4], i: usize, m: &[[u32; N]; 16], f: impl Fn(u32, u32, u32) -> u32) {
    let [a, b, c, d] = *st;
    let w = &m[G[i]];
    let (k, s) = (K[i], S[i]);
    let mut nb = [0u32; N];
    for l in 0..N {
        let x = a[l].wrapping_add(f(b[l], c[l], d[l])).wrapping_add(k).wrapping_add(w[l]);
        nb[l] = b[l].wrapping_add(x.rotate_left(s));
    }
    *st = [d, nb, b, c];
}

/// Hashes `keys` (each at most [`MAX_SHORT_KEY`] bytes, at most [`LANES`] of them) into
/// `out[..keys.len()]` with the portable code.
pub fn md5_short_keys(keys: &[&[u8]], out: &mut [KeyHash]) {
    let m = padded_words::<LANES>(keys);
    let mut st = [[INIT[0]; LANES], [INIT[1]; LANES], [INIT[2]; LANES], [INIT[3]; LANES]];
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
    for (v, init) in st.iter_mut().zip(INIT) {
        for x in v.iter_mut() {
            *x = x.wrapping_add(init);
        }
    }
    digests_from_state(&st, keys.len(), out);
}

/// The padded one-block message of each key (at most `N` keys of at most [`MAX_SHORT_KEY`]
/// bytes) as sixteen little-endian words per lane, word-major: `words[w][lane]`.
pub(super) fn padded_words<const N: usize>(keys: &[&[u8]]) -> [[u32; N]; 16] {
    debug_assert!(keys.len() <= N);
    let mut m = [[0u32; N]; 16];
    for (lane, key) in keys.iter().enumerate() {
        debug_assert!(key.len() <= MAX_SHORT_KEY);
        let mut block = [0u8; 56];
        block[..key.len()].copy_from_slice(key);
        block[key.len()] = 0x80;
        // Only the words holding the key and its pad byte are stored; the rest stay zero,
        // but for the bit length in word 14 (word 15, its high half, is zero for a short key).
        let used = (key.len() + 4) / 4;
        for (w, chunk) in block.chunks_exact(4).take(used).enumerate() {
            m[w][lane] = u32::from_le_bytes(chunk.try_into().expect("4 bytes"));
        }
        m[14][lane] = (key.len() as u32) * 8;
    }
    m
}

/// The digests of the first `n` lanes from the final state words `state[word][lane]`.
pub(super) fn digests_from_state<const N: usize>(state: &[[u32; N]; 4], n: usize, out: &mut [KeyHash]) {
    for (lane, digest) in out.iter_mut().enumerate().take(n) {
        for (w, words) in state.iter().enumerate() {
            digest[w * 4..w * 4 + 4].copy_from_slice(&words[lane].to_le_bytes());
        }
    }
}

/// Hashes every key of `keys` (any lengths) into `out`: sixteen short keys at a time with
/// AVX-512 when the CPU has it (checked at run time: the crate is built for baseline x86-64,
/// whose SSE2 has neither vector rotates nor three-input logic), else eight at a time with the
/// portable code; longer keys one by one with the `md-5` crate.
pub fn md5_keys(keys: &[&[u8]], out: &mut Vec<KeyHash>) {
    #[cfg(target_arch = "x86_64")]
    if super::md5x16_avx512::available() {
        md5_keys_by::<{ super::md5x16_avx512::LANES }>(keys, out, |k, o| {
            // SAFETY: the CPU has AVX-512F (checked just above), the function's one requirement.
            unsafe { super::md5x16_avx512::md5_short_keys_avx512(k, o) }
        });
        return;
    }
    md5_keys_by::<LANES>(keys, out, md5_short_keys);
}

/// [`md5_keys`] with `hash` taking up to `N` short keys at a time.
fn md5_keys_by<const N: usize>(keys: &[&[u8]], out: &mut Vec<KeyHash>, hash: impl Fn(&[&[u8]], &mut [KeyHash])) {
    out.clear();
    out.resize(keys.len(), [0; 16]);
    let mut lane_keys: [&[u8]; N] = [&[]; N];
    let mut lane_index = [0usize; N];
    let mut n = 0;
    let mut digests = [[0u8; 16]; N];
    for (i, key) in keys.iter().enumerate() {
        if key.len() > MAX_SHORT_KEY {
            out[i] = super::offset_map::hash_key(key);
            continue;
        }
        lane_keys[n] = key;
        lane_index[n] = i;
        n += 1;
        if n == N {
            hash(&lane_keys, &mut digests);
            for l in 0..N {
                out[lane_index[l]] = digests[l];
            }
            n = 0;
        }
    }
    if n > 0 {
        hash(&lane_keys[..n], &mut digests);
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
        md5_keys(&keys, &mut out); // AVX-512 where the CPU has it
        for (k, h) in keys.iter().zip(&out) {
            assert_eq!(*h, hash_key(k), "key of {} bytes", k.len());
        }
        md5_keys_by::<LANES>(&keys, &mut out, md5_short_keys); // the portable code everywhere
        for (k, h) in keys.iter().zip(&out) {
            assert_eq!(*h, hash_key(k), "portable code, key of {} bytes", k.len());
        }
    }
}
