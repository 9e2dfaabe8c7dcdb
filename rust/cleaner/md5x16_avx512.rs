//! MD5 of sixteen short keys at once with AVX-512: one key per 32-bit lane of a 512-bit
//! register, the 64 steps unrolled with immediate rotates (`vprold`) and each round's boolean
//! function as one three-input logic instruction (`vpternlogd`). The portable eight-lane code
//! in [`super::md5x8`] is the fallback on CPUs without AVX-512 (the two share
//! [`super::md5_block`] and do not import each other); both give exactly MD5's digests
//! (tests compare them with the `md-5` crate).
//!
//! Thread-safety: pure functions.

#![allow(unsafe_code)]
// std::arch intrinsics: every function here needs AVX-512F at run time.
// MD5 is specified with one-letter names (a, b, c, d, f, m); the code keeps them.
#![allow(clippy::many_single_char_names)]

use std::arch::x86_64::{
    __m512i, _mm512_add_epi32, _mm512_loadu_si512, _mm512_rol_epi32, _mm512_set1_epi32, _mm512_storeu_si512,
    _mm512_ternarylogic_epi32,
};

use super::md5_block::{digests_from_state, padded_words, INIT, K, S};
use super::offset_map::KeyHash;

/// Keys hashed together.
pub const LANES: usize = 16;

/// Proof that this CPU has AVX-512F: only [`Avx512::detect`] makes one, after the run-time
/// check, so the safe [`Avx512::md5_short_keys`] can run the kernel. `Copy`, no data.
#[derive(Clone, Copy, Debug)]
pub struct Avx512(());

impl Avx512 {
    /// `Some` when this CPU can run the AVX-512 kernel.
    pub fn detect() -> Option<Self> {
        std::is_x86_feature_detected!("avx512f").then_some(Avx512(()))
    }

    /// Hashes up to sixteen short keys (each at most [`super::md5_block::MAX_SHORT_KEY`] bytes)
    /// into `out[..keys.len()]`.
    #[inline]
    pub fn md5_short_keys(self, keys: &[&[u8]], out: &mut [KeyHash]) {
        // SAFETY: `self` exists only when `detect` found AVX-512F, the function's one
        // requirement.
        unsafe { md5_short_keys_avx512(keys, out) }
    }
}

/// One MD5 step: `a = b + rotl(a + f(b, c, d) + K[i] + M[g], S[i])`, the boolean function `f`
/// given as its `vpternlogd` truth table.
macro_rules! step {
    ($a:ident, $b:ident, $c:ident, $d:ident, $m:ident, $i:literal, $g:literal, $table:literal) => {
        let f = _mm512_ternarylogic_epi32::<$table>($b, $c, $d);
        let x = _mm512_add_epi32(_mm512_add_epi32($a, f), _mm512_add_epi32(_mm512_set1_epi32(K[$i] as i32), $m[$g]));
        $a = _mm512_add_epi32($b, _mm512_rol_epi32::<{ S[$i] as i32 }>(x));
    };
}

/// Four steps, the state names rotating (a, b, c, d) -> (d, a, b, c) after each.
macro_rules! four {
    ($a:ident, $b:ident, $c:ident, $d:ident, $m:ident, $table:literal,
     $i0:literal $g0:literal, $i1:literal $g1:literal, $i2:literal $g2:literal, $i3:literal $g3:literal) => {
        step!($a, $b, $c, $d, $m, $i0, $g0, $table);
        step!($d, $a, $b, $c, $m, $i1, $g1, $table);
        step!($c, $d, $a, $b, $m, $i2, $g2, $table);
        step!($b, $c, $d, $a, $m, $i3, $g3, $table);
    };
}

/// The compression function over sixteen padded one-block messages, `words[w][lane]` being
/// word `w` of lane `lane`'s block; returns the state words `[a, b, c, d][lane]` (the digest is
/// their little-endian bytes).
///
/// # Safety
/// The CPU must have AVX-512F ([`Avx512::detect`]).
#[target_feature(enable = "avx512f")]
unsafe fn md5_block_avx512(words: &[[u32; LANES]; 16]) -> [[u32; LANES]; 4] {
    let m: [__m512i; 16] = std::array::from_fn(|w| {
        // SAFETY: `words[w]` is sixteen `u32`s, exactly the 64 bytes the unaligned load reads;
        // the caller guarantees AVX-512F.
        unsafe { _mm512_loadu_si512(words[w].as_ptr().cast()) }
    });
    let (mut a, mut b, mut c, mut d) = (
        _mm512_set1_epi32(INIT[0] as i32),
        _mm512_set1_epi32(INIT[1] as i32),
        _mm512_set1_epi32(INIT[2] as i32),
        _mm512_set1_epi32(INIT[3] as i32),
    );
    // Round 1: F = (b & c) | (!b & d), words in order.
    four!(a, b, c, d, m, 0xca, 0 0, 1 1, 2 2, 3 3);
    four!(a, b, c, d, m, 0xca, 4 4, 5 5, 6 6, 7 7);
    four!(a, b, c, d, m, 0xca, 8 8, 9 9, 10 10, 11 11);
    four!(a, b, c, d, m, 0xca, 12 12, 13 13, 14 14, 15 15);
    // Round 2: G = (d & b) | (!d & c), words (5i + 1) mod 16.
    four!(a, b, c, d, m, 0xe4, 16 1, 17 6, 18 11, 19 0);
    four!(a, b, c, d, m, 0xe4, 20 5, 21 10, 22 15, 23 4);
    four!(a, b, c, d, m, 0xe4, 24 9, 25 14, 26 3, 27 8);
    four!(a, b, c, d, m, 0xe4, 28 13, 29 2, 30 7, 31 12);
    // Round 3: H = b ^ c ^ d, words (3i + 5) mod 16.
    four!(a, b, c, d, m, 0x96, 32 5, 33 8, 34 11, 35 14);
    four!(a, b, c, d, m, 0x96, 36 1, 37 4, 38 7, 39 10);
    four!(a, b, c, d, m, 0x96, 40 13, 41 0, 42 3, 43 6);
    four!(a, b, c, d, m, 0x96, 44 9, 45 12, 46 15, 47 2);
    // Round 4: I = c ^ (b | !d), words 7i mod 16.
    four!(a, b, c, d, m, 0x39, 48 0, 49 7, 50 14, 51 5);
    four!(a, b, c, d, m, 0x39, 52 12, 53 3, 54 10, 55 1);
    four!(a, b, c, d, m, 0x39, 56 8, 57 15, 58 6, 59 13);
    four!(a, b, c, d, m, 0x39, 60 4, 61 11, 62 2, 63 9);
    let mut out = [[0u32; LANES]; 4];
    for (o, (v, init)) in out.iter_mut().zip([a, b, c, d].into_iter().zip(INIT)) {
        let v = _mm512_add_epi32(v, _mm512_set1_epi32(init as i32));
        // SAFETY: `o` is sixteen `u32`s, exactly the 64 bytes the unaligned store writes, and is
        // borrowed mutably; the caller guarantees AVX-512F.
        unsafe { _mm512_storeu_si512(o.as_mut_ptr().cast(), v) };
    }
    out
}

/// Hashes up to sixteen short keys (each at most [`super::md5_block::MAX_SHORT_KEY`] bytes) into
/// `out[..keys.len()]`.
///
/// # Safety
/// The CPU must have AVX-512F ([`Avx512::detect`]).
#[target_feature(enable = "avx512f")]
unsafe fn md5_short_keys_avx512(keys: &[&[u8]], out: &mut [KeyHash]) {
    let words = padded_words::<LANES>(keys);
    // SAFETY: this function's own contract (the CPU has AVX-512F) is `md5_block_avx512`'s only
    // requirement.
    let state = unsafe { md5_block_avx512(&words) };
    digests_from_state(&state, keys.len(), out);
}
