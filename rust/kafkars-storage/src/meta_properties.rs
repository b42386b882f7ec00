//! `meta.properties` in each log directory: the broker id and cluster id it belongs to
//! (Kafka 3.x ZooKeeper-mode format, `version=0`).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use crate::checkpoint::write_atomically;
use crate::error::{LogError, Result};

/// File name inside each log directory.
pub const META_PROPERTIES_FILE: &str = "meta.properties";

/// The contents of `meta.properties`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaProperties {
    /// `version` (0 for ZooKeeper-mode brokers).
    pub version: i32,
    /// `broker.id`, when present.
    pub broker_id: Option<i32>,
    /// `cluster.id`, when present.
    pub cluster_id: Option<String>,
    /// Any other keys, kept so a rewrite does not lose them.
    pub other: BTreeMap<String, String>,
}

impl MetaProperties {
    /// Reads `meta.properties` from `dir`; `None` when the file does not exist.
    pub fn read(dir: &Path) -> Result<Option<Self>> {
        let path = dir.join(META_PROPERTIES_FILE);
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LogError::io(&path, e)),
        };
        let malformed = |reason: String| LogError::MalformedFile {
            path: path.clone(),
            reason,
        };
        let mut props = BTreeMap::new();
        for line in text.lines() {
            let line = line.trim_start();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            let (key, value) = line
                .split_once(['=', ':'])
                .ok_or_else(|| malformed(format!("not a key=value line: {line:?}")))?;
            props.insert(key.trim().to_string(), value.trim().to_string());
        }
        let version = match props.remove("version") {
            Some(v) => v
                .parse()
                .map_err(|_| malformed(format!("bad version {v:?}")))?,
            None => return Err(malformed("missing version".into())),
        };
        let broker_id = match props.remove("broker.id") {
            Some(v) => Some(
                v.parse()
                    .map_err(|_| malformed(format!("bad broker.id {v:?}")))?,
            ),
            None => None,
        };
        let cluster_id = props.remove("cluster.id");
        Ok(Some(MetaProperties {
            version,
            broker_id,
            cluster_id,
            other: props,
        }))
    }

    /// Writes `meta.properties` to `dir` atomically.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let mut text = String::from("#\n#kafkars meta.properties\n");
        text.push_str(&format!("version={}\n", self.version));
        if let Some(id) = self.broker_id {
            text.push_str(&format!("broker.id={id}\n"));
        }
        if let Some(id) = &self.cluster_id {
            text.push_str(&format!("cluster.id={id}\n"));
        }
        for (k, v) in &self.other {
            text.push_str(&format!("{k}={v}\n"));
        }
        write_atomically(&dir.join(META_PROPERTIES_FILE), text.as_bytes())
    }
}
