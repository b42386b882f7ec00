//! Kafka's `KafkaRequestHandlerPool`: `num.io.threads` threads taking requests off the
//! request channel.

use std::sync::Arc;
use std::thread::JoinHandle;

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
                        while let Some(request) = channel.receive() {
                            handler(request);
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
