//! End-to-end latency at a fixed offered rate, for the bench harness (`bench/harness/`):
//! a producer thread and a consumer thread on one partition of a broker, each on its own
//! connection of this crate.
//!
//! Open loop: record `i` is due at `start + i / rate`, its due time (ns since start) is
//! written into its value, and its latency is taken from that due time, not from when it
//! was sent, so a broker that stalls the producer is charged for every record it held up
//! (no coordinated omission). The producer sends every record due as one batch, acks=1,
//! one request in flight, as librdkafka with `linger.ms=0` does; the consumer long-polls
//! Fetch (min 1 byte) and takes the clock when each response is read. The client's own
//! cost is per batch, not per record, so at hundreds of thousands of records/s the broker
//! stays the bound on these 2 CPUs, which `rdkafka_performance -l` was not.
//!
//! ```text
//! e2e_latency HOST:PORT TOPIC RATE SECONDS SIZE [WARMUP_S]
//! ```
//!
//! Prints one JSON object: offered and achieved rates, the sample count, p50/p99/p99.9/max,
//! the CDF (quantile, ms) of every record after the warm-up, and the worst latency of each
//! 100 ms of due time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, ProduceRequest, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafkars_client::{BrokerConnection, ConnectOptions, Security};
use kafkars_record::{NewRecord, RecordBatchBuilder, batches};

const PRODUCE_VERSION: i16 = 7;
const FETCH_VERSION: i16 = 5;
/// UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER: a topic just
/// created, whose leader the broker does not know yet. Asked again after the backoff.
const RETRIABLE: [i16; 3] = [3, 5, 6];
const RETRY_BACKOFF: Duration = Duration::from_millis(10);
/// The most one Produce request carries (the rest waits for the next request).
const MAX_REQUEST_BYTES: usize = 1 << 20;

struct Args {
    host: String,
    port: u16,
    topic: String,
    rate: f64,
    seconds: f64,
    size: usize,
    warmup: f64,
}

fn parse_args() -> Result<Args> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 5 {
        bail!("usage: e2e_latency HOST:PORT TOPIC RATE SECONDS SIZE [WARMUP_S]");
    }
    let (host, port) = a[0].rsplit_once(':').context("HOST:PORT")?;
    let size: usize = a[4].parse()?;
    if size < 8 {
        bail!("SIZE must be at least 8 (the due time)");
    }
    Ok(Args {
        host: host.to_owned(),
        port: port.parse()?,
        topic: a[1].clone(),
        rate: a[2].parse()?,
        seconds: a[3].parse()?,
        size,
        warmup: a.get(5).map(|s| s.parse()).transpose()?.unwrap_or(0.5),
    })
}

fn connect(args: &Args, name: &str) -> Result<BrokerConnection> {
    Ok(BrokerConnection::connect(
        &args.host,
        args.port,
        &ConnectOptions::new(name, Security::default()),
    )?)
}

fn topic_name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_owned()))
}

/// Produces records `0..total` at their due times; returns when the last is acknowledged.
fn produce(args: &Args, start: Instant, total: u64, sent: &AtomicU64) -> Result<()> {
    let mut conn = connect(args, "e2e-latency-producer")?;
    let per_request = (MAX_REQUEST_BYTES / (args.size + 16)).max(1) as u64;
    let mut value = vec![0u8; args.size];
    let mut next = 0u64;
    while next < total {
        let elapsed = start.elapsed();
        let due = ((elapsed.as_secs_f64() * args.rate) as u64 + 1).min(total);
        if due <= next {
            // Sleep until the next record is due.
            let at = Duration::from_secs_f64(next as f64 / args.rate);
            thread::sleep(at.saturating_sub(elapsed));
            continue;
        }
        let upto = due.min(next + per_request);
        let now_ms = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as i64;
        let mut builder = RecordBatchBuilder::new();
        for i in next..upto {
            let due_ns = (i as f64 / args.rate * 1e9) as u64;
            value[..8].copy_from_slice(&due_ns.to_be_bytes());
            builder.append(NewRecord::with_value(now_ms, value.as_slice()));
        }
        let request = ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(30_000)
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(topic_name(&args.topic))
                    .with_partition_data(vec![
                        PartitionProduceData::default()
                            .with_index(0)
                            .with_records(Some(Bytes::from(builder.build()?))),
                    ]),
            ]);
        let response = conn.call(
            ApiKey::Produce,
            PRODUCE_VERSION,
            &RequestKind::Produce(request),
        )?;
        let ResponseKind::Produce(response) = response else {
            bail!("not a Produce response");
        };
        let code = response
            .responses
            .iter()
            .flat_map(|t| &t.partition_responses)
            .map(|p| p.error_code)
            .find(|&c| c != 0);
        match code {
            None => {}
            // A topic just created may not have its leader yet: the same records again.
            Some(c) if RETRIABLE.contains(&c) => {
                thread::sleep(RETRY_BACKOFF);
                continue;
            }
            Some(c) => bail!("Produce: error code {c}"),
        }
        next = upto;
        sent.store(next, Ordering::Release);
    }
    Ok(())
}

/// Reads the partition from offset 0 until `total` records came back; the latency of each
/// (ns from its due time to the read of the response holding it) goes into `samples`.
fn consume(
    args: &Args,
    start: Instant,
    total: u64,
    done_producing: &AtomicBool,
    mut samples: Vec<u64>,
) -> Result<Vec<u64>> {
    let mut conn = connect(args, "e2e-latency-consumer")?;
    samples.clear();
    let mut offset = 0i64;
    let mut idle_since: Option<Instant> = None;
    while (samples.len() as u64) < total {
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(100)
            .with_min_bytes(1)
            .with_max_bytes(8 << 20)
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(topic_name(&args.topic))
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_partition(0)
                            .with_fetch_offset(offset)
                            .with_log_start_offset(-1)
                            .with_partition_max_bytes(8 << 20),
                    ]),
            ]);
        let response = conn.call(ApiKey::Fetch, FETCH_VERSION, &RequestKind::Fetch(request))?;
        let now = start.elapsed().as_nanos() as u64;
        let ResponseKind::Fetch(response) = response else {
            bail!("not a Fetch response");
        };
        let before = samples.len();
        for p in response.responses.iter().flat_map(|t| &t.partitions) {
            if RETRIABLE.contains(&p.error_code) {
                thread::sleep(RETRY_BACKOFF);
                continue;
            }
            if p.error_code != 0 {
                bail!("Fetch: error code {}", p.error_code);
            }
            let Some(records) = &p.records else { continue };
            for batch in batches(records) {
                let Ok(batch) = batch else { break }; // a partial batch at the end
                if batch.base_offset() < offset && batch.next_offset() <= offset {
                    continue;
                }
                for record in batch.records()?.iter() {
                    let record = record?;
                    if record.offset < offset {
                        continue;
                    }
                    let value = record.value.context("a record without a value")?;
                    let due = u64::from_be_bytes(value[..8].try_into()?);
                    samples.push(now.saturating_sub(due));
                }
                offset = batch.next_offset();
            }
        }
        if samples.len() == before && done_producing.load(Ordering::Acquire) {
            let since = *idle_since.get_or_insert_with(Instant::now);
            if since.elapsed() > Duration::from_secs(10) {
                bail!("consumed {} of {total} records", samples.len());
            }
        } else {
            idle_since = None;
        }
    }
    Ok(samples)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("e2e_latency: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args = Arc::new(parse_args()?);
    let total = (args.rate * (args.seconds + args.warmup)) as u64;
    let done = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    // Every page of the samples is written once before the start: faulting them in while
    // consuming (2 MiB at a time with transparent huge pages) stalled the consumer for
    // milliseconds, and those stalls were charged to the broker.
    let mut samples = Vec::with_capacity(total as usize);
    samples.resize(total as usize, 1u64);
    // The consumer is connected and fetching before the first record is due.
    let start = Instant::now() + Duration::from_millis(500);
    let consumer = {
        let (args, done) = (args.clone(), done.clone());
        thread::spawn(move || consume(&args, start, total, &done, samples))
    };
    thread::sleep(start.saturating_duration_since(Instant::now()));
    let produced = produce(&args, start, total, &sent);
    let produce_seconds = start.elapsed().as_secs_f64();
    done.store(true, Ordering::Release);
    produced?;
    let mut samples = consumer.join().expect("the consumer thread panicked")?;
    // Records due in the warm-up are dropped: they include the connections' first requests.
    let skip = (args.rate * args.warmup) as usize;
    let mut kept: Vec<u64> = samples.drain(skip.min(samples.len())..).collect();
    // Records come back in the order they were due: the worst of each 100 ms of due time
    // shows when a stall happened (at the start, at a roll, all along).
    let window = ((args.rate / 10.0) as usize).max(1);
    let timeline: Vec<String> = kept
        .chunks(window)
        .map(|w| format!("{:.2}", *w.iter().max().expect("a chunk") as f64 / 1e6))
        .collect();
    kept.sort_unstable();
    let q = |q: f64| -> f64 {
        if kept.is_empty() {
            return f64::NAN;
        }
        kept[((q * kept.len() as f64) as usize).min(kept.len() - 1)] as f64 / 1e6
    };
    let mut quantiles: Vec<f64> = (1..100).map(|i| i as f64 / 100.0).collect();
    quantiles.extend((1..10).map(|i| 0.99 + i as f64 / 1000.0));
    quantiles.extend([0.9995, 0.9999]);
    let cdf: Vec<String> = quantiles
        .iter()
        .map(|&x| format!("[{x}, {:.4}]", q(x)))
        .collect();
    println!(
        "{{\"offered_per_s\": {}, \"achieved_per_s\": {:.1}, \"count\": {}, \"p50\": {:.4}, \
         \"p99\": {:.4}, \"p99.9\": {:.4}, \"max\": {:.4}, \"cdf\": [{}], \"max_per_100ms\": [{}]}}",
        args.rate,
        sent.load(Ordering::Acquire) as f64 / produce_seconds,
        kept.len(),
        q(0.5),
        q(0.99),
        q(0.999),
        kept.last().map_or(f64::NAN, |&ns| ns as f64 / 1e6),
        cdf.join(", "),
        timeline.join(", ")
    );
    Ok(())
}
