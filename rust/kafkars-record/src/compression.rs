//! The record batch codecs: gzip, snappy (xerial framing), lz4 (frame) and zstd.
//!
//! Kafka compresses all records of a batch as one stream. Decompression is bounded
//! so that a small hostile batch cannot make the broker allocate unbounded memory.

use std::fmt;
use std::io::{Read, Write};

use crate::error::RecordError;

/// Largest decompressed records section [`decompress`] accepts.
///
/// Generous: Kafka's largest request is 100 MiB by default, and compressed data
/// rarely expands more than a few times.
pub const MAX_DECOMPRESSED_SIZE: usize = 256 << 20;

/// How far a batch of `max_message_bytes` (the topic's `max.message.bytes`) may inflate
/// when a produced batch is validated: 64 times its allowed size (real data compresses
/// far less; producers bound batches by their uncompressed size), at least 8 MiB and at
/// most [`MAX_DECOMPRESSED_SIZE`]. A zip bomb stops there instead of being inflated.
pub fn decompression_limit(max_message_bytes: usize) -> usize {
    max_message_bytes
        .saturating_mul(64)
        .clamp(8 << 20, MAX_DECOMPRESSED_SIZE)
}

/// The compression codec of a record batch (attributes bits 0-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Compression {
    /// Records are stored as they are.
    #[default]
    None,
    /// gzip (RFC 1952), as Java's `GZIPOutputStream` writes it.
    Gzip,
    /// Snappy in the xerial/snappy-java stream framing.
    Snappy,
    /// The standard LZ4 frame format.
    Lz4,
    /// Zstandard.
    Zstd,
}

impl Compression {
    /// Every codec, in id order.
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    /// The codec with Kafka's id `id` (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
    pub fn from_id(id: i16) -> Result<Self, RecordError> {
        match id {
            0 => Ok(Compression::None),
            1 => Ok(Compression::Gzip),
            2 => Ok(Compression::Snappy),
            3 => Ok(Compression::Lz4),
            4 => Ok(Compression::Zstd),
            other => Err(RecordError::UnsupportedCompression(other)),
        }
    }

    /// Kafka's id of this codec, as stored in batch attributes.
    pub fn id(self) -> i16 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// The codec's name as Kafka's `compression.type` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    /// Parses a `compression.type` value. Topic configs say `uncompressed` where
    /// producer configs say `none`; both mean [`Compression::None`]. `producer` is
    /// not a codec and returns `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "none" | "uncompressed" => Some(Compression::None),
            "gzip" => Some(Compression::Gzip),
            "snappy" => Some(Compression::Snappy),
            "lz4" => Some(Compression::Lz4),
            "zstd" => Some(Compression::Zstd),
            _ => None,
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Compresses `data` with `c`, producing what a Java client would write.
pub fn compress(c: Compression, data: &[u8]) -> Result<Vec<u8>, RecordError> {
    match c {
        Compression::None => Ok(data.to_vec()),
        Compression::Gzip => gzip_compress(data),
        Compression::Snappy => xerial::compress(data),
        Compression::Lz4 => lz4_compress(data),
        Compression::Zstd => zstd::bulk::compress(data, ZSTD_LEVEL).map_err(codec_error(c)),
    }
}

/// Decompresses `data` with `c`, failing past [`MAX_DECOMPRESSED_SIZE`].
pub fn decompress(c: Compression, data: &[u8]) -> Result<Vec<u8>, RecordError> {
    decompress_with_limit(c, data, MAX_DECOMPRESSED_SIZE)
}

/// Decompresses `data` with `c`, failing once the output would exceed `limit` bytes.
pub fn decompress_with_limit(
    c: Compression,
    data: &[u8],
    limit: usize,
) -> Result<Vec<u8>, RecordError> {
    match c {
        Compression::None => {
            if data.len() > limit {
                return Err(too_large(limit));
            }
            Ok(data.to_vec())
        }
        // Java's GZIPInputStream reads concatenated members, so do we.
        Compression::Gzip => read_bounded(c, flate2::read::MultiGzDecoder::new(data), limit),
        Compression::Snappy => xerial::decompress(data, limit),
        Compression::Lz4 => read_bounded(c, lz4_flex::frame::FrameDecoder::new(data), limit),
        Compression::Zstd => zstd_decompress(data, limit),
    }
}

/// Largest declared zstd frame size that validation decodes whole (one call into an
/// exact buffer beats a stream for the small batches producers send).
const WHOLE_ZSTD_BYTES: u64 = 2 << 20;

/// A decoder of a compressed records section, read as a stream by [`crate::streaming`].
pub(crate) enum StreamingDecoder<'a> {
    /// An lz4 frame: its decoder lends each inflated block out (`BufRead`), so the
    /// records are walked where they were inflated, without a copy.
    Lz4(lz4_flex::frame::FrameDecoder<&'a [u8]>),
    /// Any other codec's reader, which copies out what it inflates.
    Read(Box<dyn Read + 'a>),
}

/// A decoder of the records section `data` for validation as a stream (see
/// [`crate::streaming`]), or `None` when it is decoded whole: not compressed, snappy
/// without the xerial framing (one raw block, its size declared up front), or a zstd
/// frame that declares a small size. `limit` bounds what one snappy block may inflate to.
pub(crate) fn streaming_decoder(
    c: Compression,
    data: &[u8],
    limit: usize,
) -> Result<Option<StreamingDecoder<'_>>, RecordError> {
    Ok(match c {
        Compression::None => None,
        Compression::Snappy => xerial::is_framed(data)
            .then(|| StreamingDecoder::Read(Box::new(xerial::Decoder::new(data, limit)))),
        Compression::Gzip => Some(StreamingDecoder::Read(Box::new(
            flate2::read::MultiGzDecoder::new(data),
        ))),
        Compression::Lz4 => Some(StreamingDecoder::Lz4(lz4_flex::frame::FrameDecoder::new(
            data,
        ))),
        Compression::Zstd => match zstd::zstd_safe::get_frame_content_size(data) {
            Ok(Some(size)) if size <= WHOLE_ZSTD_BYTES => None,
            _ => Some(StreamingDecoder::Read(Box::new(
                zstd::stream::read::Decoder::with_buffer(data).map_err(codec_error(c))?,
            ))),
        },
    })
}

/// Kafka's default `compression.zstd.level`.
const ZSTD_LEVEL: i32 = 3;
/// Kafka's default `compression.gzip.level` (Deflater.DEFAULT_COMPRESSION).
const GZIP_LEVEL: u32 = 6;

fn gzip_compress(data: &[u8]) -> Result<Vec<u8>, RecordError> {
    let out = Vec::with_capacity(data.len() / 2 + 64);
    let mut encoder = flate2::write::GzEncoder::new(out, flate2::Compression::new(GZIP_LEVEL));
    encoder
        .write_all(data)
        .map_err(codec_error(Compression::Gzip))?;
    encoder.finish().map_err(codec_error(Compression::Gzip))
}

fn lz4_compress(data: &[u8]) -> Result<Vec<u8>, RecordError> {
    use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};
    // The frame Kafka's KafkaLZ4BlockOutputStream writes: 64 KiB independent blocks,
    // no block or content checksum, no content size.
    let info = FrameInfo::new()
        .block_size(BlockSize::Max64KB)
        .block_mode(BlockMode::Independent)
        .block_checksums(false)
        .content_checksum(false);
    let out = Vec::with_capacity(data.len() / 2 + 64);
    let mut encoder = FrameEncoder::with_frame_info(info, out);
    encoder
        .write_all(data)
        .map_err(codec_error(Compression::Lz4))?;
    encoder.finish().map_err(codec_error(Compression::Lz4))
}

/// Expansion beyond which a declared zstd content size is not trusted up front.
const PLAUSIBLE_ZSTD_RATIO: usize = 64;

thread_local! {
    /// One zstd decompression context per thread, reused: making one per batch costs
    /// about as much as decompressing a small batch.
    static ZSTD_DCTX: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// `zstd::bulk::decompress` on this thread's reused context.
fn zstd_bulk_decompress(data: &[u8], size: usize) -> std::io::Result<Vec<u8>> {
    ZSTD_DCTX.with(|cell| {
        let mut slot = cell.borrow_mut();
        let dctx = match slot.as_mut() {
            Some(d) => d,
            None => slot.insert(zstd::bulk::Decompressor::new()?),
        };
        dctx.decompress(data, size)
    })
}

fn zstd_decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, RecordError> {
    // A frame that declares its size (as single-shot encoders write it) decodes in
    // one call into an exact buffer; the declared size is checked against the limit
    // first, and the decoder never writes past it.
    if let Ok(Some(size)) = zstd::zstd_safe::get_frame_content_size(data)
        && let Ok(size) = usize::try_from(size)
    {
        if size > limit {
            return Err(too_large(limit));
        }
        // Only preallocate what the input could plausibly expand to, so a tiny
        // frame cannot claim a large buffer for free.
        if size <= data.len().saturating_mul(PLAUSIBLE_ZSTD_RATIO)
            && let Ok(out) = zstd_bulk_decompress(data, size)
        {
            return Ok(out);
        }
        // Several frames, or a lying size: the stream decoder decides.
    }
    let decoder =
        zstd::stream::read::Decoder::with_buffer(data).map_err(codec_error(Compression::Zstd))?;
    read_bounded(Compression::Zstd, decoder, limit)
}

/// Reads `reader` to its end, allowing at most `limit` bytes.
fn read_bounded(
    c: Compression,
    mut reader: impl Read,
    limit: usize,
) -> Result<Vec<u8>, RecordError> {
    let mut out = Vec::new();
    (&mut reader)
        .take(limit as u64)
        .read_to_end(&mut out)
        .map_err(codec_error(c))?;
    // Probe for one more byte rather than reading limit + 1, so the buffer never
    // grows past the limit.
    if out.len() == limit && reader.read(&mut [0u8; 1]).map_err(codec_error(c))? != 0 {
        return Err(too_large(limit));
    }
    Ok(out)
}

pub(crate) fn too_large(limit: usize) -> RecordError {
    RecordError::Compression(format!("decompressed records exceed {limit} bytes"))
}

pub(crate) fn codec_error<E: fmt::Display>(c: Compression) -> impl Fn(E) -> RecordError {
    move |e| RecordError::Compression(format!("{c}: {e}"))
}

/// The snappy-java (xerial) stream framing Kafka clients use around raw snappy blocks.
mod xerial {
    use super::{Compression, RecordError, codec_error, too_large};

    /// `0x82 "SNAPPY" 0x00`, then version 1 and compatible version 1 as big-endian i32.
    pub(super) const HEADER: [u8; 16] = [
        0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1,
    ];
    /// The magic part of [`HEADER`]; the version fields are not checked on read.
    const MAGIC_LEN: usize = 8;
    /// snappy-java's default block size, which Kafka uses.
    const BLOCK_SIZE: usize = 32 * 1024;

    pub(super) fn compress(data: &[u8]) -> Result<Vec<u8>, RecordError> {
        let mut encoder = snap::raw::Encoder::new();
        let blocks = data.len().div_ceil(BLOCK_SIZE);
        let mut out = Vec::with_capacity(HEADER.len() + data.len() / 2 + blocks * 8);
        out.extend_from_slice(&HEADER);
        let mut block = vec![0u8; snap::raw::max_compress_len(BLOCK_SIZE)];
        for chunk in data.chunks(BLOCK_SIZE) {
            let n = encoder
                .compress(chunk, &mut block)
                .map_err(codec_error(Compression::Snappy))?;
            out.extend_from_slice(&(n as u32).to_be_bytes());
            out.extend_from_slice(&block[..n]);
        }
        Ok(out)
    }

    /// Whether `data` starts with the xerial stream header (else it is one raw block).
    pub(super) fn is_framed(data: &[u8]) -> bool {
        data.len() >= HEADER.len() && data[..MAGIC_LEN] == HEADER[..MAGIC_LEN]
    }

    /// Reads a xerial stream one block at a time: at most one inflated block is held.
    pub(super) struct Decoder<'a> {
        rest: &'a [u8],
        block: Vec<u8>,
        position: usize,
        limit: usize,
        raw: snap::raw::Decoder,
    }

    impl<'a> Decoder<'a> {
        /// A reader of the framed stream `data` (see [`is_framed`]); a block declaring
        /// more than `limit` inflated bytes is an error before it is inflated.
        pub(super) fn new(data: &'a [u8], limit: usize) -> Self {
            Decoder {
                rest: &data[HEADER.len().min(data.len())..],
                block: Vec::new(),
                position: 0,
                limit,
                raw: snap::raw::Decoder::new(),
            }
        }

        /// Inflates the next block; false at the end of the stream. Errors are worded
        /// for [`codec_error`], which names the codec.
        fn next_block(&mut self) -> Result<bool, String> {
            if self.rest.is_empty() {
                return Ok(false);
            }
            let Some((len, tail)) = self.rest.split_first_chunk::<4>() else {
                return Err("truncated block length".into());
            };
            let len = u32::from_be_bytes(*len) as usize;
            let Some((block, tail)) = tail.split_at_checked(len) else {
                return Err("truncated block".into());
            };
            let n = snap::raw::decompress_len(block).map_err(|e| e.to_string())?;
            if n > self.limit {
                return Err(format!("decompressed records exceed {} bytes", self.limit));
            }
            self.block.resize(n, 0);
            let written = self
                .raw
                .decompress(block, &mut self.block)
                .map_err(|e| e.to_string())?;
            self.block.truncate(written);
            self.position = 0;
            self.rest = tail;
            Ok(true)
        }
    }

    impl std::io::Read for Decoder<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            while self.position == self.block.len() {
                if !self.next_block().map_err(std::io::Error::other)? {
                    return Ok(0);
                }
            }
            let n = buf.len().min(self.block.len() - self.position);
            buf[..n].copy_from_slice(&self.block[self.position..self.position + n]);
            self.position += n;
            Ok(n)
        }
    }

    pub(super) fn decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, RecordError> {
        let mut decoder = snap::raw::Decoder::new();
        // Some producers write raw snappy without the stream framing; accept it too.
        if !is_framed(data) {
            let len = snap::raw::decompress_len(data).map_err(codec_error(Compression::Snappy))?;
            if len > limit {
                return Err(too_large(limit));
            }
            return decoder
                .decompress_vec(data)
                .map_err(codec_error(Compression::Snappy));
        }
        let mut out = Vec::new();
        let mut rest = &data[HEADER.len()..];
        while !rest.is_empty() {
            let Some((len, tail)) = rest.split_first_chunk::<4>() else {
                return Err(RecordError::Compression(
                    "snappy: truncated block length".into(),
                ));
            };
            let len = u32::from_be_bytes(*len) as usize;
            let Some((block, tail)) = tail.split_at_checked(len) else {
                return Err(RecordError::Compression("snappy: truncated block".into()));
            };
            let n = snap::raw::decompress_len(block).map_err(codec_error(Compression::Snappy))?;
            if n > limit - out.len() {
                return Err(too_large(limit));
            }
            let start = out.len();
            out.resize(start + n, 0);
            let written = decoder
                .decompress(block, &mut out[start..])
                .map_err(codec_error(Compression::Snappy))?;
            out.truncate(start + written);
            rest = tail;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ids_and_names() {
        for c in Compression::ALL {
            assert_eq!(Compression::from_id(c.id()).unwrap(), c);
            assert_eq!(Compression::from_name(c.name()), Some(c));
        }
        assert_eq!(
            Compression::from_name("uncompressed"),
            Some(Compression::None)
        );
        assert_eq!(Compression::from_name("producer"), None);
        assert_eq!(
            Compression::from_id(5),
            Err(RecordError::UnsupportedCompression(5))
        );
    }

    #[test]
    fn snappy_uses_xerial_framing() {
        let data = vec![7u8; 100_000];
        let framed = compress(Compression::Snappy, &data).unwrap();
        assert_eq!(&framed[..16], &xerial::HEADER);
        // 100 000 bytes make four 32 KiB blocks; the first length follows the header.
        let first_len = u32::from_be_bytes(framed[16..20].try_into().unwrap()) as usize;
        let first = &framed[20..20 + first_len];
        assert_eq!(snap::raw::decompress_len(first).unwrap(), 32 * 1024);
        assert_eq!(decompress(Compression::Snappy, &framed).unwrap(), data);
    }

    #[test]
    fn snappy_accepts_unframed_blocks() {
        let data = b"plain snappy without the xerial stream header".repeat(10);
        let raw = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        assert_eq!(decompress(Compression::Snappy, &raw).unwrap(), data);
    }

    #[test]
    fn lz4_writes_kafkas_frame_descriptor() {
        let framed = compress(Compression::Lz4, b"hello").unwrap();
        assert_eq!(&framed[..4], &[0x04, 0x22, 0x4d, 0x18]);
        // FLG: version 01, independent blocks, no checksums, no content size.
        assert_eq!(framed[4], 0b0110_0000);
        // BD: 64 KiB maximum block size.
        assert_eq!(framed[5], 0b0100_0000);
    }

    #[test]
    fn decompression_is_bounded() {
        let data = vec![0u8; 1 << 20];
        for c in Compression::ALL {
            let packed = compress(c, &data).unwrap();
            assert_eq!(
                decompress_with_limit(c, &packed, 1 << 20).unwrap().len(),
                1 << 20
            );
            let err = decompress_with_limit(c, &packed, 1000).unwrap_err();
            assert!(matches!(err, RecordError::Compression(_)), "{c}: {err:?}");
        }
    }

    #[test]
    fn garbage_is_an_error() {
        for c in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            assert!(
                decompress(c, b"definitely not compressed data").is_err(),
                "{c}"
            );
        }
    }

    proptest! {
        #[test]
        fn every_codec_round_trips(data in proptest::collection::vec(any::<u8>(), 0..70_000)) {
            for c in Compression::ALL {
                let packed = compress(c, &data).unwrap();
                prop_assert_eq!(&decompress(c, &packed).unwrap(), &data);
            }
        }

        #[test]
        fn decompress_never_panics(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            for c in Compression::ALL {
                let _ = decompress_with_limit(c, &data, 1 << 16);
            }
        }
    }
}
