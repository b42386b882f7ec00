//! Checkpoint files (Kafka's CheckpointFile and OffsetCheckpointFile): a version line,
//! an entry count line, then one entry per line; replaced atomically via `.tmp`,
//! fsync and rename.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::mpsc::{SyncSender, sync_channel};

use crate::error::{IoContext, LogError, Result};
use crate::topic_partition::TopicPartition;

/// The only checkpoint format version Kafka has written.
pub const CHECKPOINT_VERSION: i32 = 0;

/// Writes `lines` as a version-0 checkpoint at `path`, atomically.
pub(crate) fn write_checkpoint(path: &Path, lines: &[String]) -> Result<()> {
    let mut text = String::with_capacity(16 + lines.len() * 32);
    text.push_str(&format!("{CHECKPOINT_VERSION}\n{}\n", lines.len()));
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    write_atomically(path, text.as_bytes())
}

/// Writes `bytes` to `<path>.tmp`, fsyncs it, renames it over `path` and fsyncs the
/// directory, so a crash leaves either the old or the new file, never a mix.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    write_replacing(path, bytes, true)
}

/// [`write_atomically`] with the fsyncs left out when `sync` is false: readers still see
/// the old or the new file whole, but a crash may lose the new one (or leave it empty),
/// so only for a file whose loss costs a rebuild, not data.
pub(crate) fn write_replacing(path: &Path, bytes: &[u8], sync: bool) -> Result<()> {
    let tmp = tmp_path(path);
    {
        let mut file = File::create(&tmp).at(&tmp)?;
        file.write_all(bytes).at(&tmp)?;
        if sync {
            file.sync_all().at(&tmp)?;
        }
    }
    fs::rename(&tmp, path).at(path)?;
    if sync && let Some(dir) = path.parent() {
        fsync_dir(dir)?;
    }
    Ok(())
}

/// Files [`sync_in_background`] may have waiting before a caller waits for room. Rolls
/// come seconds apart at the default segment size, so a roll never waits; a log of tiny
/// segments rolls more often than fsyncs complete, and its appends then go at the
/// fsyncs' pace as before (a log dir move, which copies every segment, keeps up).
const SYNC_QUEUE: usize = 1;

/// Fsyncs `path` (if it still exists) and then its directory on a background thread, in
/// the order asked (at once on this thread when the thread could not be started): Kafka's
/// scheduled `flushProducerStateSnapshot` after a roll, which keeps the fsync, and the
/// journal commit it may wait for behind other files' writeback, off the append path.
pub(crate) fn sync_in_background(path: PathBuf) {
    static QUEUE: OnceLock<Option<SyncSender<PathBuf>>> = OnceLock::new();
    let sender = QUEUE.get_or_init(|| {
        let (tx, rx) = sync_channel::<PathBuf>(SYNC_QUEUE);
        let spawned = std::thread::Builder::new()
            .name("snapshot-flusher".into())
            .spawn(move || {
                for path in rx {
                    sync_with_dir(&path);
                }
            });
        spawned.ok().map(|_| tx)
    });
    match sender {
        Some(s) => {
            if let Err(unsent) = s.send(path) {
                sync_with_dir(&unsent.0);
            }
        }
        None => sync_with_dir(&path),
    }
}

fn sync_with_dir(path: &Path) {
    let result = sync_if_exists(path).and_then(|()| match path.parent() {
        Some(dir) if dir.exists() => fsync_dir(dir),
        _ => Ok(()),
    });
    if let Err(e) = result {
        // The file is a rebuildable snapshot: a failed fsync costs a replay after a crash.
        tracing::warn!(path = %path.display(), error = %e, "background fsync failed");
    }
}

/// Fsyncs a directory so renames and creations inside it are durable.
pub(crate) fn fsync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).at(dir)
}

/// Fsyncs the file at `path`; one removed or renamed meanwhile needs none.
pub(crate) fn sync_if_exists(path: &Path) -> Result<()> {
    match File::open(path) {
        Ok(f) => f.sync_all().at(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(LogError::io(path, e)),
    }
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

/// Reads a checkpoint: returns its entry lines, or `None` when the file does not exist.
/// An empty file, or one that ends after its version line, has no entries (as Kafka's
/// CheckpointFile reads it: a crash can leave a file created but never written). Wrong
/// versions, counts that do not match and unreadable text are errors.
pub(crate) fn read_checkpoint(path: &Path) -> Result<Option<Vec<String>>> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LogError::io(path, e)),
    };
    let malformed = |reason: String| LogError::MalformedFile {
        path: path.to_path_buf(),
        reason,
    };
    let text = String::from_utf8(bytes).map_err(|_| malformed("not UTF-8 text".into()))?;
    let mut lines = text.lines();
    let Some(version) = lines.next() else {
        return Ok(Some(Vec::new()));
    };
    match version.trim().parse::<i32>() {
        Ok(CHECKPOINT_VERSION) => {}
        Ok(v) => return Err(malformed(format!("unsupported version {v}"))),
        Err(_) => return Err(malformed(format!("line 1: bad version {version:?}"))),
    }
    let Some(count) = lines.next() else {
        return Ok(Some(Vec::new()));
    };
    let count: usize = count
        .trim()
        .parse()
        .map_err(|_| malformed(format!("line 2: bad entry count {count:?}")))?;
    let entries: Vec<String> = lines.map(str::to_string).collect();
    if entries.len() != count {
        return Err(malformed(format!(
            "expected {count} entries, found {}",
            entries.len()
        )));
    }
    Ok(Some(entries))
}

/// A `topic partition offset` checkpoint: `recovery-point-offset-checkpoint`,
/// `log-start-offset-checkpoint`, `replication-offset-checkpoint`,
/// `cleaner-offset-checkpoint`.
#[derive(Debug, Clone)]
pub struct OffsetCheckpointFile {
    path: PathBuf,
}

impl OffsetCheckpointFile {
    /// A checkpoint at `path` (not read until [`read`](Self::read)).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        OffsetCheckpointFile { path: path.into() }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the file with `offsets`.
    pub fn write(&self, offsets: &BTreeMap<TopicPartition, i64>) -> Result<()> {
        let lines: Vec<String> = offsets
            .iter()
            .map(|(tp, offset)| format!("{} {} {offset}", tp.topic, tp.partition))
            .collect();
        write_checkpoint(&self.path, &lines)
    }

    /// Reads the file; a missing or empty file is an empty map.
    pub fn read(&self) -> Result<BTreeMap<TopicPartition, i64>> {
        let Some(lines) = read_checkpoint(&self.path)? else {
            return Ok(BTreeMap::new());
        };
        let mut out = BTreeMap::new();
        for (n, line) in lines.iter().enumerate() {
            let bad = || LogError::MalformedFile {
                path: self.path.clone(),
                reason: format!(
                    "line {}: expected `topic partition offset`, got {line:?}",
                    n + 3
                ),
            };
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [topic, partition, offset] = fields[..] else {
                return Err(bad());
            };
            let partition: i32 = partition.parse().map_err(|_| bad())?;
            let offset: i64 = offset.parse().map_err(|_| bad())?;
            out.insert(TopicPartition::new(topic, partition), offset);
        }
        Ok(out)
    }
}
