//! MD5 of up to eight short keys (at most [`MAX_SHORT_KEY`] bytes, one 64-byte block each) at
//! once with plain Rust over `[u32; 8]` arrays, which the compiler turns into baseline SIMD: the
//! portable kernel, used where the CPU has no AVX-512 ([`super::md5x16_avx512`]). The digests
//! are exactly MD5's (tests check them against RFC 1321 and the `md-5` crate).
//!
//! Thread-safety: pure functions.

// MD5 is specified with one-letter names (a, b, c, d, f, g, k, m, s); the code keeps them.
#![allow(clippy::many_single_char_names, clippy::inline_always)]

#[cfg(doc)]
use super::md5_block::MAX_SHORT_KEY;
use super::md5_block::{digests_from_state, padded_words, G, INIT, K, S};
use super::offset_map::KeyHash;

/// Keys hashed together by the portable code (the AVX-512 code hashes sixteen).
pub const LANES: usize = 8;

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
#[inline]
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
