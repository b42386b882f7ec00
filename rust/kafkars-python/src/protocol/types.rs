//! `ToPy`/`FromPy` for the leaf and container types that message fields use.
use bytes::Bytes;
use kafka_protocol::messages::{BrokerId, GroupId, ProducerId, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyString, PyTuple, PyType};
use pyo3::{IntoPyObjectExt, intern};
use uuid::Uuid;

use super::{FromPy, ToPy, with_context};

macro_rules! primitive {
    ($($t:ty),*) => {$(
        impl ToPy for $t {
            #[inline]
            fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                (*self).into_bound_py_any(py)
            }
        }
        impl FromPy for $t {
            #[inline]
            fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
                obj.extract()
            }
        }
    )*};
}
primitive!(bool, i8, i16, i32, i64, u16, u32, f64);

fn type_error(expected: &str, obj: &Bound<'_, PyAny>) -> PyErr {
    let got = obj
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    PyTypeError::new_err(format!("expected {expected}, got {got}"))
}

impl ToPy for StrBytes {
    #[inline]
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(PyString::new(py, self.as_str()).into_any())
    }
}

impl FromPy for StrBytes {
    #[inline]
    fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let s = obj.cast::<PyString>().map_err(|_| type_error("str", obj))?;
        Ok(StrBytes::from_string(s.to_str()?.to_owned()))
    }
}

// kafka-protocol's newtypes (messages.rs) show up in Python as their inner value.
macro_rules! newtype {
    ($($t:ident),*) => {$(
        impl ToPy for $t {
            #[inline]
            fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                self.0.to_py(py)
            }
        }
        impl FromPy for $t {
            #[inline]
            fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
                FromPy::from_py(obj).map($t)
            }
        }
    )*};
}
newtype!(BrokerId, GroupId, ProducerId, TopicName, TransactionalId);

/// Small protocol blobs (group assignments, SASL tokens): copied both ways.
/// Record data never comes here; see `records.rs`.
impl ToPy for Bytes {
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(PyBytes::new(py, self).into_any())
    }
}

impl FromPy for Bytes {
    fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Ok(b) = obj.cast::<PyBytes>() {
            Ok(Bytes::copy_from_slice(b.as_bytes()))
        } else if let Ok(b) = obj.cast::<PyByteArray>() {
            Ok(Bytes::from(b.to_vec()))
        } else {
            Err(type_error("bytes", obj))
        }
    }
}

static UUID_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn uuid_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    UUID_TYPE.import(py, "uuid", "UUID")
}

impl ToPy for Uuid {
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // Positional `UUID(hex=None, bytes=...)`: no kwargs dict per call.
        uuid_type(py)?.call1((py.None(), PyBytes::new(py, self.as_bytes())))
    }
}

impl FromPy for Uuid {
    fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let py = obj.py();
        if obj.is_instance(uuid_type(py)?)? {
            let int: u128 = obj.getattr(intern!(py, "int"))?.extract()?;
            return Ok(Uuid::from_u128(int));
        }
        obj.cast::<PyBytes>()
            .ok()
            .and_then(|b| Uuid::from_slice(b.as_bytes()).ok())
            .ok_or_else(|| type_error("uuid.UUID or 16 bytes", obj))
    }
}

impl<T: ToPy> ToPy for Option<T> {
    #[inline]
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self {
            Some(value) => value.to_py(py),
            None => Ok(py.None().into_bound(py)),
        }
    }
}

impl<T: FromPy> FromPy for Option<T> {
    #[inline]
    fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        if obj.is_none() {
            Ok(None)
        } else {
            T::from_py(obj).map(Some)
        }
    }
}

impl<T: ToPy> ToPy for Vec<T> {
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let items = self
            .iter()
            .map(|item| item.to_py(py))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyList::new(py, items)?.into_any())
    }
}

fn collect_items<'py, T: FromPy>(
    py: Python<'py>,
    len: usize,
    items: impl Iterator<Item = PyResult<Bound<'py, PyAny>>>,
) -> PyResult<Vec<T>> {
    let mut out = Vec::with_capacity(len);
    for (index, item) in items.enumerate() {
        let value =
            T::from_py(&item?).map_err(|err| with_context(py, err, &format!("[{index}]")))?;
        out.push(value);
    }
    Ok(out)
}

/// From a list or tuple (fast paths) or any other iterable except str/bytes.
impl<T: FromPy> FromPy for Vec<T> {
    fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let py = obj.py();
        if let Ok(list) = obj.cast::<PyList>() {
            collect_items(py, list.len(), list.iter().map(Ok))
        } else if let Ok(tuple) = obj.cast::<PyTuple>() {
            collect_items(py, tuple.len(), tuple.iter().map(Ok))
        } else if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
            // Iterable, but a str where a list belongs is always a handler bug.
            Err(type_error("a list", obj))
        } else {
            let iter = obj.try_iter().map_err(|_| type_error("a list", obj))?;
            collect_items(py, 0, iter)
        }
    }
}

/// `unknown_tagged_fields` of the `data` messages (coordinator records): `{tag: bytes}`.
impl ToPy for std::collections::BTreeMap<i32, Bytes> {
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let dict = pyo3::types::PyDict::new(py);
        for (tag, data) in self {
            dict.set_item(tag, data.to_py(py)?)?;
        }
        Ok(dict.into_any())
    }
}

impl FromPy for std::collections::BTreeMap<i32, Bytes> {
    fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let dict = obj
            .cast::<pyo3::types::PyDict>()
            .map_err(|_| type_error("dict", obj))?;
        dict.iter()
            .map(|(tag, data)| Ok((tag.extract()?, Bytes::from_py(&data)?)))
            .collect()
    }
}
