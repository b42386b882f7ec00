//! Settings of the socket server, filled by the Python configuration layer.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

/// One listener: `NAME://host:port` mapped to a security protocol.
#[derive(Clone, Debug)]
pub struct EndPoint {
    pub listener_name: String,
    pub security_protocol: String,
    /// Host to bind; empty means every interface.
    pub host: String,
    /// Port to bind; 0 picks a free port (see [`crate::BoundListener`]).
    pub port: u16,
    /// TLS for `SSL` listeners (see [`crate::tls::server_config`]).
    pub tls: Option<std::sync::Arc<rustls::ServerConfig>>,
    /// `ssl.principal.mapping.rules` for SSL clients with a certificate.
    pub principal_mapper: Option<std::sync::Arc<crate::PrincipalMapper>>,
}

/// Kafka's socket-server settings (`num.network.threads`, `queued.max.requests`, ...).
#[derive(Clone, Debug)]
pub struct SocketServerConfig {
    pub listeners: Vec<EndPoint>,
    pub num_network_threads: usize,
    pub queued_max_requests: usize,
    pub socket_request_max_bytes: usize,
    /// `queued.max.request.bytes`: bytes of requests read and not yet answered, across
    /// every connection; `None` for no limit.
    pub queued_max_request_bytes: Option<usize>,
    pub connections_max_idle: Duration,
    pub max_connections: usize,
    pub max_connections_per_ip: usize,
    pub max_connections_per_ip_overrides: HashMap<IpAddr, usize>,
    /// `max.connection.creation.rate`: new connections per second; `None` for no limit.
    pub max_connection_creation_rate: Option<u32>,
    pub socket_send_buffer_bytes: Option<usize>,
    pub socket_receive_buffer_bytes: Option<usize>,
    /// Requests a connection may have in flight before the processor stops reading it.
    pub max_in_flight_per_connection: usize,
    /// How long a TLS handshake may take before the connection is dropped.
    pub tls_handshake_timeout: Duration,
}

impl Default for SocketServerConfig {
    fn default() -> Self {
        Self {
            listeners: vec![EndPoint {
                listener_name: "PLAINTEXT".into(),
                security_protocol: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port: 9092,
                tls: None,
                principal_mapper: None,
            }],
            num_network_threads: 3,
            queued_max_requests: 500,
            socket_request_max_bytes: 100 * 1024 * 1024,
            queued_max_request_bytes: None,
            connections_max_idle: Duration::from_millis(600_000),
            max_connections: i32::MAX as usize,
            max_connections_per_ip: i32::MAX as usize,
            max_connections_per_ip_overrides: HashMap::new(),
            max_connection_creation_rate: None,
            socket_send_buffer_bytes: None,
            socket_receive_buffer_bytes: None,
            max_in_flight_per_connection: 100,
            tls_handshake_timeout: Duration::from_secs(10),
        }
    }
}
