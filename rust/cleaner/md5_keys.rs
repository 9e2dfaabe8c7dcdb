//! MD5 of many keys, as the cleaner hashes every keyed record (in pass 1, and in pass 2 where it
//! must look the key up), and MD5 would dominate its time: keys of at most 55 bytes fit one
//! 64-byte MD5 block, so several of them go through the compression function side by side, one
//! key per 32-bit lane: sixteen with AVX-512 ([`super::md5x16_avx512`], chosen at run time),
//! else twenty-four with AVX2 ([`super::md5x24_avx2`], likewise), else eight with the portable
//! code ([`super::md5x8`]). Longer keys go one by one through the
//! `md-5` crate. The digests are exactly MD5's.
//!
//! Thread-safety: pure functions.

use super::md5_block::MAX_SHORT_KEY;
use super::md5x8;
use super::offset_map::KeyHash;

/// Hashes every key of `keys` (any lengths) into `out`: sixteen short keys at a time with
/// AVX-512 when the CPU has it (checked at run time: the crate is built for baseline x86-64,
/// whose SSE2 has neither vector rotates nor three-input logic), else twenty-four with AVX2,
/// else eight at a time with the portable code; longer keys one by one with the `md-5` crate.
pub fn md5_keys(keys: &[&[u8]], out: &mut Vec<KeyHash>) {
    #[cfg(target_arch = "x86_64")]
    if let Some(avx512) = super::md5x16_avx512::Avx512::detect() {
        md5_keys_by::<{ super::md5x16_avx512::LANES }>(keys, out, |k, o| avx512.md5_short_keys(k, o));
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = super::md5x24_avx2::Avx2::detect() {
        md5_keys_by::<{ super::md5x24_avx2::LANES }>(keys, out, |k, o| avx2.md5_short_keys(k, o));
        return;
    }
    md5_keys_by::<{ md5x8::LANES }>(keys, out, md5x8::md5_short_keys);
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

/// For each record: the MD5 of its key if `wanted` says so (else `None`), computed many at a
/// time. `keys` and `digests` are scratch space kept by the caller.
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
    fn matches_md5_crate_for_every_length() {
        let data: Vec<u8> = (0..200u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let keys: Vec<&[u8]> = (0..=120).map(|n| &data[n % 7..n % 7 + n]).collect();
        let mut out = Vec::new();
        md5_keys(&keys, &mut out); // AVX-512 where the CPU has it
        for (k, h) in keys.iter().zip(&out) {
            assert_eq!(*h, hash_key(k), "key of {} bytes", k.len());
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(avx2) = crate::cleaner::md5x24_avx2::Avx2::detect() {
            md5_keys_by::<{ crate::cleaner::md5x24_avx2::LANES }>(&keys, &mut out, |k, o| avx2.md5_short_keys(k, o));
            for (k, h) in keys.iter().zip(&out) {
                assert_eq!(*h, hash_key(k), "AVX2 code, key of {} bytes", k.len());
            }
        }
        md5_keys_by::<{ md5x8::LANES }>(&keys, &mut out, md5x8::md5_short_keys); // the portable code everywhere
        for (k, h) in keys.iter().zip(&out) {
            assert_eq!(*h, hash_key(k), "portable code, key of {} bytes", k.len());
        }
    }
}
