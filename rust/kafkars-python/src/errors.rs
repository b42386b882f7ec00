//! The exception hierarchy, and the one place Rust errors become Python exceptions.

use pyo3::create_exception;
use pyo3::exceptions::{PyConnectionError, PyException};
use pyo3::prelude::*;

create_exception!(
    _core,
    KafkarsError,
    PyException,
    "Base class of kafkars errors."
);
create_exception!(
    _core,
    CorruptRecordError,
    KafkarsError,
    "A record batch failed validation. args: (kafka_error_code, message)."
);
// A failed log or replica operation raises Python's own `KafkaError` (args: code,
// message), the exception the handlers answer with, so nothing re-maps it; records of a
// batch refused one by one raise its `RecordValidationError` (args: code, message,
// [(batch_index, message)]), answered in the Produce response's record_errors.
pyo3::import_exception!(kafkars.protocol, KafkaError);
pyo3::import_exception!(kafkars.protocol, RecordValidationError);

create_exception!(
    _core,
    AuthenticationError,
    PyConnectionError,
    "A broker refused the SASL login or the TLS handshake (Kafka's \
     AuthenticationException). `error_code`: the broker's Kafka error code, or None."
);

pub(crate) fn record_error(e: kafkars_record::RecordError) -> PyErr {
    CorruptRecordError::new_err((e.kafka_error_code(), e.to_string()))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("KafkarsError", py.get_type::<KafkarsError>())?;
    m.add("CorruptRecordError", py.get_type::<CorruptRecordError>())?;
    m.add("AuthenticationError", py.get_type::<AuthenticationError>())?;
    Ok(())
}
