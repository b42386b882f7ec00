//! Kafka's appendRecords as the leader and its DelayedProduce: acks=all appends waiting
//! for the ISR.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::ProduceResponse;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafkars_storage::{LogError, Partition};
use kafkars_timer::{DelayedOperation, OperationState};

use crate::lock;

/// Why a partition of a Produce is answered without an append (unknown topic, not
/// authorised, ...), as the caller decided.
#[derive(Debug, Clone, Default)]
pub struct AppendRefusal {
    pub code: i16,
    pub message: Option<String>,
    /// `(batch_index, message)` of the records at fault.
    pub record_errors: Vec<(i32, String)>,
}

/// One partition of a Produce, in request order.
#[derive(Debug)]
pub struct AppendPartition {
    pub index: i32,
    pub target: Result<Arc<Partition>, AppendRefusal>,
    pub records: Bytes,
}

/// The reply side of a Produce.
pub trait ProduceCompletion: Send {
    /// The produce waits in the purgatory for the ISR from now on.
    fn waiting(&mut self) {}

    /// Called once, on whichever thread completes the produce: the response, or None
    /// for acks=0 (the client expects nothing).
    fn complete(self: Box<Self>, response: Option<ProduceResponse>);
}

pub(crate) fn partition_error(index: i32, refusal: AppendRefusal) -> PartitionProduceResponse {
    PartitionProduceResponse::default()
        .with_index(index)
        .with_error_code(refusal.code)
        .with_base_offset(-1)
        .with_log_append_time_ms(-1)
        .with_log_start_offset(-1)
        .with_error_message(refusal.message.map(StrBytes::from_string))
        .with_record_errors(
            refusal
                .record_errors
                .into_iter()
                .map(|(batch_index, message)| {
                    BatchIndexAndErrorMessage::default()
                        .with_batch_index(batch_index)
                        .with_batch_index_error_message(Some(StrBytes::from_string(message)))
                })
                .collect(),
        )
}

/// Appends one partition's records as its leader; the answer, and the offset the ISR
/// must reach when the append succeeded.
pub(crate) fn append_partition(
    spec: AppendPartition,
    acks: i16,
) -> (PartitionProduceResponse, Option<(Arc<Partition>, i64)>) {
    let partition = match spec.target {
        Ok(partition) => partition,
        Err(refusal) => return (partition_error(spec.index, refusal), None),
    };
    // Offsets go into copies of the batch headers; the records are written from the
    // request buffer itself.
    match partition.append_records_to_leader(&spec.records, acks) {
        Ok(info) => {
            let response = PartitionProduceResponse::default()
                .with_index(spec.index)
                .with_base_offset(info.first_offset)
                .with_log_append_time_ms(info.log_append_time)
                .with_log_start_offset(info.log_start_offset);
            (response, Some((partition, info.last_offset + 1)))
        }
        Err(e) => {
            let code = e.kafka_error_code();
            if let LogError::RecordValidation {
                message,
                record_errors,
                ..
            } = e
            {
                // Kafka's RecordValidationException: the batch refused for the records
                // named, answered with the partition's log start offset.
                let refusal = AppendRefusal {
                    code,
                    message: Some(message),
                    record_errors,
                };
                let response = partition_error(spec.index, refusal)
                    .with_log_start_offset(partition.log().log_start_offset());
                return (response, None);
            }
            // Kafka words only record validation failures (InvalidRecordException);
            // other append errors answer with the code alone.
            let validation = [
                ResponseError::InvalidRecord.code(),
                ResponseError::InvalidTimestamp.code(),
            ];
            let message = validation.contains(&code).then(|| e.to_string());
            let refusal = AppendRefusal {
                code,
                message,
                record_errors: Vec::new(),
            };
            (partition_error(spec.index, refusal), None)
        }
    }
}

/// One partition of an acks=all produce still waiting for the ISR.
pub(crate) struct PendingPartition {
    /// Where its answer is in the response: topic and partition positions.
    pub(crate) topic: usize,
    pub(crate) partition: usize,
    pub(crate) target: Arc<Partition>,
    pub(crate) required_offset: i64,
    /// The partition's outcome once known: 0, or the error it is answered with.
    pub(crate) result: Option<i16>,
}

/// Who hears the outcome of a [`DelayedProduce`].
pub(crate) enum ProduceWaiter {
    /// A Produce request: the response, its failed partitions marked, is sent.
    Reply(Box<dyn ProduceCompletion>, ProduceResponse),
    /// A coordinator's own append (Kafka's appendRecords `responseCallback`): called once
    /// with each pending partition's error code, in order.
    Callback(Box<dyn FnOnce(Vec<i16>) + Send>),
}

/// Kafka's DelayedProduce: acks=all appends waiting until their partitions' high
/// watermarks reach them, the ISR shrinks below `min.insync.replicas`, leadership moves
/// or `delay_ms` passes.
pub(crate) struct DelayedProduce {
    state: OperationState,
    delay_ms: u64,
    pending: Mutex<Vec<PendingPartition>>,
    waiter: Mutex<Option<ProduceWaiter>>,
}

impl DelayedProduce {
    pub(crate) fn new(
        delay_ms: u64,
        pending: Vec<PendingPartition>,
        waiter: ProduceWaiter,
    ) -> Self {
        Self {
            state: OperationState::new(),
            delay_ms,
            pending: Mutex::new(pending),
            waiter: Mutex::new(Some(waiter)),
        }
    }
}

impl DelayedOperation for DelayedProduce {
    fn state(&self) -> &OperationState {
        &self.state
    }

    fn delay_ms(&self) -> u64 {
        self.delay_ms
    }

    fn try_complete(&self) -> bool {
        let mut pending = lock(&self.pending);
        let mut all_done = true;
        for p in pending.iter_mut().filter(|p| p.result.is_none()) {
            p.result = p
                .target
                .check_enough_replicas_reach_offset(p.required_offset);
            all_done &= p.result.is_some();
        }
        drop(pending);
        all_done && self.force_complete()
    }

    fn on_expiration(&self) {
        for p in lock(&self.pending).iter_mut() {
            p.result
                .get_or_insert(ResponseError::RequestTimedOut.code());
        }
    }

    fn on_complete(&self) {
        let Some(waiter) = lock(&self.waiter).take() else {
            return;
        };
        let pending = std::mem::take(&mut *lock(&self.pending));
        // Completed while still waiting (the broker shutting down): the outcome so far,
        // else NOT_LEADER_OR_FOLLOWER, which a client retries on the next leader.
        let code = |p: &PendingPartition| {
            p.result
                .or_else(|| {
                    p.target
                        .check_enough_replicas_reach_offset(p.required_offset)
                })
                .unwrap_or_else(|| ResponseError::NotLeaderOrFollower.code())
        };
        match waiter {
            ProduceWaiter::Reply(completion, mut response) => {
                for p in &pending {
                    let code = code(p);
                    if code == 0 {
                        continue;
                    }
                    if let Some(slot) = response
                        .responses
                        .get_mut(p.topic)
                        .and_then(|t| t.partition_responses.get_mut(p.partition))
                    {
                        slot.error_code = code;
                        slot.base_offset = -1;
                    }
                }
                completion.complete(Some(response));
            }
            ProduceWaiter::Callback(done) => done(pending.iter().map(code).collect()),
        }
    }
}
