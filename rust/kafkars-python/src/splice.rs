//! Encoding a response whose record sets are file regions, without reading the files.
//!
//! kafka-protocol encodes a `records` field by writing its length and then its bytes with
//! `put_slice`. A file-backed record set is handed to the encoder as a placeholder slice of
//! the right length that points into a reserved, never-written region; [`SpliceBuf`]
//! recognises that pointer in `put_slice`, writes nothing, and cuts the output there so the
//! network layer can send the file region with sendfile. Which region a placeholder stands
//! for is encoded in its start address (index `k` starts `k` bytes into the reserve).

use std::cell::RefCell;
use std::ops::Range;
use std::sync::LazyLock;

use bytes::buf::UninitSlice;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::protocol::buf::ByteBufMut;
use kafkars_server::{FileRegion, ResponseChunk};

/// Largest record set one placeholder can stand for.
pub(crate) const MAX_REGION_LEN: usize = 256 * 1024 * 1024;
/// Placeholders one response can hold.
const MAX_REGIONS: usize = 64 * 1024;

/// Zeroed, untouched memory: the allocator maps it lazily, so it costs address space only.
static RESERVE: LazyLock<&'static [u8]> =
    LazyLock::new(|| Box::leak(vec![0u8; MAX_REGION_LEN + MAX_REGIONS].into_boxed_slice()));

thread_local! {
    /// Regions registered while converting one response on this thread.
    static REGIONS: RefCell<Vec<FileRegion>> = const { RefCell::new(Vec::new()) };
}

/// Registers `region` for the response being built on this thread and returns the
/// placeholder bytes the encoder will see in its place.
pub(crate) fn placeholder_for(region: FileRegion) -> Result<Bytes, String> {
    if region.len > MAX_REGION_LEN {
        return Err(format!(
            "record set of {} bytes is too large to send",
            region.len
        ));
    }
    REGIONS.with_borrow_mut(|regions| {
        let index = regions.len();
        if index >= MAX_REGIONS {
            return Err("too many record sets in one response".to_string());
        }
        let len = region.len;
        regions.push(region);
        Ok(Bytes::from_static(&RESERVE[index..index + len]))
    })
}

/// Runs `convert_and_encode` with a fresh region table and returns the regions it used.
pub(crate) fn with_regions<T>(f: impl FnOnce() -> T) -> (T, Vec<FileRegion>) {
    REGIONS.with_borrow_mut(Vec::clear);
    let out = f();
    (out, REGIONS.with_borrow_mut(std::mem::take))
}

/// An encoder target that turns placeholder slices into file chunks.
pub(crate) struct SpliceBuf {
    current: BytesMut,
    chunks: Vec<ResponseChunk>,
    regions: Vec<Option<FileRegion>>,
    written: usize,
}

impl SpliceBuf {
    pub(crate) fn new(regions: Vec<FileRegion>) -> Self {
        Self {
            current: BytesMut::with_capacity(256),
            chunks: Vec::new(),
            regions: regions.into_iter().map(Some).collect(),
            written: 0,
        }
    }

    /// The response body as byte and file chunks, in wire order.
    pub(crate) fn into_chunks(mut self) -> Vec<ResponseChunk> {
        self.cut();
        self.chunks
    }

    fn cut(&mut self) {
        if !self.current.is_empty() {
            self.chunks
                .push(ResponseChunk::Bytes(self.current.split().freeze()));
        }
    }

    /// The region a slice stands for, if it is a placeholder.
    fn region_of(&mut self, src: &[u8]) -> Option<FileRegion> {
        if src.is_empty() || self.regions.is_empty() {
            return None;
        }
        let start = RESERVE.as_ptr() as usize;
        let index = (src.as_ptr() as usize).checked_sub(start)?;
        self.regions.get_mut(index)?.take()
    }
}

// SAFETY: every method delegates to the inner `BytesMut`, which upholds `BufMut`'s contract.
unsafe impl BufMut for SpliceBuf {
    fn remaining_mut(&self) -> usize {
        self.current.remaining_mut()
    }

    unsafe fn advance_mut(&mut self, cnt: usize) {
        self.written += cnt;
        // SAFETY: the caller initialised `cnt` bytes of `chunk_mut`, which is the inner one.
        unsafe { self.current.advance_mut(cnt) }
    }

    fn chunk_mut(&mut self) -> &mut UninitSlice {
        self.current.chunk_mut()
    }

    fn put_slice(&mut self, src: &[u8]) {
        match self.region_of(src) {
            Some(region) => {
                self.cut();
                self.written += region.len;
                self.chunks.push(ResponseChunk::File(region));
            }
            None => {
                self.written += src.len();
                self.current.extend_from_slice(src);
            }
        }
    }
}

// Only gap-based encoders (record batches) seek; message encoding writes straight through.
impl ByteBufMut for SpliceBuf {
    fn offset(&self) -> usize {
        self.written
    }

    fn seek(&mut self, offset: usize) {
        let grow = offset.saturating_sub(self.written);
        self.put_bytes(0, grow);
    }

    fn range(&mut self, r: Range<usize>) -> &mut [u8] {
        let base = self.written - self.current.len();
        &mut self.current[r.start - base..r.end - base]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn placeholders_become_file_chunks() {
        let file = Arc::new(tempfile::tempfile().unwrap());
        let ((a, b), regions) = with_regions(|| {
            let a = placeholder_for(FileRegion {
                file: Arc::clone(&file),
                position: 0,
                len: 10,
            })
            .unwrap();
            let b = placeholder_for(FileRegion {
                file: Arc::clone(&file),
                position: 10,
                len: 5,
            })
            .unwrap();
            (a, b)
        });
        let mut buf = SpliceBuf::new(regions);
        buf.put_slice(b"head");
        buf.put_slice(&a);
        buf.put_slice(b"mid");
        buf.put_slice(&b);
        buf.put_i16(7);
        let chunks = buf.into_chunks();
        let kinds: Vec<_> = chunks
            .iter()
            .map(|c| match c {
                ResponseChunk::Bytes(b) => format!("b{}", b.len()),
                ResponseChunk::File(f) => format!("f{}@{}", f.len, f.position),
            })
            .collect();
        assert_eq!(kinds, ["b4", "f10@0", "b3", "f5@10", "b2"]);
    }
}
