//! MD5 of twenty-four short keys at once with AVX2: one key per 32-bit lane of three 256-bit
//! registers, whose three chains of dependent steps are interleaved so that each fills the
//! others' latency (two chains left the CPU waiting on each step's latency; four need more than
//! AVX2's sixteen registers and spill: 2 M keys of 16 bytes took 48 ms with two, 34.5 ms with
//! three, 41 ms with four). The 64 steps are unrolled with immediate shifts (AVX2 has no vector
//! rotate), and each round's boolean function is written in its three-operation form. Used on CPUs with AVX2
//! but no AVX-512 ([`super::md5x16_avx512`]); the portable [`super::md5x8`] is the fallback
//! on others (the compiler keeps that one scalar: the crate is built for baseline x86-64). All
//! three give exactly MD5's digests (tests compare them with the `md-5` crate).
//!
//! Thread-safety: pure functions.

#![allow(unsafe_code)]
// std::arch intrinsics: every function here needs AVX2 at run time.
// MD5 is specified with one-letter names (a, b, c, d, f, m); the code keeps them.
#![allow(clippy::many_single_char_names)]

use std::arch::x86_64::{
    __m256i, _mm256_add_epi32, _mm256_and_si256, _mm256_loadu_si256, _mm256_or_si256, _mm256_set1_epi32,
    _mm256_slli_epi32, _mm256_srli_epi32, _mm256_storeu_si256, _mm256_xor_si256,
};

use super::md5_block::{digests_from_state, padded_words, INIT, K, S};
use super::offset_map::KeyHash;

/// Keys hashed together (three registers of eight lanes).
pub const LANES: usize = 8 * REGS;
/// Registers per state word: independent chains interleaved.
const REGS: usize = 3;

/// Proof that this CPU has AVX2: only [`Avx2::detect`] makes one, after the run-time check, so
/// the safe [`Avx2::md5_short_keys`] can run the kernel. `Copy`, no data.
#[derive(Clone, Copy, Debug)]
pub struct Avx2(());

impl Avx2 {
    /// `Some` when this CPU can run the AVX2 kernel.
    pub fn detect() -> Option<Self> {
        std::is_x86_feature_detected!("avx2").then_some(Avx2(()))
    }

    /// Hashes up to twenty-four short keys (each at most [`super::md5_block::MAX_SHORT_KEY`] bytes)
    /// into `out[..keys.len()]`.
    #[inline]
    pub fn md5_short_keys(self, keys: &[&[u8]], out: &mut [KeyHash]) {
        // SAFETY: `self` exists only when `detect` found AVX2, the function's one requirement.
        unsafe { md5_short_keys_avx2(keys, out) }
    }
}

/// The round functions, each of `b, c, d` in three operations at most.
macro_rules! fun {
    (F, $b:expr, $c:expr, $d:expr) => {
        _mm256_xor_si256($d, _mm256_and_si256($b, _mm256_xor_si256($c, $d)))
    };
    (G, $b:expr, $c:expr, $d:expr) => {
        _mm256_xor_si256($c, _mm256_and_si256($d, _mm256_xor_si256($b, $c)))
    };
    (H, $b:expr, $c:expr, $d:expr) => {
        _mm256_xor_si256(_mm256_xor_si256($b, $c), $d)
    };
    // c ^ (b | !d), !d as d ^ all ones.
    (I, $b:expr, $c:expr, $d:expr) => {
        _mm256_xor_si256($c, _mm256_or_si256($b, _mm256_xor_si256($d, _mm256_set1_epi32(-1))))
    };
}

/// One MD5 step on every register: `a = b + rotl(a + f(b, c, d) + K[i] + M[g], S[i])`.
macro_rules! step {
    ($a:ident, $b:ident, $c:ident, $d:ident, $m:ident, $i:literal, $g:literal, $f:ident) => {
        let k = _mm256_set1_epi32(K[$i] as i32);
        for h in 0..REGS {
            let x = _mm256_add_epi32(
                _mm256_add_epi32($a[h], fun!($f, $b[h], $c[h], $d[h])),
                _mm256_add_epi32(k, $m[$g][h]),
            );
            let r = _mm256_or_si256(
                _mm256_slli_epi32::<{ S[$i] as i32 }>(x),
                _mm256_srli_epi32::<{ 32 - S[$i] as i32 }>(x),
            );
            $a[h] = _mm256_add_epi32($b[h], r);
        }
    };
}

/// Four steps, the state names rotating (a, b, c, d) -> (d, a, b, c) after each.
macro_rules! four {
    ($a:ident, $b:ident, $c:ident, $d:ident, $m:ident, $f:ident,
     $i0:literal $g0:literal, $i1:literal $g1:literal, $i2:literal $g2:literal, $i3:literal $g3:literal) => {
        step!($a, $b, $c, $d, $m, $i0, $g0, $f);
        step!($d, $a, $b, $c, $m, $i1, $g1, $f);
        step!($c, $d, $a, $b, $m, $i2, $g2, $f);
        step!($b, $c, $d, $a, $m, $i3, $g3, $f);
    };
}

/// The compression function over twenty-four padded one-block messages, `words[w][lane]` being
/// word `w` of lane `lane`'s block; returns the state words `[a, b, c, d][lane]` (the digest is
/// their little-endian bytes).
///
/// # Safety
/// The CPU must have AVX2 ([`Avx2::detect`]).
#[target_feature(enable = "avx2")]
unsafe fn md5_block_avx2(words: &[[u32; LANES]; 16]) -> [[u32; LANES]; 4] {
    let m: [[__m256i; REGS]; 16] = std::array::from_fn(|w| {
        std::array::from_fn(|h| {
            // SAFETY: `words[w][8 * h..]` holds eight `u32`s, exactly the 32 bytes the
            // unaligned load reads; the caller guarantees AVX2.
            unsafe { _mm256_loadu_si256(words[w][8 * h..].as_ptr().cast()) }
        })
    });
    let init = |i: usize| [_mm256_set1_epi32(INIT[i] as i32); REGS];
    let (mut a, mut b, mut c, mut d) = (init(0), init(1), init(2), init(3));
    // Round 1: F, words in order.
    four!(a, b, c, d, m, F, 0 0, 1 1, 2 2, 3 3);
    four!(a, b, c, d, m, F, 4 4, 5 5, 6 6, 7 7);
    four!(a, b, c, d, m, F, 8 8, 9 9, 10 10, 11 11);
    four!(a, b, c, d, m, F, 12 12, 13 13, 14 14, 15 15);
    // Round 2: G, words (5i + 1) mod 16.
    four!(a, b, c, d, m, G, 16 1, 17 6, 18 11, 19 0);
    four!(a, b, c, d, m, G, 20 5, 21 10, 22 15, 23 4);
    four!(a, b, c, d, m, G, 24 9, 25 14, 26 3, 27 8);
    four!(a, b, c, d, m, G, 28 13, 29 2, 30 7, 31 12);
    // Round 3: H, words (3i + 5) mod 16.
    four!(a, b, c, d, m, H, 32 5, 33 8, 34 11, 35 14);
    four!(a, b, c, d, m, H, 36 1, 37 4, 38 7, 39 10);
    four!(a, b, c, d, m, H, 40 13, 41 0, 42 3, 43 6);
    four!(a, b, c, d, m, H, 44 9, 45 12, 46 15, 47 2);
    // Round 4: I, words 7i mod 16.
    four!(a, b, c, d, m, I, 48 0, 49 7, 50 14, 51 5);
    four!(a, b, c, d, m, I, 52 12, 53 3, 54 10, 55 1);
    four!(a, b, c, d, m, I, 56 8, 57 15, 58 6, 59 13);
    four!(a, b, c, d, m, I, 60 4, 61 11, 62 2, 63 9);
    let mut out = [[0u32; LANES]; 4];
    for (o, (v, init)) in out.iter_mut().zip([a, b, c, d].into_iter().zip(INIT)) {
        for (h, part) in v.into_iter().enumerate() {
            let sum = _mm256_add_epi32(part, _mm256_set1_epi32(init as i32));
            // SAFETY: `o[8 * h..]` holds eight `u32`s, exactly the 32 bytes the unaligned store
            // writes, and is borrowed mutably; the caller guarantees AVX2.
            unsafe { _mm256_storeu_si256(o[8 * h..].as_mut_ptr().cast(), sum) };
        }
    }
    out
}

/// Hashes up to twenty-four short keys (each at most [`super::md5_block::MAX_SHORT_KEY`] bytes) into
/// `out[..keys.len()]`.
///
/// # Safety
/// The CPU must have AVX2 ([`Avx2::detect`]).
#[target_feature(enable = "avx2")]
unsafe fn md5_short_keys_avx2(keys: &[&[u8]], out: &mut [KeyHash]) {
    let words = padded_words::<LANES>(keys);
    // SAFETY: this function's own contract (the CPU has AVX2) is `md5_block_avx2`'s only
    // requirement.
    let state = unsafe { md5_block_avx2(&words) };
    digests_from_state(&state, keys.len(), out);
}
