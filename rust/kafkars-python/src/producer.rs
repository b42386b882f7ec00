//! Python's face of `kafkars-client`'s producer: an Arrow record batch (Spark's Kafka
//! sink columns) read in place as producer records, and the producer's errors as
//! `kafkars.protocol.KafkaError`. Type conversion only: partitioning, batching,
//! idempotence, retries and transactions are the crate's.

use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, StructArray};
use arrow_schema::DataType;
use kafkars_client::{ClientError, ConnectOptions, Producer, ProducerConfig, ProducerRecord};
use kafkars_record::Compression;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::arrow_decode::import_array;
use crate::client::{PySecurity, client_error};
use crate::errors::KafkaError;

/// A Kafka error as `kafkars.protocol.KafkaError(code, message)`, with `topic` set when
/// the error is a topic's (a denied Write names it); other errors as `client_error`.
fn producer_error(py: Python<'_>, e: ClientError) -> PyErr {
    let topic = match &e {
        ClientError::Partition { topic, .. } => Some(topic.clone()),
        _ => None,
    };
    match e.error_code() {
        Some(code) if matches!(e, ClientError::Kafka { .. } | ClientError::Partition { .. }) => {
            let err = KafkaError::new_err((code, e.to_string()));
            // Only fails on a broken interpreter; the message names the topic anyway.
            let _ = err.value(py).setattr("topic", topic);
            err
        }
        _ => match e {
            ClientError::InvalidState(m) => pyo3::exceptions::PyRuntimeError::new_err(m),
            e => client_error(py, e),
        },
    }
}

/// A column's bytes, whichever binary or string layout Arrow gives it.
enum Bytes<'a> {
    Binary(&'a arrow_array::BinaryArray),
    LargeBinary(&'a arrow_array::LargeBinaryArray),
    Utf8(&'a arrow_array::StringArray),
    LargeUtf8(&'a arrow_array::LargeStringArray),
    BinaryView(&'a arrow_array::BinaryViewArray),
    Utf8View(&'a arrow_array::StringViewArray),
}

impl<'a> Bytes<'a> {
    fn new(name: &str, array: &'a ArrayRef) -> PyResult<Self> {
        Ok(match array.data_type() {
            DataType::Binary => Self::Binary(array.as_binary()),
            DataType::LargeBinary => Self::LargeBinary(array.as_binary()),
            DataType::Utf8 => Self::Utf8(array.as_string()),
            DataType::LargeUtf8 => Self::LargeUtf8(array.as_string()),
            DataType::BinaryView => Self::BinaryView(array.as_binary_view()),
            DataType::Utf8View => Self::Utf8View(array.as_string_view()),
            t => {
                return Err(PyValueError::new_err(format!(
                    "column '{name}' must be binary or string, not {t}"
                )));
            }
        })
    }

    fn get(&self, i: usize) -> Option<&'a [u8]> {
        macro_rules! at {
            ($a:expr, $conv:expr) => {
                if $a.is_null(i) {
                    None
                } else {
                    Some($conv($a.value(i)))
                }
            };
        }
        match self {
            Self::Binary(a) => at!(a, |v| v),
            Self::LargeBinary(a) => at!(a, |v| v),
            Self::Utf8(a) => at!(a, str::as_bytes),
            Self::LargeUtf8(a) => at!(a, str::as_bytes),
            Self::BinaryView(a) => at!(a, |v| v),
            Self::Utf8View(a) => at!(a, str::as_bytes),
        }
    }
}

/// Kafka's producer (`kafkars-client`): idempotent, acks=all, batches built in Rust,
/// murmur2 partitioning of keys; transactional with `transactional_id`. Every call runs
/// without the GIL and blocks until the broker has answered.
#[pyclass(module = "kafkars._core", name = "Producer")]
pub(crate) struct PyProducer {
    inner: Producer,
}

#[pymethods]
impl PyProducer {
    /// `bootstrap`: `[(host, port)]`; `security` as
    /// `kafkars.security.client_auth.ClientSecurity.settings()` (None: PLAINTEXT);
    /// `compression`: a `compression.type`.
    #[new]
    #[pyo3(signature = (
        bootstrap, *, client_id="kafkars-spark", security=None, timeout_ms=30_000,
        transactional_id=None, compression="none", transaction_timeout_ms=60_000,
        delivery_timeout_ms=120_000, batch_bytes=1 << 20,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        bootstrap: Vec<(String, u16)>,
        client_id: &str,
        security: Option<PySecurity>,
        timeout_ms: u64,
        transactional_id: Option<String>,
        compression: &str,
        transaction_timeout_ms: i32,
        delivery_timeout_ms: u64,
        batch_bytes: usize,
    ) -> PyResult<Self> {
        let security = match security {
            Some(s) => s.resolve()?,
            None => Default::default(),
        };
        let mut connect = ConnectOptions::new(client_id, security);
        connect.timeout = Duration::from_millis(timeout_ms.max(1));
        let mut config = ProducerConfig::new(bootstrap, connect);
        config.compression = Compression::from_name(compression).ok_or_else(|| {
            PyValueError::new_err(format!(
                "compression.type must be none, gzip, snappy, lz4 or zstd, not {compression:?}"
            ))
        })?;
        config.transactional_id = transactional_id;
        config.transaction_timeout_ms = transaction_timeout_ms;
        config.delivery_timeout = Duration::from_millis(delivery_timeout_ms);
        config.batch_bytes = batch_bytes.max(1);
        Ok(Self {
            inner: Producer::new(config),
        })
    }

    /// Sends the rows of an Arrow record batch (anything with `__arrow_c_array__`)
    /// and waits for their acknowledgement; returns how many. Columns as Spark's Kafka
    /// sink takes them: `value` (binary or string), and optional `key`, `topic`,
    /// `partition` (int) and `headers` (list of struct<key string, value binary>).
    /// `topic`, when given, overrides the column.
    #[pyo3(signature = (batch, topic=None))]
    fn send(
        &mut self,
        py: Python<'_>,
        batch: &Bound<'_, PyAny>,
        topic: Option<&str>,
    ) -> PyResult<usize> {
        let array = import_array(batch)?;
        let Some(columns) = array.as_struct_opt() else {
            return Err(PyValueError::new_err("send takes a record batch"));
        };
        let records = records(columns, topic)?;
        let producer = &mut self.inner;
        py.detach(|| producer.send(records))
            .map_err(|e| producer_error(py, e))
    }

    fn init_transactions(&mut self, py: Python<'_>) -> PyResult<()> {
        let producer = &mut self.inner;
        py.detach(|| producer.init_transactions())
            .map_err(|e| producer_error(py, e))
    }

    fn begin_transaction(&mut self, py: Python<'_>) -> PyResult<()> {
        self.inner
            .begin_transaction()
            .map_err(|e| producer_error(py, e))
    }

    /// `offsets`: `[(topic, partition, offset, metadata)]` committed for `group_id` in
    /// the open transaction.
    fn send_offsets_to_transaction(
        &mut self,
        py: Python<'_>,
        offsets: Vec<(String, i32, i64, Option<String>)>,
        group_id: &str,
    ) -> PyResult<()> {
        let producer = &mut self.inner;
        py.detach(|| producer.send_offsets_to_transaction(&offsets, group_id))
            .map_err(|e| producer_error(py, e))
    }

    fn commit_transaction(&mut self, py: Python<'_>) -> PyResult<()> {
        let producer = &mut self.inner;
        py.detach(|| producer.commit_transaction())
            .map_err(|e| producer_error(py, e))
    }

    fn abort_transaction(&mut self, py: Python<'_>) -> PyResult<()> {
        let producer = &mut self.inner;
        py.detach(|| producer.abort_transaction())
            .map_err(|e| producer_error(py, e))
    }

    /// `(producer_id, producer_epoch)`, -1 before the broker gave them.
    #[getter]
    fn producer_id_and_epoch(&self) -> (i64, i16) {
        self.inner.producer_id_and_epoch()
    }
}

/// The batch's rows as producer records, borrowing the Arrow buffers.
fn records<'a>(
    columns: &'a StructArray,
    default_topic: Option<&'a str>,
) -> PyResult<Vec<ProducerRecord<'a>>> {
    let column = |name: &str| columns.column_by_name(name);
    let values = Bytes::new(
        "value",
        column("value")
            .ok_or_else(|| PyValueError::new_err("the data to write needs a 'value' column"))?,
    )?;
    let keys = column("key").map(|a| Bytes::new("key", a)).transpose()?;
    let topics = match (default_topic, column("topic")) {
        (None, Some(a)) => Some(Bytes::new("topic", a)?),
        _ => None,
    };
    let partitions: Option<Vec<Option<i32>>> = match column("partition") {
        None => None,
        Some(a) => Some(match a.data_type() {
            DataType::Int32 => a.as_primitive::<Int32Type>().iter().collect(),
            DataType::Int64 => a
                .as_primitive::<Int64Type>()
                .iter()
                .map(|p| p.map(|p| i32::try_from(p).unwrap_or(-1)))
                .collect(),
            DataType::Null => vec![None; a.len()],
            t => {
                return Err(PyValueError::new_err(format!(
                    "column 'partition' must be an int, not {t}"
                )));
            }
        }),
    };
    let headers = match column("headers") {
        None => None,
        Some(a) if matches!(a.data_type(), DataType::Null) => None,
        Some(a) => {
            let list = a.as_list_opt::<i32>().ok_or_else(|| {
                PyValueError::new_err("column 'headers' must be a list of struct<key, value>")
            })?;
            let entries = list.values().as_struct_opt().ok_or_else(|| {
                PyValueError::new_err("column 'headers' must be a list of struct<key, value>")
            })?;
            let bad = || PyValueError::new_err("column 'headers' needs 'key' and 'value' fields");
            let key = entries.column_by_name("key").ok_or_else(bad)?;
            let value = entries.column_by_name("value").ok_or_else(bad)?;
            Some((
                list,
                Bytes::new("headers.key", key)?,
                Bytes::new("headers.value", value)?,
            ))
        }
    };
    let timestamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let mut out = Vec::with_capacity(columns.len());
    for i in 0..columns.len() {
        let topic = match default_topic {
            Some(t) => t,
            None => topics
                .as_ref()
                .and_then(|t| t.get(i))
                .and_then(|t| std::str::from_utf8(t).ok())
                .filter(|t| !t.is_empty())
                .ok_or_else(|| {
                    PyValueError::new_err("no topic: set the 'topic' option or a 'topic' column")
                })?,
        };
        let mut record_headers = Vec::new();
        if let Some((list, hk, hv)) = &headers
            && !list.is_null(i)
        {
            let offsets = list.value_offsets();
            for j in offsets[i] as usize..offsets[i + 1] as usize {
                let key = hk
                    .get(j)
                    .and_then(|k| std::str::from_utf8(k).ok())
                    .ok_or_else(|| {
                        PyValueError::new_err("a header key must be a non-null UTF-8 string")
                    })?;
                record_headers.push((key, hv.get(j)));
            }
        }
        out.push(ProducerRecord {
            topic,
            partition: partitions.as_ref().and_then(|p| p[i]),
            key: keys.as_ref().and_then(|k| k.get(i)),
            value: values.get(i),
            headers: record_headers,
            timestamp,
        });
    }
    Ok(out)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyProducer>()
}
