//! Loading one partition directory at start-up (Kafka's LogLoader): clean up
//! leftovers of deletion and compaction, open segments lazily, and after an unclean
//! shutdown recover every segment from the recovery point on.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::Path;

use crate::error::{IoContext, LogError, Result};
use crate::segment::{
    CLEANED_FILE_SUFFIX, DELETED_FILE_SUFFIX, INDEX_FILE_SUFFIX, LOG_FILE_SUFFIX, LogSegment,
    SWAP_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX,
};

/// What loading a partition did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionLoadStats {
    /// Segments found.
    pub segments: usize,
    /// Segments scanned and re-indexed.
    pub segments_recovered: usize,
    /// Bytes those scans read and validated.
    pub scanned_bytes: u64,
    /// Bytes cut from the end of segments that held invalid or incomplete batches.
    pub truncated_bytes: u64,
    /// Segments deleted because they followed a truncation.
    pub segments_deleted_after_truncation: usize,
    /// Indexes rebuilt because they were missing.
    pub indexes_rebuilt: usize,
    /// `.deleted`, `.cleaned`, orphan index and temporary files removed.
    pub files_removed: usize,
    /// `.swap` segments swapped in.
    pub swaps_completed: usize,
}

/// Segments loaded from disk plus what the leader epoch cache must learn.
pub(crate) struct LoadedSegments {
    pub(crate) segments: BTreeMap<i64, LogSegment>,
    pub(crate) stats: PartitionLoadStats,
    pub(crate) epoch_starts: Vec<(i32, i64)>,
    /// The directory's files after the clean-up (the rest of loading reads its
    /// producer snapshots and transaction indexes from this, not from another listing).
    pub(crate) files: Vec<String>,
}

fn parse_base_offset(name: &str, suffix: &str) -> Option<i64> {
    let stem = name.strip_suffix(suffix)?;
    (stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit()))
        .then(|| stem.parse().ok())
        .flatten()
}

fn remove(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(LogError::io(path, e)),
        _ => Ok(()),
    }
}

/// Loads the segments in `dir`. `recovery_point` is where unflushed data may start;
/// with `had_clean_shutdown` nothing is scanned.
pub(crate) fn load_segments(
    dir: &Path,
    max_index_size: usize,
    index_interval_bytes: u32,
    recovery_point: i64,
    had_clean_shutdown: bool,
) -> Result<LoadedSegments> {
    let mut stats = PartitionLoadStats::default();
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        if let Some(name) = entry.file_name().to_str() {
            names.push(name.to_string());
        }
    }

    // 1. Leftovers of async deletion and of an interrupted cleaning are garbage.
    let mut swaps = Vec::new();
    let mut kept = Vec::new();
    let mut any_swap_file = false;
    for name in names {
        if name.ends_with(DELETED_FILE_SUFFIX)
            || name.ends_with(CLEANED_FILE_SUFFIX)
            || name.ends_with(".tmp")
        {
            remove(&dir.join(&name))?;
            stats.files_removed += 1;
        } else if let Some(base) = name
            .strip_suffix(SWAP_FILE_SUFFIX)
            .and_then(|n| parse_base_offset(n, LOG_FILE_SUFFIX))
        {
            swaps.push(base);
            any_swap_file = true;
        } else if name.ends_with(SWAP_FILE_SUFFIX) {
            // Index .swap files are renamed together with their .log.swap below.
            any_swap_file = true;
        } else {
            kept.push(name);
        }
    }

    // 2. A .swap segment is complete (the cleaner only renames finished files to .swap):
    // it replaces every segment whose base offset lies in its offset range.
    for base in &swaps {
        let mut seg = LogSegment::open(
            dir,
            *base,
            SWAP_FILE_SUFFIX,
            max_index_size,
            index_interval_bytes,
        )?;
        let next = seg.recover()?.next_offset.unwrap_or(*base);
        drop(seg);
        kept.retain(|name| {
            let replaced = [LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX]
                .iter()
                .any(|s| {
                    parse_base_offset(name, s)
                        .is_some_and(|b| b >= *base && b < next.max(*base + 1))
                });
            if replaced {
                let _ = fs::remove_file(dir.join(name));
            }
            !replaced
        });
        for suffix in [LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX] {
            let final_name = crate::segment::segment_file_name(*base, suffix);
            let from = dir.join(format!("{final_name}{SWAP_FILE_SUFFIX}"));
            if from.exists() {
                fs::rename(&from, dir.join(&final_name)).at(&from)?;
                if !kept.contains(&final_name) {
                    kept.push(final_name);
                }
            }
        }
        stats.swaps_completed += 1;
    }
    // Index .swap files without a .log.swap are leftovers.
    if any_swap_file && let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().ends_with(SWAP_FILE_SUFFIX) {
                remove(&e.path())?;
                stats.files_removed += 1;
            }
        }
    }

    // 3. Orphan indexes (no .log) are dropped; .log files become segments.
    let logs: Vec<i64> = kept
        .iter()
        .filter_map(|n| parse_base_offset(n, LOG_FILE_SUFFIX))
        .collect();
    for name in &kept {
        for suffix in [INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX] {
            if let Some(base) = parse_base_offset(name, suffix)
                && !logs.contains(&base)
            {
                remove(&dir.join(name))?;
                stats.files_removed += 1;
            }
        }
    }
    let mut segments = BTreeMap::new();
    let mut epoch_starts = Vec::new();
    // The listing tells which indexes exist: a stat of each cost more than the rest of
    // loading an idle partition.
    let present: HashSet<&str> = kept.iter().map(String::as_str).collect();
    let indexes_listed = |base: i64| {
        [INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX]
            .iter()
            .all(|s| present.contains(crate::segment::segment_file_name(base, s).as_str()))
    };
    for base in logs {
        let mut seg = LogSegment::open(dir, base, "", max_index_size, index_interval_bytes)?;
        if !indexes_listed(base) {
            // Kafka's LogLoader recovers a segment whose index is missing.
            let r = seg.recover()?;
            stats.indexes_rebuilt += 1;
            stats.scanned_bytes += r.scanned_bytes;
            stats.truncated_bytes += r.truncated_bytes;
            epoch_starts.extend(r.epoch_starts);
        }
        segments.insert(base, seg);
    }
    stats.segments = segments.len();

    // 4. Unclean shutdown: recover from the segment holding the recovery point on; in that
    // one, from the last index entry below the recovery point (what was flushed is not
    // read again, as Kafka does, so recovery costs the unflushed bytes).
    if !had_clean_shutdown {
        let first = segments
            .range(..=recovery_point)
            .next_back()
            .map_or(i64::MIN, |(b, _)| *b);
        let bases: Vec<i64> = segments.range(first..).map(|(b, _)| *b).collect();
        let mut truncate_after = None;
        for base in &bases {
            let seg = segments.get_mut(base).expect("listed");
            let r = seg.recover_from((*base == first).then_some(recovery_point))?;
            stats.segments_recovered += 1;
            stats.scanned_bytes += r.scanned_bytes;
            epoch_starts.extend(r.epoch_starts);
            if r.truncated_bytes > 0 {
                tracing::warn!(dir = %dir.display(), segment = base, bytes = r.truncated_bytes, "truncated invalid bytes during recovery");
                stats.truncated_bytes += r.truncated_bytes;
                truncate_after = Some(*base);
                break;
            }
        }
        if let Some(base) = truncate_after {
            let later: Vec<i64> = segments.range(base + 1..).map(|(b, _)| *b).collect();
            for b in later {
                if let Some(seg) = segments.remove(&b) {
                    seg.delete()?;
                    stats.segments_deleted_after_truncation += 1;
                }
            }
        }
    }
    Ok(LoadedSegments {
        segments,
        stats,
        epoch_starts,
        files: kept,
    })
}
