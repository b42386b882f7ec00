//! Writing a response: byte chunks with `write_all`, file regions with `sendfile(2)`.

use std::io;

use tokio::io::{AsyncWriteExt, Interest};
use tokio::net::tcp::OwnedWriteHalf;

use crate::request_channel::{FileRegion, ResponseChunk, ResponseSend};

pub(crate) async fn write_response(
    writer: &mut OwnedWriteHalf,
    send: ResponseSend,
) -> io::Result<()> {
    for chunk in send.chunks {
        match chunk {
            ResponseChunk::Bytes(bytes) => writer.write_all(&bytes).await?,
            ResponseChunk::File(region) => send_file(writer, &region).await?,
        }
    }
    Ok(())
}

/// Moves a file region to the socket inside the kernel: the record bytes never enter user
/// space. The socket is non-blocking, so wait for writability and retry on `WouldBlock`.
async fn send_file(writer: &mut OwnedWriteHalf, region: &FileRegion) -> io::Result<()> {
    let stream = writer.as_ref();
    let mut offset = region.position;
    let end = region.position + region.len as u64;
    while offset < end {
        stream.writable().await?;
        let remaining = (end - offset) as usize;
        let sent = stream.try_io(Interest::WRITABLE, || {
            rustix::fs::sendfile(stream, &*region.file, Some(&mut offset), remaining)
                .map_err(io::Error::from)
        });
        match sent {
            // The file ended early (truncated under us): the frame cannot be completed.
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
