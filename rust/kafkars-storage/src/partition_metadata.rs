//! `partition.metadata` (Kafka's PartitionMetadataFile): the topic id a partition
//! directory belongs to, so a directory left behind by a deleted topic is never taken
//! for a new topic of the same name. Two lines, no trailing newline:
//!
//! ```text
//! version: 0
//! topic_id: <the 16 bytes in URL-safe base64, unpadded>
//! ```
//!
//! Written once, when the broker first leads or follows the partition, atomically
//! (`.tmp`, fsync, rename); afterwards a different id is refused with
//! INCONSISTENT_TOPIC_ID, as Kafka's `UnifiedLog.assignTopicId` does.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use data_encoding::BASE64URL_NOPAD;

use crate::checkpoint::write_atomically;
use crate::error::{LogError, Result};

/// The file's name inside a partition directory.
pub const FILE_NAME: &str = "partition.metadata";
/// The one version Kafka writes; higher ones are read too (Kafka's downgrade rule).
const CURRENT_VERSION: i32 = 0;
/// Kafka's `Uuid.ZERO_UUID` is no topic's id.
const ZERO: [u8; 16] = [0; 16];

/// The path of `dir`'s partition metadata file.
pub fn path(dir: &Path) -> PathBuf {
    dir.join(FILE_NAME)
}

/// Kafka's `Uuid.toString`.
pub fn topic_id_string(id: &[u8; 16]) -> String {
    BASE64URL_NOPAD.encode(id)
}

fn malformed(path: &Path, reason: String) -> LogError {
    LogError::MalformedFile {
        path: path.to_path_buf(),
        reason,
    }
}

/// The topic id recorded in `dir`, or None when the directory has no file yet.
pub fn read(dir: &Path) -> Result<Option<[u8; 16]>> {
    let path = path(dir);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LogError::io(&path, e)),
    };
    let mut lines = text.lines();
    let mut field = |name: &str| -> Result<String> {
        let line = lines.next().unwrap_or_default();
        match line.split_whitespace().collect::<Vec<_>>()[..] {
            [key, value] if key == format!("{name}:") => Ok(value.to_string()),
            _ => Err(malformed(&path, format!("malformed line {line:?}"))),
        }
    };
    let version = field("version")?;
    match version.parse::<i32>() {
        Ok(v) if v >= CURRENT_VERSION => {}
        _ => return Err(malformed(&path, format!("unrecognized version {version}"))),
    }
    let encoded = field("topic_id")?;
    let id: [u8; 16] = BASE64URL_NOPAD
        .decode(encoded.as_bytes())
        .ok()
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(|| malformed(&path, format!("invalid topic id {encoded:?}")))?;
    if id == ZERO {
        return Err(malformed(&path, "the zero topic id".to_string()));
    }
    Ok(Some(id))
}

/// Records `topic_id` for the partition in `dir`: written when the directory has none,
/// accepted when it matches, INCONSISTENT_TOPIC_ID when another topic's id is there.
pub fn assign(dir: &Path, topic_id: &[u8; 16]) -> Result<()> {
    match read(dir)? {
        Some(existing) if &existing == topic_id => Ok(()),
        Some(existing) => Err(LogError::InconsistentTopicId {
            dir: dir.to_path_buf(),
            recorded: topic_id_string(&existing),
            assigned: topic_id_string(topic_id),
        }),
        None => {
            let text = format!(
                "version: {CURRENT_VERSION}\ntopic_id: {}",
                topic_id_string(topic_id)
            );
            write_atomically(&path(dir), text.as_bytes())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: [u8; 16] = [
        0x4b, 0x1a, 0x9c, 0x02, 0x7e, 0x11, 0x4f, 0x3d, 0x8a, 0x55, 0x10, 0xee, 0x01, 0x23, 0x45,
        0x67,
    ];

    #[test]
    fn writes_kafkas_two_lines_once_and_reads_them_back() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), None);
        assign(dir.path(), &ID).unwrap();
        let text = fs::read_to_string(path(dir.path())).unwrap();
        assert_eq!(
            text,
            format!("version: 0\ntopic_id: {}", topic_id_string(&ID))
        );
        assert_eq!(topic_id_string(&ID).len(), 22);
        assert_eq!(read(dir.path()).unwrap(), Some(ID));
        // The same id again: nothing to do.
        assign(dir.path(), &ID).unwrap();
    }

    #[test]
    fn another_topics_id_is_inconsistent() {
        let dir = tempfile::tempdir().unwrap();
        assign(dir.path(), &ID).unwrap();
        let mut other = ID;
        other[0] ^= 1;
        let err = assign(dir.path(), &other).unwrap_err();
        assert_eq!(err.kafka_error_code(), 103, "{err}");
        assert_eq!(read(dir.path()).unwrap(), Some(ID));
    }

    #[test]
    fn reads_what_kafka_writes_and_refuses_garbage() {
        let dir = tempfile::tempdir().unwrap();
        // A file as Apache Kafka 4.1 wrote it.
        fs::write(
            path(dir.path()),
            "version: 0\ntopic_id: sNqBQ6MYT5upcb2NnSb8vw",
        )
        .unwrap();
        let id = read(dir.path()).unwrap().unwrap();
        assert_eq!(topic_id_string(&id), "sNqBQ6MYT5upcb2NnSb8vw");
        for bad in [
            "",
            "version: x\ntopic_id: sNqBQ6MYT5upcb2NnSb8vw",
            "version: -1\ntopic_id: sNqBQ6MYT5upcb2NnSb8vw",
            "version: 0\ntopic_id: short",
            "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA",
            "version: 0",
        ] {
            fs::write(path(dir.path()), bad).unwrap();
            let err = read(dir.path()).unwrap_err();
            assert!(
                matches!(err, LogError::MalformedFile { .. }),
                "{bad:?}: {err}"
            );
        }
    }
}
