mod common;

use std::collections::BTreeMap;
use std::fs;
use std::sync::Arc;

use common::*;
use kafkars_storage::log_manager::CLEAN_SHUTDOWN_FILE;
use kafkars_storage::{
    Clock, LeaderEpochFileCache, LogConfig, LogError, LogManager, MetaProperties, MockClock,
    OffsetCheckpointFile, TopicPartition,
};

fn clock() -> Arc<dyn Clock> {
    Arc::new(MockClock::new(1_000))
}

fn manager(dirs: &[&std::path::Path], broker_id: i32) -> kafkars_storage::Result<LogManager> {
    LogManager::new(
        dirs.iter().map(|d| d.to_path_buf()).collect(),
        broker_id,
        Some("cluster-a"),
        clock(),
    )
}

#[test]
fn dir_lock_excludes_a_second_manager() {
    let d = tempfile::tempdir().unwrap();
    let m = manager(&[d.path()], 1).unwrap();
    let err = manager(&[d.path()], 1).unwrap_err();
    assert!(matches!(err, LogError::DirLocked { .. }), "{err}");
    assert!(err.to_string().contains("another broker"));
    drop(m);
    manager(&[d.path()], 1).unwrap();
}

#[test]
fn meta_properties_written_checked_and_must_agree() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    drop(manager(&[a.path(), b.path()], 7).unwrap());
    let text = fs::read_to_string(a.path().join("meta.properties")).unwrap();
    assert!(text.starts_with('#'));
    assert!(
        text.contains("version=0\n")
            && text.contains("broker.id=7\n")
            && text.contains("cluster.id=cluster-a\n")
    );
    // Same id: fine. Different configured id: InconsistentBrokerId.
    drop(manager(&[a.path(), b.path()], 7).unwrap());
    assert!(matches!(
        manager(&[a.path()], 8),
        Err(LogError::InconsistentBrokerId(_))
    ));
    // Dirs disagreeing on the cluster.
    let mut meta = MetaProperties::read(b.path()).unwrap().unwrap();
    meta.cluster_id = Some("cluster-b".into());
    meta.write(b.path()).unwrap();
    let err =
        LogManager::new(vec![a.path().into(), b.path().into()], 7, None, clock()).unwrap_err();
    assert!(matches!(err, LogError::InconsistentClusterId(_)), "{err}");
    // A dir without broker.id gets it.
    fs::write(
        a.path().join("meta.properties"),
        "#x\nversion=0\ncluster.id=cluster-a\n",
    )
    .unwrap();
    drop(manager(&[a.path()], 7).unwrap());
    assert_eq!(
        MetaProperties::read(a.path()).unwrap().unwrap().broker_id,
        Some(7)
    );
    fs::write(a.path().join("meta.properties"), "version=zero\n").unwrap();
    assert!(matches!(
        manager(&[a.path()], 7),
        Err(LogError::MalformedFile { .. })
    ));
}

#[test]
fn checkpoint_round_trip_and_malformed_input() {
    let d = tempfile::tempdir().unwrap();
    let f = OffsetCheckpointFile::new(d.path().join("recovery-point-offset-checkpoint"));
    assert!(f.read().unwrap().is_empty());
    let mut m = BTreeMap::new();
    m.insert(TopicPartition::new("a.b_c-d", 3), 42);
    m.insert(TopicPartition::new("x", 0), 0);
    f.write(&m).unwrap();
    assert_eq!(
        fs::read_to_string(f.path()).unwrap(),
        "0\n2\na.b_c-d 3 42\nx 0 0\n"
    );
    assert_eq!(f.read().unwrap(), m);
    // Kafka's CheckpointFile reads a file that ends before its entry count as empty.
    for empty in ["", "0\n", "0"] {
        fs::write(f.path(), empty).unwrap();
        assert!(f.read().unwrap().is_empty(), "{empty:?}");
    }
    for bad in [
        "\n",
        "1\n0\n",
        "0\n2\nx 0 1\n",
        "0\n1\nx 0\n",
        "0\n1\nx zero 1\n",
        "0\nmany\n",
        "\u{0}\u{ff}",
    ] {
        fs::write(f.path(), bad).unwrap();
        assert!(
            matches!(f.read(), Err(LogError::MalformedFile { .. })),
            "{bad:?}"
        );
    }
    let mut cache = LeaderEpochFileCache::load(d.path()).unwrap();
    cache.assign(1, 0).unwrap();
    cache.assign(3, 10).unwrap();
    cache.assign(5, 20).unwrap();
    assert_eq!(
        fs::read_to_string(d.path().join("leader-epoch-checkpoint")).unwrap(),
        "0\n3\n1 0\n3 10\n5 20\n"
    );
    assert_eq!(cache.end_offset_for(2, 30), (1, 10));
    assert_eq!(cache.end_offset_for(3, 30), (3, 20));
    assert_eq!(cache.end_offset_for(5, 30), (5, 30));
    assert_eq!(cache.end_offset_for(0, 30), (0, 0));
    assert_eq!(cache.end_offset_for(9, 30), (-1, -1));
    cache.assign(4, 15).unwrap(); // removes epoch 5 (its start is after 15)
    assert_eq!(cache.latest_epoch(), Some(4));
    let reloaded = LeaderEpochFileCache::load(d.path()).unwrap();
    assert_eq!(reloaded.epoch_entries(), cache.epoch_entries());
}

#[test]
fn an_empty_leader_epoch_checkpoint_is_an_empty_cache() {
    // Apache Kafka creates `leader-epoch-checkpoint` empty with the partition's log and
    // writes it at the first epoch: a partition never led (an unused
    // __transaction_state partition) has an empty one in a Kafka log dir.
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("leader-epoch-checkpoint"), "").unwrap();
    let mut cache = LeaderEpochFileCache::load(d.path()).unwrap();
    assert_eq!(cache.latest_epoch(), None);
    cache.assign(2, 7).unwrap();
    let reloaded = LeaderEpochFileCache::load(d.path()).unwrap();
    assert_eq!(reloaded.epoch_entries(), cache.epoch_entries());
    assert_eq!(reloaded.latest_epoch(), Some(2));
}

#[test]
fn empty_offset_checkpoints_are_read_as_empty() {
    // A crash between creating a checkpoint file and writing it leaves it empty; Kafka
    // reads that as no entries rather than failing the broker's start.
    let d = tempfile::tempdir().unwrap();
    for name in [
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        "replication-offset-checkpoint",
        "cleaner-offset-checkpoint",
    ] {
        fs::write(d.path().join(name), "").unwrap();
    }
    let m = manager(&[d.path()], 1).unwrap();
    m.load_logs(1, &|_| small_config()).unwrap();
    assert!(m.read_high_watermarks().unwrap().is_empty());
    assert!(m.cleaner_checkpoints().unwrap().is_empty());
}

fn fill(m: &LogManager, topics: &[&str]) {
    for t in topics {
        for p in 0..2 {
            let log = m
                .get_or_create_log(&TopicPartition::new(*t, p), small_config())
                .unwrap();
            for _ in 0..30 {
                log.append_as_leader(&batch(2, 5, 100), 0).unwrap();
            }
            log.set_high_watermark(log.log_end_offset());
        }
    }
}

#[test]
fn clean_restart_skips_recovery_and_unclean_restart_recovers() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let topics = ["plain", "with.dots", "under_score", "dash-ed-name"];
    {
        let m = manager(&[a.path(), b.path()], 1).unwrap();
        m.load_logs(2, &|_| small_config()).unwrap();
        fill(&m, &topics);
        m.shutdown().unwrap();
    }
    assert!(a.path().join(CLEAN_SHUTDOWN_FILE).exists());
    {
        let m = manager(&[a.path(), b.path()], 1).unwrap();
        let report = m.load_logs(2, &|_| small_config()).unwrap();
        assert_eq!(report.skipped.len(), 8);
        assert!(report.recovered.is_empty());
        assert_eq!(report.segments_recovered(), 0);
        assert!(
            !a.path().join(CLEAN_SHUTDOWN_FILE).exists(),
            "marker removed after loading"
        );
        for t in topics {
            for p in 0..2 {
                let log = m.get_log(&TopicPartition::new(t, p)).expect(t);
                assert_eq!(log.log_end_offset(), 60);
                assert_eq!(log.recovery_point(), 60);
            }
        }
        let log = m.get_log(&TopicPartition::new("dash-ed-name", 1)).unwrap();
        log.append_as_leader(&batch(2, 5, 100), 0).unwrap();
        // Crash: no shutdown, only a recovery point checkpoint from earlier.
        m.checkpoint_recovery_points().unwrap();
        log.append_as_leader(&batch(2, 5, 100), 0).unwrap();
    }
    let m = manager(&[a.path(), b.path()], 1).unwrap();
    let report = m.load_logs(1, &|_| small_config()).unwrap();
    assert_eq!(report.recovered.len(), 8);
    assert!(report.segments_recovered() >= 8);
    assert_eq!(report.truncated_bytes(), 0);
    assert_eq!(
        m.get_log(&TopicPartition::new("dash-ed-name", 1))
            .unwrap()
            .log_end_offset(),
        64
    );
}

#[test]
fn delete_log_renames_then_removes_after_the_file_delete_delay() {
    let a = tempfile::tempdir().unwrap();
    let m = manager(&[a.path()], 1).unwrap();
    m.load_logs(1, &|_| LogConfig::default()).unwrap();
    let tp = TopicPartition::new("gone-soon", 0);
    let log = m.get_or_create_log(&tp, LogConfig::default()).unwrap();
    log.append_as_leader(&batch(1, 0, 10), 0).unwrap();
    assert!(m.delete_log(&tp).unwrap());
    assert!(m.get_log(&tp).is_none());
    assert!(log.append_as_leader(&batch(1, 0, 10), 0).is_err());
    let names: Vec<String> = fs::read_dir(a.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("gone-soon-0.") && n.ends_with("-delete")),
        "{names:?}"
    );
    // Renamed at the clock's 1,000 ms; Kafka's file.delete.delay.ms (60 s) must pass first.
    assert_eq!(m.delete_due_dirs(60_999, 60_000).unwrap(), 0);
    assert!(fs::read_dir(a.path()).unwrap().any(|e| {
        e.unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with("-delete")
    }));
    assert_eq!(m.delete_due_dirs(61_000, 60_000).unwrap(), 1);
    assert!(!fs::read_dir(a.path()).unwrap().any(|e| {
        e.unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with("-delete")
    }));
}

#[test]
fn flush_dirty_logs_by_flush_ms() {
    let a = tempfile::tempdir().unwrap();
    let m = manager(&[a.path()], 1).unwrap();
    let cfg = LogConfig {
        flush_ms: 500,
        ..small_config()
    };
    let log = m
        .get_or_create_log(&TopicPartition::new("f", 0), cfg)
        .unwrap();
    log.append_as_leader(&batch(3, 0, 10), 0).unwrap();
    assert_eq!(m.flush_dirty_logs(1_100).unwrap(), 0);
    assert_eq!(m.flush_dirty_logs(1_600).unwrap(), 1);
    assert_eq!(log.recovery_point(), 3);
}
