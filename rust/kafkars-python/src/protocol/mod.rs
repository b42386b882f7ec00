//! The bridge between kafka-protocol messages and plain Python data.
//!
//! Python handlers see every request body as a `dict` keyed by kafka-protocol's
//! snake_case field names (nested structs are dicts, arrays are lists, strings are
//! `str`, UUIDs are `uuid.UUID`, record data is a [`RecordSet`]) and return responses
//! in the same shape. The per-message code is generated (`gen/gen_protocol_bridge.py`
//! → `generated.rs`); leaf types are in `types.rs`, record fields in `records.rs`.
//!
//! Entry points for the server: [`request_to_py`], [`response_from_py`],
//! [`encode_response`], [`api_key_name`].
use bytes::BytesMut;
use kafka_protocol::messages::{
    ApiKey, ConsumerProtocolAssignment, ConsumerProtocolSubscription, RequestKind,
};
use kafka_protocol::protocol::{Decodable, Encodable, Message};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyMapping, PyString};

use kafkars_client::frame as client;

mod generated;
mod records;
mod types;

#[allow(unused_imports)] // the server layer uses what the test functions here do not
pub(crate) use generated::{
    api_key_name, encode_response, request_from_py, request_to_py, response_from_py,
    response_to_py, sanitize_response, supported_versions,
};
use generated::{decode_data, encode_data};
pub(crate) use records::RecordSet;

/// Rust value → plain Python data.
pub(crate) trait ToPy {
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>>;
}

/// Drop what a protocol version cannot carry. Generated for every struct a response
/// can contain: resets to its `Default` value each field that does not exist at
/// `version` (kafka-protocol's `encode` refuses a non-default value there: "A field
/// is set that is not available on the selected protocol version") and recurses into
/// the nested structs of the fields that do. This is what Kafka's own serialisation
/// does with ignorable fields, and it lets handlers fill every field whatever version
/// they answer. The field versions are read off kafka-protocol's `encode` bodies by
/// `gen/gen_protocol_bridge.py`.
pub(crate) trait ForVersion {
    fn retain_version(&mut self, version: i16);
}

/// Plain Python data → Rust value. Structs come from a dict (or any Mapping): keys
/// override `Default::default()`, missing keys keep the default, unknown keys raise.
pub(crate) trait FromPy: Sized {
    fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Self>;
}

/// Re-raise `err` (same exception type when possible) with `context` prefixed, so a
/// bad value deep inside a response names its path: `MetadataResponse.brokers[1]: ...`.
/// Only runs on the error path.
pub(crate) fn with_context(py: Python<'_>, err: PyErr, context: &str) -> PyErr {
    let message = err.value(py).to_string();
    // "[i]" segments attach to the field name before them.
    let sep = if message.starts_with('[') { "" } else { ": " };
    let ty = err.get_type(py);
    match ty.call1((format!("{context}{sep}{message}"),)) {
        Ok(value) => {
            let wrapped = PyErr::from_value(value);
            wrapped.set_cause(py, Some(err));
            wrapped
        }
        // Exception types with unusual constructors keep their own message.
        Err(_) => err,
    }
}

/// Feed each `key, value` of a struct's dict to `set`, which returns `false` for a
/// key the struct does not have. Called by every generated `FromPy` impl.
pub(crate) fn for_each_field<'py>(
    obj: &Bound<'py, PyAny>,
    struct_name: &'static str,
    fields: &'static [&'static str],
    mut set: impl FnMut(&str, &Bound<'py, PyAny>) -> PyResult<bool>,
) -> PyResult<()> {
    let py = obj.py();
    let mut apply = |key: Bound<'py, PyAny>, value: Bound<'py, PyAny>| -> PyResult<()> {
        let Ok(key) = key.cast::<PyString>() else {
            return Err(PyTypeError::new_err(format!(
                "{struct_name}: field names must be str, got {key:?}"
            )));
        };
        let key = key.to_str()?;
        match set(key, &value) {
            Ok(true) => Ok(()),
            Ok(false) => Err(PyTypeError::new_err(format!(
                "{struct_name} has no field '{key}' (fields: {})",
                fields.join(", ")
            ))),
            Err(err) => Err(with_context(py, err, &format!("{struct_name}.{key}"))),
        }
    };
    if let Ok(dict) = obj.cast::<PyDict>() {
        for (key, value) in dict.iter() {
            apply(key, value)?;
        }
    } else if let Ok(mapping) = obj.cast::<PyMapping>() {
        for item in mapping.items()?.iter() {
            let (key, value) = item.extract()?;
            apply(key, value)?;
        }
    } else {
        return Err(PyTypeError::new_err(format!(
            "{struct_name}: expected a dict, got {}",
            obj.get_type().name()?
        )));
    }
    Ok(())
}

/// A client's request dict as its message (`records` may be plain bytes there).
pub(crate) fn client_request_from_py(
    api: ApiKey,
    request: &Bound<'_, PyAny>,
) -> PyResult<RequestKind> {
    records::with_client_records(|| request_from_py(api, request))
}

pub(crate) fn api_key(key: i16) -> PyResult<ApiKey> {
    ApiKey::try_from(key).map_err(|()| PyValueError::new_err(format!("unknown api key {key}")))
}

/// Decode a request body (no header) into its dict. For tests and tools.
#[pyfunction]
fn decode_request<'py>(
    py: Python<'py>,
    api_key: i16,
    api_version: i16,
    body: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let key = self::api_key(api_key)?;
    // bytes or bytearray (kafka-python encodes into bytearrays).
    let mut buf = bytes::Bytes::from_py(body)?;
    let request = RequestKind::decode(key, &mut buf, api_version)
        .map_err(|err| PyValueError::new_err(format!("{err:#}")))?;
    // Strict here (a tool's input should be exactly one body); the server need not be.
    if !buf.is_empty() {
        return Err(PyValueError::new_err(format!(
            "{} trailing bytes after the request body",
            buf.len()
        )));
    }
    request_to_py(py, &request)
}

/// Encode a response dict into its body bytes (no header). For tests and tools.
#[pyfunction(name = "encode_response")]
fn encode_response_body<'py>(
    py: Python<'py>,
    api_key: i16,
    api_version: i16,
    response: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let response = response_from_py(self::api_key(api_key)?, response)?;
    let mut buf = BytesMut::new();
    encode_response(response, api_version, &mut buf)
        .map_err(|err| PyValueError::new_err(format!("{err:#}")))?;
    Ok(PyBytes::new(py, &buf))
}

/// The response dict as the broker would see it after conversion: validated, with
/// every default filled in and, given a `version`, the fields that version cannot
/// carry reset to their defaults (what `encode_response` sends). For tests.
#[pyfunction]
#[pyo3(signature = (api_key, response, version=None))]
fn normalize_response<'py>(
    py: Python<'py>,
    api_key: i16,
    response: &Bound<'py, PyAny>,
    version: Option<i16>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut response = response_from_py(self::api_key(api_key)?, response)?;
    if let Some(version) = version {
        sanitize_response(&mut response, version);
    }
    response_to_py(py, &response)
}

/// A request frame (size prefix, request header, body) from a request dict: the client
/// side, for the Spark reader's planning requests and tools.
#[pyfunction]
#[pyo3(signature = (api_key, api_version, correlation_id, client_id, request))]
fn encode_request<'py>(
    py: Python<'py>,
    api_key: i16,
    api_version: i16,
    correlation_id: i32,
    client_id: Option<&str>,
    request: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let api = self::api_key(api_key)?;
    let request = client_request_from_py(api, request)?;
    let frame = client::frame_request(&request, api, api_version, correlation_id, client_id)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(PyBytes::new(py, &frame))
}

/// The response dict from a response frame (after its size prefix), checking that it
/// answers `correlation_id`.
#[pyfunction]
fn decode_response<'py>(
    py: Python<'py>,
    api_key: i16,
    api_version: i16,
    correlation_id: i32,
    frame: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let api = self::api_key(api_key)?;
    let frame = bytes::Bytes::from_py(frame)?;
    let response = py
        .detach(|| client::parse_response(frame, api, api_version, correlation_id))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    response_to_py(py, &response)
}

/// Reads a consumer protocol message (a JoinGroup's protocol metadata or a
/// SyncGroup's assignment): a version, then the message at that version. A version
/// newer than kafka-protocol knows is read as the newest it knows, the fields a newer
/// client added being ignored as Kafka's ConsumerProtocol does.
fn decode_consumer_protocol<'py, M: Decodable + Message + ToPy>(
    py: Python<'py>,
    data: &[u8],
) -> PyResult<(i16, Bound<'py, PyAny>)> {
    let mut buf = bytes::Bytes::copy_from_slice(data);
    if buf.len() < 2 {
        return Err(PyValueError::new_err(
            "consumer protocol data shorter than its version",
        ));
    }
    let version = bytes::Buf::get_i16(&mut buf);
    if version < 0 {
        return Err(PyValueError::new_err(format!(
            "negative consumer protocol version {version}"
        )));
    }
    let message = M::decode(&mut buf, version.min(M::VERSIONS.max))
        .map_err(|e| PyValueError::new_err(format!("{e:#}")))?;
    Ok((version, message.to_py(py)?))
}

fn encode_consumer_protocol<'py, M: Encodable + FromPy>(
    py: Python<'py>,
    version: i16,
    message: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let message = M::from_py(message)?;
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&version.to_be_bytes());
    message
        .encode(&mut buf, version)
        .map_err(|e| PyValueError::new_err(format!("{e:#}")))?;
    Ok(PyBytes::new(py, &buf))
}

/// `(version, dict)` of a ConsumerProtocolSubscription.
#[pyfunction]
fn decode_subscription<'py>(py: Python<'py>, data: &[u8]) -> PyResult<(i16, Bound<'py, PyAny>)> {
    decode_consumer_protocol::<ConsumerProtocolSubscription>(py, data)
}

/// `(version, dict)` of a ConsumerProtocolAssignment.
#[pyfunction]
fn decode_assignment<'py>(py: Python<'py>, data: &[u8]) -> PyResult<(i16, Bound<'py, PyAny>)> {
    decode_consumer_protocol::<ConsumerProtocolAssignment>(py, data)
}

/// A ConsumerProtocolSubscription at `version`, version prefix included.
#[pyfunction]
fn encode_subscription<'py>(
    py: Python<'py>,
    version: i16,
    subscription: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    encode_consumer_protocol::<ConsumerProtocolSubscription>(py, version, subscription)
}

/// A ConsumerProtocolAssignment at `version`, version prefix included.
#[pyfunction]
fn encode_assignment<'py>(
    py: Python<'py>,
    version: i16,
    assignment: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    encode_consumer_protocol::<ConsumerProtocolAssignment>(py, version, assignment)
}

/// One `data` message (a coordinator record key or value, a consumer protocol message)
/// from `buf` at `version`. Called by the generated `decode_data` dispatch.
fn decode_data_as<'py, M: Decodable + ToPy>(
    py: Python<'py>,
    buf: &mut bytes::Bytes,
    version: i16,
) -> PyResult<Bound<'py, PyAny>> {
    let message = M::decode(buf, version).map_err(|e| PyValueError::new_err(format!("{e:#}")))?;
    message.to_py(py)
}

/// One `data` message from its dict, appended to `buf` at `version`. Called by the
/// generated `encode_data` dispatch.
fn encode_data_as<M: Encodable + FromPy>(
    obj: &Bound<'_, PyAny>,
    version: i16,
    buf: &mut BytesMut,
) -> PyResult<()> {
    M::from_py(obj)?
        .encode(buf, version)
        .map_err(|e| PyValueError::new_err(format!("{e:#}")))
}

/// A stored record key or value: the int16 `version` (for a coordinator key, Kafka's
/// record type), then the message `name` (`"OffsetCommitValue"`, `"TransactionLogKey"`,
/// ...) at that version, from its dict.
#[pyfunction]
fn encode_record<'py>(
    py: Python<'py>,
    name: &str,
    version: i16,
    record: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&version.to_be_bytes());
    encode_data(name, record, version, &mut buf)?;
    Ok(PyBytes::new(py, &buf))
}

/// `(version, dict)` of a stored record key or value written by `encode_record` (or by
/// Kafka). Bytes after the message are ignored, as Kafka's coordinators do.
#[pyfunction]
fn decode_record<'py>(
    py: Python<'py>,
    name: &str,
    data: &[u8],
) -> PyResult<(i16, Bound<'py, PyAny>)> {
    let mut buf = bytes::Bytes::copy_from_slice(data);
    if buf.len() < 2 {
        return Err(PyValueError::new_err(format!(
            "{name}: {} bytes, shorter than its version",
            buf.len()
        )));
    }
    let version = bytes::Buf::get_i16(&mut buf);
    Ok((version, decode_data(py, name, &mut buf, version)?))
}

/// `{name: (api_key, min_version, max_version)}` for every API kafka-protocol knows;
/// the versions are those the bridge can decode and encode (`supported_versions`).
#[pyfunction]
fn api_keys(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    for key in ApiKey::iter() {
        let range = supported_versions(key);
        out.set_item(api_key_name(key), (key as i16, range.min, range.max))?;
    }
    Ok(out)
}

/// Register `RecordSet` on `kafkars._core` and the `kafkars._core.protocol` helpers.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<RecordSet>()?;
    let sub = PyModule::new(py, "protocol")?;
    sub.add_function(wrap_pyfunction!(decode_request, &sub)?)?;
    sub.add_function(wrap_pyfunction!(encode_response_body, &sub)?)?;
    sub.add_function(wrap_pyfunction!(normalize_response, &sub)?)?;
    sub.add_function(wrap_pyfunction!(api_keys, &sub)?)?;
    sub.add_function(wrap_pyfunction!(encode_request, &sub)?)?;
    sub.add_function(wrap_pyfunction!(decode_response, &sub)?)?;
    sub.add_function(wrap_pyfunction!(decode_subscription, &sub)?)?;
    sub.add_function(wrap_pyfunction!(decode_assignment, &sub)?)?;
    sub.add_function(wrap_pyfunction!(encode_subscription, &sub)?)?;
    sub.add_function(wrap_pyfunction!(encode_assignment, &sub)?)?;
    sub.add_function(wrap_pyfunction!(encode_record, &sub)?)?;
    sub.add_function(wrap_pyfunction!(decode_record, &sub)?)?;
    m.add_submodule(&sub)?;
    // Make `import kafkars._core.protocol` work, not only attribute access.
    py.import("sys")?
        .getattr("modules")?
        .set_item("kafkars._core.protocol", &sub)?;
    Ok(())
}
