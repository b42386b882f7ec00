//! The request channel between processors and handler threads, and what flows back.

use std::any::Any;
use std::fs::File;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Thread;
use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::OwnedSemaphorePermit;

use crate::frame::RequestHeader;
use crate::kafka_channel::KafkaChannel;
use crate::memory_pool::MemoryGrant;
use crate::request_metrics::{RequestMetrics, RequestTimes};

/// What a handler knows about the connection a request came from.
#[derive(Debug)]
pub struct RequestContext {
    pub connection_id: u64,
    pub processor_id: usize,
    pub listener_name: Arc<str>,
    pub security_protocol: Arc<str>,
    pub client_addr: SocketAddr,
    /// Who the connection is, once known (see [`Session`]).
    pub session: Session,
}

/// Kafka's API keys a SASL connection may send before it has authenticated:
/// ApiVersions, SaslHandshake, SaslAuthenticate.
const SASL_HANDSHAKE_APIS: [i16; 3] = [18, 17, 36];

/// The connection's authenticated principal and the state of a SASL exchange in
/// progress (held for the Python authenticator, opaque here).
#[derive(Debug, Default)]
pub struct Session {
    principal: Mutex<Option<Arc<str>>>,
    sasl_state: Mutex<Option<Box<dyn Any + Send + Sync>>>,
    /// Quota throttling (KIP-219): the connection reads nothing more until then.
    muted_until: Mutex<Option<Instant>>,
    /// When the SASL session ends (`connections.max.reauth.ms`, KIP-368): past it, only a
    /// re-authentication is served.
    expires_at: Mutex<Option<Instant>>,
}

impl Session {
    /// Authenticated from the start (PLAINTEXT and SSL listeners).
    pub fn authenticated(principal: &str) -> Self {
        let session = Self::default();
        session.set_principal(principal);
        session
    }

    pub fn principal(&self) -> Option<Arc<str>> {
        lock(&self.principal).clone()
    }

    /// Records a successful authentication (or re-authentication).
    pub fn set_principal(&self, principal: &str) {
        *lock(&self.principal) = Some(principal.into());
    }

    /// Records a SASL authentication whose session lasts `lifetime` (None: forever).
    pub fn set_authenticated(&self, principal: &str, lifetime: Option<std::time::Duration>) {
        self.set_principal(principal);
        *lock(&self.expires_at) = lifetime.map(|d| Instant::now() + d);
    }

    /// Takes the state of the SASL exchange in progress, if any.
    pub fn take_sasl_state(&self) -> Option<Box<dyn Any + Send + Sync>> {
        lock(&self.sasl_state).take()
    }

    pub fn put_sasl_state(&self, state: Box<dyn Any + Send + Sync>) {
        *lock(&self.sasl_state) = Some(state);
    }

    /// Mutes the connection for `duration` after the response that carries the throttle
    /// time, as Kafka does when a client exceeds its quota (the client backs off too).
    pub fn throttle(&self, duration: std::time::Duration) {
        let until = Instant::now() + duration;
        let mut muted = lock(&self.muted_until);
        if muted.is_none_or(|current| current < until) {
            *muted = Some(until);
        }
    }

    /// Until when the connection is muted, if it is.
    pub fn muted_until(&self) -> Option<Instant> {
        let mut muted = lock(&self.muted_until);
        if muted.is_some_and(|until| until <= Instant::now()) {
            *muted = None;
        }
        *muted
    }

    /// Whether a request with `api_key` may be served: an unauthenticated connection
    /// may only negotiate versions and authenticate.
    pub fn allows(&self, api_key: i16) -> bool {
        if SASL_HANDSHAKE_APIS.contains(&api_key) {
            return true;
        }
        let expired = lock(&self.expires_at).is_some_and(|at| at <= Instant::now());
        lock(&self.principal).is_some() && !expired
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One request read off a connection, waiting for a handler.
#[derive(Debug)]
pub struct Request {
    pub context: Arc<RequestContext>,
    pub header: RequestHeader,
    /// The request body after the header, still encoded: handlers decode it off the
    /// network threads.
    pub body: Bytes,
    pub received_at: Instant,
    pub responder: Responder,
}

impl Request {
    /// The request leaves the connection for a handler: its times count from here, as
    /// Kafka's do from when a muted channel lets it be read.
    pub(crate) fn start_processing(&mut self) {
        self.received_at = Instant::now();
        self.responder.times.received = self.received_at;
    }
}

/// The way back to the connection that read the request. Dropping it without answering
/// closes that connection, so a lost request never leaves a client hanging.
///
/// Answering it also lets the connection's next request be processed: like Kafka's muted
/// channel, one request of a connection is processed at a time, so requests from one
/// client (say, produce requests for one partition) are handled in the order sent.
#[derive(Debug)]
pub struct Responder {
    pub(crate) queue: Arc<KafkaChannel>,
    /// When the request was read, dequeued, handled and answered (Kafka's RequestMetrics).
    pub(crate) times: RequestTimes,
    /// The request's place among the connection's in-flight requests, freed once written.
    pub(crate) slot: Option<OwnedSemaphorePermit>,
    /// The request's bytes in the `queued.max.request.bytes` pool, held until answered.
    pub(crate) _memory: Option<MemoryGrant>,
    pub(crate) answered: bool,
}

impl Responder {
    /// Hands the response to the connection; false if the connection is already gone.
    pub fn send(mut self, response: Response) -> bool {
        self.answered = true;
        self.times.responded = Some(Instant::now());
        self.queue.respond(response, self.times, self.slot.take())
    }

    /// The handler returned without answering: from here the request waits in a
    /// purgatory (Kafka's remote time).
    pub fn mark_handled(&mut self) {
        self.times.handled.get_or_insert_with(Instant::now);
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        if !self.answered {
            // The handler failed (or panicked): close rather than hang.
            self.queue
                .respond(Response::Close, self.times, self.slot.take());
        }
    }
}

/// The outcome of one request.
#[derive(Debug)]
pub enum Response {
    Send(ResponseSend),
    /// Nothing goes back (a Produce with acks=0), but ordering still advances.
    NoResponse,
    /// Close the connection once earlier responses have been written.
    Close,
}

/// A region of a segment file written to the socket with `sendfile(2)`. The `Arc` keeps the
/// descriptor open even if the segment is deleted while the response waits.
#[derive(Clone, Debug)]
pub struct FileRegion {
    pub file: Arc<File>,
    pub position: u64,
    pub len: usize,
}

/// A piece of a response on the wire.
#[derive(Clone, Debug)]
pub enum ResponseChunk {
    Bytes(Bytes),
    File(FileRegion),
}

impl ResponseChunk {
    pub fn len(&self) -> usize {
        match self {
            ResponseChunk::Bytes(b) => b.len(),
            ResponseChunk::File(f) => f.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A complete response frame: size prefix, response header, then the body chunks.
#[derive(Debug)]
pub struct ResponseSend {
    pub(crate) chunks: Vec<ResponseChunk>,
}

impl ResponseSend {
    /// Frames `body` behind a response header for `correlation_id` (`header_version` 1 adds
    /// the empty tagged-field section of flexible responses).
    pub fn new(correlation_id: i32, header_version: i16, body: Vec<ResponseChunk>) -> Self {
        let header_len = if header_version >= 1 { 5 } else { 4 };
        let body_len: usize = body.iter().map(ResponseChunk::len).sum();
        let mut head = BytesMut::with_capacity(4 + header_len);
        head.put_i32((header_len + body_len) as i32);
        head.put_i32(correlation_id);
        if header_version >= 1 {
            head.put_u8(0);
        }
        let mut chunks = Vec::with_capacity(body.len() + 1);
        chunks.push(ResponseChunk::Bytes(head.freeze()));
        chunks.extend(body.into_iter().filter(|c| !c.is_empty()));
        Self { chunks }
    }

    /// Total bytes on the wire, size prefix included.
    pub fn size_in_bytes(&self) -> usize {
        self.chunks.iter().map(ResponseChunk::len).sum()
    }

    pub fn chunks(&self) -> &[ResponseChunk] {
        &self.chunks
    }

    /// What is left once the first `written` bytes are on the wire.
    pub(crate) fn skip(mut self, mut written: usize) -> Self {
        let mut rest = Vec::with_capacity(self.chunks.len());
        for chunk in self.chunks.drain(..) {
            if written >= chunk.len() {
                written -= chunk.len();
                continue;
            }
            rest.push(match chunk {
                ResponseChunk::Bytes(bytes) => ResponseChunk::Bytes(bytes.slice(written..)),
                ResponseChunk::File(region) => ResponseChunk::File(FileRegion {
                    position: region.position + written as u64,
                    len: region.len - written,
                    file: region.file,
                }),
            });
            written = 0;
        }
        Self { chunks: rest }
    }
}

/// Kafka's `RequestChannel`: one bounded queue (`queued.max.requests`) shared by every
/// processor. A full queue makes processors wait, which stops them reading sockets.
#[derive(Clone)]
pub struct RequestChannel {
    sender: RequestSender,
    receiver: async_channel::Receiver<Request>,
    metrics: Arc<RequestMetrics>,
    /// Nanoseconds handler threads spent waiting in [`RequestChannel::receive`].
    idle_nanos: Arc<AtomicU64>,
}

/// The processors' end of the request channel: each request sent wakes the handler thread
/// that went idle last.
#[derive(Clone)]
pub(crate) struct RequestSender {
    queue: async_channel::Sender<Request>,
    idle: Arc<IdleHandlers>,
}

impl RequestSender {
    /// Queues `request`, waiting while the queue is full; false once the channel is
    /// closed (the request is dropped, which closes its connection).
    pub(crate) async fn send(&self, request: Request) -> bool {
        let queued = self.queue.send(request).await.is_ok();
        if queued {
            self.idle.wake_one();
        }
        queued
    }

    /// Queues `request` if there is room now; else gives it back.
    pub(crate) fn try_send(&self, request: Request) -> Option<Request> {
        match self.queue.try_send(request) {
            Ok(()) => {
                self.idle.wake_one();
                None
            }
            Err(e) => Some(e.into_inner()),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

/// Handler threads waiting for a request, the most recently idle last. A request wakes
/// the thread that went idle last (LIFO), whose stack, Python thread state and cache lines
/// are still warm, so below saturation one or two threads do the work instead of all
/// `num.io.threads` in turn (a FIFO wake picks the one idle longest).
#[derive(Default)]
struct IdleHandlers {
    parked: Mutex<Vec<Thread>>,
}

impl IdleHandlers {
    fn wake_one(&self) {
        if let Some(thread) = lock(&self.parked).pop() {
            thread.unpark();
        }
    }

    fn wake_all(&self) {
        for thread in lock(&self.parked).drain(..) {
            thread.unpark();
        }
    }

    /// Puts `me` on top of the stack (it parks after one more look at the queue).
    fn push(&self, me: &Thread) {
        lock(&self.parked).push(me.clone());
    }

    /// The next item of `queue`, parking the calling thread on the stack while there is
    /// none; `None` once the queue is closed and empty.
    fn receive<T>(&self, queue: &async_channel::Receiver<T>) -> Option<T> {
        let me = std::thread::current();
        loop {
            match queue.try_recv() {
                Ok(item) => return Some(item),
                Err(async_channel::TryRecvError::Closed) => return None,
                Err(async_channel::TryRecvError::Empty) => {}
            }
            self.push(&me);
            // Checked again once on the stack: an item sent before it found no one to
            // wake. Parking then returns at once if a sender has woken this thread since.
            let received = match queue.try_recv() {
                Err(async_channel::TryRecvError::Empty) => {
                    std::thread::park();
                    None
                }
                other => Some(other),
            };
            let woken = !self.leave(&me);
            match received {
                Some(Ok(item)) => {
                    if woken && !queue.is_empty() {
                        // A sender woke this thread, which had found an item itself: pass
                        // the wake on, or the sender's would wait for a busy thread.
                        self.wake_one();
                    }
                    return Some(item);
                }
                Some(Err(_)) => return None,
                // Woken (or a spurious wake-up): look again.
                None => {}
            }
        }
    }

    /// Takes `me` off the stack; false if a sender already had (and woke it).
    fn leave(&self, me: &Thread) -> bool {
        let mut parked = lock(&self.parked);
        match parked.iter().rposition(|t| t.id() == me.id()) {
            Some(i) => {
                parked.remove(i);
                true
            }
            None => false,
        }
    }
}

impl RequestChannel {
    pub fn new(queued_max_requests: usize) -> Self {
        let (queue, receiver) = async_channel::bounded(queued_max_requests.max(1));
        Self {
            sender: RequestSender {
                queue,
                idle: Arc::default(),
            },
            receiver,
            metrics: Arc::new(RequestMetrics::new()),
            idle_nanos: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Seconds the handler threads have spent waiting for a request, summed over threads
    /// (Kafka's RequestHandlerAvgIdlePercent, as a counter).
    pub fn handler_idle_seconds(&self) -> f64 {
        self.idle_nanos.load(Ordering::Relaxed) as f64 / 1e9
    }

    /// The time histograms of the requests through this channel.
    pub fn metrics(&self) -> Arc<RequestMetrics> {
        Arc::clone(&self.metrics)
    }

    pub(crate) fn sender(&self) -> RequestSender {
        self.sender.clone()
    }

    /// Blocks the calling (handler) thread until a request arrives; `None` once closed and
    /// drained.
    pub fn receive(&self) -> Option<Request> {
        let waiting = Instant::now();
        let received = self.sender.idle.receive(&self.receiver);
        let idle = u64::try_from(waiting.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.idle_nanos.fetch_add(idle, Ordering::Relaxed);
        let mut request = received?;
        request.responder.times.dequeued = Some(Instant::now());
        Some(request)
    }

    /// Requests waiting for a handler.
    pub fn len(&self) -> usize {
        self.receiver.len()
    }

    pub fn is_empty(&self) -> bool {
        self.receiver.is_empty()
    }

    /// Stops accepting requests; handlers drain what is queued and then see `None`.
    pub fn close(&self) {
        self.sender.queue.close();
        self.sender.idle.wake_all();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Waits until `n` threads are parked on `idle`.
    fn until_parked(idle: &IdleHandlers, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while lock(&idle.parked).len() < n {
            assert!(Instant::now() < deadline, "threads did not park");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_request_wakes_the_handler_idle_last() {
        let (tx, rx) = async_channel::bounded::<u32>(8);
        let idle = Arc::new(IdleHandlers::default());
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let spawn = |name: &'static str| {
            let (rx, idle, done) = (rx.clone(), Arc::clone(&idle), done_tx.clone());
            std::thread::spawn(move || {
                while let Some(item) = idle.receive(&rx) {
                    done.send((name, item)).unwrap();
                }
            })
        };
        let first = spawn("first");
        until_parked(&idle, 1);
        let second = spawn("second");
        until_parked(&idle, 2);
        // Each request wakes the thread idle last: the same one each time.
        for item in 1..=3 {
            tx.try_send(item).unwrap();
            idle.wake_one();
            let got = done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
            assert_eq!(got, ("second", item));
            until_parked(&idle, 2);
        }
        // Closing wakes every parked thread, and each sees the end.
        tx.close();
        idle.wake_all();
        first.join().unwrap();
        second.join().unwrap();
    }

    #[test]
    fn no_request_is_left_waiting_while_handlers_park() {
        let (tx, rx) = async_channel::bounded::<u64>(4);
        let idle = Arc::new(IdleHandlers::default());
        let handlers: Vec<_> = (0..4)
            .map(|_| {
                let (rx, idle) = (rx.clone(), Arc::clone(&idle));
                std::thread::spawn(move || {
                    let mut sum = 0;
                    while let Some(item) = idle.receive(&rx) {
                        sum += item;
                    }
                    sum
                })
            })
            .collect();
        let senders: Vec<_> = (0..2u64)
            .map(|s| {
                let (tx, idle) = (tx.clone(), Arc::clone(&idle));
                std::thread::spawn(move || {
                    for i in 0..20_000u64 {
                        tx.send_blocking(s * 20_000 + i).unwrap();
                        idle.wake_one();
                        if i % 1000 == 0 {
                            // Let the handlers run dry and park now and then.
                            std::thread::sleep(Duration::from_micros(200));
                        }
                    }
                })
            })
            .collect();
        for s in senders {
            s.join().unwrap();
        }
        tx.close();
        idle.wake_all();
        let total: u64 = handlers.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(total, (0..40_000u64).sum::<u64>());
    }

    #[test]
    fn throttling_mutes_until_the_latest_deadline() {
        let session = Session::authenticated("User:ANONYMOUS");
        assert!(session.muted_until().is_none());
        session.throttle(Duration::from_millis(200));
        session.throttle(Duration::from_millis(10)); // a shorter throttle does not shorten it
        let until = session.muted_until().expect("muted");
        assert!(until >= Instant::now() + Duration::from_millis(150));
        session.throttle(Duration::ZERO);
        assert!(session.muted_until().is_some());
    }

    #[test]
    fn sasl_sessions_allow_only_the_handshake_before_authentication() {
        let session = Session::default();
        assert!(session.allows(18) && session.allows(17) && session.allows(36));
        assert!(!session.allows(3));
        session.set_principal("User:alice");
        assert!(session.allows(3));
        assert_eq!(session.principal().as_deref(), Some("User:alice"));
        // An expired session may only re-authenticate.
        session.set_authenticated("User:alice", Some(Duration::ZERO));
        assert!(!session.allows(3) && session.allows(36));
        session.set_authenticated("User:alice", Some(Duration::from_secs(60)));
        assert!(session.allows(3));
    }
}
