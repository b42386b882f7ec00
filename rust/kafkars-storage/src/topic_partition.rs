//! Partition identity and the `<topic>-<partition>` directory naming.

use std::fmt;

use crate::error::{LogError, Result};

/// A topic name and partition number.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    /// Topic name (may contain `.`, `_` and `-`).
    pub topic: String,
    /// Partition number.
    pub partition: i32,
}

impl TopicPartition {
    /// A topic partition.
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }

    /// The partition's directory name, `<topic>-<partition>`.
    pub fn dir_name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }

    /// Parses a directory name. The partition follows the *last* `-`, so topics
    /// containing `-` round-trip. Suffixes like `.<id>-delete` are not partitions.
    pub fn from_dir_name(name: &str) -> Result<Self> {
        let bad = || LogError::InvalidPartitionDir(name.to_string());
        let (topic, partition) = name.rsplit_once('-').ok_or_else(bad)?;
        if topic.is_empty()
            || partition.is_empty()
            || !partition.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(bad());
        }
        let partition: i32 = partition.parse().map_err(|_| bad())?;
        Ok(TopicPartition::new(topic, partition))
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}
