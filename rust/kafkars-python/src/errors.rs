//! The exception hierarchy, and the one place Rust errors become Python exceptions.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
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
create_exception!(
    _core,
    LogError,
    KafkarsError,
    "A log operation failed. args: (kafka_error_code, message)."
);

create_exception!(
    _core,
    RecordValidationError,
    LogError,
    "Records of a batch refused one by one (INVALID_RECORD or INVALID_TIMESTAMP). \
     args: (kafka_error_code, message, [(batch_index, message)])."
);

pub(crate) fn record_error(e: kafkars_record::RecordError) -> PyErr {
    CorruptRecordError::new_err((e.kafka_error_code(), e.to_string()))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("KafkarsError", py.get_type::<KafkarsError>())?;
    m.add("CorruptRecordError", py.get_type::<CorruptRecordError>())?;
    m.add("LogError", py.get_type::<LogError>())?;
    m.add(
        "RecordValidationError",
        py.get_type::<RecordValidationError>(),
    )?;
    Ok(())
}
