//! Kafka's DelayedFetch: a Fetch read at once, or once enough new bytes arrived, the
//! partition moved or the wait ran out.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, EpochEndOffset, FetchResponse, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{BrokerId, ProducerId, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafkars_storage::{
    FetchIsolation, FileSlice, LogError, LogOffsetMetadata, Partition, TopicPartition,
};
use kafkars_timer::{DelayedOperation, OperationState};
use uuid::Uuid;

use crate::lock;
use crate::replica_manager::IsrChanges;

/// One partition of a fetch as the caller planned it.
#[derive(Debug)]
pub struct FetchPartition {
    index: i32,
    /// The partition, or the error code to answer with (unknown topic, not authorised).
    target: Result<Arc<Partition>, i16>,
    fetch_offset: i64,
    max_bytes: i32,
    /// The replica this leader tells the consumer to fetch from instead (KIP-392), or -1.
    preferred_read_replica: i32,
    /// The leader epoch a follower believes current (KIP-320), or -1 for no check: an
    /// older one is fenced (FENCED_LEADER_EPOCH), a newer one is not known here yet
    /// (UNKNOWN_LEADER_EPOCH).
    current_leader_epoch: i32,
    /// The epoch of the last batch a follower has (Fetch v12+), or -1: a leader whose
    /// log disagrees answers with where that epoch ends here (the diverging epoch).
    last_fetched_epoch: i32,
    /// Where the first read started, for counting new bytes without I/O.
    start: Mutex<Option<LogOffsetMetadata>>,
}

impl FetchPartition {
    /// Partition `index` read from `fetch_offset`, at most `max_bytes`; `target` is the
    /// partition or the error code it is answered with, and `preferred_read_replica >= 0`
    /// answers with no records and that replica (KIP-392).
    pub fn new(
        index: i32,
        target: Result<Arc<Partition>, i16>,
        fetch_offset: i64,
        max_bytes: i32,
        preferred_read_replica: i32,
    ) -> Self {
        Self {
            index,
            target,
            fetch_offset,
            max_bytes,
            preferred_read_replica,
            current_leader_epoch: -1,
            last_fetched_epoch: -1,
            start: Mutex::new(None),
        }
    }

    /// A follower's fetch that says which leader epoch it follows.
    pub fn with_current_leader_epoch(mut self, current_leader_epoch: i32) -> Self {
        self.current_leader_epoch = current_leader_epoch;
        self
    }

    /// A follower's fetch that says the epoch of its last batch.
    pub fn with_last_fetched_epoch(mut self, last_fetched_epoch: i32) -> Self {
        self.last_fetched_epoch = last_fetched_epoch;
        self
    }
}

/// One topic of a fetch, in request order.
#[derive(Debug)]
pub struct FetchTopic {
    pub name: String,
    pub topic_id: Uuid,
    pub partitions: Vec<FetchPartition>,
}

/// Everything a fetch needs to be read, re-read and answered from any thread.
#[derive(Debug)]
pub struct FetchSpec {
    replica_id: i32,
    /// A consumer's fetch (v11+) that a follower may serve (KIP-392).
    from_follower: bool,
    /// Where a follower's fetch records the ISR expansion it makes.
    pub(crate) isr_changes: IsrChanges,
    pub(crate) min_bytes: i32,
    max_bytes: i32,
    isolation: FetchIsolation,
    topics: Vec<FetchTopic>,
}

/// One partition's part of the response, before encoding.
#[derive(Debug)]
struct PartitionRead {
    data: PartitionData,
    slice: Option<FileSlice>,
}

fn error_data(index: i32, code: i16, high_watermark: i64, log_start_offset: i64) -> PartitionData {
    PartitionData::default()
        .with_partition_index(index)
        .with_error_code(code)
        .with_high_watermark(high_watermark)
        .with_last_stable_offset(high_watermark)
        .with_log_start_offset(log_start_offset)
        .with_preferred_read_replica(BrokerId(-1))
        .with_records(Some(Bytes::new()))
}

impl FetchSpec {
    /// A Fetch of version `api_version` from `replica_id` (>= 0: a follower, reading to
    /// the log end). `isolation_level`: 0 read_uncommitted, 1 read_committed.
    pub fn new(
        api_version: i16,
        replica_id: i32,
        min_bytes: i32,
        max_bytes: i32,
        isolation_level: i8,
        topics: Vec<FetchTopic>,
    ) -> Self {
        let isolation = if replica_id >= 0 {
            FetchIsolation::LogEnd
        } else if isolation_level == 1 {
            FetchIsolation::TxnCommitted
        } else {
            FetchIsolation::HighWatermark
        };
        FetchSpec {
            replica_id,
            from_follower: replica_id < 0 && api_version >= 11,
            isr_changes: IsrChanges::default(),
            min_bytes,
            // Before v3 a fetch has no response size limit.
            max_bytes: if api_version >= 3 {
                max_bytes
            } else {
                i32::MAX
            },
            isolation,
            topics,
        }
    }

    /// Reads every partition once (Kafka's readFromLog). Errors answer at once, so the
    /// result says whether any partition failed.
    pub(crate) fn read(&self) -> (FetchResult<'_>, bool) {
        let mut remaining = i64::from(self.max_bytes.max(0));
        let mut total = 0i64;
        let mut had_error = false;
        let reads = self
            .topics
            .iter()
            .map(|topic| {
                topic
                    .partitions
                    .iter()
                    .map(|p| {
                        let read = self.read_partition(p, remaining, total == 0);
                        if read.data.error_code != 0 {
                            had_error = true;
                        }
                        let size = read.slice.as_ref().map_or(0, |s| i64::from(s.size));
                        total += size;
                        remaining = (remaining - size).max(0);
                        read
                    })
                    .collect()
            })
            .collect();
        let result = FetchResult {
            spec: self,
            reads,
            bytes: total,
        };
        (result, had_error)
    }

    fn read_partition(
        &self,
        p: &FetchPartition,
        remaining: i64,
        min_one_message: bool,
    ) -> PartitionRead {
        let partition = match &p.target {
            Ok(partition) => partition,
            Err(code) => {
                return PartitionRead {
                    data: error_data(p.index, *code, -1, -1),
                    slice: None,
                };
            }
        };
        let log = partition.log();
        // Kafka answers every failed read, an offset out of range included, with unknown
        // (-1) offsets: the client asks ListOffsets where to go.
        let failed = |e: LogError| {
            let code = match e {
                // Deleted while the fetch waited.
                LogError::Closed(_) => ResponseError::UnknownTopicOrPartition.code(),
                _ => e.kafka_error_code(),
            };
            PartitionRead {
                // A failed read carries no aborted-transaction list (null), where a
                // partition refused before reading has an empty one, as in Kafka.
                data: error_data(p.index, code, -1, -1).with_aborted_transactions(None),
                slice: None,
            }
        };
        if self.replica_id >= 0 && p.current_leader_epoch >= 0 {
            // Kafka's Partition.fetchRecords: a follower of an older leader epoch waits
            // for its LeaderAndIsr; one of a newer epoch is ahead of this leader's.
            let epoch = partition.leader_epoch();
            let fenced = match p.current_leader_epoch.cmp(&epoch) {
                std::cmp::Ordering::Less => Some(ResponseError::FencedLeaderEpoch),
                std::cmp::Ordering::Greater => Some(ResponseError::UnknownLeaderEpoch),
                std::cmp::Ordering::Equal => None,
            };
            if let Some(error) = fenced {
                return PartitionRead {
                    data: error_data(p.index, error.code(), -1, -1).with_aborted_transactions(None),
                    slice: None,
                };
            }
        }
        if self.replica_id >= 0 && p.last_fetched_epoch >= 0 {
            // A follower's fetch (Kafka's Partition.fetchRecords): its log must agree
            // with ours up to the fetch offset, else it is told where its last epoch ends
            // here and truncates there before fetching again (Apache Kafka followers rely
            // on this since IBP 2.7 and skip OffsetForLeaderEpoch). Kafka's leader records
            // where its epoch starts on becoming leader; ours records an epoch at its
            // first append in it. Until then the epoch notionally starts at the log end,
            // and Kafka's answer for an older epoch is the latest epoch at or before it
            // (or the epoch itself) ending there.
            let requested = p.last_fetched_epoch;
            let (epoch, end_offset) = match log.latest_epoch() {
                Some(latest) if latest >= requested => log.end_offset_for_epoch(requested),
                _ if requested > partition.leader_epoch() => (-1, -1),
                Some(latest) => (latest, log.log_end_offset()),
                None => (requested, log.log_end_offset()),
            };
            if epoch < 0 || end_offset < 0 || p.fetch_offset < log.log_start_offset() {
                return PartitionRead {
                    data: error_data(p.index, ResponseError::OffsetOutOfRange.code(), -1, -1)
                        .with_aborted_transactions(None),
                    slice: None,
                };
            }
            if epoch < requested || end_offset < p.fetch_offset {
                return PartitionRead {
                    data: PartitionData::default()
                        .with_partition_index(p.index)
                        .with_high_watermark(partition.high_watermark())
                        .with_last_stable_offset(log.last_stable_offset())
                        .with_log_start_offset(log.log_start_offset())
                        .with_diverging_epoch(
                            EpochEndOffset::default()
                                .with_epoch(epoch)
                                .with_end_offset(end_offset),
                        )
                        .with_preferred_read_replica(BrokerId(-1))
                        .with_records(Some(Bytes::new())),
                    slice: None,
                };
            }
        }
        if self.replica_id >= 0 {
            // A follower's fetch offset is its log end: the leader records it first, so
            // the high watermark in this response already counts it.
            match partition.update_follower_fetch_state(self.replica_id, p.fetch_offset) {
                Ok(Some(isr)) => {
                    lock(&self.isr_changes).push((partition.topic_partition().clone(), isr))
                }
                Ok(None) => {}
                Err(e) => return failed(e),
            }
        }
        if p.preferred_read_replica >= 0 {
            // Sent elsewhere: no records, the offsets the client needs and where to go.
            let high_watermark = partition.high_watermark();
            return PartitionRead {
                data: PartitionData::default()
                    .with_partition_index(p.index)
                    .with_high_watermark(high_watermark)
                    .with_last_stable_offset(log.last_stable_offset())
                    .with_log_start_offset(log.log_start_offset())
                    .with_preferred_read_replica(BrokerId(p.preferred_read_replica))
                    .with_records(Some(Bytes::new())),
                slice: None,
            };
        }
        let limit = i64::from(p.max_bytes).min(remaining).max(0) as u32;
        let result = match partition.read_records(
            p.fetch_offset,
            limit,
            self.isolation,
            min_one_message,
            self.from_follower,
        ) {
            Ok(result) => result,
            Err(e) => return failed(e),
        };
        lock(&p.start).get_or_insert(result.info.fetch_offset_metadata);
        let aborted = (self.isolation == FetchIsolation::TxnCommitted).then(|| {
            log.aborted_transactions(p.fetch_offset, result.last_stable_offset)
                .into_iter()
                .map(|(producer_id, first_offset)| {
                    AbortedTransaction::default()
                        .with_producer_id(ProducerId(producer_id))
                        .with_first_offset(first_offset)
                })
                .collect()
        });
        let slice = result.info.records.filter(|s| s.size > 0);
        if self.replica_id < 0
            && let Some(s) = &slice
        {
            partition.record_fetched(u64::from(s.size));
        }
        PartitionRead {
            data: PartitionData::default()
                .with_partition_index(p.index)
                .with_high_watermark(result.high_watermark)
                .with_last_stable_offset(result.last_stable_offset)
                .with_log_start_offset(result.log_start_offset)
                .with_aborted_transactions(aborted)
                .with_preferred_read_replica(BrokerId(-1)),
            slice,
        }
    }

    /// Whether enough new bytes arrived since the first read (Kafka's DelayedFetch
    /// tryComplete), from offset metadata alone; a partition gone or moved completes it.
    fn satisfied(&self) -> bool {
        let mut available = 0i64;
        for topic in &self.topics {
            for p in &topic.partitions {
                let Ok(partition) = &p.target else { continue };
                let log = partition.log();
                if log.is_offline()
                    || log.is_closed()
                    || (!partition.is_leader() && !self.from_follower)
                {
                    return true;
                }
                let start = *lock(&p.start);
                available += partition
                    .bytes_available(start, p.fetch_offset, self.isolation)
                    .min(i64::from(p.max_bytes.max(0)));
                if available >= i64::from(self.min_bytes) {
                    return true;
                }
            }
        }
        false
    }

    /// The purgatory keys: every partition that was read.
    pub(crate) fn keys(&self) -> Vec<TopicPartition> {
        self.topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .filter(|p| p.target.is_ok())
                    .map(|p| TopicPartition::new(t.name.clone(), p.index))
            })
            .collect()
    }
}

/// A fetch's reads, ready to become its response.
#[derive(Debug)]
pub struct FetchResult<'a> {
    spec: &'a FetchSpec,
    /// Per topic, per partition, in request order.
    reads: Vec<Vec<PartitionRead>>,
    bytes: i64,
}

impl FetchResult<'_> {
    /// Record bytes read (what a client quota counts).
    pub fn bytes(&self) -> i64 {
        self.bytes
    }

    /// Each partition's answer without its records, with the file range they are read
    /// from: `(topic, data, slice)` in request order.
    pub fn partitions(&self) -> impl Iterator<Item = (&str, &PartitionData, Option<&FileSlice>)> {
        self.spec
            .topics
            .iter()
            .zip(&self.reads)
            .flat_map(|(topic, reads)| {
                reads
                    .iter()
                    .map(move |r| (topic.name.as_str(), &r.data, r.slice.as_ref()))
            })
    }

    /// The response, each partition's records being what `records` makes of its file
    /// range (the network layer's sendfile placeholder).
    pub fn response(
        self,
        throttle_time_ms: i32,
        mut records: impl FnMut(FileSlice) -> Bytes,
    ) -> FetchResponse {
        let responses = self
            .spec
            .topics
            .iter()
            .zip(self.reads)
            .map(|(topic, partitions)| {
                let partitions = partitions
                    .into_iter()
                    .map(|read| {
                        let bytes = read.slice.map_or_else(Bytes::new, &mut records);
                        read.data.with_records(Some(bytes))
                    })
                    .collect();
                FetchableTopicResponse::default()
                    .with_topic(TopicName(StrBytes::from_string(topic.name.clone())))
                    .with_topic_id(topic.topic_id)
                    .with_partitions(partitions)
            })
            .collect();
        FetchResponse::default()
            .with_throttle_time_ms(throttle_time_ms)
            .with_responses(responses)
    }
}

/// The reply side of a fetch: who hears its result, and how.
pub trait FetchCompletion: Send {
    /// The fetch waits in the purgatory from now on.
    fn waiting(&mut self) {}

    /// Called once, on whichever thread completes the fetch, with what it read.
    fn complete(self: Box<Self>, result: FetchResult<'_>);
}

pub(crate) struct DelayedFetch {
    pub(crate) state: OperationState,
    pub(crate) delay_ms: u64,
    pub(crate) spec: FetchSpec,
    pub(crate) completion: Mutex<Option<Box<dyn FetchCompletion>>>,
}

impl DelayedOperation for DelayedFetch {
    fn state(&self) -> &OperationState {
        &self.state
    }

    fn delay_ms(&self) -> u64 {
        self.delay_ms
    }

    fn try_complete(&self) -> bool {
        self.spec.satisfied() && self.force_complete()
    }

    fn on_complete(&self) {
        if let Some(completion) = lock(&self.completion).take() {
            let (result, _) = self.spec.read();
            completion.complete(result);
        }
    }

    fn on_expiration(&self) {}
}
