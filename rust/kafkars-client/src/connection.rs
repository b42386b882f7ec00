//! A blocking connection to one broker, as Kafka's NetworkClient sets one up: TCP, TLS
//! for SSL and SASL_SSL, a SASL login (SaslHandshake, SaslAuthenticate) for SASL_*, then
//! requests answered in order on it. ApiVersions is asked once, when a caller wants a
//! version chosen, and each API then takes the highest version both sides support.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestKind, ResponseKind,
    SaslAuthenticateRequest, SaslHandshakeRequest,
};
use kafka_protocol::protocol::{Decodable, StrBytes, VersionRange};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

use crate::frame::{frame_request, parse_response, read_frame};
use crate::sasl::{SaslClient, SaslLogin};
use crate::{ClientError, UNSUPPORTED_VERSION};

const SASL_HANDSHAKE_VERSION: i16 = 1;
const SASL_AUTHENTICATE_VERSION: i16 = 2;
/// Kafka's error codes a SASL login can end with.
const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
/// The largest response taken unless the caller says otherwise (a fetch asks for at
/// most its max bytes plus one batch per partition; anything bigger is a broken peer).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 256 * 1024 * 1024;

/// How a connection authenticates: `tls` for SSL and SASL_SSL, `sasl` for
/// SASL_PLAINTEXT and SASL_SSL; neither is PLAINTEXT.
#[derive(Debug, Clone, Default)]
pub struct Security {
    pub tls: Option<Arc<ClientConfig>>,
    pub sasl: Option<SaslLogin>,
}

/// What `BrokerConnection::connect` needs besides the address.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// The request header's client id.
    pub client_id: Option<String>,
    /// Bounds the connect and every read and write.
    pub timeout: Duration,
    /// Responses over this size are refused before they are read.
    pub max_response_bytes: usize,
    pub security: Security,
}

impl ConnectOptions {
    pub fn new(client_id: impl Into<String>, security: Security) -> Self {
        Self {
            client_id: Some(client_id.into()),
            timeout: Duration::from_secs(30),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            security,
        }
    }
}

/// Plain TCP, or TLS over it.
enum BrokerStream {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl Read for BrokerStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Self::Plain(s) => s.read(buf),
            Self::Tls(s) => s.read(buf),
        }
    }
}

impl Write for BrokerStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Self::Plain(s) => s.write(buf),
            Self::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Self::Plain(s) => s.flush(),
            Self::Tls(s) => s.flush(),
        }
    }
}

/// The version of `api` to use: the highest both the broker (`broker`, from its
/// ApiVersions answer; None when it does not list the API) and the client support.
pub fn pick_version(
    api: ApiKey,
    broker: Option<(i16, i16)>,
    client: VersionRange,
) -> Result<i16, ClientError> {
    let (broker_min, broker_max) = broker.unwrap_or((-1, -1));
    let version = broker_max.min(client.max);
    if broker.is_none() || version < broker_min.max(client.min) {
        return Err(ClientError::UnsupportedVersion {
            api,
            broker_min,
            broker_max,
            client_min: client.min,
            client_max: client.max,
        });
    }
    Ok(version)
}

/// One connection to a broker. After an error other than `Encode`, `UnsupportedVersion`
/// or `Kafka` the stream may be out of step: drop the connection.
pub struct BrokerConnection {
    stream: BrokerStream,
    correlation_id: i32,
    client_id: Option<String>,
    max_response_bytes: usize,
    /// The broker's `(min, max)` version per API key, once asked.
    broker_versions: Option<HashMap<i16, (i16, i16)>>,
}

impl BrokerConnection {
    /// Connects to `host:port` (each address the name resolves to in turn), then does the
    /// TLS handshake and the SASL login `options.security` asks for.
    pub fn connect(host: &str, port: u16, options: &ConnectOptions) -> Result<Self, ClientError> {
        let host = host.trim_matches(|c| c == '[' || c == ']');
        let mut last_error = None;
        let mut socket = None;
        for addr in (host, port).to_socket_addrs()? {
            match TcpStream::connect_timeout(&addr, options.timeout) {
                Ok(s) => {
                    socket = Some(s);
                    break;
                }
                Err(e) => last_error = Some(e),
            }
        }
        let socket = socket.ok_or_else(|| {
            last_error.unwrap_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("no address for {host}"),
                )
            })
        })?;
        socket.set_nodelay(true)?;
        socket.set_read_timeout(Some(options.timeout))?;
        socket.set_write_timeout(Some(options.timeout))?;
        let stream = match &options.security.tls {
            None => BrokerStream::Plain(socket),
            Some(config) => {
                let name = ServerName::try_from(host.to_string()).map_err(|e| {
                    ClientError::TlsConfig(format!("{host} is not a TLS server name: {e}"))
                })?;
                let connection =
                    ClientConnection::new(Arc::clone(config), name).map_err(ClientError::Tls)?;
                let mut stream = StreamOwned::new(connection, socket);
                // The handshake now, so a refused certificate shows as such at connect.
                while stream.conn.is_handshaking() {
                    stream.conn.complete_io(&mut stream.sock)?;
                }
                BrokerStream::Tls(Box::new(stream))
            }
        };
        let mut connection = Self {
            stream,
            correlation_id: 0,
            client_id: options.client_id.clone(),
            max_response_bytes: options.max_response_bytes,
            broker_versions: None,
        };
        if let Some(login) = &options.security.sasl {
            connection.authenticate(login)?;
        }
        Ok(connection)
    }

    /// Sends `request` as `api` at `version` and reads the response frame (after its
    /// size), returning it with the correlation id it must carry: for a caller that
    /// decodes the response where it lies (`frame::parse_response`).
    pub fn round_trip(
        &mut self,
        request: &RequestKind,
        api: ApiKey,
        version: i16,
    ) -> Result<(Bytes, i32), ClientError> {
        self.correlation_id = self.correlation_id.wrapping_add(1);
        let frame = frame_request(
            request,
            api,
            version,
            self.correlation_id,
            self.client_id.as_deref(),
        )?;
        self.stream.write_all(&frame)?;
        self.stream.flush()?;
        let response = read_frame(&mut self.stream, self.max_response_bytes)?;
        Ok((response, self.correlation_id))
    }

    /// One request and its response, at the given version.
    pub fn call(
        &mut self,
        api: ApiKey,
        version: i16,
        request: &RequestKind,
    ) -> Result<ResponseKind, ClientError> {
        let (frame, correlation_id) = self.round_trip(request, api, version)?;
        parse_response(frame, api, version, correlation_id)
    }

    /// The broker's `(min, max)` version per API key; asks ApiVersions the first time.
    pub fn broker_versions(&mut self) -> Result<&HashMap<i16, (i16, i16)>, ClientError> {
        if self.broker_versions.is_none() {
            let response = self.api_versions()?;
            self.broker_versions = Some(
                response
                    .api_keys
                    .iter()
                    .map(|k| (k.api_key, (k.min_version, k.max_version)))
                    .collect(),
            );
        }
        Ok(self.broker_versions.as_ref().expect("set above"))
    }

    /// The version of `api` to send: the highest both the broker and `client` take.
    pub fn negotiate(&mut self, api: ApiKey, client: VersionRange) -> Result<i16, ClientError> {
        let broker = self.broker_versions()?.get(&(api as i16)).copied();
        pick_version(api, broker, client)
    }

    /// ApiVersions at the newest version this client knows; a broker that does not take
    /// it answers UNSUPPORTED_VERSION in v0's format with its own range, and is asked
    /// again at the newest version it takes (Kafka's client does the same).
    fn api_versions(&mut self) -> Result<ApiVersionsResponse, ClientError> {
        let ours = ApiKey::ApiVersions.valid_versions();
        let mut version = ours.max;
        loop {
            let request = RequestKind::ApiVersions(
                ApiVersionsRequest::default()
                    .with_client_software_name(StrBytes::from_static_str("kafkars-client"))
                    .with_client_software_version(StrBytes::from_static_str(env!(
                        "CARGO_PKG_VERSION"
                    ))),
            );
            let (frame, correlation_id) =
                self.round_trip(&request, ApiKey::ApiVersions, version)?;
            let response =
                match parse_response(frame.clone(), ApiKey::ApiVersions, version, correlation_id) {
                    Ok(ResponseKind::ApiVersions(r)) => r,
                    Ok(_) => unreachable!("parse_response decodes the API asked for"),
                    Err(e @ ClientError::Correlation { .. }) => return Err(e),
                    // The v0 error answer does not parse at a flexible version.
                    Err(e) => match Self::v0_api_versions(frame) {
                        Some(r) if r.error_code == UNSUPPORTED_VERSION => r,
                        _ => return Err(e),
                    },
                };
            if response.error_code == UNSUPPORTED_VERSION && version > 0 {
                let theirs = response
                    .api_keys
                    .iter()
                    .find(|k| k.api_key == ApiKey::ApiVersions as i16)
                    .map_or(0, |k| k.max_version);
                version = theirs.min(version - 1).max(0);
                continue;
            }
            if response.error_code != 0 {
                return Err(ClientError::Kafka {
                    api: ApiKey::ApiVersions,
                    error_code: response.error_code,
                });
            }
            return Ok(response);
        }
    }

    fn v0_api_versions(mut frame: Bytes) -> Option<ApiVersionsResponse> {
        // Response header v0: the correlation id (already checked by the caller's try).
        if frame.len() < 4 {
            return None;
        }
        let _ = frame.split_to(4);
        ApiVersionsResponse::decode(&mut frame, 0).ok()
    }

    /// SaslHandshake, then SaslAuthenticate rounds until the mechanism is done.
    fn authenticate(&mut self, login: &SaslLogin) -> Result<(), ClientError> {
        let handshake = SaslHandshakeRequest::default()
            .with_mechanism(StrBytes::from_string(login.mechanism.clone()));
        let ResponseKind::SaslHandshake(response) = self.call(
            ApiKey::SaslHandshake,
            SASL_HANDSHAKE_VERSION,
            &RequestKind::SaslHandshake(handshake),
        )?
        else {
            unreachable!("parse_response decodes the API asked for")
        };
        if response.error_code != 0 {
            let offered: Vec<String> = response.mechanisms.iter().map(|m| m.to_string()).collect();
            return Err(ClientError::Authentication {
                error_code: Some(response.error_code),
                message: format!(
                    "the broker does not take SASL {} (it takes {})",
                    login.mechanism,
                    if offered.is_empty() {
                        "none".to_string()
                    } else {
                        offered.join(", ")
                    }
                ),
            });
        }
        let refused = |error_code: Option<i16>, message: String| ClientError::Authentication {
            error_code,
            message: format!(
                "SASL authentication failed ({} as {}): {message}",
                login.mechanism, login.username
            ),
        };
        let mut client = SaslClient::new(login).map_err(|e| ClientError::Authentication {
            error_code: Some(UNSUPPORTED_SASL_MECHANISM),
            message: e,
        })?;
        let mut token = client.first();
        loop {
            let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
            let ResponseKind::SaslAuthenticate(response) = self.call(
                ApiKey::SaslAuthenticate,
                SASL_AUTHENTICATE_VERSION,
                &RequestKind::SaslAuthenticate(request),
            )?
            else {
                unreachable!("parse_response decodes the API asked for")
            };
            if response.error_code != 0 {
                let message = response.error_message.map(|m| m.to_string());
                return Err(refused(
                    Some(response.error_code),
                    message.unwrap_or_else(|| "refused".into()),
                ));
            }
            match client.next(&response.auth_bytes) {
                Ok(Some(next)) => token = next,
                Ok(None) => return Ok(()),
                Err(e) => return Err(refused(None, e)),
            }
        }
    }
}
