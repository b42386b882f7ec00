//! `kafkars._core.decode_batches_arrow`: raw record batches in a pyarrow binary array
//! decoded into one Arrow record batch in Spark's Kafka row schema.
//!
//! Arrays cross the boundary through the Arrow C data interface as PyCapsules, so no
//! Python object is made per record, and the decoding runs with the GIL released.

use std::ffi::CString;
use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, BinaryBuilder, BooleanBuilder, PrimitiveBuilder, StringBuilder,
};
use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema, from_ffi};
use arrow_array::types::{Int32Type, Int64Type, TimestampMicrosecondType};
use arrow_array::{
    Array, ArrayRef, BinaryArray, Int32Array, Int64Array, LargeBinaryArray, LargeStringArray,
    ListArray, RecordBatch as ArrowRecordBatch, StringArray, StructArray, make_array,
};
use arrow_buffer::{NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};
use kafkars_record::{RecordBatch, RecordRef, batches};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyString};

use kafka_protocol::messages::{ApiKey, ResponseKind};

use kafkars_client::frame as client;
use kafkars_client::{BrokerConnection, ClientError, ConnectOptions, Security};

use crate::client::{PySecurity, client_error};
use crate::errors::CorruptRecordError;

/// The binary column of raw batches: Spark sends `binary`, other producers may use
/// `large_binary`.
enum Blobs {
    Binary(BinaryArray),
    Large(LargeBinaryArray),
}

impl Blobs {
    fn len(&self) -> usize {
        match self {
            Blobs::Binary(a) => a.len(),
            Blobs::Large(a) => a.len(),
        }
    }

    fn get(&self, i: usize) -> Option<&[u8]> {
        match self {
            Blobs::Binary(a) => a.is_valid(i).then(|| a.value(i)),
            Blobs::Large(a) => a.is_valid(i).then(|| a.value(i)),
        }
    }
}

/// A per-row column or one value for every row.
enum PerRow<T, A> {
    Scalar(T),
    Column(A),
}

enum Topics {
    Utf8(StringArray),
    Large(LargeStringArray),
}

impl PerRow<String, Topics> {
    fn get(&self, i: usize) -> Option<&str> {
        match self {
            PerRow::Scalar(s) => Some(s),
            PerRow::Column(Topics::Utf8(a)) => a.is_valid(i).then(|| a.value(i)),
            PerRow::Column(Topics::Large(a)) => a.is_valid(i).then(|| a.value(i)),
        }
    }
}

impl PerRow<Option<i32>, ArrayRef> {
    fn get(&self, i: usize) -> Option<i32> {
        match self {
            PerRow::Scalar(p) => *p,
            PerRow::Column(a) => {
                if a.is_null(i) {
                    None
                } else if let Some(a) = a.as_any().downcast_ref::<Int32Array>() {
                    Some(a.value(i))
                } else {
                    let a = a.as_any().downcast_ref::<Int64Array>()?;
                    i32::try_from(a.value(i)).ok()
                }
            }
        }
    }
}

/// What to do with a batch that fails to decode.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OnError {
    Raise,
    Column,
}

struct Options {
    include_headers: bool,
    batch_fields: bool,
    on_error: OnError,
    verify_crc: bool,
    skip_control: bool,
    start_offset: Option<i64>,
    end_offset: Option<i64>,
    /// read_committed: the `(producer_id, first_offset)` of the aborted transactions a
    /// Fetch returned, whose batches are left out; `None` reads uncommitted.
    aborted: Option<Vec<(i64, i64)>>,
}

/// Which transactional batches a read_committed reader leaves out, batch by batch in
/// offset order (Kafka's consumer logic): a producer is aborted from the first offset of
/// its aborted transaction until its ABORT marker.
struct AbortedFilter {
    /// Aborted transactions not reached yet, latest first offset first (popped from the end).
    pending: Vec<(i64, i64)>,
    producers: std::collections::HashSet<i64>,
}

impl AbortedFilter {
    fn new(mut aborted: Vec<(i64, i64)>) -> Self {
        aborted.sort_by_key(|&(pid, first)| std::cmp::Reverse((first, pid)));
        Self {
            pending: aborted,
            producers: std::collections::HashSet::new(),
        }
    }

    /// Whether `batch` belongs to an aborted transaction (its records are skipped).
    fn skip(&mut self, batch: &RecordBatch<'_>) -> bool {
        while let Some(&(pid, first)) = self.pending.last() {
            if first > batch.last_offset() {
                break;
            }
            self.producers.insert(pid);
            self.pending.pop();
        }
        if !batch.is_transactional() || !self.producers.contains(&batch.producer_id()) {
            return false;
        }
        if batch.is_control()
            && matches!(
                kafkars_record::control_record_type(batch),
                Ok(Some(kafkars_record::ControlRecordType::Abort))
            )
        {
            self.producers.remove(&batch.producer_id());
        }
        true
    }
}

/// Column builders for the output rows.
struct Columns {
    // Which optional columns are wanted: the others are not filled per record at all.
    headers: bool,
    batch_fields: bool,
    error_column: bool,
    key: BinaryBuilder,
    value: BinaryBuilder,
    topic: StringBuilder,
    partition: PrimitiveBuilder<Int32Type>,
    offset: PrimitiveBuilder<Int64Type>,
    timestamp: PrimitiveBuilder<TimestampMicrosecondType>,
    timestamp_type: PrimitiveBuilder<Int32Type>,
    header_offsets: Vec<i32>,
    header_nulls: NullBufferBuilder,
    header_keys: StringBuilder,
    header_values: BinaryBuilder,
    base_offset: PrimitiveBuilder<Int64Type>,
    producer_id: PrimitiveBuilder<Int64Type>,
    is_transactional: BooleanBuilder,
    is_control: BooleanBuilder,
    compression: StringBuilder,
    error: StringBuilder,
}

impl Columns {
    /// Builders sized for about `records` rows and `bytes` of values up front, so they
    /// do not grow (copy, fault in fresh pages) as rows are added.
    fn new(opts: &Options, records: usize, bytes: usize) -> Self {
        let hdr = if opts.include_headers { records } else { 0 };
        Self {
            headers: opts.include_headers,
            batch_fields: opts.batch_fields,
            error_column: opts.on_error == OnError::Column,
            key: BinaryBuilder::with_capacity(records, records.saturating_mul(16)),
            value: BinaryBuilder::with_capacity(records, bytes),
            topic: StringBuilder::with_capacity(records, records.saturating_mul(8)),
            partition: PrimitiveBuilder::with_capacity(records),
            offset: PrimitiveBuilder::with_capacity(records),
            timestamp: PrimitiveBuilder::with_capacity(records),
            timestamp_type: PrimitiveBuilder::with_capacity(records),
            header_offsets: {
                let mut v = Vec::with_capacity(hdr + 1);
                v.push(0);
                v
            },
            header_nulls: NullBufferBuilder::new(hdr),
            header_keys: StringBuilder::with_capacity(hdr, hdr.saturating_mul(8)),
            header_values: BinaryBuilder::with_capacity(hdr, hdr.saturating_mul(8)),
            base_offset: PrimitiveBuilder::new(),
            producer_id: PrimitiveBuilder::new(),
            is_transactional: BooleanBuilder::new(),
            is_control: BooleanBuilder::new(),
            compression: StringBuilder::new(),
            error: StringBuilder::new(),
        }
    }

    fn push_batch_fields(&mut self, batch: &RecordBatch<'_>) {
        if !self.batch_fields {
            return;
        }
        self.base_offset.append_value(batch.base_offset());
        self.producer_id.append_value(batch.producer_id());
        self.is_transactional.append_value(batch.is_transactional());
        self.is_control.append_value(batch.is_control());
        match batch.compression() {
            Ok(c) => self.compression.append_value(c.name()),
            Err(_) => self.compression.append_null(),
        }
    }

    fn push_record(
        &mut self,
        r: &RecordRef<'_>,
        batch: &RecordBatch<'_>,
        topic: Option<&str>,
        partition: Option<i32>,
    ) {
        self.key.append_option(r.key);
        self.value.append_option(r.value);
        self.topic.append_option(topic);
        self.partition.append_option(partition);
        self.offset.append_value(r.offset);
        self.timestamp
            .append_value(r.timestamp.saturating_mul(1000));
        self.timestamp_type
            .append_value(i32::from(batch.timestamp_type().id()));
        if !self.headers {
            // Not output: nothing to build.
        } else if r.headers.is_empty() {
            // Spark's Kafka source gives null, not an empty array, for no headers.
            self.header_nulls.append_null();
        } else {
            for h in &r.headers {
                match std::str::from_utf8(h.key) {
                    Ok(k) => self.header_keys.append_value(k),
                    Err(_) => self
                        .header_keys
                        .append_value(String::from_utf8_lossy(h.key)),
                }
                self.header_values.append_option(h.value);
            }
            self.header_nulls.append_non_null();
        }
        if self.headers {
            let n = self.header_keys.len();
            self.header_offsets
                .push(i32::try_from(n).unwrap_or(i32::MAX));
        }
        self.push_batch_fields(batch);
        if self.error_column {
            self.error.append_null();
        }
    }

    /// One row standing for a batch that failed to decode: its error and what of its
    /// header could be read; the batch's records are skipped.
    fn push_error(
        &mut self,
        batch: Option<&RecordBatch<'_>>,
        topic: Option<&str>,
        partition: Option<i32>,
        message: &str,
    ) {
        self.key.append_null();
        self.value.append_null();
        self.topic.append_option(topic);
        self.partition.append_option(partition);
        self.offset.append_option(batch.map(|b| b.base_offset()));
        self.timestamp.append_null();
        self.timestamp_type.append_null();
        if self.headers {
            self.header_nulls.append_null();
            let n = self.header_keys.len();
            self.header_offsets
                .push(i32::try_from(n).unwrap_or(i32::MAX));
        }
        match batch {
            Some(b) => self.push_batch_fields(b),
            None if !self.batch_fields => {}
            None => {
                self.base_offset.append_null();
                self.producer_id.append_null();
                self.is_transactional.append_null();
                self.is_control.append_null();
                self.compression.append_null();
            }
        }
        self.error.append_value(message);
    }

    fn finish(mut self, opts: &Options) -> Result<ArrowRecordBatch, String> {
        let header_struct = header_fields();
        let headers = StructArray::try_new(
            header_struct.clone(),
            vec![
                Arc::new(self.header_keys.finish()),
                Arc::new(self.header_values.finish()),
            ],
            None,
        )
        .map_err(|e| e.to_string())?;
        let headers = ListArray::try_new(
            Arc::new(Field::new_list_field(DataType::Struct(header_struct), true)),
            OffsetBuffer::new(ScalarBuffer::from(std::mem::take(&mut self.header_offsets))),
            Arc::new(headers),
            self.header_nulls.finish(),
        )
        .map_err(|e| e.to_string())?;
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(self.key.finish()),
            Arc::new(self.value.finish()),
            Arc::new(self.topic.finish()),
            Arc::new(self.partition.finish()),
            Arc::new(self.offset.finish()),
            Arc::new(self.timestamp.finish().with_timezone("UTC")),
            Arc::new(self.timestamp_type.finish()),
        ];
        if opts.include_headers {
            columns.push(Arc::new(headers));
        }
        if opts.batch_fields {
            columns.push(Arc::new(self.base_offset.finish()));
            columns.push(Arc::new(self.producer_id.finish()));
            columns.push(Arc::new(self.is_transactional.finish()));
            columns.push(Arc::new(self.is_control.finish()));
            columns.push(Arc::new(self.compression.finish()));
        }
        if opts.on_error == OnError::Column {
            columns.push(Arc::new(self.error.finish()));
        }
        ArrowRecordBatch::try_new(Arc::new(output_schema(opts)), columns).map_err(|e| e.to_string())
    }
}

fn header_fields() -> Fields {
    Fields::from(vec![
        Field::new("key", DataType::Utf8, true),
        Field::new("value", DataType::Binary, true),
    ])
}

/// Spark's Kafka source schema, then the optional batch-level and error columns.
/// Every field is nullable, as Spark's DDL makes them.
fn output_schema(opts: &Options) -> Schema {
    let mut fields = vec![
        Field::new("key", DataType::Binary, true),
        Field::new("value", DataType::Binary, true),
        Field::new("topic", DataType::Utf8, true),
        Field::new("partition", DataType::Int32, true),
        Field::new("offset", DataType::Int64, true),
        Field::new(
            "timestamp",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new("timestampType", DataType::Int32, true),
    ];
    if opts.include_headers {
        fields.push(Field::new(
            "headers",
            DataType::List(Arc::new(Field::new_list_field(
                DataType::Struct(header_fields()),
                true,
            ))),
            true,
        ));
    }
    if opts.batch_fields {
        fields.push(Field::new("baseOffset", DataType::Int64, true));
        fields.push(Field::new("producerId", DataType::Int64, true));
        fields.push(Field::new("isTransactional", DataType::Boolean, true));
        fields.push(Field::new("isControl", DataType::Boolean, true));
        fields.push(Field::new("compression", DataType::Utf8, true));
    }
    if opts.on_error == OnError::Column {
        fields.push(Field::new("error", DataType::Utf8, true));
    }
    Schema::new(fields)
}

/// The error of one batch, with where it was.
struct BatchError {
    row: usize,
    base_offset: Option<i64>,
    message: String,
}

fn decode(
    blobs: &Blobs,
    topics: &PerRow<String, Topics>,
    partitions: &PerRow<Option<i32>, ArrayRef>,
    opts: &Options,
) -> Result<ArrowRecordBatch, BatchError> {
    // A pass over the batch headers only, to size the builders: the declared record
    // counts (capped, as they are not trusted yet) and the bytes in.
    let (mut records, mut bytes) = (0usize, 0usize);
    for row in 0..blobs.len() {
        let Some(buf) = blobs.get(row) else { continue };
        bytes = bytes.saturating_add(buf.len());
        for batch in batches(buf).map_while(Result::ok) {
            let n = usize::try_from(batch.records_count()).unwrap_or(0);
            records = records.saturating_add(n);
        }
    }
    let records = records.min(bytes / 8 + 1024).min(1 << 24);
    let mut cols = Columns::new(opts, records, bytes.min(1 << 30));
    let mut aborted = opts.aborted.clone().map(AbortedFilter::new);
    for row in 0..blobs.len() {
        let Some(buf) = blobs.get(row) else { continue };
        let topic = topics.get(row);
        let partition = partitions.get(row);
        for batch in batches(buf) {
            let batch = match batch {
                Ok(b) => b,
                Err(e) => {
                    let message = format!("row {row}: {e}");
                    if opts.on_error == OnError::Raise {
                        return Err(BatchError {
                            row,
                            base_offset: None,
                            message,
                        });
                    }
                    cols.push_error(None, topic, partition, &message);
                    break;
                }
            };
            if aborted.as_mut().is_some_and(|a| a.skip(&batch)) {
                continue;
            }
            if opts.skip_control && batch.is_control() {
                continue;
            }
            // Whole batches outside the wanted range are skipped without decompressing.
            if opts.start_offset.is_some_and(|s| batch.last_offset() < s)
                || opts.end_offset.is_some_and(|e| batch.base_offset() >= e)
            {
                continue;
            }
            let checked = if opts.verify_crc {
                batch.ensure_valid().map_err(|e| e.to_string())
            } else {
                Ok(())
            };
            let body = checked.and_then(|()| batch.records().map_err(|e| e.to_string()));
            let result = body.and_then(|body| {
                // Decoded in full before any row is added, so a bad record drops its batch.
                // The declared count is not trusted yet: a record takes at least one byte.
                let declared = usize::try_from(batch.records_count()).unwrap_or(0);
                let mut records = Vec::with_capacity(declared.min(body.body().len()));
                for record in body.iter() {
                    let r = record.map_err(|e| e.to_string())?;
                    if opts.start_offset.is_some_and(|s| r.offset < s)
                        || opts.end_offset.is_some_and(|e| r.offset >= e)
                    {
                        continue;
                    }
                    records.push(r);
                }
                for r in &records {
                    cols.push_record(r, &batch, topic, partition);
                }
                Ok(())
            });
            if let Err(e) = result {
                let message = format!("row {row}, batch at offset {}: {e}", batch.base_offset());
                if opts.on_error == OnError::Raise {
                    return Err(BatchError {
                        row,
                        base_offset: Some(batch.base_offset()),
                        message,
                    });
                }
                cols.push_error(Some(&batch), topic, partition, &message);
            }
        }
    }
    cols.finish(opts).map_err(|message| BatchError {
        row: 0,
        base_offset: None,
        message,
    })
}

/// [`decode`] without Python, for the fuzz target in `fuzz/`: `blobs` as one binary
/// array (a `None` is a null row), the options from the bits of `flags` (headers, batch
/// fields, error column, CRC check, control batches skipped). Returns the rows decoded.
#[doc(hidden)]
pub fn fuzz_decode_batches(
    blobs: &[Option<&[u8]>],
    flags: u8,
    start_offset: Option<i64>,
    end_offset: Option<i64>,
) -> Result<usize, String> {
    let opts = Options {
        include_headers: flags & 1 != 0,
        batch_fields: flags & 2 != 0,
        on_error: if flags & 4 != 0 {
            OnError::Column
        } else {
            OnError::Raise
        },
        verify_crc: flags & 8 != 0,
        skip_control: flags & 16 != 0,
        start_offset,
        end_offset,
        aborted: None,
    };
    let blobs = Blobs::Binary(BinaryArray::from_iter(blobs.iter().copied()));
    let topics = PerRow::Scalar("fuzz".to_owned());
    let partitions = PerRow::Scalar(Some(0));
    decode(&blobs, &topics, &partitions, &opts)
        .map(|batch| batch.num_rows())
        .map_err(|e| e.message)
}

/// Moves an array out of an object implementing the Arrow PyCapsule interface.
pub(crate) fn import_array(obj: &Bound<'_, PyAny>) -> PyResult<ArrayRef> {
    let (schema, array): (Bound<'_, PyCapsule>, Bound<'_, PyCapsule>) =
        obj.call_method0("__arrow_c_array__")?.extract()?;
    let schema_ptr = schema
        .pointer_checked(Some(c"arrow_schema"))?
        .cast::<FFI_ArrowSchema>();
    let array_ptr = array
        .pointer_checked(Some(c"arrow_array"))?
        .cast::<FFI_ArrowArray>();
    // SAFETY: the capsules hold the C structs their names announce. The array is moved
    // out and an empty (released) one left behind, so the capsule's destructor does
    // nothing; the schema is only borrowed while the capsule lives.
    let data = unsafe {
        let array = std::ptr::replace(array_ptr.as_ptr(), FFI_ArrowArray::empty());
        from_ffi(array, schema_ptr.as_ref())
    }
    .map_err(|e| PyValueError::new_err(format!("cannot import Arrow array: {e}")))?;
    Ok(make_array(data))
}

/// A C struct owned by a capsule until pyarrow moves it out. Transparent: consumers cast
/// the capsule pointer to the C struct itself.
#[repr(transparent)]
struct Exported<T>(T);
// SAFETY: the exported array owns its buffers (Arc-held, immutable); the C interface
// allows releasing it from any thread.
unsafe impl<T> Send for Exported<T> {}

fn export_batch(
    py: Python<'_>,
    batch: ArrowRecordBatch,
) -> PyResult<(Bound<'_, PyCapsule>, Bound<'_, PyCapsule>)> {
    let data = StructArray::from(batch).into_data();
    let schema = FFI_ArrowSchema::try_from(data.data_type())
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let array = FFI_ArrowArray::new(&data);
    let schema = PyCapsule::new(py, Exported(schema), Some(CString::from(c"arrow_schema")))?;
    let array = PyCapsule::new(py, Exported(array), Some(CString::from(c"arrow_array")))?;
    Ok((schema, array))
}

fn import_blobs(obj: &Bound<'_, PyAny>) -> PyResult<Blobs> {
    let array = import_array(obj)?;
    let any = array.as_any();
    if let Some(a) = any.downcast_ref::<BinaryArray>() {
        Ok(Blobs::Binary(a.clone()))
    } else if let Some(a) = any.downcast_ref::<LargeBinaryArray>() {
        Ok(Blobs::Large(a.clone()))
    } else {
        Err(PyTypeError::new_err(format!(
            "expected a binary or large_binary array of record batches, got {}",
            array.data_type()
        )))
    }
}

fn import_topics(obj: Option<&Bound<'_, PyAny>>, rows: usize) -> PyResult<PerRow<String, Topics>> {
    let Some(obj) = obj else {
        return Ok(PerRow::Column(Topics::Utf8(StringArray::new_null(rows))));
    };
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(PerRow::Scalar(s.to_str()?.to_owned()));
    }
    let array = import_array(obj)?;
    check_len(array.len(), rows, "topic")?;
    let any = array.as_any();
    if let Some(a) = any.downcast_ref::<StringArray>() {
        Ok(PerRow::Column(Topics::Utf8(a.clone())))
    } else if let Some(a) = any.downcast_ref::<LargeStringArray>() {
        Ok(PerRow::Column(Topics::Large(a.clone())))
    } else {
        Err(PyTypeError::new_err(format!(
            "topic must be a str or a string array, got {}",
            array.data_type()
        )))
    }
}

fn import_partitions(
    obj: Option<&Bound<'_, PyAny>>,
    rows: usize,
) -> PyResult<PerRow<Option<i32>, ArrayRef>> {
    let Some(obj) = obj else {
        return Ok(PerRow::Scalar(None));
    };
    if let Ok(p) = obj.extract::<i32>() {
        return Ok(PerRow::Scalar(Some(p)));
    }
    let array = import_array(obj)?;
    check_len(array.len(), rows, "partition")?;
    match array.data_type() {
        DataType::Int32 | DataType::Int64 => Ok(PerRow::Column(array)),
        other => Err(PyTypeError::new_err(format!(
            "partition must be an int or an int32/int64 array, got {other}"
        ))),
    }
}

fn check_len(len: usize, rows: usize, what: &str) -> PyResult<()> {
    if len == rows {
        Ok(())
    } else {
        Err(PyValueError::new_err(format!(
            "{what} has {len} rows, the batches {rows}"
        )))
    }
}

/// Decodes every record batch held in `blobs` (a pyarrow `binary`/`large_binary` array;
/// each value is one or more concatenated batches, any codec, a truncated trailing batch
/// ignored as in a fetch response) into Spark's Kafka row schema. Returns the
/// `(schema, array)` capsules of a struct array, for `pa.RecordBatch._import_from_c_capsule`.
///
/// `topic`/`partition`: a str/int for every row, or arrays as long as `blobs`.
/// Records outside `[start_offset, end_offset)` and control batches are left out.
/// `on_error="raise"` raises `CorruptRecordError` at the first bad batch;
/// `"column"` adds an `error` column with one row per bad batch, whose records are skipped.
#[pyfunction]
#[pyo3(signature = (
    blobs, topic=None, partition=None, *, include_headers=true, batch_fields=true,
    on_error="raise", verify_crc=true, skip_control=true, start_offset=None, end_offset=None,
))]
#[allow(clippy::too_many_arguments)]
fn decode_batches_arrow<'py>(
    py: Python<'py>,
    blobs: &Bound<'py, PyAny>,
    topic: Option<&Bound<'py, PyAny>>,
    partition: Option<&Bound<'py, PyAny>>,
    include_headers: bool,
    batch_fields: bool,
    on_error: &str,
    verify_crc: bool,
    skip_control: bool,
    start_offset: Option<i64>,
    end_offset: Option<i64>,
) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
    let on_error = match on_error {
        "raise" => OnError::Raise,
        "column" => OnError::Column,
        other => {
            return Err(PyValueError::new_err(format!(
                "on_error must be 'raise' or 'column', not {other:?}"
            )));
        }
    };
    let opts = Options {
        include_headers,
        batch_fields,
        on_error,
        verify_crc,
        skip_control,
        start_offset,
        end_offset,
        aborted: None,
    };
    let blobs = import_blobs(blobs)?;
    let topics = import_topics(topic, blobs.len())?;
    let partitions = import_partitions(partition, blobs.len())?;
    let batch = py
        .detach(|| decode(&blobs, &topics, &partitions, &opts))
        .map_err(|e| {
            CorruptRecordError::new_err((
                kafka_protocol::ResponseError::CorruptMessage.code(),
                e.message,
                e.row,
                e.base_offset,
            ))
        })?;
    export_batch(py, batch)
}

/// The partition-level fields of a Fetch response, and where its records are in the body.
struct FetchedHeader {
    error: i16,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
    /// `(producer_id, first_offset)` of the aborted transactions (read_committed).
    aborted: Vec<(i64, i64)>,
    records: std::ops::Range<usize>,
}

/// The Fetch version the reader speaks: isolation levels (v4) and log start offsets (v5).
const FETCH_VERSION: i16 = 5;

/// A Fetch of one partition from `offset`; `isolation_level` 0 reads uncommitted, 1
/// committed (up to the last stable offset, with the aborted transactions).
fn fetch_request(
    isolation_level: i8,
    topic: &str,
    partition: i32,
    offset: i64,
    max_bytes: i32,
    max_wait_ms: i32,
) -> kafka_protocol::messages::RequestKind {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::{BrokerId, FetchRequest, RequestKind, TopicName};
    use kafka_protocol::protocol::StrBytes;
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(max_bytes)
        .with_isolation_level(isolation_level)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_string(topic.to_owned())))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(partition)
                        .with_fetch_offset(offset)
                        .with_log_start_offset(-1)
                        .with_partition_max_bytes(max_bytes),
                ]),
        ]);
    RequestKind::Fetch(request)
}

/// Reads a Fetch response frame (after the size) for `partition`. The records are
/// located inside `body`, so they can be decoded where they are.
fn parse_fetch(
    body: &bytes::Bytes,
    correlation: i32,
    partition: i32,
) -> std::io::Result<FetchedHeader> {
    let bad = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, m);
    let response = client::parse_response(body.clone(), ApiKey::Fetch, FETCH_VERSION, correlation)
        .map_err(|e| bad(e.to_string()))?;
    let ResponseKind::Fetch(response) = response else {
        return Err(bad("not a Fetch response".into()));
    };
    let found = response
        .responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .find(|p| p.partition_index == partition)
        .ok_or_else(|| bad("no fetch response for the partition".into()))?;
    // Decoded records are slices of `body`: find where.
    let records = match &found.records {
        Some(r) if !r.is_empty() => {
            let start = (r.as_ptr() as usize)
                .checked_sub(body.as_ptr() as usize)
                .filter(|s| s + r.len() <= body.len())
                .ok_or_else(|| bad("records outside the response".into()))?;
            start..start + r.len()
        }
        _ => 0..0,
    };
    let aborted = found
        .aborted_transactions
        .iter()
        .flatten()
        .map(|a| (a.producer_id.0, a.first_offset))
        .collect();
    Ok(FetchedHeader {
        error: found.error_code,
        high_watermark: found.high_watermark,
        last_stable_offset: found.last_stable_offset,
        log_start_offset: found.log_start_offset,
        aborted,
        records,
    })
}

/// A connection to one broker (`kafkars-client`'s, TLS and SASL as `security` says) that
/// fetches a partition and decodes what comes back in Rust: the record bytes go from the
/// socket to the decoder without becoming Python objects, and the whole round trip runs
/// with the GIL released.
#[pyclass(module = "kafkars._core")]
struct ArrowFetcher {
    host: String,
    port: u16,
    options: ConnectOptions,
    connection: Option<BrokerConnection>,
}

impl ArrowFetcher {
    /// The Fetch response frame (after its size) and the correlation id it must carry;
    /// a failed exchange drops the connection (the next fetch reconnects).
    fn round_trip(
        &mut self,
        request: &kafka_protocol::messages::RequestKind,
    ) -> Result<(bytes::Bytes, i32), ClientError> {
        if self.connection.is_none() {
            self.connection = Some(BrokerConnection::connect(
                &self.host,
                self.port,
                &self.options,
            )?);
        }
        let connection = self.connection.as_mut().expect("connected above");
        let result = connection.round_trip(request, ApiKey::Fetch, FETCH_VERSION);
        if result.is_err() {
            self.connection = None;
        }
        result
    }
}

/// What `ArrowFetcher.fetch` returns besides the rows.
type FetchOut = (i16, i64, i64, Option<i64>, Option<ArrowRecordBatch>);

#[pymethods]
impl ArrowFetcher {
    /// `security`: TLS and SASL settings as `kafkars.security.client_auth.ClientSecurity`
    /// gives them (None: PLAINTEXT).
    #[new]
    #[pyo3(signature = (host, port, timeout_ms=30_000, *, security=None))]
    fn new(
        host: String,
        port: u16,
        timeout_ms: u64,
        security: Option<PySecurity>,
    ) -> PyResult<Self> {
        let security = match security {
            Some(s) => s.resolve()?,
            None => Security::default(),
        };
        let mut options = ConnectOptions::new("kafkars-spark", security);
        options.timeout = std::time::Duration::from_millis(timeout_ms.max(1));
        Ok(Self {
            host,
            port,
            options,
            connection: None,
        })
    }

    /// Fetches `topic`-`partition` from `offset` and decodes the records in
    /// `[offset, end_offset)` into Spark's Kafka rows. Returns `(error, high_watermark,
    /// log_start_offset, next_offset, (schema, array) capsules)`: `next_offset` is the
    /// offset after the last complete batch received (None if none came), the capsules
    /// None when there was no batch. I/O failures raise `OSError` (and drop the
    /// connection); corrupt batches raise `CorruptRecordError`.
    ///
    /// `isolation_level=1` reads committed: the broker stops at the last stable offset,
    /// which is returned in place of the high watermark (the end a read_committed consumer
    /// sees), and the batches of aborted transactions are left out.
    #[pyo3(signature = (
        topic, partition, offset, end_offset, *, include_headers=false,
        max_bytes=8 << 20, max_wait_ms=500, isolation_level=0,
    ))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn fetch<'py>(
        &mut self,
        py: Python<'py>,
        topic: &str,
        partition: i32,
        offset: i64,
        end_offset: i64,
        include_headers: bool,
        max_bytes: i32,
        max_wait_ms: i32,
        isolation_level: i8,
    ) -> PyResult<(
        i16,
        i64,
        i64,
        Option<i64>,
        Option<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)>,
    )> {
        if !(0..=1).contains(&isolation_level) {
            return Err(PyValueError::new_err(format!(
                "isolation_level must be 0 (read_uncommitted) or 1 (read_committed), not {isolation_level}"
            )));
        }
        let mut opts = Options {
            include_headers,
            batch_fields: false,
            on_error: OnError::Raise,
            verify_crc: true,
            skip_control: true,
            start_offset: Some(offset),
            end_offset: Some(end_offset),
            aborted: None,
        };
        let request = fetch_request(
            isolation_level,
            topic,
            partition,
            offset,
            max_bytes,
            max_wait_ms,
        );
        let (body, correlation) = py
            .detach(|| self.round_trip(&request))
            .map_err(|e| client_error(py, e))?;
        let out: Result<FetchOut, PyErr> = py.detach(|| {
            let mut head = parse_fetch(&body, correlation, partition)?;
            if isolation_level == 1 {
                head.high_watermark = head.last_stable_offset;
                opts.aborted = Some(std::mem::take(&mut head.aborted));
            }
            // Unique again once the decoded response is gone: back to a Vec, no copy.
            let body = Vec::from(body);
            let mut next = None;
            for b in batches(&body[head.records.clone()]) {
                match b {
                    Ok(b) => next = Some(b.last_offset() + 1),
                    Err(_) => break,
                }
            }
            if next.is_none() || head.error != 0 {
                return Ok((
                    head.error,
                    head.high_watermark,
                    head.log_start_offset,
                    None,
                    None,
                ));
            }
            let (start, end) = (head.records.start, head.records.end);
            let offsets = match (i32::try_from(start), i32::try_from(end)) {
                (Ok(s), Ok(e)) => vec![s, e],
                _ => return Err(PyValueError::new_err("fetch response over 2 GiB")),
            };
            // Zero-copy: one binary value over the records inside the response body.
            let blobs = Blobs::Binary(BinaryArray::new(
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                arrow_buffer::Buffer::from_vec(body),
                None,
            ));
            let topics = PerRow::Scalar(topic.to_owned());
            let partitions = PerRow::Scalar(Some(partition));
            let batch = decode(&blobs, &topics, &partitions, &opts).map_err(|e| {
                CorruptRecordError::new_err((
                    kafka_protocol::ResponseError::CorruptMessage.code(),
                    e.message,
                    e.row,
                    e.base_offset,
                ))
            })?;
            Ok((
                head.error,
                head.high_watermark,
                head.log_start_offset,
                next,
                Some(batch),
            ))
        });
        let (error, hw, log_start, next, batch) = out?;
        let capsules = match batch {
            Some(b) => Some(export_batch(py, b)?),
            None => None,
        };
        Ok((error, hw, log_start, next, capsules))
    }

    /// Closes the connection (the next fetch reconnects).
    fn close(&mut self) {
        self.connection = None;
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ArrowFetcher>()?;
    m.add_function(wrap_pyfunction!(decode_batches_arrow, m)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafkars_record::{ControlRecordType, EndTransactionMarker, NewRecord, RecordBatchBuilder};

    fn data(base: i64, pid: i64, values: &[&str]) -> Vec<u8> {
        let mut b = RecordBatchBuilder::new()
            .base_offset(base)
            .producer(pid, 0, 0)
            .transactional(true);
        for v in values {
            b.append(NewRecord::with_value(1, v.as_bytes()));
        }
        b.build().unwrap()
    }

    fn marker(base: i64, pid: i64, control_type: ControlRecordType) -> Vec<u8> {
        let m = EndTransactionMarker {
            control_type,
            coordinator_epoch: 0,
        };
        m.build_batch(base, 1, 0, pid, 0).unwrap()
    }

    fn values(log: &[Vec<u8>], aborted: Option<Vec<(i64, i64)>>) -> Vec<String> {
        let blobs = Blobs::Binary(BinaryArray::from_iter_values([log.concat()]));
        let opts = Options {
            include_headers: false,
            batch_fields: false,
            on_error: OnError::Raise,
            verify_crc: true,
            skip_control: true,
            start_offset: None,
            end_offset: None,
            aborted,
        };
        let batch = decode(
            &blobs,
            &PerRow::Scalar("t".to_owned()),
            &PerRow::Scalar(Some(0)),
            &opts,
        )
        .map_err(|e| e.message)
        .unwrap();
        let col = batch.column_by_name("value").unwrap();
        let col = col.as_any().downcast_ref::<BinaryArray>().unwrap();
        col.iter()
            .map(|v| String::from_utf8(v.unwrap().to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn read_committed_leaves_out_aborted_transactions_only() {
        // Producer 7 aborts, then commits; producer 8's transaction interleaves and commits.
        let log = vec![
            data(0, 7, &["a0", "a1"]),
            data(2, 8, &["b0"]),
            marker(3, 7, ControlRecordType::Abort),
            data(4, 7, &["c0"]),
            marker(5, 7, ControlRecordType::Commit),
            marker(6, 8, ControlRecordType::Commit),
        ];
        assert_eq!(values(&log, None), ["a0", "a1", "b0", "c0"]);
        assert_eq!(values(&log, Some(vec![(7, 0)])), ["b0", "c0"]);
        assert_eq!(values(&log, Some(vec![])), ["a0", "a1", "b0", "c0"]);
    }
}
