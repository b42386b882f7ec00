//! What can go wrong talking to a broker, with the Kafka error code where the broker
//! gave one.

use kafka_protocol::messages::ApiKey;

/// Why a connection could not be made or a request answered.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The socket: cannot connect, timed out, closed by the broker.
    #[error("{0}")]
    Io(std::io::Error),
    /// The TLS handshake failed (a certificate not trusted or not naming the host).
    #[error("TLS handshake failed: {}", tls_reason(.0))]
    Tls(rustls::Error),
    /// The TLS settings cannot make a client (the message names the setting).
    #[error("{0}")]
    TlsConfig(String),
    /// The broker refused the SASL login or does not take the mechanism; `error_code` is
    /// the broker's (UNSUPPORTED_SASL_MECHANISM, SASL_AUTHENTICATION_FAILED) when it gave one.
    #[error("{message}")]
    Authentication {
        error_code: Option<i16>,
        message: String,
    },
    #[error("cannot encode {api:?} v{version}: {reason}")]
    Encode {
        api: ApiKey,
        version: i16,
        reason: String,
    },
    #[error("cannot decode the {api:?} v{version} response: {reason}")]
    Decode {
        api: ApiKey,
        version: i16,
        reason: String,
    },
    #[error("correlation id {got} in the response, {expected} expected")]
    Correlation { expected: i32, got: i32 },
    /// A response size off the wire that is negative or over the limit.
    #[error("response size {size} is out of range (at most {limit} bytes)")]
    FrameSize { size: i32, limit: usize },
    /// No version of `api` is both the broker's and this client's.
    #[error(
        "{api:?}: the broker takes versions {broker_min}..={broker_max}, this client \
         {client_min}..={client_max}"
    )]
    UnsupportedVersion {
        api: ApiKey,
        broker_min: i16,
        broker_max: i16,
        client_min: i16,
        client_max: i16,
    },
    /// A request the broker answered with an error code the client cannot go on from.
    #[error("{api:?} failed with {}", error_name(*.error_code))]
    Kafka { api: ApiKey, error_code: i16 },
    /// A topic-partition's error in an answer (`partition` -1: the topic's).
    #[error("{api:?} {topic}-{partition} failed with {}", error_name(*.error_code))]
    Partition {
        api: ApiKey,
        error_code: i16,
        topic: String,
        partition: i32,
    },
    /// A call the producer's state does not allow (Kafka's IllegalStateException).
    #[error("{0}")]
    InvalidState(String),
}

/// `NOT_LEADER_OR_FOLLOWER (6)`: the code with Kafka's name for it.
fn error_name(code: i16) -> String {
    match kafka_protocol::ResponseError::try_from_code(code) {
        Some(kafka_protocol::ResponseError::Unknown(_)) | None => format!("error code {code}"),
        Some(e) => format!("{e:?} ({code})"),
    }
}

/// A refused certificate in the words Kafka's and OpenSSL's logs use, so an operator
/// searching for them finds it.
fn tls_reason(e: &rustls::Error) -> String {
    use rustls::CertificateError::{NotValidForName, NotValidForNameContext};
    match e {
        rustls::Error::InvalidCertificate(NotValidForName | NotValidForNameContext { .. }) => {
            format!("certificate verify failed: the certificate doesn't match the host name ({e})")
        }
        rustls::Error::InvalidCertificate(_) => format!("certificate verify failed ({e})"),
        _ => e.to_string(),
    }
}

impl ClientError {
    /// The Kafka error code, when the broker gave one.
    pub fn error_code(&self) -> Option<i16> {
        match self {
            Self::Authentication { error_code, .. } => *error_code,
            Self::Kafka { error_code, .. } | Self::Partition { error_code, .. } => {
                Some(*error_code)
            }
            Self::UnsupportedVersion { .. } => Some(crate::UNSUPPORTED_VERSION),
            _ => None,
        }
    }

    /// A refused login or TLS handshake: the settings are wrong, which retrying does not
    /// fix (Kafka's AuthenticationException, SslAuthenticationException included).
    pub fn is_authentication(&self) -> bool {
        matches!(self, Self::Authentication { .. } | Self::Tls(_))
    }
}

impl From<rustls::Error> for ClientError {
    fn from(e: rustls::Error) -> Self {
        Self::Tls(e)
    }
}

impl From<std::io::Error> for ClientError {
    /// rustls reports a failed handshake through the stream as an io::Error around a
    /// rustls::Error: that one is unwrapped, so a refused certificate is told apart.
    fn from(e: std::io::Error) -> Self {
        if e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>()) {
            let inner = e.into_inner().expect("checked above");
            return Self::Tls(*inner.downcast::<rustls::Error>().expect("checked above"));
        }
        Self::Io(e)
    }
}
