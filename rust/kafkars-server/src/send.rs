//! Writing a response: byte chunks with `write_all`, file regions with `sendfile(2)` on
//! plaintext connections, or read and encrypted on TLS ones.

use std::io::{self, IoSlice};
use std::os::unix::fs::FileExt;

use bytes::BytesMut;
use tokio::io::{AsyncWriteExt, Interest, WriteHalf};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedWriteHalf;
use tokio_rustls::server::TlsStream;

use crate::request_channel::{FileRegion, ResponseChunk, ResponseSend};

/// Bytes of a file region read per write on a TLS connection.
const TLS_FILE_CHUNK: usize = 64 * 1024;

/// The write side of a connection.
pub(crate) enum ResponseWriter {
    Plain(OwnedWriteHalf),
    Tls(WriteHalf<TlsStream<TcpStream>>),
}

impl ResponseWriter {
    async fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            ResponseWriter::Plain(w) => w.write_all(bytes).await,
            ResponseWriter::Tls(w) => w.write_all(bytes).await,
        }
    }

    async fn flush(&mut self) -> io::Result<()> {
        match self {
            ResponseWriter::Plain(w) => w.flush().await,
            ResponseWriter::Tls(w) => w.flush().await,
        }
    }

    pub(crate) async fn shutdown(&mut self) -> io::Result<()> {
        match self {
            ResponseWriter::Plain(w) => w.shutdown().await,
            ResponseWriter::Tls(w) => w.shutdown().await,
        }
    }
}

/// Byte chunks up to this size are gathered and written together.
const GATHER_MAX: usize = 16 * 1024;

pub(crate) async fn write_response(
    writer: &mut ResponseWriter,
    send: ResponseSend,
) -> io::Result<()> {
    // The size prefix and header are a chunk of their own: written alone they would cost
    // a syscall and, with TCP_NODELAY, a packet of a few bytes. Small byte chunks in a
    // row go out in one write instead.
    let mut gathered = BytesMut::new();
    for chunk in send.chunks {
        match chunk {
            ResponseChunk::Bytes(bytes) if bytes.len() <= GATHER_MAX => {
                gathered.extend_from_slice(&bytes);
            }
            chunk => {
                if !gathered.is_empty() {
                    writer.write_all(&gathered).await?;
                    gathered.clear();
                }
                match chunk {
                    ResponseChunk::Bytes(bytes) => writer.write_all(&bytes).await?,
                    ResponseChunk::File(region) => match writer {
                        ResponseWriter::Plain(w) => send_file(w, &region).await?,
                        ResponseWriter::Tls(_) => copy_file(writer, &region).await?,
                    },
                }
            }
        }
    }
    if !gathered.is_empty() {
        writer.write_all(&gathered).await?;
    }
    // TLS buffers records until flushed; plaintext writes are already on the socket.
    writer.flush().await
}

/// Writes as much of `send` as a plaintext socket takes without waiting (file regions
/// with `sendfile(2)`); returns the bytes written. What is left goes to the writer task.
pub(crate) fn write_nonblocking(half: &OwnedWriteHalf, send: &ResponseSend) -> io::Result<usize> {
    let stream = half.as_ref();
    let chunks = send.chunks();
    let mut written = 0;
    let mut next = 0;
    while let Some(chunk) = chunks.get(next) {
        match chunk {
            ResponseChunk::Bytes(_) => {
                // The run of byte chunks from here, in one write.
                let run: Vec<IoSlice<'_>> = chunks[next..]
                    .iter()
                    .map_while(|c| match c {
                        ResponseChunk::Bytes(bytes) => Some(IoSlice::new(bytes)),
                        ResponseChunk::File(_) => None,
                    })
                    .collect();
                let wanted: usize = run.iter().map(|s| s.len()).sum();
                let n = match stream.try_write_vectored(&run) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
                    Err(e) => return Err(e),
                };
                written += n;
                if n < wanted {
                    return Ok(written);
                }
                next += run.len();
            }
            ResponseChunk::File(region) => {
                let mut offset = region.position;
                let done = sendfile_now(stream, region, &mut offset)?;
                written += (offset - region.position) as usize;
                if !done {
                    return Ok(written);
                }
                next += 1;
            }
        }
    }
    Ok(written)
}

/// Sends a file region from `offset` (moved along) until its end, true, or until the
/// socket would block, false. The record bytes never enter user space.
fn sendfile_now(stream: &TcpStream, region: &FileRegion, offset: &mut u64) -> io::Result<bool> {
    let end = region.position + region.len as u64;
    while *offset < end {
        let remaining = (end - *offset) as usize;
        let sent = stream.try_io(Interest::WRITABLE, || {
            rustix::fs::sendfile(stream, &*region.file, Some(&mut *offset), remaining)
                .map_err(io::Error::from)
        });
        match sent {
            // The file ended early (truncated under us): the frame cannot be completed.
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// A file region with `sendfile(2)`, waiting for the socket whenever it would block.
async fn send_file(writer: &mut OwnedWriteHalf, region: &FileRegion) -> io::Result<()> {
    let stream = writer.as_ref();
    let mut offset = region.position;
    while !sendfile_now(stream, region, &mut offset)? {
        stream.writable().await?;
    }
    Ok(())
}

/// A file region through TLS: the bytes must be encrypted in user space, so they are
/// read (from the page cache, as sendfile would) in chunks and written.
async fn copy_file(writer: &mut ResponseWriter, region: &FileRegion) -> io::Result<()> {
    let mut buf = vec![0u8; region.len.min(TLS_FILE_CHUNK)];
    let mut offset = region.position;
    let end = region.position + region.len as u64;
    while offset < end {
        let n = ((end - offset) as usize).min(buf.len());
        region.file.read_exact_at(&mut buf[..n], offset)?;
        writer.write_all(&buf[..n]).await?;
        offset += n as u64;
    }
    Ok(())
}
