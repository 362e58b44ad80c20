//! Hostile and broken clients: each gets an error or a closed connection, and nobody else
//! notices.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use crate::common::{dump, encode, Raw, Server};

/// A client that keeps working through the test: it added `kept` before, and checks it after.
fn assert_still_serving(server: &mut Server) {
    assert!(server.is_running(), "the server died");
    let mut c = server.raw();
    assert_eq!(c.call(&["PING"]), "+PONG\r\n");
    assert_eq!(c.call(&["CF.EXISTS", "kept", "item"]), ":1\r\n");
}

fn start_with_kept_item(dir: &std::path::Path, extra: &[&str]) -> Server {
    let server = Server::start(dir, extra);
    assert_eq!(server.raw().call(&["CF.ADD", "kept", "item"]), ":1\r\n");
    server
}

#[test]
fn framing_errors_close_only_that_connection() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start_with_kept_item(dir.path(), &[]);
    let bystander = &mut server.raw();
    for (bytes, reply) in [
        (&b"*x\r\n"[..], "-ERR Protocol error: invalid multibulk length\r\n"),
        (b"*3000000\r\n", "-ERR Protocol error: invalid multibulk length\r\n"),
        (b"*1\r\n$-1\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
        (b"*1\r\n$-999999999999\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
        (b"*1\r\n$x\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
        (b"*2\r\n$4\r\nPING\r\n:1\r\n", "-ERR Protocol error: expected '$', got ':'\r\n"),
        (b"*1\r\n$4\r\nPINGxxx", "-ERR Protocol error: expected CRLF after bulk data\r\n"),
        (
            b"*1\r\n$99999999999999999999999999999999999\r\n",
            "-ERR Protocol error: invalid bulk length\r\n",
        ),
        // Arguments over the 512 MiB default proto-max-bulk-len, refused before they are sent
        // (requests over the request limit: `the_request_limit_bounds_memory`).
        (b"*1\r\n$536870913\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
        (b"*1\r\n$9223372036854775807\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
    ] {
        let mut c = server.raw();
        // A request before the bad one is answered first.
        c.stream.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
        c.stream.write_all(bytes).unwrap();
        assert_eq!(c.until_closed(), format!("+PONG\r\n{reply}"), "{bytes:?}");
        assert_eq!(bystander.call(&["PING"]), "+PONG\r\n");
    }
    // An inline line without a newline, past Redis's 64 KiB.
    let mut c = server.raw();
    c.stream.write_all(&vec![b'a'; 70_000]).unwrap();
    assert_eq!(c.until_closed(), "-ERR Protocol error: too big inline request\r\n");
    assert_still_serving(&mut server);
}

#[test]
fn the_request_limit_bounds_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start_with_kept_item(dir.path(), &["--max-request-bytes", "4096"]);
    let mut c = server.raw();
    // Just under the limit works; over it is refused, whether declared or sent.
    let fits = vec![b'x'; 4000];
    c.send(&[b"CF.ADD", b"kept", &fits]);
    assert_eq!(c.reply(), ":1\r\n");
    let mut c = server.raw();
    c.stream.write_all(&encode(&[b"CF.ADD", b"kept", &[b'x'; 5000]])).unwrap();
    assert_eq!(
        c.until_closed(),
        "-ERR Protocol error: request larger than the limit of 4096 bytes\r\n"
    );
    // A thousand arguments cannot fit in 4096 bytes: refused from the array header alone.
    let mut c = server.raw();
    c.stream.write_all(b"*1000\r\n").unwrap();
    assert_eq!(
        c.until_closed(),
        "-ERR Protocol error: request larger than the limit of 4096 bytes\r\n"
    );
    // 200 clients each announce 1 GB: the server's memory does not move.
    let before = server.rss_kib();
    let mut hogs: Vec<TcpStream> =
        (0..200).map(|_| TcpStream::connect(("127.0.0.1", server.port)).unwrap()).collect();
    for hog in &mut hogs {
        let _ = hog.write_all(b"*2\r\n$6\r\nCF.ADD\r\n$1000000000\r\nxxxx");
    }
    std::thread::sleep(Duration::from_millis(300));
    let after = server.rss_kib();
    assert!(after < before + 20 * 1024, "RSS grew from {before} to {after} KiB");
    assert_still_serving(&mut server);
}

/// Requests as large as Redis takes them: by default an argument of up to 512 MiB (Redis's
/// `proto-max-bulk-len`), so a filter's dump goes back through `CF.LOADCHUNK` in its 16 MiB
/// chunks; `--proto-max-bulk-len` lowers it.
#[test]
fn arguments_up_to_the_largest_bulk_are_taken() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start_with_kept_item(dir.path(), &[]);
    // A filter over 16 MiB, dumped and loaded back in chunks of up to 16 MiB.
    let mut c = server.client();
    let _: () = redis::cmd("CF.RESERVE").arg("big").arg(10_000_000).query(&mut c).unwrap();
    let items: Vec<String> = (0..1000).map(|i| format!("item:{i}")).collect();
    let _: Vec<i64> =
        redis::cmd("CF.INSERT").arg("big").arg("ITEMS").arg(&items).query(&mut c).unwrap();
    let chunks = dump(&mut c, "big");
    let largest = chunks.iter().map(|(_, chunk)| chunk.len()).max().unwrap();
    assert!(largest > 8 << 20, "the dump's chunks are no larger than {largest} bytes");
    let total: usize = chunks.iter().map(|(_, chunk)| chunk.len()).sum();
    assert!(total > 16 << 20, "a dump of {total} bytes");
    let _: i64 = redis::cmd("DEL").arg("big").query(&mut c).unwrap();
    for (next, chunk) in &chunks {
        let _: () =
            redis::cmd("CF.LOADCHUNK").arg("big").arg(next).arg(chunk).query(&mut c).unwrap();
    }
    let found: Vec<i64> = redis::cmd("CF.MEXISTS").arg("big").arg(&items).query(&mut c).unwrap();
    assert!(found.iter().all(|&f| f == 1));
    drop(c);
    // The larger default holds nothing before the bytes arrive: 200 clients each announcing an
    // argument of the largest size and sending four bytes leave the server's memory where it was.
    let before = server.rss_kib();
    let mut hogs: Vec<TcpStream> =
        (0..200).map(|_| TcpStream::connect(("127.0.0.1", server.port)).unwrap()).collect();
    for hog in &mut hogs {
        let _ = hog.write_all(b"*2\r\n$6\r\nCF.ADD\r\n$536870912\r\nxxxx");
    }
    std::thread::sleep(Duration::from_millis(300));
    let after = server.rss_kib();
    assert!(after < before + 20 * 1024, "RSS grew from {before} to {after} KiB");
    drop(hogs);
    assert_still_serving(&mut server);

    let dir = tempfile::tempdir().unwrap();
    let mut server = start_with_kept_item(dir.path(), &["--proto-max-bulk-len", "1000"]);
    let mut c = server.raw();
    c.send(&[b"CF.ADD", b"kept", &[b'x'; 1000]]);
    assert_eq!(c.reply(), ":1\r\n");
    let mut c = server.raw();
    c.stream.write_all(&encode(&[b"CF.ADD", b"kept", &[b'x'; 1001]])).unwrap();
    assert_eq!(c.until_closed(), "-ERR Protocol error: invalid bulk length\r\n");
    assert_still_serving(&mut server);
}

#[test]
fn partial_requests_are_bounded_in_total() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 10 << 20;
    let mut server =
        start_with_kept_item(dir.path(), &["--max-buffered-bytes", &limit.to_string()]);
    // Each client sends 2 MiB of a 3 MiB request, within the per-request limit: its buffer
    // then holds up to 4 MiB (it doubles as it grows), so the first two fit in the total of
    // 10 MiB, the third not.
    let head = b"*3\r\n$6\r\nCF.ADD\r\n$4\r\nkept\r\n$3145728\r\n";
    let body = vec![b'x'; 2 << 20];
    let mut clients: Vec<_> = (0..3).map(|_| server.raw()).collect();
    for (i, c) in clients.iter_mut().enumerate() {
        // The third may be closed while it writes.
        let _ = c.stream.write_all(head);
        let _ = c.stream.write_all(&body);
        if i < 2 {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let refused = clients.pop().unwrap().until_closed();
    assert!(refused.contains("client buffers are full"), "{refused}");
    // The first two finish their requests and are served.
    for c in &mut clients {
        c.stream.write_all(&vec![b'x'; (3 << 20) - (2 << 20)]).unwrap();
        c.stream.write_all(b"\r\n").unwrap();
        assert_eq!(c.reply(), ":1\r\n");
    }
    assert_still_serving(&mut server);
}

#[test]
fn unknown_commands_and_wrong_arity_keep_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start_with_kept_item(dir.path(), &[]);
    let mut c = server.raw();
    assert!(c.call(&["BGREWRITEAOF"]).starts_with("-ERR unknown command 'BGREWRITEAOF'"));
    assert!(c.call(&["CF.ADD"]).starts_with("-ERR wrong number of arguments"));
    assert!(c.call(&["\r\n\u{0}"]).starts_with("-ERR unknown command"));
    assert!(c.call(&["CF.NOSUCH", "kept", "ITEMS", "a"]).starts_with("-ERR unknown command"));
    // Inline commands, and empty lines between them, work too.
    c.stream.write_all(b"\r\n\r\nPING\r\nCF.EXISTS kept item\n").unwrap();
    assert_eq!(c.reply(), "+PONG\r\n");
    assert_eq!(c.reply(), ":1\r\n");
    // Empty and null arrays ask for nothing.
    c.stream.write_all(b"*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n").unwrap();
    assert_eq!(c.reply(), "+PONG\r\n");
    assert_still_serving(&mut server);
}

#[test]
fn a_client_that_leaves_mid_command_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start_with_kept_item(dir.path(), &[]);
    for cut in [1, 10, 20, 33] {
        let whole = encode(&[b"CF.ADD", b"kept", b"never-added"]);
        let mut c = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        c.write_all(&whole[..cut]).unwrap();
        drop(c);
    }
    // One that leaves with its replies unread.
    let mut c = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    for _ in 0..10_000 {
        c.write_all(&encode(&[b"CF.EXISTS", b"kept", b"item"])).unwrap();
    }
    drop(c);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(server.raw().call(&["CF.EXISTS", "kept", "never-added"]), ":0\r\n");
    assert_still_serving(&mut server);
}

#[test]
fn thousands_of_connections() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start_with_kept_item(dir.path(), &[]);
    assert_eq!(server.raw().call(&["CF.RESERVE", "many", "10000"]), "+OK\r\n");
    let mut clients: Vec<_> = (0..3000).map(|_| server.raw()).collect();
    for (i, c) in clients.iter_mut().enumerate() {
        c.send(&[b"CF.ADD", b"many", i.to_string().as_bytes()]);
    }
    for c in &mut clients {
        assert_eq!(c.reply(), ":1\r\n");
    }
    let mut check = server.raw();
    let items: Vec<String> = (0..3000).map(|i| i.to_string()).collect();
    let mut args = vec!["CF.MEXISTS", "many"];
    args.extend(items.iter().map(String::as_str));
    assert_eq!(check.call(&args), format!("*3000\r\n{}", ":1\r\n".repeat(3000)));
    let info = check.call(&["INFO"]);
    let open: usize = info
        .lines()
        .find_map(|l| l.strip_prefix("connected_clients:"))
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(open > 3000, "{open} connections open");
    drop(clients);
    assert_still_serving(&mut server);
}

/// A connection the server serves: a slot is free again once the server has seen a connection
/// close, which a loaded machine can take more than a moment to do, so a refused one is retried.
fn served(server: &Server) -> Raw {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let mut c = server.raw();
        if c.call(&["PING"]) == "+PONG\r\n" {
            return c;
        }
        assert!(std::time::Instant::now() < deadline, "no slot freed after the clients left");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn connections_over_the_maximum_are_told_and_closed() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start_with_kept_item(dir.path(), &["--max-clients", "5"]);
    let held: Vec<Raw> = (0..5).map(|_| served(&server)).collect();
    assert_eq!(server.raw().until_closed(), "-ERR max number of clients reached\r\n");
    drop(held);
    let mut c = served(&server);
    assert_eq!(c.call(&["CF.EXISTS", "kept", "item"]), ":1\r\n");
    assert!(server.is_running());
}
