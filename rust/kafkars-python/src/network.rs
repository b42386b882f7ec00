//! Python face of the network layer: the socket server, and requests handed to
//! `KafkaApis.handle` on the handler threads.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use kafkars_server::{
    EndPoint, Request, RequestChannel, RequestHandlerPool, Responder, Response, ResponseSend,
    SocketServer, SocketServerConfig,
};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use crate::protocol;
use crate::splice::{SpliceBuf, with_regions};

/// A request on a handler thread. `body` is the decoded request as plain Python data
/// (record sets stay in Rust as `RecordSet` handles). Answer exactly once with
/// [`respond`](PyRequest::respond), [`send_no_response`](PyRequest::send_no_response) or
/// [`close_connection`](PyRequest::close_connection), now or later from any thread.
#[pyclass(frozen, name = "Request", module = "kafkars._core")]
pub(crate) struct PyRequest {
    #[pyo3(get)]
    api_key: i16,
    #[pyo3(get)]
    api_version: i16,
    #[pyo3(get)]
    correlation_id: i32,
    #[pyo3(get)]
    client_id: Option<String>,
    #[pyo3(get)]
    listener_name: String,
    #[pyo3(get)]
    security_protocol: String,
    #[pyo3(get)]
    client_host: String,
    #[pyo3(get)]
    client_port: u16,
    #[pyo3(get)]
    connection_id: u64,
    /// True when the version is outside what the codec can decode (only ApiVersions gets
    /// this far; its answer is encoded as version 0, as Kafka does).
    #[pyo3(get)]
    unsupported_version: bool,
    #[pyo3(get)]
    body: Py<PyAny>,
    api: ApiKey,
    response_header_version: i16,
    received_at: Instant,
    responder: Mutex<Option<Responder>>,
    /// The connection's session (principal, SASL exchange), shared by its requests.
    context: Arc<kafkars_server::RequestContext>,
}

impl PyRequest {
    fn take_responder(&self) -> PyResult<Responder> {
        self.responder
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("request was already answered"))
    }

    /// Takes the request's answer slot for a response built and sent from Rust (now, or
    /// later by a delayed operation on any thread, without the GIL).
    pub(crate) fn take_reply(&self) -> PyResult<PendingReply> {
        Ok(PendingReply {
            responder: self.take_responder()?,
            correlation_id: self.correlation_id,
            version: self.api_version,
            header_version: self.response_header_version,
            api: self.api,
            context: Arc::clone(&self.context),
        })
    }

    pub(crate) fn api_version(&self) -> i16 {
        self.api_version
    }
}

/// A request's answer, to be encoded and sent from Rust.
pub(crate) struct PendingReply {
    responder: Responder,
    correlation_id: i32,
    version: i16,
    header_version: i16,
    api: ApiKey,
    context: Arc<kafkars_server::RequestContext>,
}

impl PendingReply {
    /// From here the request waits in a purgatory (the metrics' remote time).
    pub(crate) fn mark_waiting(&mut self) {
        self.responder.mark_handled();
    }

    /// Answers nothing (Produce with acks=0); later responses on the connection proceed.
    pub(crate) fn send_no_response(self) {
        self.responder.send(Response::NoResponse);
    }

    /// Mutes the connection for `throttle_ms` after this response (KIP-219).
    pub(crate) fn throttle(&self, throttle_ms: u64) {
        self.context
            .session
            .throttle(Duration::from_millis(throttle_ms));
    }

    /// Encodes what `build` returns (its file-backed record sets spliced in as sendfile
    /// regions) and sends it; returns the response size. A response that cannot be
    /// encoded closes the connection.
    pub(crate) fn send(self, build: impl FnOnce() -> ResponseKind) -> usize {
        let (kind, regions) = with_regions(build);
        let mut buf = SpliceBuf::new(regions);
        match protocol::encode_response(kind, self.version, &mut buf) {
            Ok(()) => {
                let send =
                    ResponseSend::new(self.correlation_id, self.header_version, buf.into_chunks());
                let size = send.size_in_bytes();
                self.responder.send(Response::Send(send));
                size
            }
            Err(e) => {
                tracing::error!(api = ?self.api, version = self.version, error = %e, "cannot encode response");
                self.responder.send(Response::Close);
                0
            }
        }
    }
}

#[pymethods]
impl PyRequest {
    /// Encodes `response` (a dict shaped like the API's response message) and sends it.
    fn respond(&self, py: Python<'_>, response: &Bound<'_, PyAny>) -> PyResult<()> {
        let responder = self.take_responder()?;
        let version = if self.unsupported_version {
            0
        } else {
            self.api_version
        };
        let (converted, regions) = with_regions(|| protocol::response_from_py(self.api, response));
        let kind = match converted {
            Ok(kind) => kind,
            Err(e) => {
                // Give the handler a chance to answer with an error response instead.
                *self.responder.lock().unwrap_or_else(|p| p.into_inner()) = Some(responder);
                return Err(e);
            }
        };
        let correlation_id = self.correlation_id;
        let header_version = self.response_header_version;
        let send = py.detach(|| {
            let mut buf = SpliceBuf::new(regions);
            protocol::encode_response(kind, version, &mut buf)
                .map(|()| ResponseSend::new(correlation_id, header_version, buf.into_chunks()))
        });
        match send {
            Ok(send) => {
                responder.send(Response::Send(send));
                Ok(())
            }
            Err(e) => {
                responder.send(Response::Close);
                Err(PyValueError::new_err(format!(
                    "cannot encode {:?} v{version}: {e}",
                    self.api
                )))
            }
        }
    }

    /// Answers nothing (Produce with acks=0); later responses on the connection proceed.
    fn send_no_response(&self) -> PyResult<()> {
        self.take_responder()?.send(Response::NoResponse);
        Ok(())
    }

    /// Closes the connection after the responses before this one.
    fn close_connection(&self) -> PyResult<()> {
        self.take_responder()?.send(Response::Close);
        Ok(())
    }

    /// The connection's principal (`User:...`), or None on a SASL connection that has not
    /// authenticated yet.
    #[getter]
    fn principal(&self) -> Option<String> {
        self.context.session.principal().map(|p| p.to_string())
    }

    /// Marks the connection authenticated as `principal` (after SaslAuthenticate), for
    /// `session_lifetime_ms` (0: no limit; then it must re-authenticate, KIP-368).
    #[pyo3(signature = (principal, session_lifetime_ms = 0))]
    fn authenticate(&self, principal: &str, session_lifetime_ms: u64) {
        let lifetime =
            (session_lifetime_ms > 0).then(|| Duration::from_millis(session_lifetime_ms));
        self.context.session.set_authenticated(principal, lifetime);
    }

    /// Mutes the connection for `throttle_ms` (its quota was exceeded): it reads no
    /// further request until then, as Kafka does (KIP-219).
    fn throttle(&self, throttle_ms: u64) {
        self.context
            .session
            .throttle(Duration::from_millis(throttle_ms));
    }

    /// Takes the connection's SASL exchange in progress (None if there is none).
    fn take_sasl_state(&self, py: Python<'_>) -> Py<PyAny> {
        self.context
            .session
            .take_sasl_state()
            .and_then(|state| state.downcast::<Py<PyAny>>().ok())
            .map_or_else(|| py.None(), |state| *state)
    }

    /// Keeps `state` (the SASL exchange in progress) for the connection's next request.
    fn put_sasl_state(&self, state: Py<PyAny>) {
        self.context.session.put_sasl_state(Box::new(state));
    }

    /// Whether an answer has been given.
    #[getter]
    fn answered(&self) -> bool {
        self.responder
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }

    /// Milliseconds since the processor read the request off the socket.
    #[getter]
    fn age_ms(&self) -> f64 {
        self.received_at.elapsed().as_secs_f64() * 1000.0
    }

    fn __repr__(&self) -> String {
        format!(
            "Request({:?} v{}, correlation_id={}, client_id={}, connection={})",
            self.api,
            self.api_version,
            self.correlation_id,
            self.client_id.as_deref().unwrap_or("null"),
            self.connection_id
        )
    }
}

fn log_handler_error(py: Python<'_>, request: &str, err: PyErr) {
    static LOGGER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let logged = LOGGER
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(
                py.import("logging")?
                    .call_method1("getLogger", ("kafkars.network",))?
                    .unbind(),
            )
        })
        .and_then(|logger| {
            // With exc_info the traceback of the failing handler is logged too.
            let exc_info = (err.get_type(py), err.value(py), err.traceback(py));
            let kwargs = pyo3::types::PyDict::new(py);
            kwargs.set_item("exc_info", exc_info)?;
            logger.call_method(
                py,
                "error",
                ("handler failed for %s", request),
                Some(&kwargs),
            )
        });
    if logged.is_err() {
        err.print(py);
    }
}

/// Decodes the body off the GIL, then calls the Python handler with the GIL held.
fn dispatch(handler: &Py<PyAny>, request: Request) {
    crate::thread_state::keep_for_this_thread();
    let Request {
        context,
        header,
        mut body,
        received_at,
        responder,
    } = request;
    let Some(api) = header.api else {
        responder.send(Response::Close);
        return;
    };
    let decoded = if header.unsupported_version {
        None
    } else {
        match RequestKind::decode(api, &mut body, header.api_version) {
            Ok(kind) => Some(kind),
            Err(e) => {
                // Kafka closes a connection that sends a request it cannot parse.
                tracing::debug!(?api, version = header.api_version, error = %e, "undecodable request");
                responder.send(Response::Close);
                return;
            }
        }
    };
    Python::attach(|py| {
        let body = match &decoded {
            Some(kind) => match protocol::request_to_py(py, kind) {
                Ok(body) => body.unbind(),
                Err(e) => {
                    log_handler_error(py, &format!("{api:?}"), e);
                    responder.send(Response::Close);
                    return;
                }
            },
            None => py.None(),
        };
        let request = PyRequest {
            api_key: header.api_key,
            api_version: header.api_version,
            correlation_id: header.correlation_id,
            response_header_version: header.response_header_version(),
            client_id: header.client_id,
            listener_name: context.listener_name.to_string(),
            security_protocol: context.security_protocol.to_string(),
            client_host: context.client_addr.ip().to_string(),
            client_port: context.client_addr.port(),
            connection_id: context.connection_id,
            unsupported_version: header.unsupported_version,
            body,
            api,
            received_at,
            responder: Mutex::new(Some(responder)),
            context: Arc::clone(&context),
        };
        let request = match Bound::new(py, request) {
            Ok(r) => r,
            Err(e) => return log_handler_error(py, &format!("{api:?}"), e),
        };
        match handler.call1(py, (request.clone(),)) {
            Ok(result) if !result.is_none(py) => {
                if let Err(e) = request.get().respond(py, result.bind(py)) {
                    log_handler_error(py, &request.get().__repr__(), e);
                    let _ = request.get().close_connection();
                }
            }
            // None: the handler answers later (a delayed operation holds the request).
            Ok(_) => {
                if let Some(responder) = request
                    .get()
                    .responder
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .as_mut()
                {
                    responder.mark_handled();
                }
            }
            Err(e) => {
                log_handler_error(py, &request.get().__repr__(), e);
                let _ = request.get().close_connection();
            }
        }
    });
}

struct Running {
    server: SocketServer,
    channel: RequestChannel,
    handlers: RequestHandlerPool,
}

/// One listener's TLS settings as the configuration layer resolves them (PEM bytes).
#[derive(FromPyObject)]
pub(crate) struct PyTlsSettings {
    #[pyo3(item)]
    certificate_chain: Vec<u8>,
    #[pyo3(item)]
    private_key: Vec<u8>,
    #[pyo3(item)]
    truststore: Option<Vec<u8>>,
    #[pyo3(item)]
    client_auth: String,
    #[pyo3(item)]
    protocols: Vec<String>,
    #[pyo3(item)]
    cipher_suites: Vec<String>,
    #[pyo3(item)]
    principal_mapping_rules: String,
}

impl PyTlsSettings {
    fn to_settings(&self) -> PyResult<kafkars_server::tls::TlsSettings> {
        let client_auth = kafkars_server::tls::ClientAuth::from_name(&self.client_auth)
            .ok_or_else(|| {
                PyValueError::new_err(format!("ssl.client.auth: unknown {:?}", self.client_auth))
            })?;
        Ok(kafkars_server::tls::TlsSettings {
            certificate_chain_pem: self.certificate_chain.clone(),
            private_key_pem: self.private_key.clone(),
            truststore_pem: self.truststore.clone(),
            client_auth,
            protocols: self.protocols.clone(),
            cipher_suites: self.cipher_suites.clone(),
        })
    }
}

/// Kafka's SocketServer plus its request handler pool. Starts on construction.
#[pyclass(name = "SocketServer", module = "kafkars._core")]
pub(crate) struct PySocketServer {
    running: Mutex<Option<Running>>,
    listeners: Vec<(String, String, String, u16)>,
}

#[pymethods]
impl PySocketServer {
    /// `listeners`: `(name, security_protocol, host, port)` tuples; port 0 picks a free one.
    /// `handler(request)` runs on one of `num_io_threads` threads.
    #[new]
    #[pyo3(signature = (
        listeners, handler, *, num_network_threads = 3, num_io_threads = 8,
        queued_max_requests = 500, queued_max_request_bytes = -1,
        socket_request_max_bytes = 104_857_600,
        connections_max_idle_ms = 600_000, max_connections = 2_147_483_647,
        max_connections_per_ip = 2_147_483_647, max_connections_per_ip_overrides = HashMap::new(),
        max_connection_creation_rate = 2_147_483_647,
        socket_send_buffer_bytes = -1, socket_receive_buffer_bytes = -1,
        tls = HashMap::new(),
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        listeners: Vec<(String, String, String, u16)>,
        handler: Py<PyAny>,
        num_network_threads: usize,
        num_io_threads: usize,
        queued_max_requests: usize,
        queued_max_request_bytes: i64,
        socket_request_max_bytes: usize,
        connections_max_idle_ms: u64,
        max_connections: usize,
        max_connections_per_ip: usize,
        max_connections_per_ip_overrides: HashMap<String, usize>,
        max_connection_creation_rate: u32,
        socket_send_buffer_bytes: i64,
        socket_receive_buffer_bytes: i64,
        tls: HashMap<String, PyTlsSettings>,
    ) -> PyResult<Self> {
        let overrides = max_connections_per_ip_overrides
            .into_iter()
            .map(|(ip, n)| {
                ip.parse::<IpAddr>().map(|ip| (ip, n)).map_err(|_| {
                    PyValueError::new_err(format!(
                        "max.connections.per.ip.overrides: bad address {ip}"
                    ))
                })
            })
            .collect::<PyResult<_>>()?;
        let buffer = |n: i64| (n > 0).then_some(n as usize);
        let listeners = listeners
            .into_iter()
            .map(|(listener_name, security_protocol, host, port)| {
                let tls_config = match tls.get(&listener_name) {
                    None => None,
                    Some(settings) => Some(
                        kafkars_server::tls::server_config(&settings.to_settings()?).map_err(
                            |e| PyValueError::new_err(format!("listener {listener_name}: {e}")),
                        )?,
                    ),
                };
                let principal_mapper = match tls.get(&listener_name) {
                    None => None,
                    Some(settings) => Some(Arc::new(
                        kafkars_server::PrincipalMapper::parse(&settings.principal_mapping_rules)
                            .map_err(|e| PyValueError::new_err(e.to_string()))?,
                    )),
                };
                Ok(EndPoint {
                    listener_name,
                    security_protocol,
                    host,
                    port,
                    tls: tls_config,
                    principal_mapper,
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let config = SocketServerConfig {
            listeners,
            num_network_threads,
            queued_max_requests,
            queued_max_request_bytes: buffer(queued_max_request_bytes),
            socket_request_max_bytes,
            connections_max_idle: Duration::from_millis(connections_max_idle_ms),
            max_connections,
            max_connections_per_ip,
            max_connections_per_ip_overrides: overrides,
            // Kafka's default (Int.MaxValue) means no limit.
            max_connection_creation_rate: (max_connection_creation_rate < i32::MAX as u32)
                .then_some(max_connection_creation_rate),
            socket_send_buffer_bytes: buffer(socket_send_buffer_bytes),
            socket_receive_buffer_bytes: buffer(socket_receive_buffer_bytes),
            ..SocketServerConfig::default()
        };
        let running = py.detach(|| -> std::io::Result<Running> {
            let channel = RequestChannel::new(config.queued_max_requests);
            let server = SocketServer::start(config, &channel)?;
            let handler = Arc::new(handler);
            let handlers = RequestHandlerPool::start(
                num_io_threads,
                &channel,
                Arc::new(move |request| dispatch(&handler, request)),
            )?;
            Ok(Running {
                server,
                channel,
                handlers,
            })
        })?;
        let listeners = running
            .server
            .bound_listeners()
            .iter()
            .map(|b| {
                (
                    b.endpoint.listener_name.clone(),
                    b.endpoint.security_protocol.clone(),
                    b.local_addr.ip().to_string(),
                    b.local_addr.port(),
                )
            })
            .collect();
        Ok(Self {
            running: Mutex::new(Some(running)),
            listeners,
        })
    }

    /// The bound listeners as `(name, security_protocol, host, port)`.
    #[getter]
    fn listeners(&self) -> Vec<(String, String, String, u16)> {
        self.listeners.clone()
    }

    /// Reloads a TLS listener's certificates and settings (`settings` as for `tls=`);
    /// new connections use them. Raises ValueError naming the bad setting.
    fn update_tls(&self, listener_name: &str, settings: PyTlsSettings) -> PyResult<()> {
        let config = kafkars_server::tls::server_config(&settings.to_settings()?)
            .map_err(|e| PyValueError::new_err(format!("listener {listener_name}: {e}")))?;
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        match running.as_ref() {
            Some(r) if r.server.update_tls(listener_name, config) => Ok(()),
            Some(_) => Err(PyValueError::new_err(format!(
                "listener {listener_name} does not use TLS"
            ))),
            None => Err(PyRuntimeError::new_err("the socket server is shut down")),
        }
    }

    /// Kafka's RequestMetrics: `(api_key, phase, cumulative bucket counts, count,
    /// sum in seconds)` for every API and phase seen, the buckets' upper bounds being
    /// `request_metrics_buckets()`.
    fn request_metrics(&self) -> Vec<(i16, &'static str, Vec<u64>, u64, f64)> {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let Some(running) = running.as_ref() else {
            return Vec::new();
        };
        running
            .channel
            .metrics()
            .snapshot()
            .into_iter()
            .map(|h| (h.api_key, h.phase, h.cumulative, h.count, h.sum_seconds))
            .collect()
    }

    /// Seconds the request handler threads have spent waiting for requests, summed.
    #[getter]
    fn handler_idle_seconds(&self) -> f64 {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map_or(0.0, |r| r.channel.handler_idle_seconds())
    }

    /// Seconds the network processors have spent idle, summed over processors.
    #[getter]
    fn network_idle_seconds(&self) -> f64 {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map_or(0.0, |r| r.server.network_idle_seconds())
    }

    /// Upper bounds (seconds) of the request-time histogram buckets.
    #[staticmethod]
    fn request_metrics_buckets() -> Vec<f64> {
        kafkars_server::LATENCY_BUCKETS_SECONDS.to_vec()
    }

    /// Requests waiting in the request channel.
    #[getter]
    fn request_queue_size(&self) -> usize {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map_or(0, |r| r.channel.len())
    }

    #[getter]
    fn connection_count(&self) -> usize {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map_or(0, |r| r.server.connection_count())
    }

    /// Stops accepting, writes the responses still owed, then stops the handler threads.
    /// Idempotent.
    fn shutdown(&self, py: Python<'_>) {
        let running = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(Running {
            server,
            channel,
            handlers,
        }) = running
        {
            py.detach(move || {
                server.shutdown();
                channel.close();
                handlers.join();
            });
        }
    }
}
