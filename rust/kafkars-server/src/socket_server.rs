//! Kafka's `SocketServer`: acceptors and processors.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, TcpListener as StdListener, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::{Builder, RuntimeMetrics};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tracing::{debug, info, warn};

use crate::config::{EndPoint, SocketServerConfig};
use crate::connection::ConnectionHandler;
use crate::connection_quotas::{ConnectionQuotas, ConnectionSlot};
use crate::creation_rate::ConnectionCreationRate;
use crate::memory_pool::MemoryPool;
use crate::request_channel::{RequestChannel, RequestContext, Session};
use crate::request_metrics::RequestMetrics;

/// Kafka's principal for a connection that did not authenticate.
const ANONYMOUS: &str = "User:ANONYMOUS";

/// A listener after binding: `port` 0 in the config becomes the real port here.
#[derive(Clone, Debug)]
pub struct BoundListener {
    pub endpoint: EndPoint,
    pub local_addr: SocketAddr,
}

/// A new connection on its way from an acceptor to a processor.
struct NewConnection {
    stream: std::net::TcpStream,
    peer: SocketAddr,
    endpoint: Arc<ListenerInfo>,
    slot: ConnectionSlot,
}

/// What a connection needs to know of the listener that accepted it.
struct ListenerInfo {
    name: Arc<str>,
    security_protocol: Arc<str>,
    /// Replaced in place when the listener's certificates are reloaded; connections
    /// take the current one when accepted.
    tls: Option<Arc<RwLock<Arc<rustls::ServerConfig>>>>,
    principal_mapper: Option<Arc<crate::PrincipalMapper>>,
}

/// Runs the acceptor and processor threads until [`SocketServer::shutdown`].
pub struct SocketServer {
    bound: Vec<BoundListener>,
    shutdown: watch::Sender<bool>,
    threads: Vec<JoinHandle<()>>,
    quotas: Arc<ConnectionQuotas>,
    tls_by_listener: HashMap<String, Arc<RwLock<Arc<rustls::ServerConfig>>>>,
    /// Each processor's runtime metrics, for Kafka's NetworkProcessorAvgIdlePercent.
    processor_metrics: Arc<Mutex<Vec<RuntimeMetrics>>>,
    started: Instant,
}

impl SocketServer {
    /// Binds every listener (so port 0 resolves before this returns) and starts the
    /// acceptor and processor threads.
    pub fn start(config: SocketServerConfig, channel: &RequestChannel) -> io::Result<Self> {
        crate::malloc::keep_freed_buffers();
        let config = Arc::new(config);
        let (shutdown, shutdown_rx) = watch::channel(false);
        let quotas = ConnectionQuotas::new(
            config.max_connections,
            config.max_connections_per_ip,
            config.max_connections_per_ip_overrides.clone(),
        );
        let mut listeners = Vec::new();
        let mut bound = Vec::new();
        for endpoint in &config.listeners {
            let host = if endpoint.host.is_empty() {
                "0.0.0.0"
            } else {
                endpoint.host.as_str()
            };
            let addr = (host, endpoint.port)
                .to_socket_addrs()?
                .next()
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("cannot resolve {host}"),
                    )
                })?;
            let listener = StdListener::bind(addr).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "cannot bind listener {} to {addr}: {e}",
                        endpoint.listener_name
                    ),
                )
            })?;
            listener.set_nonblocking(true)?;
            let local_addr = listener.local_addr()?;
            info!(listener = %endpoint.listener_name, %local_addr, "listening");
            bound.push(BoundListener {
                endpoint: endpoint.clone(),
                local_addr,
            });
            listeners.push((endpoint.clone(), listener));
        }

        let mut threads = Vec::new();
        let mut processors = Vec::new();
        let next_connection_id = Arc::new(AtomicU64::new(0));
        let pool = MemoryPool::new(config.queued_max_request_bytes);
        let processor_metrics = Arc::new(Mutex::new(Vec::new()));
        for id in 0..config.num_network_threads.max(1) {
            let (tx, rx) = mpsc::unbounded_channel::<NewConnection>();
            processors.push(tx);
            let processor = Processor {
                id,
                config: Arc::clone(&config),
                requests: channel.sender(),
                metrics: channel.metrics(),
                shutdown: shutdown_rx.clone(),
                next_connection_id: Arc::clone(&next_connection_id),
                pool: pool.clone(),
                runtime_metrics: Arc::clone(&processor_metrics),
            };
            threads.push(
                std::thread::Builder::new()
                    .name(format!("kafka-network-thread-{id}"))
                    .spawn(move || processor.run(rx))?,
            );
        }
        let processors = Arc::new(processors);
        let creation_rate = config
            .max_connection_creation_rate
            .map(|rate| Arc::new(ConnectionCreationRate::new(rate)));
        let mut tls_by_listener = HashMap::new();
        for (endpoint, listener) in listeners {
            let acceptor = Acceptor {
                endpoint: Arc::new(ListenerInfo {
                    name: endpoint.listener_name.as_str().into(),
                    security_protocol: endpoint.security_protocol.as_str().into(),
                    tls: endpoint.tls.clone().map(|c| {
                        let current = Arc::new(RwLock::new(c));
                        tls_by_listener
                            .insert(endpoint.listener_name.clone(), Arc::clone(&current));
                        current
                    }),
                    principal_mapper: endpoint.principal_mapper.clone(),
                }),
                processors: Arc::clone(&processors),
                quotas: Arc::clone(&quotas),
                creation_rate: creation_rate.clone(),
                shutdown: shutdown_rx.clone(),
                config: Arc::clone(&config),
            };
            threads.push(
                std::thread::Builder::new()
                    .name(format!(
                        "data-plane-kafka-socket-acceptor-{}",
                        endpoint.listener_name
                    ))
                    .spawn(move || acceptor.run(listener))?,
            );
        }
        Ok(Self {
            bound,
            shutdown,
            threads,
            quotas,
            tls_by_listener,
            processor_metrics,
            started: Instant::now(),
        })
    }

    /// Seconds the network processors have spent idle (waiting for sockets), summed over
    /// processors: `rate()` of it divided by `num.network.threads` is Kafka's
    /// NetworkProcessorAvgIdlePercent.
    pub fn network_idle_seconds(&self) -> f64 {
        let elapsed = self.started.elapsed();
        let metrics = self
            .processor_metrics
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        metrics
            .iter()
            .map(|m| {
                elapsed
                    .saturating_sub(m.worker_total_busy_duration(0))
                    .as_secs_f64()
            })
            .sum()
    }

    /// Replaces a TLS listener's certificates and settings; connections accepted from now
    /// on use them (Kafka reloads keystores through dynamic `listener.name.X.ssl.*`
    /// configs). False when the listener has no TLS.
    pub fn update_tls(&self, listener_name: &str, config: Arc<rustls::ServerConfig>) -> bool {
        match self.tls_by_listener.get(listener_name) {
            Some(current) => {
                *current.write().unwrap_or_else(|e| e.into_inner()) = config;
                true
            }
            None => false,
        }
    }

    pub fn bound_listeners(&self) -> &[BoundListener] {
        &self.bound
    }

    /// Connections currently open.
    pub fn connection_count(&self) -> usize {
        self.quotas.total()
    }

    /// Stops accepting, lets every connection write the responses it owes, then joins the
    /// threads. Handlers must keep running until this returns.
    pub fn shutdown(self) {
        let _ = self.shutdown.send(true);
        for thread in self.threads {
            let _ = thread.join();
        }
    }
}

struct Acceptor {
    endpoint: Arc<ListenerInfo>,
    processors: Arc<Vec<mpsc::UnboundedSender<NewConnection>>>,
    quotas: Arc<ConnectionQuotas>,
    creation_rate: Option<Arc<ConnectionCreationRate>>,
    shutdown: watch::Receiver<bool>,
    config: Arc<SocketServerConfig>,
}

impl Acceptor {
    fn run(mut self, listener: StdListener) {
        let runtime = Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("acceptor runtime");
        runtime.block_on(async move {
            let listener = match TcpListener::from_std(listener) {
                Ok(l) => l,
                Err(e) => return warn!(error = %e, "acceptor could not start"),
            };
            let next = AtomicUsize::new(0);
            let mut spare = SpareDescriptor::open();
            let mut failures = 0u64;
            loop {
                let accepted = tokio::select! {
                    _ = self.shutdown.changed() => return,
                    accepted = listener.accept() => accepted,
                };
                let (stream, peer) = match accepted {
                    Ok(pair) => {
                        if failures > 0 {
                            info!(failures, "accepting connections again");
                            failures = 0;
                        }
                        pair
                    }
                    Err(e) => {
                        // Logged once per episode: a flood would otherwise flood the log too.
                        if failures == 0 {
                            warn!(error = %e, "accept failed; refusing connections until it succeeds");
                        }
                        failures += 1;
                        // Out of descriptors: free the spare one to accept and close the
                        // waiting connection, so the client is refused rather than left
                        // hanging in the backlog; otherwise back off instead of spinning.
                        if is_descriptor_exhaustion(&e) && spare.refuse_one(&listener).await {
                            continue;
                        }
                        tokio::select! {
                            _ = self.shutdown.changed() => return,
                            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                        }
                        continue;
                    }
                };
                if let Some(rate) = &self.creation_rate {
                    let wait = rate.acquire(std::time::Instant::now());
                    if !wait.is_zero() {
                        tokio::select! {
                            _ = self.shutdown.changed() => return,
                            _ = tokio::time::sleep(wait) => {}
                        }
                    }
                }
                let Some(slot) = self.quotas.try_acquire(peer.ip()) else {
                    debug!(%peer, "connection refused: max.connections or max.connections.per.ip reached");
                    continue;
                };
                self.configure(&stream);
                let Ok(stream) = stream.into_std() else { continue };
                let index = next.fetch_add(1, Ordering::Relaxed) % self.processors.len();
                let _ = self.processors[index].send(NewConnection {
                    stream,
                    peer,
                    endpoint: Arc::clone(&self.endpoint),
                    slot,
                });
            }
        });
    }

    fn configure(&self, stream: &TcpStream) {
        let socket = rustix::net::sockopt::set_socket_send_buffer_size;
        if let Some(size) = self.config.socket_send_buffer_bytes {
            let _ = socket(stream, size);
        }
        if let Some(size) = self.config.socket_receive_buffer_bytes {
            let _ = rustix::net::sockopt::set_socket_recv_buffer_size(stream, size);
        }
    }
}

/// EMFILE or ENFILE.
fn is_descriptor_exhaustion(e: &io::Error) -> bool {
    use rustix::io::Errno;
    matches!(Errno::from_io_error(e), Some(Errno::MFILE | Errno::NFILE))
}

/// A descriptor held in reserve (the classic libev/nginx answer to EMFILE): released
/// to accept one waiting connection and close it at once, then taken back.
struct SpareDescriptor(Option<std::fs::File>);

impl SpareDescriptor {
    fn open() -> Self {
        SpareDescriptor(std::fs::File::open("/dev/null").ok())
    }

    /// Refuses one waiting connection; false when there is no spare to release.
    async fn refuse_one(&mut self, listener: &TcpListener) -> bool {
        if self.0.take().is_none() {
            *self = Self::open();
            return false;
        }
        // The listener was just readable; don't wait if the client already left.
        let accepted = tokio::time::timeout(Duration::from_millis(10), listener.accept()).await;
        if let Ok(Ok((stream, peer))) = accepted {
            debug!(%peer, "connection refused: out of file descriptors");
            drop(stream);
        }
        *self = Self::open();
        self.0.is_some()
    }
}

/// A network thread: owns the connections handed to it and every byte they read or write.
struct Processor {
    id: usize,
    config: Arc<SocketServerConfig>,
    requests: crate::request_channel::RequestSender,
    metrics: Arc<RequestMetrics>,
    shutdown: watch::Receiver<bool>,
    next_connection_id: Arc<AtomicU64>,
    pool: MemoryPool,
    runtime_metrics: Arc<Mutex<Vec<RuntimeMetrics>>>,
}

impl Processor {
    fn run(mut self, mut new_connections: mpsc::UnboundedReceiver<NewConnection>) {
        let runtime = Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("processor runtime");
        self.runtime_metrics
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(runtime.metrics());
        runtime.block_on(async move {
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    _ = self.shutdown.changed() => break,
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                    new = new_connections.recv() => {
                        let Some(new) = new else { break };
                        let Ok(stream) = TcpStream::from_std(new.stream) else { continue };
                        let handler = ConnectionHandler {
                            context: Arc::new(RequestContext {
                                connection_id: self.next_connection_id.fetch_add(1, Ordering::Relaxed),
                                processor_id: self.id,
                                listener_name: Arc::clone(&new.endpoint.name),
                                security_protocol: Arc::clone(&new.endpoint.security_protocol),
                                client_addr: new.peer,
                                // SASL listeners learn who the client is from its
                                // SaslAuthenticate; the others know it at connect.
                                session: if new.endpoint.security_protocol.starts_with("SASL_") {
                                    Session::default()
                                } else {
                                    Session::authenticated(ANONYMOUS)
                                },
                            }),
                            requests: self.requests.clone(),
                            metrics: Arc::clone(&self.metrics),
                            config: Arc::clone(&self.config),
                            shutdown: self.shutdown.clone(),
                            slot: new.slot,
                            pool: self.pool.clone(),
                        };
                        let tls = new.endpoint.tls.as_ref().map(|current| {
                            Arc::clone(&current.read().unwrap_or_else(|e| e.into_inner()))
                        });
                        let mapper = new.endpoint.principal_mapper.clone();
                        connections.spawn(handler.run(stream, tls, mapper));
                    }
                }
            }
            // Shutdown: connections stop reading and flush what they owe; bound the wait.
            let drain = async { while connections.join_next().await.is_some() {} };
            if tokio::time::timeout(Duration::from_secs(30), drain).await.is_err() {
                connections.abort_all();
            }
        });
    }
}
