//! The client side of the inter-broker listener (`inter.broker.listener.name`): a
//! blocking connection to another broker, in TLS when the listener is SSL or SASL_SSL,
//! and the SASL login its SASL_* protocols need. Python resolves the settings
//! (`kafkars.security.inter_broker`) and passes them as a dict.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

use crate::sasl_client::SaslLogin;

#[derive(FromPyObject)]
struct PyTlsClient {
    #[pyo3(item)]
    truststore: Vec<u8>,
    #[pyo3(item)]
    certificate_chain: Option<Vec<u8>>,
    #[pyo3(item)]
    private_key: Option<Vec<u8>>,
    #[pyo3(item)]
    check_hostname: bool,
}

#[derive(FromPyObject)]
struct PySaslLogin {
    #[pyo3(item)]
    mechanism: String,
    #[pyo3(item)]
    username: String,
    #[pyo3(item)]
    password: String,
}

#[derive(FromPyObject)]
pub(crate) struct PyInterBrokerSecurity {
    #[pyo3(item)]
    tls: Option<PyTlsClient>,
    #[pyo3(item)]
    sasl: Option<PySaslLogin>,
}

/// What a broker needs to open a connection to another broker's inter-broker listener.
#[derive(Debug, Clone, Default)]
pub(crate) struct InterBrokerSecurity {
    pub(crate) tls: Option<Arc<ClientConfig>>,
    pub(crate) sasl: Option<SaslLogin>,
}

impl PyInterBrokerSecurity {
    pub(crate) fn resolve(self) -> PyResult<InterBrokerSecurity> {
        let tls = match self.tls {
            None => None,
            Some(t) => {
                let identity = match (&t.private_key, &t.certificate_chain) {
                    (Some(key), Some(chain)) => Some((key.as_slice(), chain.as_slice())),
                    _ => None,
                };
                Some(
                    kafkars_server::tls::client_config(&t.truststore, identity, t.check_hostname)
                        .map_err(|e| PyValueError::new_err(e.to_string()))?,
                )
            }
        };
        let sasl = self.sasl.map(|s| SaslLogin {
            mechanism: s.mechanism,
            username: s.username,
            password: s.password,
        });
        Ok(InterBrokerSecurity { tls, sasl })
    }
}

/// A connection to another broker: plain TCP or TLS over it.
pub(crate) enum BrokerStream {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl BrokerStream {
    /// Wraps a connected socket in TLS when `tls` is set; the handshake runs with the
    /// first read or write, under the socket's timeouts.
    pub(crate) fn new(
        socket: TcpStream,
        host: &str,
        tls: Option<&Arc<ClientConfig>>,
    ) -> std::io::Result<Self> {
        let Some(config) = tls else {
            return Ok(Self::Plain(socket));
        };
        let invalid = |e: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, e);
        let name = ServerName::try_from(host.trim_matches(|c| c == '[' || c == ']').to_string())
            .map_err(|e| invalid(format!("{host} is not a TLS server name: {e}")))?;
        let connection =
            ClientConnection::new(Arc::clone(config), name).map_err(|e| invalid(e.to_string()))?;
        Ok(Self::Tls(Box::new(StreamOwned::new(connection, socket))))
    }
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
