//! Short copies in line.
//!
//! Thread-safety: a pure function.

/// `out.copy_from_slice(src)`, without a call to `memcpy` for up to 128 bytes: the copy is
/// done in line, as overlapping words or 16-byte blocks, so a caller copying many short keys
/// and values keeps its registers (a call spills them, and for such lengths costs about as much
/// as the copy itself). Panics as `copy_from_slice` does when the lengths differ.
#[allow(clippy::inline_always)]
#[inline(always)]
pub fn copy_short(out: &mut [u8], src: &[u8]) {
    let n = src.len();
    if n > 128 || out.len() != n {
        out.copy_from_slice(src);
    } else if n >= 16 {
        let mut i = 0;
        while i + 16 < n {
            out[i..i + 16].copy_from_slice(&src[i..i + 16]);
            i += 16;
        }
        out[n - 16..].copy_from_slice(&src[n - 16..]);
    } else if n >= 8 {
        out[..8].copy_from_slice(&src[..8]);
        out[n - 8..].copy_from_slice(&src[n - 8..]);
    } else if n >= 4 {
        out[..4].copy_from_slice(&src[..4]);
        out[n - 4..].copy_from_slice(&src[n - 4..]);
    } else {
        for (o, s) in out.iter_mut().zip(src) {
            *o = *s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_every_length_exactly_and_nothing_around_it() {
        let src: Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
        for n in 0..=300 {
            for at in [0, 1, 5] {
                let mut buf = vec![0xeeu8; 310];
                copy_short(&mut buf[at..at + n], &src[..n]);
                assert_eq!(&buf[at..at + n], &src[..n], "length {n} at {at}");
                assert!(buf[..at].iter().chain(&buf[at + n..]).all(|&b| b == 0xee), "length {n} at {at}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "source slice length (3) does not match destination slice length (4)")]
    fn unequal_lengths_panic_as_copy_from_slice_does() {
        copy_short(&mut [0u8; 4], &[1, 2, 3]);
    }
}
