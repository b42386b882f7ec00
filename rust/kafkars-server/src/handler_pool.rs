//! Kafka's `KafkaRequestHandlerPool`: `num.io.threads` threads taking requests off the
//! request channel.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::thread::JoinHandle;

use tracing::error;

use crate::kafka_channel::{become_handler_thread, take_handed_over};
use crate::request_channel::{Request, RequestChannel};

/// Threads that each loop: take a request, call the handler. The handler owns the request's
/// responder and may answer later from another thread (delayed operations).
pub struct RequestHandlerPool {
    threads: Vec<JoinHandle<()>>,
}

impl RequestHandlerPool {
    pub fn start(
        num_threads: usize,
        channel: &RequestChannel,
        handler: Arc<dyn Fn(Request) + Send + Sync>,
    ) -> std::io::Result<Self> {
        let mut threads = Vec::new();
        for id in 0..num_threads.max(1) {
            let channel = channel.clone();
            let handler = Arc::clone(&handler);
            threads.push(
                std::thread::Builder::new()
                    .name(format!("data-plane-kafka-request-handler-{id}"))
                    .spawn(move || {
                        become_handler_thread();
                        while let Some(request) = channel.receive() {
                            // A connection's next request, handed over by the handler
                            // that answered the one before, runs here next.
                            let mut next = Some(request);
                            while let Some(request) = next {
                                // A panic drops the request's responder, which closes
                                // only that connection; the thread goes on serving.
                                let call = AssertUnwindSafe(|| handler(request));
                                if catch_unwind(call).is_err() {
                                    error!(thread = id, "request handler panicked");
                                }
                                next = take_handed_over();
                            }
                        }
                    })?,
            );
        }
        Ok(Self { threads })
    }

    /// Waits for every handler thread; call after [`RequestChannel::close`].
    pub fn join(self) {
        for thread in self.threads {
            let _ = thread.join();
        }
    }
}
