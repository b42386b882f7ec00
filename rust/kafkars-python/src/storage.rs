//! Python face of the storage layer: the LogManager and partition logs. Appends take a
//! `RecordSet` and reads return `FileRecords`, so record bytes stay in Rust; every call
//! that touches files runs with the GIL released.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use kafkars_record::{Compression, TimestampType};
use kafkars_storage::{
    CleanerConfig, Log, LogConfig, LogError, LogManager, OffsetMap, SystemClock, TopicCompression,
    TopicPartition,
};
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::errors;
use crate::file_records::FileRecords;

pub(crate) fn log_error(e: LogError) -> PyErr {
    let code = e.kafka_error_code();
    match e {
        LogError::RecordValidation {
            message,
            record_errors,
            ..
        } => errors::RecordValidationError::new_err((code, message, record_errors)),
        e => errors::KafkaError::new_err((code, e.to_string())),
    }
}

/// Reads a storage config dict (keys as in [`LogConfig`]'s fields); missing keys keep
/// Kafka's defaults.
pub(crate) fn log_config(settings: &Bound<'_, PyDict>) -> PyResult<LogConfig> {
    let mut c = LogConfig::default();
    for (key, value) in settings.iter() {
        let key: String = key.extract()?;
        match key.as_str() {
            "segment_bytes" => c.segment_bytes = value.extract()?,
            "segment_ms" => c.segment_ms = value.extract()?,
            "segment_jitter_ms" => c.segment_jitter_ms = value.extract()?,
            "max_index_size" => c.max_index_size = value.extract()?,
            "index_interval_bytes" => c.index_interval_bytes = value.extract()?,
            "max_message_bytes" => c.max_message_bytes = value.extract()?,
            "flush_interval_messages" => c.flush_interval_messages = value.extract()?,
            "flush_ms" => c.flush_ms = value.extract()?,
            "file_delete_delay_ms" => c.file_delete_delay_ms = value.extract()?,
            "retention_ms" => c.retention_ms = value.extract()?,
            "retention_bytes" => c.retention_bytes = value.extract()?,
            "compacted" => c.compacted = value.extract()?,
            "delete_policy" => c.delete_policy = value.extract()?,
            "delete_retention_ms" => c.delete_retention_ms = value.extract()?,
            "min_cleanable_dirty_ratio" => c.min_cleanable_dirty_ratio = value.extract()?,
            "min_compaction_lag_ms" => c.min_compaction_lag_ms = value.extract()?,
            "max_compaction_lag_ms" => c.max_compaction_lag_ms = value.extract()?,
            "preallocate" => c.preallocate = value.extract()?,
            "message_timestamp_before_max_ms" => {
                c.message_timestamp_before_max_ms = value.extract()?;
            }
            "message_timestamp_after_max_ms" => {
                c.message_timestamp_after_max_ms = value.extract()?;
            }
            "message_timestamp_type" => {
                let name: String = value.extract()?;
                c.message_timestamp_type = match name.as_str() {
                    "CreateTime" => TimestampType::CreateTime,
                    "LogAppendTime" => TimestampType::LogAppendTime,
                    other => {
                        return Err(PyValueError::new_err(format!(
                            "unknown timestamp type {other:?}"
                        )));
                    }
                };
            }
            "compression" => {
                let name: String = value.extract()?;
                c.compression = match name.as_str() {
                    "producer" => TopicCompression::Producer,
                    "uncompressed" => TopicCompression::Codec(Compression::None),
                    other => {
                        TopicCompression::Codec(Compression::from_name(other).ok_or_else(|| {
                            PyValueError::new_err(format!("unknown compression {other:?}"))
                        })?)
                    }
                };
            }
            other => {
                return Err(PyKeyError::new_err(format!(
                    "unknown log setting {other:?}"
                )));
            }
        }
    }
    Ok(c)
}

/// What one append did.
#[pyclass(frozen, get_all, name = "LogAppendInfo", module = "kafkars._core")]
pub(crate) struct PyLogAppendInfo {
    first_offset: i64,
    last_offset: i64,
    max_timestamp: i64,
    offset_of_max_timestamp: i64,
    /// The broker's timestamp for LogAppendTime topics, else -1.
    log_append_time: i64,
    log_start_offset: i64,
    valid_bytes: usize,
    num_messages: u64,
}

/// One partition's log (Kafka's UnifiedLog). Shared: every method is thread-safe.
#[pyclass(frozen, name = "Log", module = "kafkars._core")]
pub(crate) struct PyLog {
    pub(crate) inner: Arc<Log>,
}

#[pymethods]
impl PyLog {
    #[getter]
    fn topic(&self) -> String {
        self.inner.topic_partition().topic.clone()
    }
    #[getter]
    fn partition(&self) -> i32 {
        self.inner.topic_partition().partition
    }
    #[getter]
    fn dir(&self) -> PathBuf {
        self.inner.dir()
    }
    /// Records the partition's topic id in its `partition.metadata` (written once);
    /// raises `KafkaError` (INCONSISTENT_TOPIC_ID) when the directory holds another's.
    fn assign_topic_id(&self, py: Python<'_>, topic_id: &[u8]) -> PyResult<()> {
        let topic_id: [u8; 16] = topic_id
            .try_into()
            .map_err(|_| PyValueError::new_err("a topic id is 16 bytes"))?;
        let dir = self.inner.dir();
        py.detach(|| kafkars_storage::partition_metadata::assign(&dir, &topic_id))
            .map_err(log_error)
    }
    /// The topic id in the partition's `partition.metadata`, if it has one.
    fn topic_id<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let dir = self.inner.dir();
        let id = py
            .detach(|| kafkars_storage::partition_metadata::read(&dir))
            .map_err(log_error)?;
        Ok(id.map(|id| PyBytes::new(py, &id)))
    }
    /// The log dir (entry of `log.dirs`) holding this partition.
    #[getter]
    fn dir_parent(&self) -> Option<PathBuf> {
        self.inner.dir().parent().map(PathBuf::from)
    }
    #[getter]
    fn log_end_offset(&self) -> i64 {
        self.inner.log_end_offset()
    }
    #[getter]
    fn log_start_offset(&self) -> i64 {
        self.inner.log_start_offset()
    }
    #[getter]
    fn high_watermark(&self) -> i64 {
        self.inner.high_watermark()
    }
    #[getter]
    fn recovery_point(&self) -> i64 {
        self.inner.recovery_point()
    }
    #[getter]
    fn size_in_bytes(&self) -> u64 {
        self.inner.size_in_bytes()
    }
    #[getter]
    fn num_segments(&self) -> usize {
        self.inner.num_segments()
    }
    #[getter]
    fn latest_epoch(&self) -> Option<i32> {
        self.inner.latest_epoch()
    }

    /// First offset of the earliest open transaction, or the high watermark: what a
    /// read_committed consumer may read up to.
    #[getter]
    fn last_stable_offset(&self) -> i64 {
        self.inner.last_stable_offset()
    }

    /// `(producer_id, first_offset)` of the aborted transactions with data in
    /// `[start_offset, upper_bound)` (a read_committed Fetch's `aborted_transactions`).
    fn aborted_transactions(&self, start_offset: i64, upper_bound: i64) -> Vec<(i64, i64)> {
        self.inner.aborted_transactions(start_offset, upper_bound)
    }

    /// A file slice of whole batches starting with the one holding `offset`, at most
    /// `max_bytes` long (but one whole batch when `min_one_message`), below `upper_bound`.
    fn read(
        &self,
        py: Python<'_>,
        offset: i64,
        max_bytes: u32,
        upper_bound: i64,
        min_one_message: bool,
    ) -> PyResult<FileRecords> {
        let (info, record_count) = py
            .detach(|| {
                let info = self
                    .inner
                    .read(offset, max_bytes, upper_bound, min_one_message)?;
                let count = match &info.records {
                    Some(slice) => slice.count_records().unwrap_or(0),
                    None => 0,
                };
                Ok::<_, kafkars_storage::LogError>((info, count))
            })
            .map_err(log_error)?;
        Ok(FileRecords::new(
            info.records,
            Some(info.fetch_offset_metadata),
            record_count,
        ))
    }

    /// ListOffsets lookup: `(offset, timestamp, leader_epoch)` of the first record with
    /// timestamp >= `timestamp` (or -1 latest, -2 earliest, -3 max timestamp), or None.
    fn fetch_offset_by_timestamp(
        &self,
        py: Python<'_>,
        timestamp: i64,
    ) -> PyResult<Option<(i64, i64, i32)>> {
        let found = py
            .detach(|| self.inner.fetch_offset_by_timestamp(timestamp))
            .map_err(log_error)?;
        Ok(found.map(|f| (f.offset, f.timestamp, f.leader_epoch.unwrap_or(-1))))
    }

    /// `(epoch, end offset)` for OffsetForLeaderEpoch.
    fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        self.inner.end_offset_for_epoch(epoch)
    }

    fn update_config(&self, settings: &Bound<'_, PyDict>) -> PyResult<()> {
        self.inner.update_config(log_config(settings)?);
        Ok(())
    }

    /// Fsyncs up to the log end and advances the recovery point.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.inner.flush(self.inner.log_end_offset()))
            .map_err(log_error)
    }

    fn roll(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.inner.roll()).map_err(log_error)
    }

    /// DeleteRecords: moves the log start offset to `offset` (-1: the high watermark);
    /// returns the new low watermark. Raises `KafkaError` (OFFSET_OUT_OF_RANGE) past the
    /// high watermark.
    fn delete_records(&self, py: Python<'_>, offset: i64) -> PyResult<i64> {
        py.detach(|| self.inner.delete_records(offset))
            .map_err(log_error)
    }

    /// Retention by this log's policy; returns how many segments were deleted.
    fn delete_old_segments(&self, py: Python<'_>, now_ms: i64) -> PyResult<usize> {
        py.detach(|| self.inner.delete_old_segments(now_ms))
            .map_err(log_error)
    }

    /// Forgets idempotent producers idle longer than `expiration_ms`
    /// (`producer.id.expiration.ms`); returns how many were removed.
    fn remove_expired_producers(&self, py: Python<'_>, now_ms: i64, expiration_ms: i64) -> usize {
        py.detach(|| self.inner.remove_expired_producers(now_ms, expiration_ms))
    }

    /// `(epoch, last_sequence)` of an idempotent producer here, or None.
    fn producer_state(&self, producer_id: i64) -> Option<(i16, i32)> {
        self.inner.producer_state(producer_id)
    }

    /// `(producer_id, producer_epoch, last_sequence, last_timestamp, coordinator_epoch,
    /// current_txn_start_offset)` of every producer with state here, by id; -1 where
    /// there is none (DescribeProducers).
    fn active_producers(&self) -> Vec<(i64, i16, i32, i64, i32, i64)> {
        self.inner.active_producers()
    }

    /// Base offsets of the segments, oldest first.
    #[getter]
    fn segment_base_offsets(&self) -> Vec<i64> {
        self.inner.segment_base_offsets()
    }

    fn __repr__(&self) -> String {
        format!(
            "Log({}, start={}, end={}, hw={})",
            self.inner.topic_partition(),
            self.inner.log_start_offset(),
            self.inner.log_end_offset(),
            self.inner.high_watermark()
        )
    }
}

/// Kafka's LogManager: the log dirs (locked), their meta.properties and checkpoints, and
/// every partition log in them.
/// A move under way as Python sees it: topic, partition, target dir, bytes copied,
/// offset lag.
type FutureLogRow = (String, i32, String, u64, i64);

#[pyclass(frozen, name = "LogManager", module = "kafkars._core")]
pub(crate) struct PyLogManager {
    /// Emptied by `shutdown`, which drops the manager and with it the dir locks.
    inner: std::sync::RwLock<Option<Arc<LogManager>>>,
}

impl PyLogManager {
    pub(crate) fn manager(&self) -> PyResult<Arc<LogManager>> {
        self.inner
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| errors::KafkaError::new_err((-1i16, "the log manager is shut down")))
    }
}

pub(crate) fn append_info(info: &kafkars_storage::LogAppendInfo) -> PyLogAppendInfo {
    PyLogAppendInfo {
        first_offset: info.first_offset,
        last_offset: info.last_offset,
        max_timestamp: info.max_timestamp,
        offset_of_max_timestamp: info.offset_of_max_timestamp,
        log_append_time: info.log_append_time,
        log_start_offset: info.log_start_offset,
        valid_bytes: info.valid_bytes,
        num_messages: info.num_messages,
    }
}

pub(crate) fn wrap(log: Arc<Log>) -> PyLog {
    PyLog { inner: log }
}

#[pymethods]
impl PyLogManager {
    /// Locks every dir and reconciles `meta.properties` with `broker_id`/`cluster_id`
    /// (all must agree; a mismatch raises `KafkaError` with Kafka's message).
    #[new]
    #[pyo3(signature = (log_dirs, broker_id, cluster_id = None))]
    fn new(
        py: Python<'_>,
        log_dirs: Vec<PathBuf>,
        broker_id: i32,
        cluster_id: Option<String>,
    ) -> PyResult<Self> {
        let inner = py
            .detach(|| {
                LogManager::new(
                    log_dirs,
                    broker_id,
                    cluster_id.as_deref(),
                    Arc::new(SystemClock),
                )
            })
            .map_err(log_error)?;
        Ok(Self {
            inner: std::sync::RwLock::new(Some(Arc::new(inner))),
        })
    }

    #[getter]
    fn broker_id(&self) -> PyResult<i32> {
        Ok(self.manager()?.broker_id())
    }

    #[getter]
    fn log_dirs(&self) -> PyResult<Vec<PathBuf>> {
        Ok(self.manager()?.log_dirs())
    }

    /// The log dirs an I/O error took offline.
    fn offline_log_dirs(&self) -> PyResult<Vec<String>> {
        let dirs = self.manager()?.offline_log_dirs();
        Ok(dirs
            .iter()
            .map(|d| d.to_string_lossy().into_owned())
            .collect())
    }

    /// Loads (and after an unclean stop, recovers) every partition. `topic_configs` maps
    /// topic → storage settings; others get `default_config`. Returns a report dict.
    #[pyo3(signature = (threads_per_dir, default_config, topic_configs))]
    fn load_logs<'py>(
        &self,
        py: Python<'py>,
        threads_per_dir: usize,
        default_config: &Bound<'py, PyDict>,
        topic_configs: HashMap<String, Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let m = self.manager()?;
        let default = log_config(default_config)?;
        let per_topic = topic_configs
            .into_iter()
            .map(|(t, c)| Ok((t, log_config(&c)?)))
            .collect::<PyResult<HashMap<_, _>>>()?;
        let config_for = move |topic: &str| {
            per_topic
                .get(topic)
                .cloned()
                .unwrap_or_else(|| default.clone())
        };
        let report = py
            .detach(|| m.load_logs(threads_per_dir, &config_for))
            .map_err(log_error)?;
        let out = PyDict::new(py);
        out.set_item("partitions", report.partitions.len())?;
        out.set_item(
            "recovered",
            report
                .recovered
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
        )?;
        out.set_item("skipped", report.skipped.len())?;
        out.set_item("truncated_bytes", report.truncated_bytes())?;
        out.set_item("segments_recovered", report.segments_recovered())?;
        out.set_item("scanned_bytes", report.scanned_bytes())?;
        out.set_item("duration_ms", report.duration.as_secs_f64() * 1000.0)?;
        Ok(out)
    }

    fn get_log(&self, topic: String, partition: i32) -> PyResult<Option<PyLog>> {
        Ok(self
            .manager()?
            .get_log(&TopicPartition::new(topic, partition))
            .map(wrap))
    }

    fn get_or_create_log(
        &self,
        py: Python<'_>,
        topic: String,
        partition: i32,
        settings: &Bound<'_, PyDict>,
    ) -> PyResult<PyLog> {
        let m = self.manager()?;
        let config = log_config(settings)?;
        let tp = TopicPartition::new(topic, partition);
        py.detach(|| m.get_or_create_log(&tp, config))
            .map(wrap)
            .map_err(log_error)
    }

    fn delete_log(&self, py: Python<'_>, topic: String, partition: i32) -> PyResult<bool> {
        let m = self.manager()?;
        let tp = TopicPartition::new(topic, partition);
        py.detach(|| m.delete_log(&tp)).map_err(log_error)
    }

    /// AlterReplicaLogDirs for one partition: starts moving its log to `log_dir` in the
    /// background and returns at once (a no-op when it is there already). Raises
    /// KafkaError with LOG_DIR_NOT_FOUND, REPLICA_NOT_AVAILABLE or KAFKA_STORAGE_ERROR.
    fn alter_log_dir(
        &self,
        py: Python<'_>,
        topic: String,
        partition: i32,
        log_dir: PathBuf,
    ) -> PyResult<()> {
        let m = self.manager()?;
        let tp = TopicPartition::new(topic, partition);
        py.detach(|| m.alter_log_dir(&tp, &log_dir))
            .map_err(log_error)
    }

    /// The log dir holding the partition's current log.
    fn log_dir_of(&self, topic: String, partition: i32) -> PyResult<Option<String>> {
        Ok(self
            .manager()?
            .log_dir_of(&TopicPartition::new(topic, partition))
            .map(|d| d.to_string_lossy().into_owned()))
    }

    /// Moves under way: `(topic, partition, target dir, bytes copied, offset lag)`.
    fn future_logs(&self) -> PyResult<Vec<FutureLogRow>> {
        Ok(self
            .manager()?
            .future_logs()
            .into_iter()
            .map(|f| {
                (
                    f.topic_partition.topic,
                    f.topic_partition.partition,
                    f.log_dir.to_string_lossy().into_owned(),
                    f.size_in_bytes,
                    f.offset_lag,
                )
            })
            .collect())
    }

    fn all_logs(&self) -> PyResult<Vec<PyLog>> {
        Ok(self.manager()?.all_logs().into_iter().map(wrap).collect())
    }

    /// Writes the recovery-point, log-start-offset and replication-offset checkpoints.
    fn checkpoint(&self, py: Python<'_>) -> PyResult<()> {
        let m = self.manager()?;
        py.detach(|| {
            m.checkpoint_recovery_points()?;
            m.checkpoint_log_start_offsets()?;
            m.checkpoint_high_watermarks()
        })
        .map_err(log_error)
    }

    /// Flushes logs whose `flush.ms` has passed; returns how many.
    fn flush_dirty_logs(&self, py: Python<'_>, now_ms: i64) -> PyResult<usize> {
        let m = self.manager()?;
        py.detach(|| m.flush_dirty_logs(now_ms)).map_err(log_error)
    }

    /// Fsyncs the segments logs have rolled away from (Kafka's flush on roll), moving
    /// their recovery points; returns how many logs were flushed.
    fn flush_rolled_segments(&self, py: Python<'_>) -> PyResult<usize> {
        let m = self.manager()?;
        py.detach(|| m.flush_rolled_segments()).map_err(log_error)
    }

    /// Physically deletes `.deleted` segments whose delay has passed, and `-delete` dirs
    /// renamed `file_delete_delay_ms` (the broker's) or more before `now_ms`.
    fn delete_pending(
        &self,
        py: Python<'_>,
        now_ms: i64,
        file_delete_delay_ms: i64,
    ) -> PyResult<usize> {
        let m = self.manager()?;
        py.detach(|| {
            Ok::<_, LogError>(
                m.delete_pending_segments(now_ms)?
                    + m.delete_due_dirs(now_ms, file_delete_delay_ms)?,
            )
        })
        .map_err(log_error)
    }

    /// The `kafka-log-retention` task: deletes old segments of every log by its
    /// cleanup policy; returns how many.
    fn cleanup_logs(&self, py: Python<'_>, now_ms: i64) -> PyResult<usize> {
        let m = self.manager()?;
        py.detach(|| m.cleanup_logs(now_ms)).map_err(log_error)
    }

    /// Writes `recovery-point-offset-checkpoint` (`kafka-recovery-point-checkpoint`).
    fn checkpoint_recovery_points(&self, py: Python<'_>) -> PyResult<()> {
        let m = self.manager()?;
        py.detach(|| m.checkpoint_recovery_points())
            .map_err(log_error)
    }

    /// Writes `log-start-offset-checkpoint` (`kafka-log-start-offset-checkpoint`).
    fn checkpoint_log_start_offsets(&self, py: Python<'_>) -> PyResult<()> {
        let m = self.manager()?;
        py.detach(|| m.checkpoint_log_start_offsets())
            .map_err(log_error)
    }

    /// Starts the log cleaner threads (`log.cleaner.*` settings).
    #[pyo3(signature = (threads, dedupe_buffer_size, io_buffer_size, backoff_ms))]
    fn start_cleaner(
        &self,
        threads: usize,
        dedupe_buffer_size: usize,
        io_buffer_size: usize,
        backoff_ms: u64,
    ) -> PyResult<()> {
        self.manager()?.start_cleaner(CleanerConfig {
            threads,
            dedupe_buffer_size,
            io_buffer_size,
            backoff_ms,
        });
        Ok(())
    }

    /// Stops the cleaner threads after their current pass.
    fn stop_cleaner(&self, py: Python<'_>) -> PyResult<()> {
        let m = self.manager()?;
        py.detach(|| m.stop_cleaner());
        Ok(())
    }

    /// One cleaning pass over the dirtiest compacted log (with `force`, any compacted
    /// log with inactive segments). Returns its stats as a dict, or None.
    #[pyo3(signature = (force = false))]
    fn clean_once<'py>(
        &self,
        py: Python<'py>,
        force: bool,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let m = self.manager()?;
        let stats = py
            .detach(|| {
                let mut map = OffsetMap::new(32 * 1024 * 1024);
                m.clean_once(&mut map, 512 * 1024, force, &|_| Ok(()))
            })
            .map_err(log_error)?;
        let Some(s) = stats else { return Ok(None) };
        let out = PyDict::new(py);
        if let Some(tp) = &s.topic_partition {
            out.set_item("topic", &tp.topic)?;
            out.set_item("partition", tp.partition)?;
        }
        out.set_item("first_dirty_offset", s.first_dirty_offset)?;
        out.set_item("end_offset", s.end_offset)?;
        out.set_item("segments_cleaned", s.segments_cleaned)?;
        out.set_item("bytes_read", s.bytes_read)?;
        out.set_item("bytes_written", s.bytes_written)?;
        out.set_item("records_read", s.records_read)?;
        out.set_item("records_retained", s.records_retained)?;
        out.set_item("tombstones_removed", s.tombstones_removed)?;
        Ok(Some(out))
    }

    /// `cleaner-offset-checkpoint` of every dir as {(topic, partition): offset}.
    fn cleaner_checkpoints(&self) -> PyResult<HashMap<(String, i32), i64>> {
        let m = self.manager()?;
        Ok(m.cleaner_checkpoints()
            .map_err(log_error)?
            .into_iter()
            .map(|(tp, o)| ((tp.topic, tp.partition), o))
            .collect())
    }

    /// Flushes everything, writes the checkpoints and the clean-shutdown marker, then
    /// drops the manager so the dir locks are released. Idempotent.
    fn shutdown(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.inner.write().unwrap_or_else(|e| e.into_inner()).take();
        match taken {
            Some(m) => py.detach(move || m.shutdown()).map_err(log_error),
            None => Ok(()),
        }
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyLogManager>()?;
    m.add_class::<PyLog>()?;
    m.add_class::<PyLogAppendInfo>()?;
    Ok(())
}
