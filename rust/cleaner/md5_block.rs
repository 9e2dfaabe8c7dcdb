//! What the two MD5 kernels share ([`super::md5x8`], portable, eight keys at a time, and
//! [`super::md5x16_avx512`], sixteen): RFC 1321's constants, the padding of a short key into one
//! 64-byte block, laid out one key per lane, and the digests read back from the lanes' final
//! state. Neither kernel imports the other; [`super::md5_keys`] chooses between them.
//!
//! Thread-safety: constants and pure functions.

use super::offset_map::KeyHash;

/// Longest key that fits one block (64 bytes minus the 0x80 pad byte and the 8-byte length).
pub const MAX_SHORT_KEY: usize = 55;
/// The left-rotation of each step, RFC 1321.
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
pub(super) const G: [usize; 64] = {
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

/// The padded one-block message of each key (at most `N` keys of at most [`MAX_SHORT_KEY`]
/// bytes) as sixteen little-endian words per lane, word-major: `words[w][lane]`.
#[inline]
pub(super) fn padded_words<const N: usize>(keys: &[&[u8]]) -> [[u32; N]; 16] {
    debug_assert!(keys.len() <= N);
    let mut m = [[0u32; N]; 16];
    for (lane, key) in keys.iter().enumerate() {
        debug_assert!(key.len() <= MAX_SHORT_KEY);
        // Words read straight from the key: copying it into a padded block first and reading
        // the block back stalled on store forwarding (a third of the kernel's time). Only the
        // words holding the key and its pad byte are stored; the rest stay zero, but for the
        // bit length in word 14 (word 15, its high half, is zero for a short key).
        let chunks = key.chunks_exact(4);
        let tail = chunks.remainder();
        let full = key.len() / 4;
        for (w, chunk) in chunks.enumerate() {
            m[w][lane] = u32::from_le_bytes(chunk.try_into().expect("4 bytes"));
        }
        // The key's last 0-3 bytes, then the pad byte 0x80.
        let last = tail.iter().rev().fold(0x80u32, |word, &b| (word << 8) | u32::from(b));
        m[full][lane] = last;
        m[14][lane] = (key.len() as u32) * 8;
    }
    m
}

/// The digests of the first `n` lanes from the final state words `state[word][lane]`.
#[inline]
pub(super) fn digests_from_state<const N: usize>(state: &[[u32; N]; 4], n: usize, out: &mut [KeyHash]) {
    for (lane, digest) in out.iter_mut().enumerate().take(n) {
        for (w, words) in state.iter().enumerate() {
            digest[w * 4..w * 4 + 4].copy_from_slice(&words[lane].to_le_bytes());
        }
    }
}
