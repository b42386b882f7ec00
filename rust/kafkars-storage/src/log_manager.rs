//! The log directories of a broker (Kafka's LogManager): directory locks,
//! `meta.properties`, the checkpoint files, parallel loading at start-up, creating
//! and deleting partition logs, and the clean-shutdown marker.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::checkpoint::{OffsetCheckpointFile, fsync_dir};
use crate::cleaner::{self, CleanStage, CleanerConfig, CleanerStats, CleanerThreads};
use crate::config::{Clock, LogConfig};
use crate::dir_lock::DirLock;
use crate::error::{IoContext, LogError, Result};
use crate::future_log::{FUTURE_DIR_SUFFIX, FutureLog};
use crate::loader::PartitionLoadStats;
use crate::log::{Log, MoveStage};
use crate::log_dir_failure::LogDirFailure;
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

    /// Total bytes those scans read.
    pub fn scanned_bytes(&self) -> u64 {
        self.partitions.values().map(|s| s.scanned_bytes).sum()
    }
}

struct LogDir {
    path: PathBuf,
    _lock: DirLock,
    failure: Arc<LogDirFailure>,
}

/// Threads that close logs at shutdown.
const CLOSE_THREADS: usize = 8;

/// The broker's logs across its log directories.
#[derive(Debug)]
pub struct LogManager {
    dirs: Vec<LogDirBox>,
    logs: RwLock<HashMap<TopicPartition, (usize, Arc<Log>)>>,
    clock: Arc<dyn Clock>,
    broker_id: i32,
    next_dir: AtomicUsize,
    /// Dirs [`delete_log`](Self::delete_log) renamed, with when (ms): Kafka's `logsToBeDeleted`.
    dirs_to_delete: Mutex<Vec<(PathBuf, i64)>>,
    /// Partitions a cleaner thread is working on (Kafka's LogCleanerManager in-progress
    /// state) and the lock over `cleaner-offset-checkpoint` updates.
    cleaning: Mutex<HashSet<TopicPartition>>,
    cleaner_checkpoint_lock: Mutex<()>,
    cleaner: Mutex<Option<CleanerThreads>>,
    /// Replicas moving to another dir (AlterReplicaLogDirs), by partition.
    moves: Mutex<HashMap<TopicPartition, Arc<LogDirMove>>>,
    /// Where a partition not yet here goes when it is created (an AlterReplicaLogDirs
    /// that came before the partition, as Kafka remembers it).
    preferred_dirs: Mutex<HashMap<TopicPartition, usize>>,
}

/// A replica's move to another log dir, as the moving thread and DescribeLogDirs see it.
#[derive(Debug)]
pub struct LogDirMove {
    /// Index of the target dir; a new AlterReplicaLogDirs may change it mid-move.
    target: AtomicUsize,
    /// Bytes copied into the future log.
    copied_bytes: AtomicU64,
    /// The future log holds every offset below this.
    end_offset: AtomicI64,
    /// Whether the future dir exists.
    started: AtomicBool,
    /// The future dir, while it exists.
    future_dir: Mutex<Option<PathBuf>>,
}

impl LogDirMove {
    /// A move to dir `target` that has copied nothing yet.
    pub fn new(target: usize) -> Self {
        LogDirMove {
            target: AtomicUsize::new(target),
            copied_bytes: AtomicU64::new(0),
            end_offset: AtomicI64::new(0),
            started: AtomicBool::new(false),
            future_dir: Mutex::new(None),
        }
    }
}

/// A future log as DescribeLogDirs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FutureLogInfo {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// The dir it moves to.
    pub log_dir: PathBuf,
    /// Bytes copied so far.
    pub size_in_bytes: u64,
    /// How far the future log is behind the current one.
    pub offset_lag: i64,
}

/// How much a copy pass may leave for the final pass under the log's lock.
const CATCH_UP_BYTES: u64 = 1 << 20;

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
            let failure = Arc::new(LogDirFailure::new(path.clone()));
            dirs.push(LogDirBox(LogDir {
                path,
                _lock: lock,
                failure,
            }));
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
            moves: Mutex::new(HashMap::new()),
            preferred_dirs: Mutex::new(HashMap::new()),
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

    /// The log dirs an I/O error took offline (Kafka's offline log dirs).
    pub fn offline_log_dirs(&self) -> Vec<PathBuf> {
        self.dirs
            .iter()
            .filter(|d| d.0.failure.is_offline())
            .map(|d| d.0.path.clone())
            .collect()
    }

    /// Registers `log` as living in dir `i`, so an I/O error on it fails the dir.
    fn place(&self, i: usize, log: &Log) {
        log.set_log_dir_failure(Arc::clone(&self.dirs[i].0.failure));
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
        let mut report = report.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut logs = self.logs.write().unwrap_or_else(|e| e.into_inner());
        for (i, log) in loaded.into_inner().unwrap_or_else(|e| e.into_inner()) {
            self.place(i, &log);
            let tp = log.topic_partition().clone();
            let Some((j, other)) = logs.remove(&tp) else {
                logs.insert(tp, (i, log));
                continue;
            };
            // Two dirs hold the partition only after a crash between the two renames of
            // a move between dirs: both are complete copies, and the one that took
            // appends (the longer one) is the newer.
            let ((keep_i, keep), (_, drop_log)) = if log.log_end_offset() > other.log_end_offset()
                || (log.log_end_offset() == other.log_end_offset() && i > j)
            {
                ((i, log), (j, other))
            } else {
                ((j, other), (i, log))
            };
            let dir = drop_log.dir();
            tracing::warn!(partition = %tp, kept = %keep.dir().display(), deleted = %dir.display(),
                "the partition is in two log dirs after an interrupted move; keeping the longer log");
            drop(drop_log);
            let doomed = self.delete_dir_name(&tp, &dir);
            fs::rename(&dir, &doomed).at(&dir)?;
            fs::remove_dir_all(&doomed).at(&doomed)?;
            report.deleted_dirs.push(doomed);
            logs.insert(tp, (keep_i, keep));
        }
        drop(logs);
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
            // A move between dirs that did not finish: the current log is intact in its
            // own dir, so the copy goes (Kafka would resume the move instead).
            if name.ends_with(FUTURE_DIR_SUFFIX) {
                tracing::warn!(dir = %entry.path().display(), "deleting the future log of an unfinished move between log dirs");
                fs::remove_dir_all(entry.path()).at(&entry.path())?;
                lock(report).deleted_dirs.push(entry.path());
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
        // New logs go to online dirs only (round robin), as in Kafka.
        let online = |i: &usize| !self.dirs[*i].0.failure.is_offline();
        let preferred = lock(&self.preferred_dirs).remove(tp).filter(online);
        let i = match preferred {
            Some(i) => i,
            None => (0..self.dirs.len())
                .map(|_| self.next_dir.fetch_add(1, Ordering::Relaxed) % self.dirs.len())
                .find(online)
                .ok_or_else(|| LogError::Offline(format!("{tp}: every log dir is offline")))?,
        };
        let dir = self.dirs[i].0.path.join(tp.dir_name());
        let existed = dir.exists();
        let opened = Log::open(
            &dir,
            tp.clone(),
            config,
            0,
            0,
            true,
            Arc::clone(&self.clock),
        );
        let (log, _) = match opened {
            Ok(opened) => opened,
            Err(e) => {
                // Out of descriptors or space: leave no half-made log for the next start.
                if !existed {
                    let _ = fs::remove_dir_all(&dir);
                }
                return Err(e);
            }
        };
        fsync_dir(&self.dirs[i].0.path)?;
        self.place(i, &log);
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
        let parent = dir.parent().unwrap_or(Path::new("."));
        let new_dir = self.delete_dir_name(tp, &dir);
        fs::rename(&dir, &new_dir).at(&dir)?;
        fsync_dir(parent)?;
        log.mark_deleted(&new_dir);
        lock(&self.dirs_to_delete).push((new_dir, self.clock.now_ms()));
        Ok(true)
    }

    fn unique_suffix(&self) -> String {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        format!(
            "{:x}{:x}{:x}",
            self.clock.now_ms(),
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// `<topic>-<partition>.<id>-delete` next to `dir`.
    fn delete_dir_name(&self, tp: &TopicPartition, dir: &Path) -> PathBuf {
        let parent = dir.parent().unwrap_or(Path::new("."));
        parent.join(format!(
            "{}.{}{DELETE_DIR_SUFFIX}",
            tp.dir_name(),
            self.unique_suffix()
        ))
    }

    /// The log dir holding `tp`'s current log.
    pub fn log_dir_of(&self, tp: &TopicPartition) -> Option<PathBuf> {
        let logs = self.logs.read().unwrap_or_else(|e| e.into_inner());
        logs.get(tp).map(|(i, _)| self.dirs[*i].0.path.clone())
    }

    /// The index of the log dir `path` names, comparing resolved paths.
    pub fn dir_index(&self, path: &Path) -> Option<usize> {
        let wanted = fs::canonicalize(path).ok()?;
        self.dirs
            .iter()
            .position(|d| fs::canonicalize(&d.0.path).is_ok_and(|p| p == wanted))
    }

    /// AlterReplicaLogDirs for one partition: starts moving `tp`'s log to `log_dir` in
    /// the background (or retargets a move under way) and returns at once. Moving to
    /// the dir the log is in is a no-op (and cancels a move under way). Fails with
    /// [`LogError::LogDirNotFound`] for a path outside `log.dirs`, and with
    /// [`LogError::ReplicaNotAvailable`] when the partition is not here, remembering
    /// the dir for when it is created (as Kafka does).
    pub fn alter_log_dir(self: &Arc<Self>, tp: &TopicPartition, log_dir: &Path) -> Result<()> {
        let target = self
            .dir_index(log_dir)
            .ok_or_else(|| LogError::LogDirNotFound(log_dir.display().to_string()))?;
        let current = {
            let logs = self.logs.read().unwrap_or_else(|e| e.into_inner());
            match logs.get(tp) {
                Some((i, log)) => {
                    if log.is_offline() {
                        return Err(LogError::Offline(tp.to_string()));
                    }
                    *i
                }
                None => {
                    lock(&self.preferred_dirs).insert(tp.clone(), target);
                    return Err(LogError::ReplicaNotAvailable(tp.to_string()));
                }
            }
        };
        let mut moves = lock(&self.moves);
        if let Some(m) = moves.get(tp) {
            m.target.store(target, Ordering::Release);
            return Ok(());
        }
        if current == target {
            return Ok(());
        }
        let progress = Arc::new(LogDirMove::new(target));
        moves.insert(tp.clone(), Arc::clone(&progress));
        drop(moves);
        let manager = Arc::downgrade(self);
        let tp = tp.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("kafka-alter-log-dir-{tp}"))
            .spawn({
                let tp = tp.clone();
                move || {
                    let Some(m) = manager.upgrade() else { return };
                    let result = m.move_log_dir(&tp, &progress, &|_| Ok(()));
                    lock(&m.moves).remove(&tp);
                    // A failed move's copy goes now rather than at the next start-up.
                    if let Some(dir) = lock(&progress.future_dir).take() {
                        let _ = fs::remove_dir_all(dir);
                    }
                    match result {
                        Ok(true) => tracing::info!(partition = %tp, "moved the log to another dir"),
                        Ok(false) => {}
                        Err(e) => {
                            tracing::error!(partition = %tp, error = %e, "moving the log to another dir failed")
                        }
                    }
                }
            });
        if let Err(e) = spawned {
            lock(&self.moves).remove(&tp);
            return Err(LogError::io("<thread>", e));
        }
        Ok(())
    }

    /// The future logs of the moves under way (DescribeLogDirs).
    pub fn future_logs(&self) -> Vec<FutureLogInfo> {
        let logs = self.logs.read().unwrap_or_else(|e| e.into_inner());
        let moves = lock(&self.moves);
        let mut out: Vec<FutureLogInfo> = moves
            .iter()
            .filter(|(_, m)| m.started.load(Ordering::Acquire))
            .filter_map(|(tp, m)| {
                let (_, log) = logs.get(tp)?;
                Some(FutureLogInfo {
                    topic_partition: tp.clone(),
                    log_dir: self
                        .dirs
                        .get(m.target.load(Ordering::Acquire))?
                        .0
                        .path
                        .clone(),
                    size_in_bytes: m.copied_bytes.load(Ordering::Acquire),
                    offset_lag: (log.log_end_offset() - m.end_offset.load(Ordering::Acquire))
                        .max(0),
                })
            })
            .collect();
        out.sort_by(|a, b| a.topic_partition.cmp(&b.topic_partition));
        out
    }

    /// Moves `tp`'s log to the dir `progress` targets, on the calling thread: copy
    /// passes without the log's lock until little is left, then the swap under it (see
    /// `Log::swap_in_future`); the old dir is removed. The cleaner leaves the partition
    /// alone meanwhile. `crash` is called at each [`MoveStage`]; an error from it (or
    /// any error) leaves the files as they are, as a crash would (the background
    /// thread of [`alter_log_dir`](Self::alter_log_dir) then removes the copy). Returns false when
    /// the move was cancelled (the target became the current dir).
    pub fn move_log_dir(
        &self,
        tp: &TopicPartition,
        progress: &LogDirMove,
        crash: &dyn Fn(MoveStage) -> Result<()>,
    ) -> Result<bool> {
        // Kafka's abortAndPauseCleaning: the cleaner must not swap segments meanwhile.
        loop {
            let mut cleaning = lock(&self.cleaning);
            if cleaning.insert(tp.clone()) {
                break;
            }
            drop(cleaning);
            std::thread::sleep(Duration::from_millis(20));
        }
        let result = self.move_log_dir_paused(tp, progress, crash);
        lock(&self.cleaning).remove(tp);
        progress.started.store(false, Ordering::Release);
        result
    }

    fn move_log_dir_paused(
        &self,
        tp: &TopicPartition,
        progress: &LogDirMove,
        crash: &dyn Fn(MoveStage) -> Result<()>,
    ) -> Result<bool> {
        let mut future: Option<FutureLog> = None;
        loop {
            let (current, log) = {
                let logs = self.logs.read().unwrap_or_else(|e| e.into_inner());
                let (i, log) = logs
                    .get(tp)
                    .ok_or_else(|| LogError::Closed(tp.to_string()))?;
                (*i, Arc::clone(log))
            };
            let target = progress.target.load(Ordering::Acquire);
            let target_changed = future
                .as_ref()
                .is_some_and(|f| f.dir().parent() != Some(self.dirs[target].0.path.as_path()));
            if target_changed || target == current {
                if let Some(f) = future.take() {
                    fs::remove_dir_all(f.dir()).at(f.dir())?;
                    *lock(&progress.future_dir) = None;
                }
                progress.started.store(false, Ordering::Release);
                if target == current {
                    return Ok(false);
                }
            }
            let (sources, leo, version) = log.move_sources()?;
            let f = match &mut future {
                Some(f) => f,
                None => {
                    let dir = self.dirs[target].0.path.join(format!(
                        "{}.{}{FUTURE_DIR_SUFFIX}",
                        tp.dir_name(),
                        self.unique_suffix()
                    ));
                    progress
                        .end_offset
                        .store(log.log_start_offset(), Ordering::Release);
                    *lock(&progress.future_dir) = Some(dir.clone());
                    progress.started.store(true, Ordering::Release);
                    future.insert(FutureLog::create(dir, version)?)
                }
            };
            if f.layout_version != version {
                f.reset(version)?;
            }
            let copied = f.copy_pass(&sources, false)?;
            progress
                .copied_bytes
                .store(f.size_in_bytes(), Ordering::Release);
            progress.end_offset.store(leo, Ordering::Release);
            if copied > CATCH_UP_BYTES {
                continue;
            }
            let final_dir = self.dirs[target].0.path.join(tp.dir_name());
            let old_dir = log.dir();
            let delete_dir = self.delete_dir_name(tp, &old_dir);
            if !log.swap_in_future(f, &final_dir, &delete_dir, crash)? {
                continue;
            }
            *lock(&progress.future_dir) = None;
            if let Some(entry) = self
                .logs
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .get_mut(tp)
            {
                entry.0 = target;
                self.place(target, &entry.1);
            }
            // Checkpoints name the partition under its new dir only from now on.
            self.checkpoint_recovery_points()?;
            self.checkpoint_log_start_offsets()?;
            self.checkpoint_high_watermarks()?;
            fs::remove_dir_all(&delete_dir).at(&delete_dir)?;
            return Ok(true);
        }
    }

    /// Removes the dirs [`delete_log`](Self::delete_log) renamed at least
    /// `file_delete_delay_ms` before `now_ms`, as Kafka's `deleteLogs` waits the broker's
    /// `file.delete.delay.ms`: a fetch still reading the log finishes first, and removing a
    /// big log's files (its page cache dropped) happens later, not inside the DeleteTopics.
    /// Returns how many.
    pub fn delete_due_dirs(&self, now_ms: i64, file_delete_delay_ms: i64) -> Result<usize> {
        self.remove_dirs(|renamed_ms| renamed_ms.saturating_add(file_delete_delay_ms) <= now_ms)
    }

    /// Removes every dir [`delete_log`](Self::delete_log) renamed, due or not (shutdown).
    pub fn delete_pending_dirs(&self) -> Result<usize> {
        self.remove_dirs(|_| true)
    }

    fn remove_dirs(&self, due: impl Fn(i64) -> bool) -> Result<usize> {
        let doomed: Vec<PathBuf> = {
            let mut pending = lock(&self.dirs_to_delete);
            let (doomed, later) = std::mem::take(&mut *pending)
                .into_iter()
                .partition(|(_, renamed_ms)| due(*renamed_ms));
            *pending = later;
            doomed.into_iter().map(|(dir, _)| dir).collect()
        };
        for d in &doomed {
            match fs::remove_dir_all(d) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(LogError::io(d, e));
                }
                _ => {}
            }
        }
        Ok(doomed.len())
    }

    fn write_offsets(&self, file: &str, value: impl Fn(&Log) -> i64) -> Result<()> {
        let logs = self.logs.read().unwrap_or_else(|e| e.into_inner());
        for (i, d) in self.dirs.iter().enumerate() {
            // An offline dir is left alone until restart, as Kafka does.
            if d.0.failure.is_offline() {
                continue;
            }
            let offsets: BTreeMap<TopicPartition, i64> = logs
                .iter()
                .filter(|(_, (di, _))| *di == i)
                .map(|(tp, (_, l))| (tp.clone(), value(l)))
                .collect();
            OffsetCheckpointFile::new(d.0.path.join(file))
                .write(&offsets)
                .inspect_err(|e| d.0.failure.maybe_add_offline_log_dir(e))?;
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
        // Closing is a few fsyncs per partition, each a wait on the disk: several at once
        // overlap the waits (9,000 partitions took 13 s one by one). Logs in an offline
        // dir are left as they are, as Kafka closes only the live dirs' logs.
        let logs: Vec<Arc<Log>> = self
            .logs
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|(i, _)| !self.dirs[*i].0.failure.is_offline())
            .map(|(_, l)| Arc::clone(l))
            .collect();
        let chunk = logs.len().div_ceil(CLOSE_THREADS).max(1);
        std::thread::scope(|scope| {
            let handles: Vec<_> = logs
                .chunks(chunk)
                .map(|part| scope.spawn(move || part.iter().try_for_each(|log| log.close())))
                .collect();
            handles
                .into_iter()
                .try_for_each(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
        })?;
        self.checkpoint_recovery_points()?;
        self.checkpoint_log_start_offsets()?;
        self.checkpoint_high_watermarks()?;
        self.delete_pending_dirs()?;
        for d in self.dirs.iter().filter(|d| !d.0.failure.is_offline()) {
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
