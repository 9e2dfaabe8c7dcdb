//! Zigzag varints and varlongs as Kafka writes them (`ByteUtils.writeVarint`, `readVarint`,
//! `writeVarlong`, `readVarlong`): protobuf-style base-128 groups, least significant first,
//! the high bit of each byte marking continuation.

/// Why a varint could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarintError {
    /// The buffer ended inside the varint.
    Underflow,
    /// More continuation bytes than an int32 (5) or int64 (10) allows.
    TooLong,
}

impl VarintError {
    /// Human-readable reason, used in corrupt-record errors.
    pub fn reason(self, what: &str) -> String {
        match self {
            VarintError::Underflow => format!("buffer ended while reading {what}"),
            VarintError::TooLong => format!("{what} is not a valid varint: too many continuation bytes"),
        }
    }
}

/// Reads an unsigned varint (at most 5 bytes) at `*pos`, advancing `*pos`.
/// Bits of a 5th byte beyond bit 31 are dropped, as Kafka does.
#[inline]
pub fn read_unsigned_varint(buf: &[u8], pos: &mut usize) -> Result<u32, VarintError> {
    let mut value: u32 = 0;
    let mut i = 0;
    loop {
        let Some(&b) = buf.get(*pos) else { return Err(VarintError::Underflow) };
        *pos += 1;
        value |= u32::from(b & 0x7f) << (i * 7);
        if b & 0x80 == 0 {
            return Ok(value);
        }
        i += 1;
        if i >= 5 {
            return Err(VarintError::TooLong);
        }
    }
}

/// Reads a zigzag-encoded int32 at `*pos`.
#[inline]
pub fn read_varint(buf: &[u8], pos: &mut usize) -> Result<i32, VarintError> {
    // Fast path: a single byte (the common case for lengths and deltas of small records).
    if let Some(&b) = buf.get(*pos) {
        if b & 0x80 == 0 {
            *pos += 1;
            let u = u32::from(b);
            return Ok(((u >> 1) as i32) ^ -((u & 1) as i32));
        }
    }
    let u = read_unsigned_varint(buf, pos)?;
    Ok(((u >> 1) as i32) ^ -((u & 1) as i32))
}

/// Reads a zigzag-encoded int64 (at most 10 bytes) at `*pos`.
#[inline]
pub fn read_varlong(buf: &[u8], pos: &mut usize) -> Result<i64, VarintError> {
    let mut value: u64 = 0;
    let mut shift = 0u32;
    loop {
        let Some(&b) = buf.get(*pos) else { return Err(VarintError::Underflow) };
        *pos += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(((value >> 1) as i64) ^ -((value & 1) as i64));
        }
        shift += 7;
        if shift > 63 {
            return Err(VarintError::TooLong);
        }
    }
}

/// Appends the unsigned varint encoding of `value`.
#[inline]
pub fn write_unsigned_varint(value: u32, out: &mut Vec<u8>) {
    let mut buf = [0u8; 5];
    let n = put_unsigned_varint(value, &mut buf, 0);
    out.extend_from_slice(&buf[..n]);
}

/// Writes the unsigned varint encoding of `value` into `buf` at `at`; returns where it ends.
/// `buf` must have room for 5 bytes from `at`. For encoders that assemble a record's fields
/// in a small stack buffer and copy them out in one go.
#[inline]
pub fn put_unsigned_varint(mut value: u32, buf: &mut [u8], mut at: usize) -> usize {
    // One and two bytes (lengths and deltas of small records) without the loop.
    if value < 0x80 {
        buf[at] = value as u8;
        return at + 1;
    }
    if value < 0x4000 {
        buf[at..at + 2].copy_from_slice(&[(value as u8) | 0x80, (value >> 7) as u8]);
        return at + 2;
    }
    while value & !0x7f != 0 {
        buf[at] = ((value & 0x7f) | 0x80) as u8;
        at += 1;
        value >>= 7;
    }
    buf[at] = value as u8;
    at + 1
}

/// Writes the zigzag varint encoding of `value` into `buf` at `at` (see [`put_unsigned_varint`]).
#[inline]
pub fn put_varint(value: i32, buf: &mut [u8], at: usize) -> usize {
    put_unsigned_varint(((value << 1) ^ (value >> 31)) as u32, buf, at)
}

/// Writes the zigzag varlong encoding of `value` into `buf` at `at`, which must have room for
/// 10 bytes; returns where it ends.
#[inline]
pub fn put_varlong(value: i64, buf: &mut [u8], mut at: usize) -> usize {
    let mut v = ((value << 1) ^ (value >> 63)) as u64;
    while v & !0x7f != 0 {
        buf[at] = ((v & 0x7f) | 0x80) as u8;
        at += 1;
        v >>= 7;
    }
    buf[at] = v as u8;
    at + 1
}

/// Appends the zigzag varint encoding of `value`.
#[inline]
pub fn write_varint(value: i32, out: &mut Vec<u8>) {
    write_unsigned_varint(((value << 1) ^ (value >> 31)) as u32, out);
}

/// Appends the zigzag varlong encoding of `value`.
#[inline]
pub fn write_varlong(value: i64, out: &mut Vec<u8>) {
    let mut buf = [0u8; 10];
    let n = put_varlong(value, &mut buf, 0);
    out.extend_from_slice(&buf[..n]);
}

/// Bytes needed for the zigzag varint encoding of `value` (`ByteUtils.sizeOfVarint`).
#[inline]
pub fn size_of_varint(value: i32) -> usize {
    size_of_unsigned_varint(((value << 1) ^ (value >> 31)) as u32)
}

/// Bytes needed for the unsigned varint encoding of `value`.
#[inline]
pub fn size_of_unsigned_varint(value: u32) -> usize {
    // ceil(bits / 7) for bits in 1..=32 as a multiply and a shift: (bits * 37 + 222) >> 8 is
    // exact on that range (checked for every bit count by the tests).
    let bits = 32 - (value | 1).leading_zeros() as usize;
    (bits * 37 + 222) >> 8
}

/// Bytes needed for the zigzag varlong encoding of `value` (`ByteUtils.sizeOfVarlong`).
#[inline]
pub fn size_of_varlong(value: i64) -> usize {
    let v = ((value << 1) ^ (value >> 63)) as u64;
    let bits = 64 - (v | 1).leading_zeros() as usize;
    // ceil(bits / 7) for bits in 1..=64: exact on that range, as above.
    (bits * 37 + 222) >> 8
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: i32) -> Vec<u8> {
        let mut out = Vec::new();
        write_varint(v, &mut out);
        out
    }

    /// The vectors of Kafka's ByteUtilsTest (spec section 11.2).
    #[test]
    fn varint_vectors_match_kafka() {
        let cases: &[(i32, &[u8])] = &[
            (0, &[0x00]),
            (-1, &[0x01]),
            (1, &[0x02]),
            (63, &[0x7e]),
            (-64, &[0x7f]),
            (64, &[0x80, 0x01]),
            (-65, &[0x81, 0x01]),
            (8191, &[0xfe, 0x7f]),
            (8192, &[0x80, 0x80, 0x01]),
            (i32::MAX, &[0xfe, 0xff, 0xff, 0xff, 0x0f]),
            (i32::MIN, &[0xff, 0xff, 0xff, 0xff, 0x0f]),
        ];
        for &(v, bytes) in cases {
            assert_eq!(enc(v), bytes, "encoding {v}");
            assert_eq!(size_of_varint(v), bytes.len(), "size of {v}");
            let mut pos = 0;
            assert_eq!(read_varint(bytes, &mut pos), Ok(v));
            assert_eq!(pos, bytes.len());
        }
        let mut out = Vec::new();
        write_unsigned_varint(u32::MAX, &mut out);
        assert_eq!(out, [0xff, 0xff, 0xff, 0xff, 0x0f]);
    }

    /// The multiply-and-shift sizes equal ceil(bits / 7) and the encoders' lengths at every
    /// bit count.
    #[test]
    fn sizes_match_the_encodings_at_every_bit_count() {
        for bits in 0..=64u32 {
            let v: u64 = if bits == 0 { 0 } else { u64::MAX >> (64 - bits) };
            let zigzag_long = (v >> 1) as i64 ^ -((v & 1) as i64);
            let mut out = Vec::new();
            write_varlong(zigzag_long, &mut out);
            assert_eq!(size_of_varlong(zigzag_long), out.len(), "varlong of {bits} bits");
            assert_eq!(out.len(), (bits.max(1) as usize).div_ceil(7));
            if bits <= 32 {
                let u = v as u32;
                let mut out = Vec::new();
                write_unsigned_varint(u, &mut out);
                assert_eq!(size_of_unsigned_varint(u), out.len(), "varint of {bits} bits");
                let zigzag = (u >> 1) as i32 ^ -((u & 1) as i32);
                assert_eq!(size_of_varint(zigzag), out.len());
            }
        }
    }

    #[test]
    fn varlong_round_trips_extremes() {
        for v in [0i64, -1, 1, 63, -64, 64, i64::from(i32::MAX) + 1, i64::MAX, i64::MIN] {
            let mut out = Vec::new();
            write_varlong(v, &mut out);
            assert_eq!(out.len(), size_of_varlong(v));
            let mut pos = 0;
            assert_eq!(read_varlong(&out, &mut pos), Ok(v));
            assert_eq!(pos, out.len());
        }
        let mut out = Vec::new();
        write_varlong(i64::MIN, &mut out);
        assert_eq!(out.len(), 10);
    }

    #[test]
    fn overlong_and_truncated_varints_are_errors() {
        let mut pos = 0;
        assert_eq!(read_varint(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01], &mut pos), Err(VarintError::TooLong));
        let mut pos = 0;
        assert_eq!(read_varint(&[0x80, 0x80], &mut pos), Err(VarintError::Underflow));
        let mut pos = 0;
        assert_eq!(read_varlong(&[0xff; 11], &mut pos), Err(VarintError::TooLong));
        let mut pos = 0;
        assert_eq!(read_varlong(&[], &mut pos), Err(VarintError::Underflow));
        // A 5th byte's bits beyond bit 31 are dropped, as in Kafka.
        let mut pos = 0;
        assert_eq!(read_unsigned_varint(&[0xff, 0xff, 0xff, 0xff, 0x7f], &mut pos), Ok(u32::MAX));
    }
}
