//! Kafka's `KafkaChannel`: one connection's state, shared by its reader, its writer task
//! and the handlers answering it.
//!
//! Requests: one is processed at a time, in the order read (Kafka mutes the channel while
//! one is). The reader parks up to [`READ_AHEAD`] requests read behind it here, and the
//! handler that answers one hands the next over itself: onto its own thread when it is a
//! request handler (no wake at all), else onto the request channel. For small requests the
//! wakes of the reader task and of another handler thread cost more than the work.
//!
//! Responses go out in request order. A handler whose response finds the connection idle
//! (nothing queued, no write under way) takes the socket's write half out of the channel
//! and writes what the socket takes without waiting, file regions with `sendfile(2)`. The rest (TLS, what would block, responses behind others)
//! is queued for the writer task, which owns the socket's write half while it writes and
//! parks it here while it waits.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::{Notify, OwnedSemaphorePermit};

use crate::request_channel::{Request, RequestSender, Response};
use crate::request_metrics::{RequestMetrics, RequestTimes};
use crate::send::{ResponseWriter, write_nonblocking, write_response};

/// A response waiting for the writer task.
struct Queued {
    response: Response,
    times: Option<RequestTimes>,
    /// The request's place among the connection's in-flight requests, freed once written.
    _slot: Option<OwnedSemaphorePermit>,
}

#[derive(Default)]
struct State {
    /// The plaintext write half while the writer task waits: whoever holds it writes.
    idle_half: Option<OwnedWriteHalf>,
    queued: VecDeque<Queued>,
    /// Requests handed to handlers and not answered yet.
    outstanding: usize,
    /// The reader stopped: the writer ends once nothing is outstanding or queued.
    reader_done: bool,
    /// The writer ended (a write failed, or a Close response): later responses are dropped.
    closed: bool,
    /// A request is with a handler (the channel is muted).
    processing: bool,
    /// Requests read while one is processed, in order, and their body bytes.
    waiting: VecDeque<Request>,
    waiting_bytes: usize,
    /// The reader waits for room in `waiting` (or to close after what is owed).
    reader_waits: bool,
}

impl State {
    fn push_waiting(&mut self, request: Request) {
        self.waiting_bytes += request.body.len();
        self.waiting.push_back(request);
    }

    fn pop_waiting(&mut self) -> Option<Request> {
        let request = self.waiting.pop_front()?;
        self.waiting_bytes = self.waiting_bytes.saturating_sub(request.body.len());
        Some(request)
    }
}

/// Requests the reader may read ahead of the one being processed, and their bytes (one
/// request is always allowed). The reader is woken again once half of either is free, so
/// a pipelining client costs the reader a wake per several requests, not one each.
pub(crate) const READ_AHEAD: usize = 16;
const READ_AHEAD_BYTES: usize = 1024 * 1024;

/// What became of a request the reader offered.
pub(crate) enum Offer {
    /// Nothing is processing: the reader hands this one (maybe an earlier, returned one)
    /// to the request channel itself.
    Dispatch(Request),
    /// Parked behind the one processing; the handler answering it takes it on.
    Parked,
    /// No room: wait for [`KafkaChannel::reader_wake`] and offer it again.
    Full(Request),
}

pub(crate) struct KafkaChannel {
    state: Mutex<State>,
    /// Wakes the writer task: something was queued, or the connection is ending.
    work: Notify,
    /// Wakes the reader: room in `waiting`, or a request handed back to it.
    pub(crate) reader_wake: Notify,
    /// Where requests a handler cannot take itself go.
    requests: RequestSender,
    metrics: Arc<RequestMetrics>,
}

impl std::fmt::Debug for KafkaChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaChannel").finish_non_exhaustive()
    }
}

impl KafkaChannel {
    pub(crate) fn new(requests: RequestSender, metrics: Arc<RequestMetrics>) -> Self {
        Self {
            state: Mutex::new(State::default()),
            work: Notify::new(),
            reader_wake: Notify::new(),
            requests,
            metrics,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request goes to a handler: its response is owed before the writer may end.
    pub(crate) fn request_started(&self) {
        self.lock().outstanding += 1;
    }

    /// The reader queues a response of its own (closing after what is owed).
    pub(crate) fn push(&self, response: Response) {
        let mut state = self.lock();
        state.queued.push_back(Queued {
            response,
            times: None,
            _slot: None,
        });
        drop(state);
        self.work.notify_one();
    }

    /// The reader stops; the writer sends what is owed and then ends. Requests still
    /// parked (the connection is closing or the broker stopping) are dropped, which
    /// answers each with a close.
    pub(crate) fn reader_done(&self) {
        let parked = {
            let mut state = self.lock();
            state.reader_done = true;
            state.waiting_bytes = 0;
            std::mem::take(&mut state.waiting)
        };
        drop(parked);
        self.work.notify_one();
    }

    /// The reader offers the next request it read.
    pub(crate) fn offer(&self, request: Request) -> Offer {
        let mut state = self.lock();
        if !state.processing {
            state.processing = true;
            // A request handed back (its connection was muted) goes before this one.
            return match state.pop_waiting() {
                Some(earlier) => {
                    state.push_waiting(request);
                    Offer::Dispatch(earlier)
                }
                None => Offer::Dispatch(request),
            };
        }
        if state.waiting.is_empty()
            || (state.waiting.len() < READ_AHEAD
                && state.waiting_bytes + request.body.len() <= READ_AHEAD_BYTES)
        {
            state.push_waiting(request);
            return Offer::Parked;
        }
        state.reader_waits = true;
        Offer::Full(request)
    }

    /// A request handed back to the reader (nothing is processing), to dispatch itself.
    pub(crate) fn take_returned(&self) -> Option<Request> {
        let mut state = self.lock();
        if state.processing {
            return None;
        }
        let request = state.pop_waiting()?;
        state.processing = true;
        Some(request)
    }

    /// Whether every request read so far is answered; if not, the reader is woken when
    /// the one processing is.
    pub(crate) fn all_answered(&self) -> bool {
        let mut state = self.lock();
        let answered = !state.processing && state.waiting.is_empty();
        if !answered {
            state.reader_waits = true;
        }
        answered
    }

    /// The request processing was answered: hands the next one to a handler, or unmutes.
    fn processed(&self) {
        let (next, wake_reader) = {
            let mut state = self.lock();
            let next = if state.closed {
                None
            } else {
                state.pop_waiting()
            };
            state.processing = next.is_some();
            let room = state.waiting.len() <= READ_AHEAD / 2
                && state.waiting_bytes <= READ_AHEAD_BYTES / 2;
            (next, room && std::mem::take(&mut state.reader_waits))
        };
        if let Some(request) = next
            && let Some(request) = hand_over(request, &self.requests)
        {
            // Throttled, or no room on the request channel: the reader takes it back (and
            // sleeps out the throttle, or waits for room).
            let mut state = self.lock();
            state.waiting_bytes += request.body.len();
            state.waiting.push_front(request);
            state.processing = false;
            drop(state);
            self.reader_wake.notify_one();
            return;
        }
        if wake_reader {
            self.reader_wake.notify_one();
        }
    }

    /// Nothing owed and nothing waiting to be written.
    pub(crate) fn is_idle(&self) -> bool {
        let state = self.lock();
        state.outstanding == 0 && state.queued.is_empty()
    }

    /// A handler's answer to the request processing; false if the connection is gone.
    /// Then the next request, if one waits, is handed over.
    pub(crate) fn respond(
        &self,
        response: Response,
        times: RequestTimes,
        slot: Option<OwnedSemaphorePermit>,
    ) -> bool {
        let sent = self.queue_response(response, times, slot);
        self.processed();
        sent
    }

    fn queue_response(
        &self,
        response: Response,
        times: RequestTimes,
        slot: Option<OwnedSemaphorePermit>,
    ) -> bool {
        let mut state = self.lock();
        state.outstanding = state.outstanding.saturating_sub(1);
        if state.closed {
            return false;
        }
        let response = match state.idle_half.take() {
            Some(half) if state.queued.is_empty() => {
                // Written without the lock: a sendfile from disk may take a while, and the
                // connection's reader (on a processor thread) must not wait for it.
                drop(state);
                let written = self.write_now(&half, response, &times);
                state = self.lock();
                if state.closed {
                    // The connection ended meanwhile; dropping the half shuts it down.
                    drop(state);
                    drop(half);
                    return false;
                }
                state.idle_half = Some(half);
                match written {
                    Ok(None) => {
                        let wake = !state.queued.is_empty()
                            || (state.reader_done && state.outstanding == 0);
                        drop(state);
                        if wake {
                            self.work.notify_one();
                        }
                        return true;
                    }
                    // What would block goes ahead of anything queued meanwhile.
                    Ok(Some(rest)) => {
                        state.queued.push_front(Queued {
                            response: rest,
                            times: Some(times),
                            _slot: slot,
                        });
                        drop(state);
                        self.work.notify_one();
                        return true;
                    }
                    Err(_) => {
                        // The peer is gone: the writer task ends the connection.
                        state.closed = true;
                        drop(state);
                        self.work.notify_one();
                        return false;
                    }
                }
            }
            half => {
                state.idle_half = half;
                response
            }
        };
        state.queued.push_back(Queued {
            response,
            times: Some(times),
            _slot: slot,
        });
        drop(state);
        self.work.notify_one();
        true
    }

    /// Writes what the socket takes now, without waiting; returns what is left for the
    /// writer task (a partial write's rest, a Close).
    fn write_now(
        &self,
        half: &OwnedWriteHalf,
        response: Response,
        times: &RequestTimes,
    ) -> io::Result<Option<Response>> {
        let started = Instant::now();
        let send = match response {
            Response::NoResponse => {
                self.metrics.record(times, started, started);
                return Ok(None);
            }
            Response::Send(send) => send,
            Response::Close => return Ok(Some(Response::Close)),
        };
        let written = write_nonblocking(half, &send)?;
        if written == send.size_in_bytes() {
            self.metrics.record(times, started, Instant::now());
            return Ok(None);
        }
        Ok(Some(Response::Send(send.skip(written))))
    }
}

thread_local! {
    /// A request handler thread's next request, handed over by the handler that answered
    /// the one before it on the same connection (see [`take_handed_over`]).
    static HANDED_OVER: std::cell::RefCell<Option<Option<Request>>> =
        const { std::cell::RefCell::new(None) };
}

/// Marks the calling thread as a request handler, which takes requests handed over to it.
pub(crate) fn become_handler_thread() {
    HANDED_OVER.with(|slot| *slot.borrow_mut() = Some(None));
}

/// The request handed over to this handler thread, if any: it runs next, before anything
/// on the request channel.
pub(crate) fn take_handed_over() -> Option<Request> {
    HANDED_OVER.with(|slot| slot.borrow_mut().as_mut().and_then(Option::take))
}

/// Starts the processing of a connection's next request: onto this thread if it is a
/// request handler with nothing handed over yet and no other connection's request waits
/// on the request channel (which would otherwise wait behind this connection's), else
/// onto the request channel, behind those. Gives it back when the connection is
/// throttled or the channel is full.
fn hand_over(mut request: Request, requests: &RequestSender) -> Option<Request> {
    if request.context.session.muted_until().is_some() {
        return Some(request);
    }
    request.start_processing();
    if !requests.is_empty() {
        return requests.try_send(request);
    }
    let request = HANDED_OVER.with(|slot| match slot.borrow_mut().as_mut() {
        Some(free @ None) => {
            request.responder.times.dequeued = Some(Instant::now());
            *free = Some(request);
            None
        }
        _ => Some(request),
    });
    requests.try_send(request?)
}

/// The connection's writer task: writes queued responses in order until the connection
/// ends, then shuts the write side down and wakes `closed` (which stops the reader).
pub(crate) async fn write_loop(
    queue: Arc<KafkaChannel>,
    writer: ResponseWriter,
    closed: Arc<Notify>,
) {
    let mut writer = Some(writer);
    loop {
        let next = {
            let mut state = queue.lock();
            if writer.is_none() {
                writer = state.idle_half.take().map(ResponseWriter::Plain);
            }
            if state.closed {
                break;
            }
            if writer.is_none() {
                // A handler is writing with the half; it wakes this task when it is back.
                None
            } else {
                match state.queued.pop_front() {
                    Some(item) => Some(item),
                    None if state.reader_done && state.outstanding == 0 => break,
                    None => {
                        // Park a plaintext half so handlers can write while this task waits.
                        match writer.take() {
                            Some(ResponseWriter::Plain(half)) => state.idle_half = Some(half),
                            other => writer = other,
                        }
                        None
                    }
                }
            }
        };
        let Some(item) = next else {
            queue.work.notified().await;
            continue;
        };
        let out = writer
            .as_mut()
            .expect("the writer task holds the half while writing");
        let send_started = Instant::now();
        let result = match item.response {
            Response::Send(send) => write_response(out, send).await,
            Response::NoResponse => Ok(()),
            Response::Close => Err(io::ErrorKind::ConnectionAborted.into()),
        };
        if result.is_err() {
            break;
        }
        if let Some(times) = item.times {
            queue.metrics.record(&times, send_started, Instant::now());
        }
    }
    {
        let mut state = queue.lock();
        state.closed = true;
        state.queued.clear();
        if writer.is_none() {
            writer = state.idle_half.take().map(ResponseWriter::Plain);
        }
    }
    closed.notify_one();
    if let Some(mut writer) = writer {
        let _ = writer.shutdown().await;
    }
}
