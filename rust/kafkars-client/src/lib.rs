//! kafkars' Kafka client: everything that talks to a broker as a client goes through here.
//!
//! It owns the client side of the wire (Kafka's NetworkClient is the model, blocking):
//! framing with the request header its version uses and correlation ids checked
//! ([`frame`]), responses read without trusting the size the peer sends, ApiVersions
//! negotiation (the highest version of each API both sides support), TLS with rustls
//! ([`tls`]) and SASL PLAIN and SCRAM-SHA-256/512 logins ([`sasl`]). Messages are
//! kafka-protocol's, as they are for the broker, so each format has one codec.
//!
//! Users: the replica fetchers (`kafkars-python`'s `replica_fetcher`), the Spark reader's
//! Fetch (`ArrowFetcher`), the Spark sink's [`Producer`] (`kafkars._core.Producer`), and
//! through the PyO3 class `kafkars._core.BrokerConnection` (`kafkars-python`'s `client`,
//! type conversion only) the controller channel, the broker's own calls to other brokers
//! (`call_broker`: cluster, transaction markers and verification), the tools'
//! `WireClient`, the Spark reader's planning requests and the exactly-once sink's
//! CreateTopics and OffsetFetch (`kafkars_spark.wire`). Blocking: every caller waits for
//! its answer on its own thread.

mod connection;
mod error;
pub mod frame;
pub mod producer;
pub mod sasl;
pub mod tls;

pub use connection::{
    BrokerConnection, ConnectOptions, DEFAULT_MAX_RESPONSE_BYTES, Security, pick_version,
};
pub use error::ClientError;
pub use producer::{Producer, ProducerConfig, ProducerRecord};
pub use sasl::SaslLogin;

/// Kafka's UNSUPPORTED_VERSION error code.
pub const UNSUPPORTED_VERSION: i16 = 35;

#[cfg(test)]
mod tests;
