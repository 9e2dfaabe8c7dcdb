//! Telling a torn tail from a damaged batch length (kafkalog's; Kafka's reads treat both as
//! the end of the segment, and its cleaner fails on both).
//!
//! A scan that finds a batch whose declared length runs past the end of the `.log` file has
//! found either a torn tail (the file was cut inside the batch: a crash, or a partial copy) or
//! a damaged length field with more batches after it. The length field lies outside the
//! batch's CRC, which covers the bytes from the attributes to the end: so if the bytes from the
//! attributes up to some other length match the stored CRC, and that length ends at the end of
//! the file or at the start of another batch header, the batch is complete and only its length
//! is wrong.
//!
//! Thread-safety: pure functions over a file.

use super::file_records::FileRecords;
use crate::error::Result;
use crate::record::batch::{
    be_i32, ATTRIBUTES_OFFSET, CRC_OFFSET, MAGIC_OFFSET, MAGIC_V2, MIN_RECORD_SIZE, RECORD_BATCH_OVERHEAD,
};

/// Bytes read at once while searching.
const CHUNK: usize = 1 << 20;

/// CRC-32C (Castagnoli, reflected) one byte at a time, so the CRC of every prefix is known.
const TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { 0x82F6_3B78 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// The length of the v2 batch at `position` as its CRC tells it, when that differs from the
/// length its header declares (which runs past the end of `file`): `Some(length)` means the
/// batch is complete and its length field damaged; `None` means the bytes are a torn tail (or
/// not a v2 batch at all). Reads the rest of the file once.
pub(crate) fn crc_length(file: &FileRecords, position: u64) -> Result<Option<u64>> {
    let size = file.size();
    let left = size.saturating_sub(position);
    if left < RECORD_BATCH_OVERHEAD as u64 {
        return Ok(None);
    }
    let mut header = [0u8; RECORD_BATCH_OVERHEAD];
    file.read_at(position, &mut header)?;
    if header[MAGIC_OFFSET] != MAGIC_V2 {
        return Ok(None);
    }
    let stored = u32::from_be_bytes([
        header[CRC_OFFSET],
        header[CRC_OFFSET + 1],
        header[CRC_OFFSET + 2],
        header[CRC_OFFSET + 3],
    ]);
    let mut crc = !0u32;
    let mut buf = vec![0u8; CHUNK];
    let mut at = position + ATTRIBUTES_OFFSET as u64;
    while at < size {
        let n = file.read_at(at, &mut buf[..((size - at) as usize).min(CHUNK)])?;
        if n == 0 {
            break;
        }
        for (i, &b) in buf[..n].iter().enumerate() {
            crc = TABLE[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
            let length = at + i as u64 + 1 - position;
            if length >= RECORD_BATCH_OVERHEAD as u64 && !crc == stored && ends_a_batch(file, position + length)? {
                return Ok(Some(length));
            }
        }
        at += n as u64;
    }
    Ok(None)
}

/// Whether `end` is where a batch can end: the end of the file, or the start of another batch
/// header (a known magic and a possible length).
fn ends_a_batch(file: &FileRecords, end: u64) -> Result<bool> {
    let size = file.size();
    if end == size {
        return Ok(true);
    }
    let mut next = [0u8; MAGIC_OFFSET + 1];
    if end + next.len() as u64 > size {
        return Ok(false);
    }
    file.read_at(end, &mut next)?;
    Ok(next[MAGIC_OFFSET] <= MAGIC_V2 && be_i32(&next, 8) >= MIN_RECORD_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_computes_crc32c() {
        let data = b"kafkalog torn tails";
        let mut crc = !0u32;
        for &b in data {
            crc = TABLE[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
        }
        assert_eq!(!crc, crc32c::crc32c(data));
    }
}
