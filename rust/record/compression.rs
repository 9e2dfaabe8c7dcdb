//! Compression codecs of Kafka record batches (magic 2) and legacy message sets (magic 0/1).
//!
//! Mirrors `org.apache.kafka.common.compress.*` and `org.apache.kafka.common.record.CompressionType`:
//! every writer produces the stream layout Kafka's producer/broker writes, and every reader accepts
//! what Kafka's readers accept (including their quirks, which are documented on each function).

use std::cell::RefCell;
use std::io::{self, Read, Write};

use flate2::{Compress, Compression, Crc, Decompress, FlushCompress, FlushDecompress, Status};
use twox_hash::XxHash32;

/// Kafka's `CompressionType`: the codec id in attribute bits 0-2.
///
/// Mirrors `org.apache.kafka.common.record.CompressionType` (ids, names and level ranges).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CompressionType {
    /// No compression (`NONE`, id 0).
    None = 0,
    /// `GZIP` (id 1): RFC 1952, as `java.util.zip.GZIPOutputStream` writes it.
    Gzip = 1,
    /// `SNAPPY` (id 2): xerial snappy-java stream framing.
    Snappy = 2,
    /// `LZ4` (id 3): Kafka's LZ4 frame subset (`Lz4BlockOutputStream`).
    Lz4 = 3,
    /// `ZSTD` (id 4): standard zstd frames (zstd-jni); only legal with magic 2.
    Zstd = 4,
}

impl CompressionType {
    /// Every codec, in id order.
    pub const ALL: [Self; 5] = [Self::None, Self::Gzip, Self::Snappy, Self::Lz4, Self::Zstd];

    /// `CompressionType.forId`: the codec for attribute bits 0-2, `None` (Rust's) for ids above 4.
    #[must_use]
    pub fn from_id(id: u8) -> Option<Self> {
        Self::ALL.get(usize::from(id)).copied()
    }

    /// `CompressionType.id`: the value stored in attribute bits 0-2.
    #[must_use]
    pub fn id(self) -> u8 {
        self as u8
    }

    /// `CompressionType.name`: Kafka's configuration name of the codec.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Gzip => "gzip",
            Self::Snappy => "snappy",
            Self::Lz4 => "lz4",
            Self::Zstd => "zstd",
        }
    }

    /// `CompressionType.forName`, but case-insensitive, and also accepting `"uncompressed"` (the
    /// `BrokerCompressionType` spelling of no compression).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        let name = if name.eq_ignore_ascii_case("uncompressed") { "none" } else { name };
        Self::ALL.into_iter().find(|c| name.eq_ignore_ascii_case(c.name()))
    }

    /// `CompressionType.defaultLevel`: gzip -1 (zlib's default, 6), lz4 9, zstd 3, others 0.
    #[must_use]
    pub fn default_level(self) -> i32 {
        match self {
            Self::Gzip => -1,
            Self::Lz4 => 9,
            Self::Zstd => 3,
            Self::None | Self::Snappy => 0,
        }
    }

    /// The level checks of `GzipCompression.Builder`, `Lz4Compression.Builder` and
    /// `ZstdCompression.Builder`: gzip 1..=9 or -1, lz4 1..=17, zstd -131072..=22; other codecs
    /// have no levels and accept anything.
    ///
    /// # Errors
    /// A message in Kafka's wording when the level is outside the codec's range.
    pub fn validate_level(self, level: i32) -> Result<(), String> {
        let ok = match self {
            Self::Gzip => level == -1 || (1..=9).contains(&level),
            Self::Lz4 => (1..=17).contains(&level),
            Self::Zstd => (-131_072..=22).contains(&level),
            Self::None | Self::Snappy => true,
        };
        let name = self.name();
        ok.then_some(()).ok_or_else(|| format!("{name} doesn't support given compression level: {level}"))
    }
}

/// Appends the compressed form of `input` to `out`, the exact stream Kafka's producer/broker writes for that codec.
///
/// Same as [`compress_with_magic`] with magic 2 (the LZ4 header checksum of magic 1 and 2 is identical).
///
/// # Errors
/// An `InvalidInput` error for a level outside the codec's range, or the codec's own failure.
pub fn compress(codec: CompressionType, level: Option<i32>, input: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
    compress_with_magic(codec, level, 2, input, out)
}

/// [`compress`] for a given batch magic, mirroring `Compression.wrapForOutput(buffer, magic)`: with magic 0,
/// LZ4 writes the broken (KAFKA-3160) header checksum, hashed over magic number + FLG + BD; zstd is
/// rejected below magic 2.
///
/// Per codec (`level` `None` means [`CompressionType::default_level`]):
/// - gzip: `GzipOutputStream` (JDK >= 16): header `1f 8b 08 00 00000000 00 ff`, raw deflate, CRC-32 and
///   size trailer. Deflate comes from `miniz_oxide`, so its bytes may differ from zlib's while being equivalent.
/// - snappy: `SnappyOutputStream` with its default 32 KiB block: 16-byte header, then per block an int32 BE
///   length and a raw snappy block. Empty input gives just the header (snappy-java writes it on close).
/// - lz4: `Lz4BlockOutputStream` with 64 KiB blocks, FLG 0x60, BD 0x40. Kafka uses lz4-java's fast compressor
///   at the default level 9 and the HC compressor at other levels; `lz4_flex` only has the fast one, so every
///   level compresses with it (still valid LZ4 that Kafka reads, but bytes may differ from Kafka's).
/// - zstd: `ZstdOutputStreamNoFinalizer` behind Kafka's 16 KiB `BufferedOutputStream`: data in continue
///   mode, one flush, then end of frame (so no content size, and a final empty block), no checksum.
///
/// # Errors
/// `InvalidInput` for a bad level or zstd below magic 2; otherwise the codec's own failure.
pub fn compress_with_magic(
    codec: CompressionType,
    level: Option<i32>,
    magic: u8,
    input: &[u8],
    out: &mut Vec<u8>,
) -> io::Result<()> {
    let level = level.unwrap_or_else(|| codec.default_level());
    codec.validate_level(level).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    match codec {
        CompressionType::None => {
            out.extend_from_slice(input);
            Ok(())
        }
        CompressionType::Gzip => gzip_compress(level, input, out),
        CompressionType::Snappy => snappy_compress(input, out),
        CompressionType::Lz4 => {
            lz4_compress(magic, input, out);
            Ok(())
        }
        CompressionType::Zstd if magic < 2 => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("zstd compression requires magic 2 (record batch v2), not magic {magic}"),
        )),
        CompressionType::Zstd => zstd_compress(level, input, out),
    }
}

/// Appends the decompressed bytes of `input` to `out`. `magic` is the batch magic (0, 1 or 2): it matters for the LZ4
/// header-checksum quirk. Output beyond `limit` bytes is an error (protects against decompression bombs in corrupt
/// input). On failure returns a human-readable reason naming the codec and what was wrong (e.g. "lz4: block size 99999 exceeds the 65536-byte maximum of the frame").
///
/// Mirrors `Compression.wrapForInput(buffer, magic, supplier)` read to its end, with the readers' quirks:
/// - gzip (`GZIPInputStream`): concatenated members; bytes after a member that are not a valid member header
///   are ignored; trailer CRC-32 and size verified; empty input is an error.
/// - snappy (`SnappyInputStream`): xerial framing if the input has >= 16 bytes and starts with its magic,
///   otherwise one raw snappy block; 1-3 stray bytes after the last chunk are ignored; empty input is an error.
/// - lz4 (`Lz4BlockInputStream`): one frame with FLG version 01, independent blocks, zero reserved bits, BD size
///   code 4..=7; the header checksum is not verified for magic 0 (KAFKA-3160); block checksums are verified,
///   a content checksum is skipped unverified; data after the end mark is ignored.
/// - zstd (`ZstdInputStreamNoFinalizer`): all concatenated frames; empty input is empty output; magic < 2 fails.
///
/// On error `out` is restored to its length on entry.
///
/// # Errors
/// Corrupt or truncated input, output over `limit`, or zstd with a magic below 2.
pub fn decompress(
    codec: CompressionType,
    magic: u8,
    input: &[u8],
    limit: usize,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let start = out.len();
    let expansion = if codec == CompressionType::None { 1 } else { 4 };
    out.reserve(input.len().saturating_mul(expansion).min(limit));
    let mut sink = Sink { out, start, limit, codec: codec.name() };
    let result = match codec {
        CompressionType::None => sink.extend(input),
        CompressionType::Gzip => gzip_decompress(input, &mut sink),
        CompressionType::Snappy => snappy_decompress(input, &mut sink),
        CompressionType::Lz4 => lz4_decompress(magic, input, &mut sink),
        CompressionType::Zstd => zstd_decompress(magic, input, &mut sink),
    };
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// `return Err(format!(...))`.
macro_rules! fail {
    ($($arg:tt)*) => { return Err(format!($($arg)*)) };
}

/// Decompressed output: what was appended to `out` after `start`, at most `limit` bytes.
struct Sink<'a> {
    out: &'a mut Vec<u8>,
    start: usize,
    limit: usize,
    codec: &'static str,
}

impl Sink<'_> {
    /// Bytes that may still be appended.
    fn room(&self) -> usize {
        self.limit.saturating_sub(self.out.len() - self.start)
    }

    fn over_limit(&self) -> String {
        let (codec, limit) = (self.codec, self.limit);
        format!("{codec}: output exceeds the {limit}-byte limit")
    }

    fn check(&self) -> Result<(), String> {
        if self.out.len() - self.start > self.limit {
            return Err(self.over_limit());
        }
        Ok(())
    }

    fn extend(&mut self, bytes: &[u8]) -> Result<(), String> {
        if bytes.len() > self.room() {
            return Err(self.over_limit());
        }
        self.out.extend_from_slice(bytes);
        Ok(())
    }

    /// Appends `n` zero bytes for a decoder to overwrite (then `truncate`); returns where they start.
    fn grow(&mut self, n: usize) -> usize {
        let at = self.out.len();
        self.out.resize(at + n, 0);
        at
    }

    /// Room for the next streaming step: up to 64 KiB, and one byte past the limit so excess is detected.
    fn step(&self) -> usize {
        self.room().saturating_add(1).min(64 * 1024)
    }
}

fn u32_le(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn u32_be(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4).map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

// ------------------------------------------------------------------------------------------------ gzip

/// Header `GZIPOutputStream` writes since JDK 16: no flags, mtime 0, XFL 0, OS 255 (unknown).
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

fn gzip_compress(level: i32, input: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
    let level = u32::try_from(level).unwrap_or(6); // -1 = zlib's Z_DEFAULT_COMPRESSION = 6
    out.extend_from_slice(&GZIP_HEADER);
    let mut deflate = Compress::new(Compression::new(level), false);
    out.reserve(input.len() / 2 + 64);
    loop {
        if out.capacity() - out.len() < 256 {
            out.reserve(64 * 1024);
        }
        let rest = input.get(to_usize(deflate.total_in())..).unwrap_or_default();
        if deflate.compress_vec(rest, out, FlushCompress::Finish).map_err(io::Error::other)? == Status::StreamEnd {
            break;
        }
    }
    let mut crc = Crc::new();
    crc.update(input);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&crc.amount().to_le_bytes()); // ISIZE = length mod 2^32
    Ok(())
}

/// Parses one member header as `GZIPInputStream.readHeader` does (FEXTRA, FNAME, FCOMMENT skipped, FHCRC
/// verified, reserved flags ignored); returns its length.
fn gzip_header(b: &[u8]) -> Result<usize, String> {
    let short = || "gzip: truncated member header".to_string();
    if b.len() < 10 {
        return Err(short());
    }
    if b[..2] != [0x1f, 0x8b] || b[2] != 8 {
        let start = &b[..3];
        fail!("gzip: not in gzip format (header starts {start:02x?})");
    }
    let mut p = 10;
    if b[3] & 4 != 0 {
        let xlen = b.get(p..p + 2).ok_or_else(short)?;
        p += 2 + usize::from(u16::from_le_bytes([xlen[0], xlen[1]]));
    }
    for flag in [8, 16] {
        if b[3] & flag != 0 {
            p += 1 + b.get(p..).and_then(|s| s.iter().position(|&c| c == 0)).ok_or_else(short)?;
        }
    }
    if b[3] & 2 != 0 {
        let stored = b.get(p..p + 2).ok_or_else(short)?;
        let mut crc = Crc::new();
        crc.update(&b[..p]);
        if crc.sum() & 0xffff != u32::from(u16::from_le_bytes([stored[0], stored[1]])) {
            fail!("gzip: corrupt header checksum");
        }
        p += 2;
    }
    if p > b.len() {
        return Err(short());
    }
    Ok(p)
}

/// `GZIPInputStream`: members are decoded one after another, each trailer's CRC-32 and size verified; as in
/// the JDK, bytes after a member that do not start a valid member header are ignored. Empty input is an error.
fn gzip_decompress(input: &[u8], sink: &mut Sink) -> Result<(), String> {
    let mut pos = gzip_header(input)?;
    let mut inflate = Decompress::new(false);
    loop {
        let member_start = sink.out.len();
        loop {
            let at = sink.grow(sink.step());
            let (in0, out0) = (inflate.total_in(), inflate.total_out());
            let rest = input.get(pos + to_usize(in0)..).unwrap_or_default();
            let status = inflate
                .decompress(rest, &mut sink.out[at..], FlushDecompress::None)
                .map_err(|e| format!("gzip: corrupt deflate data: {e}"))?;
            let written = to_usize(inflate.total_out() - out0);
            sink.out.truncate(at + written);
            sink.check()?;
            if status == Status::StreamEnd {
                break;
            }
            if written == 0 && inflate.total_in() == in0 {
                fail!("gzip: truncated deflate data (unexpected end of input)");
            }
        }
        pos += to_usize(inflate.total_in());
        let (Some(crc_stored), Some(size_stored)) = (u32_le(input, pos), u32_le(input, pos + 4)) else {
            fail!("gzip: truncated member trailer");
        };
        let mut crc = Crc::new();
        crc.update(&sink.out[member_start..]);
        if crc.sum() != crc_stored || crc.amount() != size_stored {
            fail!("gzip: corrupt trailer (CRC-32 or size mismatch)");
        }
        pos += 8;
        match input.get(pos..).map(gzip_header) {
            Some(Ok(n)) => pos += n,
            _ => return Ok(()),
        }
        inflate.reset(false);
    }
}

// ---------------------------------------------------------------------------------------------- snappy

/// `SnappyCodec.MAGIC_HEADER`; the stream header continues with int32 BE version 1 and min version 1.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const XERIAL_HEADER_LEN: usize = 16;
/// `SnappyOutputStream.DEFAULT_BLOCK_SIZE`.
const SNAPPY_BLOCK: usize = 32 * 1024;
/// `SnappyInputStream.MAX_CHUNK_SIZE`.
const SNAPPY_MAX_CHUNK: u32 = 512 * 1024 * 1024;

fn snappy_compress(input: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
    out.extend_from_slice(&XERIAL_MAGIC);
    out.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1]);
    let mut encoder = snap::raw::Encoder::new();
    for block in input.chunks(SNAPPY_BLOCK) {
        let at = out.len();
        out.resize(at + 4 + snap::raw::max_compress_len(block.len()), 0);
        let n = encoder.compress(block, &mut out[at + 4..]).map_err(io::Error::other)?;
        out[at..at + 4].copy_from_slice(&u32::try_from(n).map_err(io::Error::other)?.to_be_bytes());
        out.truncate(at + 4 + n);
    }
    Ok(())
}

/// Decodes one raw snappy block, checking its declared length against the limit before allocating.
fn snappy_block(block: &[u8], sink: &mut Sink) -> Result<(), String> {
    let n = snap::raw::decompress_len(block).map_err(|e| format!("snappy: corrupt block: {e}"))?;
    if n > sink.room() {
        return Err(sink.over_limit());
    }
    let at = sink.grow(n);
    let got = snap::raw::Decoder::new()
        .decompress(block, &mut sink.out[at..])
        .map_err(|e| format!("snappy: corrupt block: {e}"))?;
    if got != n {
        fail!("snappy: block declared {n} bytes but decoded to {got}");
    }
    Ok(())
}

/// `SnappyInputStream`: input of at least 16 bytes starting with the xerial magic is a framed stream;
/// anything else is one raw snappy block (as other clients, e.g. sarama, send). As in snappy-java, the first
/// header's versions are not checked, a further stream header between chunks is skipped (or ends the stream
/// if its magic is wrong), 1-3 bytes after the last chunk are ignored, and empty input is an error.
fn snappy_decompress(input: &[u8], sink: &mut Sink) -> Result<(), String> {
    if input.is_empty() {
        fail!("snappy: cannot decompress an empty stream");
    }
    if input.len() < XERIAL_HEADER_LEN || input[..8] != XERIAL_MAGIC {
        return snappy_block(input, sink);
    }
    let magic_head = u32::from_be_bytes([0x82, b'S', b'N', b'A']);
    let mut pos = XERIAL_HEADER_LEN;
    while let Some(word) = u32_be(input, pos) {
        if word == magic_head {
            let Some(header) = input.get(pos..pos + XERIAL_HEADER_LEN) else {
                fail!("snappy: truncated stream header in a concatenated stream");
            };
            if header[..8] != XERIAL_MAGIC {
                return Ok(());
            }
            let version = i32::from_be_bytes([header[8], header[9], header[10], header[11]]);
            if version < 1 {
                fail!("snappy: incompatible stream version {version}");
            }
            pos += XERIAL_HEADER_LEN;
            continue;
        }
        if word > SNAPPY_MAX_CHUNK {
            let size = i32::from_be_bytes(word.to_be_bytes());
            fail!("snappy: chunk size {size} is negative or too big");
        }
        let len = word as usize;
        let Some(block) = input.get(pos + 4..pos + 4 + len) else {
            let left = input.len() - pos - 4;
            fail!("snappy: truncated chunk ({len} bytes declared, {left} left)");
        };
        pos += 4 + len;
        snappy_block(block, sink)?;
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------- lz4

/// `Lz4BlockOutputStream.MAGIC`, little-endian on the wire.
const LZ4_MAGIC: u32 = 0x184D_2204;
/// FLG: version 01, independent blocks, no checksums, no content size.
const LZ4_FLG: u8 = 0x60;
/// BD: block maximum size code 4 (64 KiB).
const LZ4_BD: u8 = 0x40;
const LZ4_BLOCK: usize = 64 * 1024;
/// `LZ4_FRAME_INCOMPRESSIBLE_MASK`: the block is stored uncompressed.
const LZ4_RAW: u32 = 0x8000_0000;

/// The frame descriptor's HC byte: second byte of xxHash32 (seed 0) of `bytes`.
fn lz4_hc(bytes: &[u8]) -> u8 {
    (XxHash32::oneshot(0, bytes) >> 8).to_le_bytes()[0]
}

#[allow(clippy::cast_possible_truncation)] // block lengths are <= 64 KiB
fn lz4_compress(magic: u8, input: &[u8], out: &mut Vec<u8>) {
    let header = [0x04, 0x22, 0x4d, 0x18, LZ4_FLG, LZ4_BD];
    out.extend_from_slice(&header);
    // KAFKA-3160: the magic-0 writer hashes the magic number too.
    out.push(lz4_hc(if magic == 0 { &header } else { &header[4..] }));
    let max = lz4_flex::block::get_maximum_output_size(LZ4_BLOCK);
    out.reserve(input.len() + input.len() / LZ4_BLOCK * 4 + 8);
    for block in input.chunks(LZ4_BLOCK) {
        let at = out.len();
        out.resize(at + 4 + max, 0);
        let n = lz4_flex::block::compress_into(block, &mut out[at + 4..]).unwrap_or(usize::MAX);
        let size = if n >= block.len() {
            out.truncate(at + 4);
            out.extend_from_slice(block);
            block.len() as u32 | LZ4_RAW
        } else {
            out.truncate(at + 4 + n);
            n as u32
        };
        out[at..at + 4].copy_from_slice(&size.to_le_bytes());
    }
    out.extend_from_slice(&[0; 4]);
}

/// `Lz4BlockInputStream`: checks FLG (reserved bits, version 01, independent blocks) and BD (reserved bits,
/// size code 4..=7); the HC byte covers FLG, BD and the optional 8-byte content size, and is verified unless
/// `magic` is 0 (KAFKA-3160: old writers hashed the magic number too). Block checksums are verified when
/// flagged, a content checksum must be present but is not verified, and bytes after the frame are ignored.
fn lz4_decompress(magic: u8, input: &[u8], sink: &mut Sink) -> Result<(), String> {
    let truncated = |what: &str| format!("lz4: frame truncated in {what}");
    if input.len() < 6 {
        return Err(truncated("the frame header"));
    }
    if input[..4] != LZ4_MAGIC.to_le_bytes() {
        let found = &input[..4];
        fail!("lz4: bad magic number {found:02x?} (not an LZ4 frame)");
    }
    let (flg, bd) = (input[4], input[5]);
    if flg & 0x03 != 0 {
        fail!("lz4: FLG 0x{flg:02x} has reserved bits set");
    }
    if flg & 0x20 == 0 {
        fail!("lz4: dependent block stream is unsupported (FLG 0x{flg:02x})");
    }
    if flg >> 6 != 1 {
        let version = flg >> 6;
        fail!("lz4: frame version {version} is unsupported (FLG 0x{flg:02x})");
    }
    let code = (bd >> 4) & 7;
    if bd & 0x8f != 0 || code < 4 {
        fail!("lz4: BD 0x{bd:02x} has reserved bits set or a block size code {code} outside 4..=7");
    }
    let max_block = 1usize << (2 * code + 8);
    let mut pos = if flg & 0x08 != 0 { 14 } else { 6 };
    let Some(&hc) = input.get(pos) else {
        return Err(truncated("the frame header"));
    };
    if magic != 0 && hc != lz4_hc(&input[4..pos]) {
        fail!("lz4: frame descriptor checksum 0x{hc:02x} is wrong (descriptor corrupted)");
    }
    pos += 1;
    loop {
        let word = u32_le(input, pos).ok_or_else(|| truncated("a block size"))?;
        pos += 4;
        let len = (word & !LZ4_RAW) as usize;
        if len == 0 {
            if flg & 0x04 != 0 && input.len() < pos + 4 {
                return Err(truncated("the content checksum"));
            }
            return Ok(());
        }
        if len > max_block {
            fail!("lz4: block size {len} exceeds the {max_block}-byte maximum of the frame");
        }
        let block = input.get(pos..pos + len).ok_or_else(|| truncated("a block"))?;
        pos += len;
        if flg & 0x10 != 0 {
            let stored = u32_le(input, pos).ok_or_else(|| truncated("a block checksum"))?;
            pos += 4;
            if XxHash32::oneshot(0, block) != stored {
                fail!("lz4: block checksum mismatch");
            }
        }
        if word & LZ4_RAW != 0 {
            sink.extend(block)?;
            continue;
        }
        // A block expands at most 255-fold, and never beyond the frame's block maximum.
        let cap = max_block.min(len.saturating_mul(255));
        let region = cap.min(sink.room().saturating_add(1));
        let at = sink.grow(region);
        match lz4_flex::block::decompress_into(block, &mut sink.out[at..]) {
            Ok(n) => sink.out.truncate(at + n),
            Err(lz4_flex::block::DecompressError::OutputTooSmall { .. }) if region < cap => {
                return Err(sink.over_limit());
            }
            Err(e) => fail!("lz4: corrupt block: {e}"),
        }
        sink.check()?;
    }
}

// ------------------------------------------------------------------------------------------------ zstd

fn zstd_compress(level: i32, input: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
    let mut encoder = zstd::stream::write::Encoder::new(out, level)?;
    if !input.is_empty() {
        encoder.write_all(input)?;
        encoder.flush()?; // Kafka's BufferedOutputStream flushes the zstd stream before closing it
    }
    encoder.finish()?;
    Ok(())
}

thread_local! {
    /// Decompression context reused across calls (creating one costs more than decoding a small batch).
    static ZSTD_DCTX: RefCell<zstd::zstd_safe::DCtx<'static>> = RefCell::new(zstd::zstd_safe::DCtx::create());
}

/// `ZstdInputStreamNoFinalizer`: decodes every concatenated frame; as in zstd-jni, empty input is an empty
/// stream rather than an error, and a truncated frame is an error.
fn zstd_decompress(magic: u8, input: &[u8], sink: &mut Sink) -> Result<(), String> {
    if magic < 2 {
        fail!("zstd: compression type zstd is only valid with magic 2, not magic {magic}");
    }
    if input.is_empty() {
        return Ok(());
    }
    let cached = ZSTD_DCTX.try_with(|cell| cell.try_borrow_mut().ok().map(|mut ctx| zstd_read(&mut ctx, input, sink)));
    match cached {
        Ok(Some(result)) => result,
        _ => zstd_read(&mut zstd::zstd_safe::DCtx::create(), input, sink), // thread-local unavailable
    }
}

fn zstd_read(ctx: &mut zstd::zstd_safe::DCtx<'static>, input: &[u8], sink: &mut Sink) -> Result<(), String> {
    let mut reader = zstd::stream::read::Decoder::with_context(input, ctx);
    loop {
        let at = sink.grow(sink.step());
        match reader.read(&mut sink.out[at..]) {
            Ok(0) => {
                sink.out.truncate(at);
                return Ok(());
            }
            Ok(n) => sink.out.truncate(at + n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => sink.out.truncate(at),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => fail!("zstd: truncated frame"),
            Err(e) => fail!("zstd: corrupt data: {e}"),
        }
        sink.check()?;
    }
}

#[cfg(test)]
#[path = "compression_tests.rs"]
mod tests;
