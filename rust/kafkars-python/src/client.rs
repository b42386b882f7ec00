//! Python's face of the Kafka client (`kafkars-client`): the security settings dict,
//! as `kafkars.security.inter_broker` and the tools resolve it, turned into the crate's
//! [`Security`], and `BrokerConnection`, whose requests and responses are the protocol
//! bridge's dicts. Type conversion only: the client is the crate's.

use std::sync::Mutex;
use std::time::Duration;

use kafka_protocol::messages::ApiKey;
use kafkars_client::{ClientError, ConnectOptions, SaslLogin, Security};
use pyo3::exceptions::{PyConnectionError, PyTimeoutError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::AuthenticationError;
use crate::protocol::{api_key, client_request_from_py, response_to_py, supported_versions};

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
    /// False: any certificate is taken (tools only).
    #[pyo3(item, default = true)]
    verify: bool,
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

/// `{"tls": {truststore, certificate_chain, private_key, check_hostname} | None,
/// "sasl": {mechanism, username, password} | None}`.
#[derive(FromPyObject)]
pub(crate) struct PySecurity {
    #[pyo3(item)]
    tls: Option<PyTlsClient>,
    #[pyo3(item)]
    sasl: Option<PySaslLogin>,
}

impl PySecurity {
    pub(crate) fn resolve(self) -> PyResult<Security> {
        let tls = match self.tls {
            None => None,
            Some(t) => {
                let identity = match (&t.private_key, &t.certificate_chain) {
                    (Some(key), Some(chain)) => Some((key.as_slice(), chain.as_slice())),
                    _ => None,
                };
                let config = if t.verify {
                    kafkars_client::tls::client_config(&t.truststore, identity, t.check_hostname)
                } else {
                    kafkars_client::tls::client_config_without_verification(identity)
                };
                Some(config.map_err(|e| PyValueError::new_err(e.to_string()))?)
            }
        };
        let sasl = self.sasl.map(|s| SaslLogin {
            mechanism: s.mechanism,
            username: s.username,
            password: s.password,
        });
        Ok(Security { tls, sasl })
    }
}

/// The Python exception for a client error: a refused login or certificate is
/// `AuthenticationError` (a ConnectionError, with `error_code`), the socket's errors are
/// OSErrors (TimeoutError when the broker did not answer in time), a response that cannot
/// be read or a request that cannot be sent ValueError.
pub(crate) fn client_error(py: Python<'_>, e: ClientError) -> PyErr {
    match e {
        ClientError::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            PyConnectionError::new_err(format!("the broker closed the connection: {io}"))
        }
        // A socket read or write timeout is WouldBlock on Unix (EAGAIN), TimedOut on Windows.
        ClientError::Io(io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            PyTimeoutError::new_err("timed out waiting for the broker")
        }
        ClientError::Io(io) => PyErr::from(io),
        e if e.is_authentication() => {
            let err = AuthenticationError::new_err(e.to_string());
            // Only fails on a broken interpreter; the message is there either way.
            let _ = err.value(py).setattr("error_code", e.error_code());
            err
        }
        e => PyValueError::new_err(e.to_string()),
    }
}

/// One connection to a broker (Kafka's NetworkClient, blocking): TLS and SASL as
/// `security` says, requests as dicts, ApiVersions asked when a version is left to it.
/// Every wait runs without the GIL. A connection that failed (other than a request that
/// could not be encoded) is closed; make a new one.
#[pyclass(frozen, name = "BrokerConnection", module = "kafkars._core")]
pub(crate) struct PyBrokerConnection {
    inner: Mutex<Option<kafkars_client::BrokerConnection>>,
    #[pyo3(get)]
    host: String,
    #[pyo3(get)]
    port: u16,
}

impl PyBrokerConnection {
    fn with<T>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut kafkars_client::BrokerConnection) -> Result<T, ClientError> + Send,
    ) -> PyResult<T>
    where
        T: Send,
    {
        let result = py.detach(|| {
            let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            let Some(connection) = guard.as_mut() else {
                return Err(None);
            };
            let result = f(connection);
            if let Err(e) = &result
                && !matches!(
                    e,
                    ClientError::Encode { .. } | ClientError::UnsupportedVersion { .. }
                )
            {
                // The stream may be out of step with the requests: never reused.
                *guard = None;
            }
            result.map_err(Some)
        });
        result.map_err(|e| match e {
            Some(e) => client_error(py, e),
            None => PyConnectionError::new_err(format!(
                "the connection to {}:{} is closed",
                self.host, self.port
            )),
        })
    }
}

#[pymethods]
impl PyBrokerConnection {
    /// Connects to `host:port`; `security` as `kafkars.security.inter_broker` gives it
    /// (None: PLAINTEXT).
    #[new]
    #[pyo3(signature = (host, port, *, client_id = "kafkars", security = None, timeout_s = 30.0, max_response_bytes = kafkars_client::DEFAULT_MAX_RESPONSE_BYTES))]
    fn new(
        py: Python<'_>,
        host: String,
        port: u16,
        client_id: &str,
        security: Option<PySecurity>,
        timeout_s: f64,
        max_response_bytes: usize,
    ) -> PyResult<Self> {
        let security = match security {
            Some(s) => s.resolve()?,
            None => Security::default(),
        };
        let mut options = ConnectOptions::new(client_id, security);
        options.timeout = Duration::try_from_secs_f64(timeout_s)
            .ok()
            .filter(|t| !t.is_zero())
            .ok_or_else(|| PyValueError::new_err(format!("timeout_s {timeout_s} is not > 0")))?;
        options.max_response_bytes = max_response_bytes;
        let connection = py
            .detach(|| kafkars_client::BrokerConnection::connect(&host, port, &options))
            .map_err(|e| client_error(py, e))?;
        Ok(Self {
            inner: Mutex::new(Some(connection)),
            host,
            port,
        })
    }

    /// Sends `body` (a request dict) as `api_key` at `version` (None: the highest the
    /// broker and kafkars' codec both support) and returns the response dict.
    #[pyo3(signature = (api_key, version, body))]
    fn call<'py>(
        &self,
        py: Python<'py>,
        api_key: i16,
        version: Option<i16>,
        body: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let api = self::api_key(api_key)?;
        let request = client_request_from_py(api, body)?;
        let response = self.with(py, |c| {
            let version = match version {
                Some(v) => v,
                None => c.negotiate(api, supported_versions(api))?,
            };
            c.call(api, version, &request)
        })?;
        response_to_py(py, &response)
    }

    /// The version of `api_key` `call(api_key, None, ...)` sends.
    fn version(&self, py: Python<'_>, api_key: i16) -> PyResult<i16> {
        let api: ApiKey = self::api_key(api_key)?;
        self.with(py, |c| c.negotiate(api, supported_versions(api)))
    }

    /// `{api_key: (min_version, max_version)}` the broker supports (its ApiVersions answer).
    fn api_versions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let versions = self.with(py, |c| c.broker_versions().cloned())?;
        let out = PyDict::new(py);
        for (key, range) in versions {
            out.set_item(key, range)?;
        }
        Ok(out)
    }

    /// Closes the connection. Idempotent.
    fn close(&self, py: Python<'_>) {
        py.detach(|| *self.inner.lock().unwrap_or_else(|e| e.into_inner()) = None);
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) {
        self.close(py);
    }

    fn __repr__(&self) -> String {
        format!("BrokerConnection({}:{})", self.host, self.port)
    }
}
