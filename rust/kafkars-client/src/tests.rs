//! The connection against a tiny broker in the test: a thread that reads request frames
//! and answers each with what the test gives for it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, MetadataRequest, MetadataResponse, RequestHeader, RequestKind,
    ResponseHeader, ResponseKind, SaslAuthenticateResponse, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes, VersionRange};

use crate::{BrokerConnection, ClientError, ConnectOptions, SaslLogin, Security, pick_version};

/// One request as the test broker saw it.
struct Seen {
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    request: RequestKind,
}

/// What the test broker sends back: a response (at the request's version unless given),
/// or raw bytes, after which it closes the connection.
#[allow(clippy::large_enum_variant)] // a test helper, built a few times
enum Answer {
    Response(ResponseKind, Option<i16>),
    Raw(Vec<u8>),
}

fn read_request(stream: &mut TcpStream) -> Option<Seen> {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).ok()?;
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut body).ok()?;
    let mut body = Bytes::from(body);
    let api = ApiKey::try_from(i16::from_be_bytes([body[0], body[1]])).unwrap();
    let version = i16::from_be_bytes([body[2], body[3]]);
    let header = RequestHeader::decode(&mut body, api.request_header_version(version)).unwrap();
    let request = RequestKind::decode(api, &mut body, version).unwrap();
    assert!(body.is_empty(), "the whole frame is the request");
    Some(Seen {
        api,
        version,
        correlation_id: header.correlation_id,
        request,
    })
}

fn response_frame(response: &ResponseKind, api: ApiKey, version: i16, correlation: i32) -> Vec<u8> {
    let mut frame = BytesMut::new();
    frame.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(correlation)
        .encode(&mut frame, api.response_header_version(version))
        .unwrap();
    response.encode(&mut frame, version).unwrap();
    let size = (frame.len() - 4) as i32;
    frame[..4].copy_from_slice(&size.to_be_bytes());
    frame.to_vec()
}

/// A broker on a free port answering with `answer(seen request)` until the client goes.
fn broker(
    mut answer: impl FnMut(&Seen) -> Answer + Send + 'static,
) -> (u16, JoinHandle<Vec<(ApiKey, i16)>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut seen = Vec::new();
        while let Some(request) = read_request(&mut stream) {
            seen.push((request.api, request.version));
            match answer(&request) {
                Answer::Response(r, v) => {
                    let frame = response_frame(
                        &r,
                        request.api,
                        v.unwrap_or(request.version),
                        request.correlation_id,
                    );
                    if stream.write_all(&frame).is_err() {
                        break;
                    }
                }
                // Raw bytes end the conversation: the connection closes after them.
                Answer::Raw(b) => {
                    let _ = stream.write_all(&b);
                    break;
                }
            }
        }
        seen
    });
    (port, handle)
}

fn options(security: Security) -> ConnectOptions {
    let mut options = ConnectOptions::new("test", security);
    options.timeout = Duration::from_secs(5);
    options.max_response_bytes = 1 << 20;
    options
}

fn versions(list: &[(ApiKey, i16, i16)]) -> ApiVersionsResponse {
    ApiVersionsResponse::default().with_api_keys(
        list.iter()
            .map(|(k, min, max)| {
                ApiVersion::default()
                    .with_api_key(*k as i16)
                    .with_min_version(*min)
                    .with_max_version(*max)
            })
            .collect(),
    )
}

#[test]
fn versions_are_the_highest_both_sides_take() {
    let range = |min, max| VersionRange { min, max };
    assert_eq!(
        pick_version(ApiKey::Fetch, Some((4, 17)), range(0, 12)).unwrap(),
        12
    );
    assert_eq!(
        pick_version(ApiKey::Fetch, Some((0, 7)), range(4, 12)).unwrap(),
        7
    );
    let err = pick_version(ApiKey::Fetch, Some((13, 17)), range(4, 12)).unwrap_err();
    assert!(matches!(err, ClientError::UnsupportedVersion { .. }));
    assert_eq!(err.error_code(), Some(35));
    assert!(pick_version(ApiKey::Fetch, None, range(0, 12)).is_err());
}

#[test]
fn api_versions_is_asked_once_and_drives_the_choice() {
    let (port, broker) = broker(|seen| match seen.api {
        ApiKey::ApiVersions => Answer::Response(
            ResponseKind::ApiVersions(versions(&[
                (ApiKey::ApiVersions, 0, 4),
                (ApiKey::Metadata, 0, 5),
            ])),
            None,
        ),
        ApiKey::Metadata => Answer::Response(
            ResponseKind::Metadata(
                MetadataResponse::default().with_cluster_id(Some(StrBytes::from_static_str("c1"))),
            ),
            None,
        ),
        other => panic!("unexpected {other:?}"),
    });
    let mut conn =
        BrokerConnection::connect("127.0.0.1", port, &options(Security::default())).unwrap();
    let ours = ApiKey::Metadata.valid_versions();
    assert_eq!(conn.negotiate(ApiKey::Metadata, ours).unwrap(), 5);
    assert!(matches!(
        conn.negotiate(ApiKey::Fetch, ApiKey::Fetch.valid_versions()),
        Err(ClientError::UnsupportedVersion { broker_min: -1, .. })
    ));
    let response = conn
        .call(
            ApiKey::Metadata,
            5,
            &RequestKind::Metadata(MetadataRequest::default()),
        )
        .unwrap();
    let ResponseKind::Metadata(metadata) = response else {
        panic!("a Metadata response")
    };
    assert_eq!(metadata.cluster_id.as_deref(), Some("c1"));
    drop(conn);
    let seen = broker.join().unwrap();
    let newest = ApiKey::ApiVersions.valid_versions().max;
    assert_eq!(
        seen,
        vec![(ApiKey::ApiVersions, newest), (ApiKey::Metadata, 5)]
    );
}

#[test]
fn an_older_broker_answers_api_versions_in_v0_and_is_asked_again() {
    let (port, broker) = broker(|seen| match (seen.api, seen.version) {
        (ApiKey::ApiVersions, v) if v > 2 => {
            let error = versions(&[(ApiKey::ApiVersions, 0, 2)]).with_error_code(35);
            // Kafka answers an unknown ApiVersions version in v0's format.
            Answer::Response(ResponseKind::ApiVersions(error), Some(0))
        }
        (ApiKey::ApiVersions, _) => Answer::Response(
            ResponseKind::ApiVersions(versions(&[
                (ApiKey::ApiVersions, 0, 2),
                (ApiKey::Metadata, 1, 3),
            ])),
            None,
        ),
        other => panic!("unexpected {other:?}"),
    });
    let mut conn =
        BrokerConnection::connect("127.0.0.1", port, &options(Security::default())).unwrap();
    let picked = conn
        .negotiate(ApiKey::Metadata, ApiKey::Metadata.valid_versions())
        .unwrap();
    assert_eq!(picked, 3);
    drop(conn);
    let seen = broker.join().unwrap();
    assert_eq!(seen.last(), Some(&(ApiKey::ApiVersions, 2)));
}

#[test]
fn a_wrong_correlation_id_is_an_error() {
    let (port, _broker) = broker(|seen| {
        Answer::Raw(response_frame(
            &ResponseKind::Metadata(MetadataResponse::default()),
            ApiKey::Metadata,
            seen.version,
            seen.correlation_id + 1,
        ))
    });
    let mut conn =
        BrokerConnection::connect("127.0.0.1", port, &options(Security::default())).unwrap();
    let err = conn
        .call(
            ApiKey::Metadata,
            1,
            &RequestKind::Metadata(MetadataRequest::default()),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::Correlation {
                expected: 1,
                got: 2
            }
        ),
        "{err}"
    );
}

#[test]
fn an_oversized_response_is_refused_unread() {
    let (port, _broker) = broker(|_| Answer::Raw(vec![0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1]));
    let mut conn =
        BrokerConnection::connect("127.0.0.1", port, &options(Security::default())).unwrap();
    let err = conn
        .call(
            ApiKey::Metadata,
            1,
            &RequestKind::Metadata(MetadataRequest::default()),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::FrameSize {
                size: i32::MAX,
                limit: 1048576
            }
        ),
        "{err}"
    );
}

#[test]
fn a_closed_connection_is_an_io_error() {
    let (port, _broker) = broker(|_| Answer::Raw(vec![0, 0, 0, 9, 1]));
    let mut conn =
        BrokerConnection::connect("127.0.0.1", port, &options(Security::default())).unwrap();
    let err = conn
        .call(
            ApiKey::Metadata,
            1,
            &RequestKind::Metadata(MetadataRequest::default()),
        )
        .unwrap_err();
    let ClientError::Io(e) = err else {
        panic!("an io error: {err}")
    };
    assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
}

fn plain_login() -> Security {
    Security {
        tls: None,
        sasl: Some(SaslLogin {
            mechanism: "PLAIN".into(),
            username: "alice".into(),
            password: "secret".into(),
        }),
    }
}

#[test]
fn sasl_plain_logs_in_before_the_first_request() {
    let (port, broker) = broker(|seen| match &seen.request {
        RequestKind::SaslHandshake(r) => {
            assert_eq!(r.mechanism.as_str(), "PLAIN");
            Answer::Response(
                ResponseKind::SaslHandshake(SaslHandshakeResponse::default()),
                None,
            )
        }
        RequestKind::SaslAuthenticate(r) => {
            assert_eq!(&r.auth_bytes[..], b"\0alice\0secret");
            Answer::Response(
                ResponseKind::SaslAuthenticate(SaslAuthenticateResponse::default()),
                None,
            )
        }
        _ => Answer::Response(ResponseKind::Metadata(MetadataResponse::default()), None),
    });
    let mut conn = BrokerConnection::connect("127.0.0.1", port, &options(plain_login())).unwrap();
    conn.call(
        ApiKey::Metadata,
        1,
        &RequestKind::Metadata(MetadataRequest::default()),
    )
    .unwrap();
    drop(conn);
    let seen = broker.join().unwrap();
    let apis: Vec<ApiKey> = seen.iter().map(|(api, _)| *api).collect();
    assert_eq!(
        apis,
        vec![
            ApiKey::SaslHandshake,
            ApiKey::SaslAuthenticate,
            ApiKey::Metadata
        ]
    );
}

#[test]
fn a_refused_login_carries_the_brokers_error_code() {
    let (port, _broker) = broker(|seen| match seen.api {
        ApiKey::SaslHandshake => Answer::Response(
            ResponseKind::SaslHandshake(SaslHandshakeResponse::default()),
            None,
        ),
        _ => Answer::Response(
            ResponseKind::SaslAuthenticate(
                SaslAuthenticateResponse::default()
                    .with_error_code(58)
                    .with_error_message(Some(StrBytes::from_static_str("bad password"))),
            ),
            None,
        ),
    });
    let err = BrokerConnection::connect("127.0.0.1", port, &options(plain_login()))
        .err()
        .expect("refused");
    assert!(err.is_authentication());
    assert_eq!(err.error_code(), Some(58));
    assert!(err.to_string().contains("bad password"), "{err}");
}

#[test]
fn an_unknown_mechanism_shows_what_the_broker_takes() {
    let (port, _broker) = broker(|_| {
        Answer::Response(
            ResponseKind::SaslHandshake(
                SaslHandshakeResponse::default()
                    .with_error_code(33)
                    .with_mechanisms(vec![StrBytes::from_static_str("SCRAM-SHA-512")]),
            ),
            None,
        )
    });
    let err = BrokerConnection::connect("127.0.0.1", port, &options(plain_login()))
        .err()
        .expect("refused");
    assert_eq!(err.error_code(), Some(33));
    assert!(err.to_string().contains("SCRAM-SHA-512"), "{err}");
}

/// The producer against the test broker: a keyed record goes to murmur2's partition; a
/// NOT_LEADER_OR_FOLLOWER answer refreshes the metadata and resends the same batch (same
/// producer id and sequence, so the broker could drop a duplicate); the next send goes on
/// from the sequence after it.
#[test]
fn the_producer_retries_a_batch_with_its_sequence_after_not_leader() {
    use kafka_protocol::messages::metadata_response::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };
    use kafka_protocol::messages::produce_response::{
        PartitionProduceResponse, TopicProduceResponse,
    };
    use kafka_protocol::messages::{BrokerId, InitProducerIdResponse, ProduceResponse, TopicName};
    use std::sync::{Arc, Mutex};

    use crate::producer::{Producer, ProducerConfig, ProducerRecord, partition_for_key};

    let listener_port = Arc::new(Mutex::new(0u16));
    // (partition, producer id, base sequence, records) per Produce seen.
    type Produced = Vec<(i32, i64, i32, i32)>;
    let produced: Arc<Mutex<Produced>> = Arc::default();
    let (port_seen, log) = (Arc::clone(&listener_port), Arc::clone(&produced));
    let (port, broker) = broker(move |seen| match &seen.request {
        RequestKind::ApiVersions(_) => Answer::Response(
            ResponseKind::ApiVersions(versions(&[
                (ApiKey::ApiVersions, 0, 3),
                (ApiKey::Metadata, 0, 12),
                (ApiKey::InitProducerId, 0, 4),
                (ApiKey::Produce, 3, 9),
            ])),
            None,
        ),
        RequestKind::Metadata(_) => {
            let port = i32::from(*port_seen.lock().unwrap());
            let partitions = (0..4)
                .map(|i| {
                    MetadataResponsePartition::default()
                        .with_partition_index(i)
                        .with_leader_id(BrokerId(1))
                })
                .collect();
            Answer::Response(
                ResponseKind::Metadata(
                    MetadataResponse::default()
                        .with_brokers(vec![
                            MetadataResponseBroker::default()
                                .with_node_id(BrokerId(1))
                                .with_host(StrBytes::from_static_str("127.0.0.1"))
                                .with_port(port),
                        ])
                        .with_topics(vec![
                            MetadataResponseTopic::default()
                                .with_name(Some(TopicName(StrBytes::from_static_str("t"))))
                                .with_partitions(partitions),
                        ]),
                ),
                None,
            )
        }
        RequestKind::InitProducerId(r) => {
            assert!(r.transactional_id.is_none());
            Answer::Response(
                ResponseKind::InitProducerId(
                    InitProducerIdResponse::default()
                        .with_producer_id(kafka_protocol::messages::ProducerId(7))
                        .with_producer_epoch(0),
                ),
                None,
            )
        }
        RequestKind::Produce(r) => {
            assert_eq!(r.acks, -1, "acks=all");
            let topic = &r.topic_data[0];
            let data = &topic.partition_data[0];
            let records = data.records.as_ref().unwrap();
            let batch = kafkars_record::RecordBatch::new(records).unwrap();
            batch.validate().unwrap();
            let mut log = log.lock().unwrap();
            log.push((
                data.index,
                batch.producer_id(),
                batch.base_sequence(),
                batch.records_count(),
            ));
            // The first attempt finds a leader that just lost the partition.
            let error = if log.len() == 1 { 6 } else { 0 };
            Answer::Response(
                ResponseKind::Produce(ProduceResponse::default().with_responses(vec![
                    TopicProduceResponse::default()
                        .with_name(topic.name.clone())
                        .with_partition_responses(vec![
                            PartitionProduceResponse::default()
                                .with_index(data.index)
                                .with_error_code(error),
                        ]),
                ])),
                None,
            )
        }
        other => panic!("unexpected {other:?}"),
    });
    *listener_port.lock().unwrap() = port;
    let mut producer = Producer::new(ProducerConfig::new(
        vec![("127.0.0.1".into(), port)],
        options(Security::default()),
    ));
    let record = |value: &'static [u8]| ProducerRecord {
        topic: "t",
        key: Some(b"foobar"),
        value: Some(value),
        ..ProducerRecord::default()
    };
    assert_eq!(producer.send([record(b"a"), record(b"b")]).unwrap(), 2);
    assert_eq!(producer.send([record(b"c")]).unwrap(), 1);
    drop(producer);
    broker.join().unwrap();
    let partition = partition_for_key(b"foobar", 4);
    assert_eq!(
        *produced.lock().unwrap(),
        vec![
            (partition, 7, 0, 2),
            (partition, 7, 0, 2), // the retry: the same sequence
            (partition, 7, 2, 1),
        ]
    );
}
