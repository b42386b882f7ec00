//! One client connection: a reader that turns frames into requests and a writer that sends
//! their responses back in request order.

use std::sync::Arc;
use std::time::Instant;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::net::TcpStream;
use tokio::sync::{Notify, Semaphore, watch};
use tokio::time::{Instant as Deadline, sleep_until};
use tracing::debug;

use crate::config::SocketServerConfig;
use crate::connection_quotas::ConnectionSlot;
use crate::frame::{FrameError, parse_header};
use crate::kafka_channel::{KafkaChannel, Offer, write_loop};
use crate::memory_pool::{MemoryGrant, MemoryPool};
use crate::request_channel::{Request, RequestContext, RequestSender, Responder, Response};
use crate::request_metrics::{RequestMetrics, RequestTimes};
use crate::send::ResponseWriter;

/// Buffer growth step while a frame's body arrives: the buffer grows with the bytes
/// actually read (doubling from here), never with what the size prefix claims, except
/// up to the size of a frame the connection has already sent in full.
const READ_CHUNK: usize = 64 * 1024;

/// Reads size-prefixed frames into a buffer that survives cancellation, so idle and
/// shutdown checks can interrupt a read without losing bytes (check, then parse).
struct FrameReader {
    half: Box<dyn AsyncRead + Unpin + Send>,
    buffer: BytesMut,
    max_size: usize,
    pool: MemoryPool,
    /// Pool bytes held for the frame being read, taken before its body is buffered.
    grant: Option<MemoryGrant>,
    granted: bool,
    /// The size of this connection's last complete frame. A producer's frames are alike,
    /// so the next one's buffer is taken this large at once: doubling up to 1 MiB copied
    /// each frame's bytes once more (5 % of the broker's time on 64 KiB records). Bytes
    /// the connection has delivered bound it, as they bound the doubling.
    last_frame: usize,
}

impl FrameReader {
    fn new(half: Box<dyn AsyncRead + Unpin + Send>, max_size: usize, pool: MemoryPool) -> Self {
        Self {
            half,
            buffer: BytesMut::new(),
            max_size,
            pool,
            grant: None,
            granted: false,
            last_frame: 0,
        }
    }

    /// The next complete frame and the pool bytes it holds, `Ok(None)` at a clean end
    /// of stream. Cancellation safe.
    async fn read_frame(&mut self) -> Result<Option<(BytesMut, Option<MemoryGrant>)>, FrameError> {
        loop {
            if self.buffer.len() >= 4 {
                let size = i32::from_be_bytes(self.buffer[..4].try_into().expect("4 bytes"));
                if size < 0 {
                    return Err(FrameError::Negative(size));
                }
                let size = size as usize;
                if size > self.max_size {
                    return Err(FrameError::TooLarge {
                        size: size as i64,
                        max: self.max_size,
                    });
                }
                if !self.granted {
                    // queued.max.request.bytes: wait for room before buffering the body.
                    self.grant = self.pool.allocate(size).await;
                    self.granted = true;
                }
                if self.buffer.len() >= 4 + size {
                    self.buffer.advance(4);
                    let frame = self.buffer.split_to(size);
                    if size > READ_CHUNK {
                        // The rest shares the frame's allocation: copy it out, so that
                        // memory goes with the frame and its grant instead of staying,
                        // outside the pool, with a connection that waits.
                        self.buffer = BytesMut::from(&self.buffer[..]);
                    }
                    self.granted = false;
                    self.last_frame = size;
                    return Ok(Some((frame, self.grant.take())));
                }
                let missing = 4 + size - self.buffer.len();
                let step = self.buffer.len().max(READ_CHUNK).max(self.last_frame);
                self.buffer.reserve(missing.min(step));
            } else {
                self.buffer.reserve(4096);
            }
            if self.half.read_buf(&mut self.buffer).await? == 0 {
                return if self.buffer.is_empty() {
                    Ok(None)
                } else {
                    Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into())
                };
            }
        }
    }
}

pub(crate) struct ConnectionHandler {
    pub(crate) context: Arc<RequestContext>,
    pub(crate) requests: RequestSender,
    pub(crate) metrics: Arc<RequestMetrics>,
    pub(crate) config: Arc<SocketServerConfig>,
    pub(crate) shutdown: watch::Receiver<bool>,
    pub(crate) slot: ConnectionSlot,
    pub(crate) pool: MemoryPool,
}

impl ConnectionHandler {
    pub(crate) async fn run(
        self,
        stream: TcpStream,
        tls: Option<Arc<rustls::ServerConfig>>,
        principal_mapper: Option<Arc<crate::PrincipalMapper>>,
    ) {
        let _ = stream.set_nodelay(true);
        match tls {
            None => {
                let (read_half, write_half) = stream.into_split();
                self.serve(Box::new(read_half), ResponseWriter::Plain(write_half))
                    .await;
            }
            Some(config) => {
                let acceptor = tokio_rustls::TlsAcceptor::from(config);
                let handshake = tokio::time::timeout(
                    self.config.tls_handshake_timeout,
                    acceptor.accept(stream),
                )
                .await;
                match handshake {
                    Ok(Ok(tls)) => {
                        // An SSL client with a certificate is `User:<its subject DN>`, as
                        // with Kafka's default principal builder (SASL_SSL clients are
                        // who their SASL authentication says).
                        let subject = tls
                            .get_ref()
                            .1
                            .peer_certificates()
                            .and_then(|chain| chain.first())
                            .and_then(|cert| crate::tls::subject_dn(cert));
                        if let Some(dn) = subject
                            && !self.context.security_protocol.starts_with("SASL_")
                        {
                            let name = match &principal_mapper {
                                Some(mapper) => mapper.name(&dn),
                                None => Some(dn.clone()),
                            };
                            let Some(name) = name else {
                                // Kafka fails the authentication of a subject no
                                // ssl.principal.mapping.rules rule maps.
                                tracing::warn!(subject = %dn, "no ssl.principal.mapping.rules rule applies; closing");
                                return;
                            };
                            self.context.session.set_principal(&format!("User:{name}"));
                        }
                        let (read_half, write_half) = tokio::io::split(tls);
                        self.serve(Box::new(read_half), ResponseWriter::Tls(write_half))
                            .await;
                    }
                    Ok(Err(e)) => {
                        debug!(connection = self.context.connection_id, error = %e, "TLS handshake failed");
                    }
                    Err(_) => {
                        debug!(
                            connection = self.context.connection_id,
                            "TLS handshake timed out"
                        );
                    }
                }
            }
        }
    }

    async fn serve(
        mut self,
        read_half: Box<dyn AsyncRead + Unpin + Send>,
        write_half: ResponseWriter,
    ) {
        let channel = Arc::new(KafkaChannel::new(
            self.requests.clone(),
            Arc::clone(&self.metrics),
        ));
        let closed = Arc::new(Notify::new());
        let writer = tokio::spawn(write_loop(
            Arc::clone(&channel),
            write_half,
            Arc::clone(&closed),
        ));
        let mut reader = FrameReader::new(
            read_half,
            self.config.socket_request_max_bytes,
            self.pool.clone(),
        );
        if let Err(reason) = self.read_loop(&mut reader, &channel, &closed).await {
            debug!(connection = self.context.connection_id, %reason, "closing connection");
        }
        // Responses already promised still go out; then the writer ends.
        channel.reader_done();
        let _ = writer.await;
        drop(self.slot);
    }

    async fn read_loop(
        &mut self,
        reader: &mut FrameReader,
        channel: &Arc<KafkaChannel>,
        closed: &Notify,
    ) -> Result<(), String> {
        let idle = self.config.connections_max_idle;
        let mut deadline = Deadline::now() + idle;
        // Responses not yet written, at most `max_in_flight_per_connection`.
        let in_flight = Arc::new(Semaphore::new(
            self.config.max_in_flight_per_connection.max(1),
        ));
        loop {
            let frame = tokio::select! {
                _ = self.shutdown.changed() => return Ok(()),
                _ = closed.notified() => return Ok(()),
                _ = sleep_until(deadline) => {
                    // Only a connection with nothing in flight is idle.
                    if channel.is_idle() {
                        return Err("idle longer than connections.max.idle.ms".into());
                    }
                    deadline = Deadline::now() + idle;
                    continue;
                }
                _ = channel.reader_wake.notified() => {
                    // A handler gave back a request (throttled, or the request channel
                    // was full): dispatch it from here.
                    if let Some(returned) = channel.take_returned() {
                        self.dispatch(returned, closed).await?;
                    }
                    continue;
                }
                frame = reader.read_frame() => frame,
            };
            let (frame, memory) = match frame {
                Ok(Some(frame)) => frame,
                // The client is done sending: what it sent before is still answered.
                Ok(None) => return self.drain(channel, closed).await.map(|_| ()),
                Err(e) => return Err(e.to_string()),
            };
            deadline = Deadline::now() + idle;
            let (header, body) = parse_header(frame).map_err(|e| e.to_string())?;
            if !self.context.session.allows(header.api_key) {
                // Kafka closes a SASL connection that sends anything else before it has
                // authenticated.
                return Err(format!(
                    "api key {} before SASL authentication",
                    header.api_key
                ));
            }
            if header.unsupported_version
                && header.api != Some(kafka_protocol::messages::ApiKey::ApiVersions)
            {
                // An API or version this broker cannot serve: Kafka closes the connection
                // (after the responses already owed), and so does this. Once every request
                // read before is answered, their responses are queued ahead of the close.
                if self.drain(channel, closed).await? {
                    channel.push(Response::Close);
                }
                return Ok(());
            }
            let slot = tokio::select! {
                slot = Arc::clone(&in_flight).acquire_owned() => {
                    slot.map_err(|_| "connection closed")?
                }
                _ = closed.notified() => return Ok(()),
            };
            channel.request_started();
            let received_at = Instant::now();
            let times = RequestTimes::new(header.api_key, received_at);
            let mut request = Request {
                context: Arc::clone(&self.context),
                header,
                body,
                received_at,
                responder: Responder {
                    queue: Arc::clone(channel),
                    times,
                    slot: Some(slot),
                    _memory: memory,
                    answered: false,
                },
            };
            // Parked behind the request processing (its handler hands this one over), or
            // dispatched from here when nothing is processing.
            loop {
                match channel.offer(request) {
                    Offer::Parked => break,
                    Offer::Dispatch(next) => {
                        self.dispatch(next, closed).await?;
                        break;
                    }
                    Offer::Full(back) => {
                        request = back;
                        tokio::select! {
                            _ = channel.reader_wake.notified() => {}
                            _ = closed.notified() => return Ok(()),
                        }
                    }
                }
            }
        }
    }

    /// Waits until every request read so far is answered (dispatching any a handler gave
    /// back); false if the connection closed or the broker shuts down first.
    async fn drain(&mut self, channel: &KafkaChannel, closed: &Notify) -> Result<bool, String> {
        loop {
            if let Some(returned) = channel.take_returned() {
                self.dispatch(returned, closed).await?;
            } else if channel.all_answered() {
                return Ok(true);
            }
            tokio::select! {
                _ = channel.reader_wake.notified() => {}
                _ = closed.notified() => return Ok(false),
                _ = self.shutdown.changed() => return Ok(false),
            }
        }
    }

    /// Hands a request to the request channel once its connection's throttle (if any) is
    /// over: the handlers of the rest hand the connection's next requests over themselves.
    async fn dispatch(&mut self, mut request: Request, closed: &Notify) -> Result<(), String> {
        // A throttled connection (quota exceeded) gets nothing more handled until its time
        // is up, decided by the answer to the request before this one.
        if let Some(until) = self.context.session.muted_until() {
            tokio::select! {
                _ = self.shutdown.changed() => return Err("shutting down".into()),
                _ = closed.notified() => return Err("connection closed".into()),
                _ = sleep_until(Deadline::from_std(until)) => {}
            }
        }
        request.start_processing();
        // Waits while the request channel is full: back-pressure, never a drop.
        if self.requests.send(request).await {
            Ok(())
        } else {
            Err("request channel closed".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(size: usize) -> Vec<u8> {
        let mut bytes = (size as i32).to_be_bytes().to_vec();
        bytes.resize(4 + size, 7);
        bytes
    }

    fn reader(stream: Vec<u8>) -> FrameReader {
        FrameReader::new(
            Box::new(std::io::Cursor::new(stream)),
            100 << 20,
            MemoryPool::new(None),
        )
    }

    #[tokio::test]
    async fn a_claimed_size_alone_does_not_size_the_buffer() {
        // 50 MiB claimed, 100 bytes sent: the buffer holds what arrived, not the claim.
        let mut stream = frame(50 << 20);
        stream.truncate(104);
        let mut reader = reader(stream);
        assert!(reader.read_frame().await.is_err());
        assert!(reader.buffer.capacity() <= 2 * READ_CHUNK);
    }

    /// Hands out at most 64 KiB a read, as a socket does, and notes the room each read
    /// was offered.
    struct Trickle {
        data: std::io::Cursor<Vec<u8>>,
        offered: Arc<std::sync::Mutex<Vec<usize>>>,
    }

    impl AsyncRead for Trickle {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            self.offered.lock().unwrap().push(buf.remaining());
            let mut chunk = vec![0; buf.remaining().min(READ_CHUNK)];
            let n = std::io::Read::read(&mut self.data, &mut chunk)?;
            buf.put_slice(&chunk[..n]);
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn the_next_frame_is_read_into_one_buffer_as_large_as_the_last() {
        let size = 1 << 20;
        let mut stream = frame(size);
        stream.extend(frame(size));
        let offered = Arc::new(std::sync::Mutex::new(Vec::new()));
        let half = Trickle {
            data: std::io::Cursor::new(stream),
            offered: Arc::clone(&offered),
        };
        let mut reader = FrameReader::new(Box::new(half), 100 << 20, MemoryPool::new(None));
        let (first, _) = reader.read_frame().await.unwrap().unwrap();
        assert_eq!(first.len(), size);
        // The first frame grew with what arrived: its first read had room for 4 KiB.
        assert!(offered.lock().unwrap()[0] < 2 * READ_CHUNK);
        offered.lock().unwrap().clear();
        let (second, _) = reader.read_frame().await.unwrap().unwrap();
        assert_eq!(second.len(), size);
        // The second had room for all of its body from its first read: never grown, so
        // never copied on the way.
        let offered = offered.lock().unwrap();
        assert!(offered[0] >= size - READ_CHUNK, "offered {offered:?}");
    }

    #[tokio::test]
    async fn a_larger_claim_after_a_frame_is_bounded_by_that_frame() {
        let mut stream = frame(1 << 20);
        let mut big = frame(50 << 20);
        big.truncate(4 + 1000);
        stream.extend(big);
        let mut reader = reader(stream);
        reader.read_frame().await.unwrap().unwrap();
        assert!(reader.read_frame().await.is_err());
        assert!(reader.buffer.capacity() <= 2 * (1 << 20) + READ_CHUNK);
    }
}
