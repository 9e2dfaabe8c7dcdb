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
pub fn write_unsigned_varint(mut value: u32, out: &mut Vec<u8>) {
    while value & !0x7f != 0 {
        out.push(((value & 0x7f) | 0x80) as u8);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends the zigzag varint encoding of `value`.
#[inline]
pub fn write_varint(value: i32, out: &mut Vec<u8>) {
    write_unsigned_varint(((value << 1) ^ (value >> 31)) as u32, out);
}

/// Appends the zigzag varlong encoding of `value`.
#[inline]
pub fn write_varlong(value: i64, out: &mut Vec<u8>) {
    let mut v = ((value << 1) ^ (value >> 63)) as u64;
    while v & !0x7f != 0 {
        out.push(((v & 0x7f) | 0x80) as u8);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Bytes needed for the zigzag varint encoding of `value` (`ByteUtils.sizeOfVarint`).
#[inline]
pub fn size_of_varint(value: i32) -> usize {
    size_of_unsigned_varint(((value << 1) ^ (value >> 31)) as u32)
}

/// Bytes needed for the unsigned varint encoding of `value`.
#[inline]
pub fn size_of_unsigned_varint(value: u32) -> usize {
    let bits = 32 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Bytes needed for the zigzag varlong encoding of `value` (`ByteUtils.sizeOfVarlong`).
#[inline]
pub fn size_of_varlong(value: i64) -> usize {
    let v = ((value << 1) ^ (value >> 63)) as u64;
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
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
