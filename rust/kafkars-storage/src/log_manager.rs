//! The log directories of a broker (Kafka's LogManager): directory locks,
//! `meta.properties`, the checkpoint files, parallel loading at start-up, creating
//! and deleting partition logs, and the clean-shutdown marker.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::checkpoint::{OffsetCheckpointFile, fsync_dir};
use crate::cleaner::{self, CleanStage, CleanerConfig, CleanerStats, CleanerThreads};
use crate::config::{Clock, LogConfig};
use crate::dir_lock::DirLock;
use crate::error::{IoContext, LogError, Result};
use crate::loader::PartitionLoadStats;
use crate::log::Log;
use crate::meta_properties::MetaProperties;
use crate::offset_map::OffsetMap;
use crate::topic_partition::TopicPartition;

/// How often a long recovery logs its progress.
const PROGRESS_INTERVAL: Duration = Duration::from_secs(5);

/// Present after a clean shutdown; start-up then skips recovery.
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";
/// Recovery points of every partition in a dir.
pub const RECOVERY_POINT_CHECKPOINT_FILE: &str = "recovery-point-offset-checkpoint";
/// Log start offsets.
pub const LOG_START_OFFSET_CHECKPOINT_FILE: &str = "log-start-offset-checkpoint";
/// High watermarks.
pub const REPLICATION_OFFSET_CHECKPOINT_FILE: &str = "replication-offset-checkpoint";
/// Log cleaner progress.
pub const CLEANER_OFFSET_CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";
/// Suffix of a partition directory awaiting deletion.
pub const DELETE_DIR_SUFFIX: &str = "-delete";

/// What start-up loading did, for the log and for tests.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    /// Per partition: what its loader did.
    pub partitions: BTreeMap<TopicPartition, PartitionLoadStats>,
    /// Partitions that were recovered (unclean shutdown).
    pub recovered: Vec<TopicPartition>,
    /// Partitions whose recovery was skipped (clean shutdown marker present).
    pub skipped: Vec<TopicPartition>,
    /// Directories that ended in `-delete` and were removed.
    pub deleted_dirs: Vec<PathBuf>,
    /// Wall time spent loading.
    pub duration: Duration,
}

impl LoadReport {
    /// Total bytes truncated across partitions.
    pub fn truncated_bytes(&self) -> u64 {
        self.partitions.values().map(|s| s.truncated_bytes).sum()
    }

    /// Total segments scanned.
    pub fn segments_recovered(&self) -> usize {
        self.partitions.values().map(|s| s.segments_recovered).sum()
    }
}

struct LogDir {
    path: PathBuf,
    _lock: DirLock,
}

/// The broker's logs across its log directories.
#[derive(Debug)]
pub struct LogManager {
    dirs: Vec<LogDirBox>,
    logs: RwLock<HashMap<TopicPartition, (usize, Arc<Log>)>>,
    clock: Arc<dyn Clock>,
    broker_id: i32,
    next_dir: AtomicUsize,
    dirs_to_delete: Mutex<Vec<PathBuf>>,
    /// Partitions a cleaner thread is working on (Kafka's LogCleanerManager in-progress
    /// state) and the lock over `cleaner-offset-checkpoint` updates.
    cleaning: Mutex<HashSet<TopicPartition>>,
    cleaner_checkpoint_lock: Mutex<()>,
    cleaner: Mutex<Option<CleanerThreads>>,
}

struct LogDirBox(LogDir);

impl std::fmt::Debug for LogDirBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.path.display())
    }
}

impl LogManager {
    /// Locks every dir and reconciles `meta.properties` with `broker_id` and
    /// `cluster_id`: all dirs must agree and match; dirs without the file get one.
    /// Fails with [`LogError::DirLocked`] if another broker holds a dir.
    pub fn new(
        log_dirs: Vec<PathBuf>,
        broker_id: i32,
        cluster_id: Option<&str>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self> {
        let mut dirs = Vec::new();
        for path in log_dirs {
            fs::create_dir_all(&path).at(&path)?;
            let lock = DirLock::acquire(&path)?;
            dirs.push(LogDirBox(LogDir { path, _lock: lock }));
        }
        let mut found_cluster: Option<(PathBuf, String)> =
            cluster_id.map(|c| (PathBuf::from("<config>"), c.to_string()));
        let mut metas = Vec::new();
        for d in &dirs {
            let meta = MetaProperties::read(&d.0.path)?;
            if let Some(m) = &meta {
                if let Some(id) = m.broker_id
                    && id != broker_id
                {
                    return Err(LogError::InconsistentBrokerId(format!(
                        "configured broker.id {broker_id} doesn't match stored broker.id {id} in {}; \
                         if you moved your data, make sure your configured broker.id matches",
                        d.0.path.display()
                    )));
                }
                if let Some(c) = &m.cluster_id {
                    match &found_cluster {
                        Some((where_, other)) if other != c => {
                            return Err(LogError::InconsistentClusterId(format!(
                                "cluster.id {c} in {} doesn't match {other} from {}",
                                d.0.path.display(),
                                where_.display()
                            )));
                        }
                        None => found_cluster = Some((d.0.path.clone(), c.clone())),
                        _ => {}
                    }
                }
            }
            metas.push(meta);
        }
        let cluster = found_cluster.map(|(_, c)| c);
        for (d, meta) in dirs.iter().zip(metas) {
            let wanted = MetaProperties {
                version: 0,
                broker_id: Some(broker_id),
                cluster_id: cluster.clone(),
                other: meta.as_ref().map(|m| m.other.clone()).unwrap_or_default(),
            };
            if meta.as_ref() != Some(&wanted) {
                wanted.write(&d.0.path)?;
            }
        }
        Ok(LogManager {
            dirs,
            logs: RwLock::new(HashMap::new()),
            clock,
            broker_id,
            next_dir: AtomicUsize::new(0),
            dirs_to_delete: Mutex::new(Vec::new()),
            cleaning: Mutex::new(HashSet::new()),
            cleaner_checkpoint_lock: Mutex::new(()),
            cleaner: Mutex::new(None),
        })
    }

    /// The broker id the dirs belong to.
    pub fn broker_id(&self) -> i32 {
        self.broker_id
    }

    /// The log directories.
    pub fn log_dirs(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.0.path.clone()).collect()
    }

    /// Loads every partition in every dir, `threads_per_dir` partitions at a time per
    /// dir. `config_for` gives each topic's config. Without the clean-shutdown marker,
    /// segments past the recovery point are recovered. The marker is removed afterwards
    /// so a crash from now on is seen as unclean.
    pub fn load_logs(
        &self,
        threads_per_dir: usize,
        config_for: &(dyn Fn(&str) -> LogConfig + Sync),
    ) -> Result<LoadReport> {
        let started = Instant::now();
        let report = Mutex::new(LoadReport::default());
        let loaded: Mutex<Vec<(usize, Arc<Log>)>> = Mutex::new(Vec::new());
        let results: Vec<Result<()>> = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .dirs
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    let report = &report;
                    let loaded = &loaded;
                    scope.spawn(move || {
                        self.load_dir(
                            i,
                            &d.0.path,
                            threads_per_dir.max(1),
                            config_for,
                            report,
                            loaded,
                        )
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(LogError::Closed("a log loading thread panicked".into()))
                    })
                })
                .collect()
        });
        for r in results {
            r?;
        }
        let mut logs = self.logs.write().unwrap_or_else(|e| e.into_inner());
        for (i, log) in loaded.into_inner().unwrap_or_else(|e| e.into_inner()) {
            logs.insert(log.topic_partition().clone(), (i, log));
        }
        let mut report = report.into_inner().unwrap_or_else(|e| e.into_inner());
        report.duration = started.elapsed();
        Ok(report)
    }

    fn load_dir(
        &self,
        dir_index: usize,
        dir: &Path,
        threads: usize,
        config_for: &(dyn Fn(&str) -> LogConfig + Sync),
        report: &Mutex<LoadReport>,
        loaded: &Mutex<Vec<(usize, Arc<Log>)>>,
    ) -> Result<()> {
        let marker = dir.join(CLEAN_SHUTDOWN_FILE);
        let clean = marker.exists();
        let recovery_points = OffsetCheckpointFile::new(dir.join(RECOVERY_POINT_CHECKPOINT_FILE))
            .read()
            .unwrap_or_else(|e| {
                // Kafka resets to 0 (full recovery) when the checkpoint is unreadable.
                tracing::warn!(error = %e, "ignoring unreadable recovery point checkpoint");
                BTreeMap::new()
            });
        let log_starts = OffsetCheckpointFile::new(dir.join(LOG_START_OFFSET_CHECKPOINT_FILE))
            .read()
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "ignoring unreadable log start offset checkpoint");
                BTreeMap::new()
            });
        let mut jobs = Vec::new();
        for entry in fs::read_dir(dir).at(dir)? {
            let entry = entry.at(dir)?;
            if !entry.file_type().at(&entry.path())?.is_dir() {
                continue;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            // Hidden dirs hold broker state that is not a log (kafkars' dynamic configs).
            if name.starts_with('.') {
                continue;
            }
            if name.ends_with(DELETE_DIR_SUFFIX) {
                fs::remove_dir_all(entry.path()).at(&entry.path())?;
                lock(report).deleted_dirs.push(entry.path());
                continue;
            }
            match TopicPartition::from_dir_name(&name) {
                Ok(tp) => jobs.push((tp, entry.path())),
                Err(_) => {
                    tracing::warn!(dir = %entry.path().display(), "skipping a directory that is not a partition")
                }
            }
        }
        let next = AtomicUsize::new(0);
        let done = AtomicUsize::new(0);
        let total = jobs.len();
        let last_progress = Mutex::new(Instant::now());
        if !clean && total > 0 {
            tracing::info!(dir = %dir.display(), partitions = total, "recovering logs after an unclean shutdown");
        }
        let errors: Mutex<Vec<LogError>> = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..threads.min(jobs.len().max(1)) {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some((tp, path)) = jobs.get(i) else { break };
                        let config = config_for(&tp.topic);
                        let rp = recovery_points.get(tp).copied().unwrap_or(0);
                        let ls = log_starts.get(tp).copied().unwrap_or(0);
                        match Log::open(
                            path,
                            tp.clone(),
                            config,
                            rp,
                            ls,
                            clean,
                            Arc::clone(&self.clock),
                        ) {
                            Ok((log, stats)) => {
                                if stats.truncated_bytes > 0 {
                                    tracing::warn!(
                                        partition = %tp,
                                        truncated_bytes = stats.truncated_bytes,
                                        segments_deleted = stats.segments_deleted_after_truncation,
                                        "recovery truncated an invalid or incomplete tail"
                                    );
                                }
                                let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                                // Long recoveries say how far they are, every few seconds.
                                if !clean {
                                    let mut last = lock(&last_progress);
                                    if last.elapsed() >= PROGRESS_INTERVAL || finished == total {
                                        *last = Instant::now();
                                        tracing::info!(
                                            dir = %dir.display(),
                                            "recovered {finished}/{total} partitions"
                                        );
                                    }
                                }
                                let mut r = lock(report);
                                if clean {
                                    r.skipped.push(tp.clone());
                                } else {
                                    r.recovered.push(tp.clone());
                                }
                                r.partitions.insert(tp.clone(), stats);
                                lock(loaded).push((dir_index, log));
                            }
                            Err(e) => lock(&errors).push(e),
                        }
                    }
                });
            }
        });
        if let Some(e) = errors
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .into_iter()
            .next()
        {
            return Err(e);
        }
        if clean {
            fs::remove_file(&marker).at(&marker)?;
            fsync_dir(dir)?;
        }
        Ok(())
    }

    /// The log of `tp`, if loaded or created.
    pub fn get_log(&self, tp: &TopicPartition) -> Option<Arc<Log>> {
        self.logs
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(tp)
            .map(|(_, l)| Arc::clone(l))
    }

    /// The log of `tp`, creating `<dir>/<topic>-<partition>` in the next dir
    /// (round robin) if it does not exist.
    pub fn get_or_create_log(&self, tp: &TopicPartition, config: LogConfig) -> Result<Arc<Log>> {
        if let Some(l) = self.get_log(tp) {
            return Ok(l);
        }
        let mut logs = self.logs.write().unwrap_or_else(|e| e.into_inner());
        if let Some((_, l)) = logs.get(tp) {
            return Ok(Arc::clone(l));
        }
        let i = self.next_dir.fetch_add(1, Ordering::Relaxed) % self.dirs.len();
        let dir = self.dirs[i].0.path.join(tp.dir_name());
        let (log, _) = Log::open(
            &dir,
            tp.clone(),
            config,
            0,
            0,
            true,
            Arc::clone(&self.clock),
        )?;
        fsync_dir(&self.dirs[i].0.path)?;
        logs.insert(tp.clone(), (i, Arc::clone(&log)));
        Ok(log)
    }

    /// Every log.
    pub fn all_logs(&self) -> Vec<Arc<Log>> {
        self.logs
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .map(|(_, l)| Arc::clone(l))
            .collect()
    }

    /// Removes `tp`'s log: its dir is renamed `<topic>-<partition>.<id>-delete` now and
    /// removed by [`delete_pending_dirs`](Self::delete_pending_dirs) (or at next start-up).
    pub fn delete_log(&self, tp: &TopicPartition) -> Result<bool> {
        let removed = self
            .logs
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tp);
        let Some((_, log)) = removed else {
            return Ok(false);
        };
        let dir = log.dir();
        let unique = format!("{:x}{:x}", self.clock.now_ms(), std::process::id());
        let parent = dir.parent().unwrap_or(Path::new("."));
        let new_dir = parent.join(format!("{}.{unique}{DELETE_DIR_SUFFIX}", tp.dir_name()));
        fs::rename(&dir, &new_dir).at(&dir)?;
        fsync_dir(parent)?;
        log.mark_deleted(&new_dir);
        lock(&self.dirs_to_delete).push(new_dir);
        Ok(true)
    }

    /// Removes directories renamed by [`delete_log`](Self::delete_log); returns how many.
    pub fn delete_pending_dirs(&self) -> Result<usize> {
        let dirs: Vec<PathBuf> = std::mem::take(&mut *lock(&self.dirs_to_delete));
        for d in &dirs {
            match fs::remove_dir_all(d) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(LogError::io(d, e));
                }
                _ => {}
            }
        }
        Ok(dirs.len())
    }

    fn write_offsets(&self, file: &str, value: impl Fn(&Log) -> i64) -> Result<()> {
        let logs = self.logs.read().unwrap_or_else(|e| e.into_inner());
        for (i, d) in self.dirs.iter().enumerate() {
            let offsets: BTreeMap<TopicPartition, i64> = logs
                .iter()
                .filter(|(_, (di, _))| *di == i)
                .map(|(tp, (_, l))| (tp.clone(), value(l)))
                .collect();
            OffsetCheckpointFile::new(d.0.path.join(file)).write(&offsets)?;
        }
        Ok(())
    }

    /// Writes `recovery-point-offset-checkpoint` in every dir.
    pub fn checkpoint_recovery_points(&self) -> Result<()> {
        self.write_offsets(RECOVERY_POINT_CHECKPOINT_FILE, Log::recovery_point)
    }

    /// Writes `log-start-offset-checkpoint` in every dir.
    pub fn checkpoint_log_start_offsets(&self) -> Result<()> {
        self.write_offsets(LOG_START_OFFSET_CHECKPOINT_FILE, Log::log_start_offset)
    }

    /// Writes `replication-offset-checkpoint` (high watermarks) in every dir.
    pub fn checkpoint_high_watermarks(&self) -> Result<()> {
        self.write_offsets(REPLICATION_OFFSET_CHECKPOINT_FILE, Log::high_watermark)
    }

    /// Reads the high watermarks saved in `replication-offset-checkpoint`.
    pub fn read_high_watermarks(&self) -> Result<BTreeMap<TopicPartition, i64>> {
        let mut out = BTreeMap::new();
        for d in &self.dirs {
            out.extend(
                OffsetCheckpointFile::new(d.0.path.join(REPLICATION_OFFSET_CHECKPOINT_FILE))
                    .read()?,
            );
        }
        Ok(out)
    }

    /// Flushes logs whose `flush.ms` has passed since their last flush (the
    /// `kafka-log-flusher` task). Returns how many were flushed.
    pub fn flush_dirty_logs(&self, now_ms: i64) -> Result<usize> {
        let mut n = 0;
        for log in self.all_logs() {
            let flush_ms = log.config().flush_ms;
            if now_ms.saturating_sub(log.last_flush_ms()) >= flush_ms
                && log.recovery_point() < log.log_end_offset()
            {
                log.flush(log.log_end_offset())?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Fsyncs the segments every log has rolled away from, moving its recovery point to
    /// its active segment. Kafka schedules this flush on each roll; without it the
    /// recovery point would stay where the last `flush.ms` flush left it (by default,
    /// never), and an unclean start would re-scan everything written since start-up.
    /// Returns how many logs were flushed.
    pub fn flush_rolled_segments(&self) -> Result<usize> {
        let mut n = 0;
        for log in self.all_logs() {
            let active_base = log.log_end_offset_metadata().segment_base_offset;
            if log.recovery_point() < active_base {
                match log.flush(active_base) {
                    Ok(()) => n += 1,
                    Err(LogError::Closed(_)) => {} // deleted meanwhile
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(n)
    }

    /// Physically deletes `.deleted` segments whose delay has passed, in every log.
    pub fn delete_pending_segments(&self, now_ms: i64) -> Result<usize> {
        let mut n = 0;
        for log in self.all_logs() {
            n += log.delete_pending(now_ms)?;
        }
        Ok(n)
    }

    /// The `kafka-log-retention` task (Kafka's cleanupLogs): deletes old segments of
    /// every log by its policy. Returns how many segments were deleted.
    pub fn cleanup_logs(&self, now_ms: i64) -> Result<usize> {
        let mut n = 0;
        for log in self.all_logs() {
            match log.delete_old_segments(now_ms) {
                Ok(k) => n += k,
                Err(LogError::Closed(_)) => {} // deleted meanwhile
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }

    /// The cleaner checkpoints of every dir.
    pub fn cleaner_checkpoints(&self) -> Result<BTreeMap<TopicPartition, i64>> {
        let mut out = BTreeMap::new();
        for d in &self.dirs {
            out.extend(
                OffsetCheckpointFile::new(d.0.path.join(CLEANER_OFFSET_CHECKPOINT_FILE))
                    .read()
                    .unwrap_or_default(),
            );
        }
        Ok(out)
    }

    fn update_cleaner_checkpoint(&self, tp: &TopicPartition, offset: i64) -> Result<()> {
        let _guard = lock(&self.cleaner_checkpoint_lock);
        let logs = self.logs.read().unwrap_or_else(|e| e.into_inner());
        let Some((dir_index, _)) = logs.get(tp) else {
            return Ok(());
        };
        let file = OffsetCheckpointFile::new(
            self.dirs[*dir_index]
                .0
                .path
                .join(CLEANER_OFFSET_CHECKPOINT_FILE),
        );
        let mut offsets = file.read().unwrap_or_default();
        // Partitions deleted since are dropped from the file.
        offsets.retain(|t, _| logs.get(t).is_some_and(|(i, _)| i == dir_index));
        offsets.insert(tp.clone(), offset);
        file.write(&offsets)
    }

    /// One cleaning pass over the dirtiest compacted log not being cleaned by another
    /// thread (Kafka's grabFilthiestCompactedLog + clean). With `force` every compacted
    /// log with inactive segments qualifies. `crash` is called after each file stage.
    /// Returns None when no log needed cleaning.
    pub fn clean_once(
        &self,
        map: &mut OffsetMap,
        io_buffer_size: usize,
        force: bool,
        crash: &dyn Fn(CleanStage) -> Result<()>,
    ) -> Result<Option<CleanerStats>> {
        let now = self.clock.now_ms();
        let checkpoints = self.cleaner_checkpoints()?;
        let target = {
            let mut cleaning = lock(&self.cleaning);
            let mut best: Option<cleaner::LogToClean> = None;
            for log in self.all_logs() {
                let tp = log.topic_partition();
                if cleaning.contains(tp) {
                    continue;
                }
                let candidate =
                    match cleaner::log_to_clean(&log, checkpoints.get(tp).copied(), now, force) {
                        Ok(c) => c,
                        Err(LogError::Closed(_)) => None,
                        Err(e) => return Err(e),
                    };
                if let Some(c) = candidate
                    && best
                        .as_ref()
                        .is_none_or(|b| c.cleanable_ratio() > b.cleanable_ratio())
                {
                    best = Some(c);
                }
            }
            let Some(best) = best else { return Ok(None) };
            cleaning.insert(best.log.topic_partition().clone());
            best
        };
        let tp = target.log.topic_partition().clone();
        let result = cleaner::clean(&target, map, io_buffer_size, now, crash);
        lock(&self.cleaning).remove(&tp);
        let stats = result?;
        if stats.end_offset > stats.first_dirty_offset {
            self.update_cleaner_checkpoint(&tp, stats.end_offset)?;
            tracing::info!(partition = %tp, ?stats, "cleaned log");
        }
        Ok(Some(stats))
    }

    /// Starts the log cleaner threads (`log.cleaner.enable`); a no-op if running.
    pub fn start_cleaner(self: &Arc<Self>, config: CleanerConfig) {
        let mut cleaner = lock(&self.cleaner);
        if cleaner.is_none() {
            *cleaner = Some(CleanerThreads::start(Arc::downgrade(self), config));
        }
    }

    /// Stops the cleaner threads after their current pass.
    pub fn stop_cleaner(&self) {
        let threads = lock(&self.cleaner).take();
        if let Some(t) = threads {
            t.shutdown();
        }
    }

    /// Clean shutdown: close (flush, trim) every log, write the checkpoints, then the
    /// clean-shutdown marker in every dir. The dir locks are released on drop.
    pub fn shutdown(&self) -> Result<()> {
        self.stop_cleaner();
        for log in self.all_logs() {
            log.close()?;
        }
        self.checkpoint_recovery_points()?;
        self.checkpoint_log_start_offsets()?;
        self.checkpoint_high_watermarks()?;
        self.delete_pending_dirs()?;
        for d in &self.dirs {
            let marker = d.0.path.join(CLEAN_SHUTDOWN_FILE);
            fs::File::create(&marker)
                .and_then(|f| f.sync_all())
                .at(&marker)?;
            fsync_dir(&d.0.path)?;
        }
        Ok(())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
