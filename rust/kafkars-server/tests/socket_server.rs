//! The socket server against real TCP clients: ordering, sendfile, hostile frames.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafkars_server::{
    FileRegion, Request, RequestChannel, RequestHandlerPool, Response, ResponseChunk, ResponseSend,
    SocketServer, SocketServerConfig,
};

const METADATA: i16 = 3;

/// Starts a server on a free port whose handler answers each request with a body of
/// `"<correlation id>:"` followed by the request body and `file`'s contents (sent with
/// sendfile). Requests whose body starts with `slow` are answered 200 ms later.
fn start(
    file: Arc<std::fs::File>,
    file_len: usize,
    config: SocketServerConfig,
) -> (SocketServer, RequestChannel, RequestHandlerPool, u16) {
    let channel = RequestChannel::new(config.queued_max_requests);
    let server = SocketServer::start(config, &channel).unwrap();
    let port = server.bound_listeners()[0].local_addr.port();
    let handler = Arc::new(move |request: Request| {
        let file = Arc::clone(&file);
        let respond = move |request: Request| {
            let mut body = format!("{}:", request.header.correlation_id).into_bytes();
            body.extend_from_slice(&request.body);
            let send = ResponseSend::new(
                request.header.correlation_id,
                0,
                vec![
                    ResponseChunk::Bytes(Bytes::from(body)),
                    ResponseChunk::File(FileRegion {
                        file,
                        position: 0,
                        len: file_len,
                    }),
                ],
            );
            request.responder.send(Response::Send(send));
        };
        if request.body.starts_with(b"slow") {
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                respond(request);
            });
        } else {
            respond(request);
        }
    });
    let pool = RequestHandlerPool::start(2, &channel, handler).unwrap();
    (server, channel, pool, port)
}

fn config() -> SocketServerConfig {
    let mut config = SocketServerConfig::default();
    config.listeners[0].port = 0;
    config.num_network_threads = 2;
    config.socket_request_max_bytes = 1024 * 1024;
    config
}

/// A Metadata v1 request frame (header v1: key, version, correlation id, client id).
fn frame(correlation_id: i32, body: &[u8]) -> Vec<u8> {
    let mut payload = Vec::new();
    payload.extend_from_slice(&METADATA.to_be_bytes());
    payload.extend_from_slice(&1i16.to_be_bytes());
    payload.extend_from_slice(&correlation_id.to_be_bytes());
    payload.extend_from_slice(&(-1i16).to_be_bytes());
    payload.extend_from_slice(body);
    let mut out = (payload.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&payload);
    out
}

fn read_response(stream: &mut TcpStream) -> Vec<u8> {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).unwrap();
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut body).unwrap();
    body
}

fn segment_file(contents: &[u8]) -> (tempfile::TempDir, Arc<std::fs::File>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("00000000000000000000.log");
    std::fs::write(&path, contents).unwrap();
    (dir, Arc::new(std::fs::File::open(&path).unwrap()))
}

#[test]
fn responses_keep_request_order_and_carry_file_regions() {
    let (_dir, file) = segment_file(b"RECORDS");
    let (server, channel, pool, port) = start(file, 7, config());
    let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
    // The slow request is answered last by its handler but must come back first.
    client.write_all(&frame(1, b"slow")).unwrap();
    client.write_all(&frame(2, b"fast")).unwrap();
    let first = read_response(&mut client);
    let second = read_response(&mut client);
    assert_eq!(&first[..4], &1i32.to_be_bytes());
    assert_eq!(&first[4..], b"1:slowRECORDS");
    assert_eq!(&second[4..], b"2:fastRECORDS");
    server.shutdown();
    channel.close();
    pool.join();
}

#[test]
fn many_connections_through_a_small_queue_are_all_answered_in_order() {
    // More connections than handler threads and queue places: requests wait in the
    // queue or in front of it, and none may be left without a handler awake to take it.
    let (_dir, file) = segment_file(b"R");
    let mut cfg = config();
    cfg.queued_max_requests = 2;
    let (server, channel, pool, port) = start(file, 1, cfg);
    let clients: Vec<_> = (0..8)
        .map(|c| {
            std::thread::spawn(move || {
                let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
                client
                    .set_read_timeout(Some(Duration::from_secs(10)))
                    .unwrap();
                for round in 0..20 {
                    // A few pipelined requests, then their answers, in order.
                    for i in 0..3 {
                        let id = c * 1000 + round * 10 + i;
                        client.write_all(&frame(id, b"x")).unwrap();
                    }
                    for i in 0..3 {
                        let id = c * 1000 + round * 10 + i;
                        let body = read_response(&mut client);
                        assert_eq!(&body[4..], format!("{id}:xR").as_bytes());
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    server.shutdown();
    channel.close();
    pool.join();
}

#[test]
fn hostile_frames_close_only_their_connection() {
    let (_dir, file) = segment_file(b"R");
    let (server, channel, pool, port) = start(file, 1, config());
    let mut good = TcpStream::connect(("127.0.0.1", port)).unwrap();

    // Oversized size prefix: that connection is closed.
    let mut big = TcpStream::connect(("127.0.0.1", port)).unwrap();
    big.write_all(&(64 * 1024 * 1024i32).to_be_bytes()).unwrap();
    let mut buf = [0u8; 1];
    assert_eq!(big.read(&mut buf).unwrap_or(0), 0);

    // Negative size and random garbage: closed as well.
    let mut neg = TcpStream::connect(("127.0.0.1", port)).unwrap();
    neg.write_all(&(-5i32).to_be_bytes()).unwrap();
    assert_eq!(neg.read(&mut buf).unwrap_or(0), 0);

    // An unknown API key closes its connection, as Kafka's broker does.
    let mut unknown = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut payload = Vec::new();
    payload.extend_from_slice(&999i16.to_be_bytes());
    payload.extend_from_slice(&0i16.to_be_bytes());
    payload.extend_from_slice(&77i32.to_be_bytes());
    unknown
        .write_all(&(payload.len() as i32).to_be_bytes())
        .unwrap();
    unknown.write_all(&payload).unwrap();
    assert_eq!(unknown.read(&mut buf).unwrap_or(0), 0);

    // The well-behaved client is still served.
    good.write_all(&frame(5, b"ok")).unwrap();
    assert_eq!(&read_response(&mut good)[4..], b"5:okR");
    server.shutdown();
    channel.close();
    pool.join();
}

#[test]
fn idle_connections_are_closed_and_limits_enforced() {
    let (_dir, file) = segment_file(b"R");
    let mut cfg = config();
    cfg.connections_max_idle = Duration::from_millis(200);
    cfg.max_connections_per_ip = 2;
    let (server, channel, pool, port) = start(file, 1, cfg);
    let mut a = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let _b = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 1];
    assert_eq!(
        c.read(&mut buf).unwrap_or(0),
        0,
        "third connection from one ip refused"
    );
    a.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(a.read(&mut buf).unwrap_or(0), 0, "idle connection closed");
    server.shutdown();
    channel.close();
    pool.join();
}

#[test]
fn pipelined_requests_are_processed_one_at_a_time_and_answered_in_order() {
    // In-memory responses: a handler writes one itself when the socket is idle, and hands
    // the connection's next request to its own thread. Some are answered from another
    // thread (as a purgatory would) and some are large (the socket fills and the writer
    // task takes over): still one request at a time, every response in order.
    use std::sync::atomic::{AtomicBool, Ordering};
    let channel = RequestChannel::new(4);
    let server = SocketServer::start(config(), &channel).unwrap();
    let port = server.bound_listeners()[0].local_addr.port();
    let busy = Arc::new(AtomicBool::new(false));
    let handler = Arc::new(move |request: Request| {
        assert!(
            !busy.swap(true, Ordering::SeqCst),
            "two requests of one connection processed at once"
        );
        let busy = Arc::clone(&busy);
        let id = request.header.correlation_id;
        let answer = move |request: Request| {
            let size = if id % 5 == 0 { 300_000 } else { 8 };
            let body = vec![(id % 251) as u8; size];
            let send = ResponseSend::new(id, 0, vec![ResponseChunk::Bytes(Bytes::from(body))]);
            busy.store(false, Ordering::SeqCst);
            request.responder.send(Response::Send(send));
        };
        if id % 7 == 0 {
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(2));
                answer(request);
            });
        } else {
            answer(request);
        }
    });
    let pool = RequestHandlerPool::start(3, &channel, handler).unwrap();
    let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut writer = client.try_clone().unwrap();
    let requests = 300;
    let sender = std::thread::spawn(move || {
        for id in 0..requests {
            writer.write_all(&frame(id, b"x")).unwrap();
        }
    });
    for id in 0..requests {
        let body = read_response(&mut client);
        assert_eq!(&body[..4], &id.to_be_bytes(), "response {id} out of order");
        let expected = if id % 5 == 0 { 300_000 } else { 8 };
        assert_eq!(body.len() - 4, expected);
        assert!(body[4..].iter().all(|b| *b == (id % 251) as u8));
    }
    sender.join().unwrap();
    server.shutdown();
    channel.close();
    pool.join();
}

#[test]
fn requests_sent_before_a_half_close_are_all_answered() {
    let (_dir, file) = segment_file(b"R");
    let (server, channel, pool, port) = start(file, 1, config());
    let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // More than the reader reads ahead, one of them slow, then the write side closes.
    for id in 0..10 {
        let body: &[u8] = if id == 1 { b"slow" } else { b"x" };
        client.write_all(&frame(id, body)).unwrap();
    }
    client.shutdown(std::net::Shutdown::Write).unwrap();
    for id in 0..10i32 {
        let body = read_response(&mut client);
        assert_eq!(&body[..4], &id.to_be_bytes());
    }
    let mut rest = Vec::new();
    assert_eq!(
        client.read_to_end(&mut rest).unwrap(),
        0,
        "closed after the last"
    );
    server.shutdown();
    channel.close();
    pool.join();
}

#[test]
fn a_pipelining_connection_does_not_starve_the_others() {
    // One handler thread. Connection A keeps its reader full of requests, each taking the
    // handler a moment; B's single request must not wait for A's stream to end: the handler
    // takes A's next request itself only while nobody else's waits.
    let channel = RequestChannel::new(16);
    let server = SocketServer::start(config(), &channel).unwrap();
    let port = server.bound_listeners()[0].local_addr.port();
    let handler = Arc::new(move |request: Request| {
        if request.body.starts_with(b"a") {
            std::thread::sleep(Duration::from_micros(500));
        }
        let id = request.header.correlation_id;
        let send = ResponseSend::new(id, 0, vec![ResponseChunk::Bytes(Bytes::from_static(b"ok"))]);
        request.responder.send(Response::Send(send));
    });
    let pool = RequestHandlerPool::start(1, &channel, handler).unwrap();
    let requests = 2000;
    let mut a = TcpStream::connect(("127.0.0.1", port)).unwrap();
    a.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut a_writer = a.try_clone().unwrap();
    let a_sender = std::thread::spawn(move || {
        for id in 0..requests {
            a_writer.write_all(&frame(id, b"a")).unwrap();
        }
    });
    let a_answered = Arc::new(std::sync::atomic::AtomicI32::new(0));
    let a_reader = {
        let answered = Arc::clone(&a_answered);
        std::thread::spawn(move || {
            for _ in 0..requests {
                read_response(&mut a);
                answered.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        })
    };
    while a_answered.load(std::sync::atomic::Ordering::SeqCst) < 100 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut b = TcpStream::connect(("127.0.0.1", port)).unwrap();
    b.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    b.write_all(&frame(7, b"b")).unwrap();
    read_response(&mut b);
    let a_done = a_answered.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        a_done < requests - 100,
        "B was answered only after {a_done} of A's {requests} requests"
    );
    a_sender.join().unwrap();
    a_reader.join().unwrap();
    server.shutdown();
    channel.close();
    pool.join();
}

#[test]
fn large_file_regions_finish_after_the_socket_fills() {
    // Far more than a socket buffer: the handler's own sendfile stops when the socket
    // would block and the writer task sends the rest, in order, byte for byte.
    let contents: Vec<u8> = (0..4 * 1024 * 1024u32).map(|i| (i % 253) as u8).collect();
    let (_dir, file) = segment_file(&contents);
    let (server, channel, pool, port) = start(file, contents.len(), config());
    let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    for id in 0..3 {
        client.write_all(&frame(id, b"f")).unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    for id in 0..3i32 {
        let body = read_response(&mut client);
        let head = format!("{id}:f");
        assert_eq!(&body[..4], &id.to_be_bytes());
        assert_eq!(&body[4..4 + head.len()], head.as_bytes());
        assert!(
            body[4 + head.len()..] == contents[..],
            "response {id}: file bytes differ"
        );
    }
    server.shutdown();
    channel.close();
    pool.join();
}
