//! Decoding what other encoders write: snappy in the xerial (snappy-java) framing,
//! a standard LZ4 frame, gzip from a hand-made stream and from a different zlib
//! setting, and zstd at another level.

use std::io::Write;

use kafkars_record::compression::{compress, decompress};
use kafkars_record::{Compression, NewRecord, RecordBatch, RecordBatchBuilder, crc32c};

/// The records section of an uncompressed batch of `n` records.
fn records_section(n: usize) -> (Vec<u8>, Vec<u8>) {
    let mut builder = RecordBatchBuilder::new().base_offset(100);
    for i in 0..n {
        builder.append(NewRecord {
            timestamp: 1_700_000_000_000 + i as i64,
            key: Some(format!("key-{i}").into_bytes()),
            value: Some(format!("value {i} ").repeat(20).into_bytes()),
            headers: vec![("h".into(), Some(b"1".to_vec())), ("h".into(), None)],
        });
    }
    let batch = builder.build().unwrap();
    let body = batch[61..].to_vec();
    (batch, body)
}

/// Swaps the records section of `plain` (an uncompressed batch) for `compressed`,
/// sets the codec and rewrites length and CRC: a batch another client could send.
fn with_body(plain: &[u8], codec: Compression, compressed: &[u8]) -> Vec<u8> {
    let mut bytes = plain[..61].to_vec();
    bytes.extend_from_slice(compressed);
    let length = (bytes.len() - 12) as i32;
    bytes[8..12].copy_from_slice(&length.to_be_bytes());
    bytes[21..23].copy_from_slice(&codec.id().to_be_bytes());
    let crc = crc32c(&bytes[21..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    bytes
}

/// Decodes `batch` and compares its records with those of the uncompressed `plain`.
fn assert_same_records(batch: &[u8], plain: &[u8]) {
    let batch = RecordBatch::new(batch).unwrap();
    batch.validate().unwrap();
    let plain = RecordBatch::new(plain).unwrap();
    let a = batch.records().unwrap();
    let b = plain.records().unwrap();
    let a: Vec<_> = a.iter().map(Result::unwrap).collect();
    let b: Vec<_> = b.iter().map(Result::unwrap).collect();
    assert_eq!(a, b);
}

#[test]
fn snappy_java_stream_framing() {
    let (plain, body) = records_section(1000);
    assert!(body.len() > 2 * 32 * 1024, "spans several xerial blocks");
    // Built the way snappy-java's SnappyOutputStream does: header, then
    // [big-endian length][raw snappy block] per 32 KiB of input.
    let mut framed = vec![
        0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1,
    ];
    for chunk in body.chunks(32 * 1024) {
        let block = snap::raw::Encoder::new().compress_vec(chunk).unwrap();
        framed.extend_from_slice(&(block.len() as u32).to_be_bytes());
        framed.extend_from_slice(&block);
    }
    assert_eq!(compress(Compression::Snappy, &body).unwrap(), framed);
    assert_same_records(&with_body(&plain, Compression::Snappy, &framed), &plain);

    // Differently sized blocks decode too: block boundaries are the writer's choice.
    let mut odd = framed[..16].to_vec();
    for chunk in body.chunks(1000) {
        let block = snap::raw::Encoder::new().compress_vec(chunk).unwrap();
        odd.extend_from_slice(&(block.len() as u32).to_be_bytes());
        odd.extend_from_slice(&block);
    }
    assert_same_records(&with_body(&plain, Compression::Snappy, &odd), &plain);
}

#[test]
fn standard_lz4_frame() {
    let (plain, body) = records_section(1000);
    // A frame written by hand: magic, FLG (version 01, independent blocks), BD
    // (64 KiB), header checksum, then compressed and stored blocks in turn, EndMark.
    let mut frame = vec![0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82];
    for (i, block) in body.chunks(64 * 1024).enumerate() {
        if i % 2 == 0 {
            let packed = lz4_flex::block::compress(block);
            frame.extend_from_slice(&(packed.len() as u32).to_le_bytes());
            frame.extend_from_slice(&packed);
        } else {
            // High bit set: the block is stored uncompressed.
            frame.extend_from_slice(&(block.len() as u32 | 0x8000_0000).to_le_bytes());
            frame.extend_from_slice(block);
        }
    }
    frame.extend_from_slice(&[0, 0, 0, 0]);
    assert_same_records(&with_body(&plain, Compression::Lz4, &frame), &plain);

    // Ours starts with the same frame header.
    assert_eq!(
        &compress(Compression::Lz4, &body).unwrap()[..7],
        &frame[..7]
    );
}

#[test]
fn gzip_from_other_encoders() {
    let (plain, body) = records_section(50);

    // gzip with stored deflate blocks, written by hand (RFC 1951/1952).
    let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    let chunks: Vec<&[u8]> = body.chunks(20_000).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        gz.push(u8::from(i + 1 == chunks.len())); // BFINAL, BTYPE=00
        let len = chunk.len() as u16;
        gz.extend_from_slice(&len.to_le_bytes());
        gz.extend_from_slice(&(!len).to_le_bytes());
        gz.extend_from_slice(chunk);
    }
    let mut crc = flate2::Crc::new();
    crc.update(&body);
    gz.extend_from_slice(&crc.sum().to_le_bytes());
    gz.extend_from_slice(&(body.len() as u32).to_le_bytes());
    assert_same_records(&with_body(&plain, Compression::Gzip, &gz), &plain);

    // Best compression with a file name in the header, as other tools write it.
    let mut encoder = flate2::GzBuilder::new()
        .filename("records")
        .write(Vec::new(), flate2::Compression::best());
    encoder.write_all(&body).unwrap();
    let gz = encoder.finish().unwrap();
    assert_same_records(&with_body(&plain, Compression::Gzip, &gz), &plain);
}

#[test]
fn zstd_at_another_level() {
    let (plain, body) = records_section(50);
    let packed = zstd::bulk::compress(&body, 19).unwrap();
    assert_same_records(&with_body(&plain, Compression::Zstd, &packed), &plain);
}

#[test]
fn every_codec_marks_its_batches() {
    let (plain, body) = records_section(10);
    for codec in Compression::ALL {
        let packed = compress(codec, &body).unwrap();
        assert_eq!(decompress(codec, &packed).unwrap(), body);
        let batch = with_body(&plain, codec, &packed);
        assert_eq!(
            RecordBatch::new(&batch).unwrap().compression().unwrap(),
            codec
        );
        assert_same_records(&batch, &plain);
    }
}
