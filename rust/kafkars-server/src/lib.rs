//! The kafkars network layer, after Kafka's `SocketServer`.
//!
//! One acceptor per listener hands connections round-robin to `num.network.threads`
//! processors (each a single-threaded tokio runtime on its own thread). A processor reads
//! size-prefixed frames, parses the request header and puts a [`Request`] on the shared,
//! bounded [`RequestChannel`]; a full channel stops the reading connection (back-pressure,
//! never a drop). Handler threads ([`RequestHandlerPool`]) answer through the request's
//! [`Responder`]; the connection writes responses in request order, sending file regions
//! with `sendfile(2)`. A connection's state between its reader, writer and handlers is its
//! `KafkaChannel`: one request processed at a time, the next handed over by the handler
//! that answered, and small responses written by that handler when the socket is idle.

mod config;
mod connection;
mod connection_quotas;
mod creation_rate;
mod frame;
mod handler_pool;
mod kafka_channel;
mod malloc;
mod memory_pool;
mod principal_mapper;
mod request_channel;
mod request_metrics;
mod send;
mod socket_server;
pub mod tls;

pub use config::{EndPoint, SocketServerConfig};
pub use frame::RequestHeader;
pub use handler_pool::RequestHandlerPool;
pub use principal_mapper::{MappingRulesError, PrincipalMapper};
pub use request_channel::{
    FileRegion, Request, RequestChannel, RequestContext, Responder, Response, ResponseChunk,
    ResponseSend, Session,
};
pub use request_metrics::{
    HistogramSnapshot, LATENCY_BUCKETS_SECONDS, PHASES, RequestMetrics, RequestTimes,
};
pub use socket_server::{BoundListener, SocketServer};

/// The processors' request-header parser ([`frame`]'s `parse_header`): the header and
/// the still-encoded body of a frame (after its size prefix), `None` when the frame is
/// refused. Public for the fuzz targets in `fuzz/`.
#[doc(hidden)]
pub fn parse_request_header(frame: bytes::BytesMut) -> Option<(RequestHeader, bytes::Bytes)> {
    frame::parse_header(frame).ok()
}
