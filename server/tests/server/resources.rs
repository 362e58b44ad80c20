//! What a hostile client can make the server hold: large requests left behind, replies read
//! then idle, replies never read, queued and executed transactions, long names, unfinished
//! loads, dumps of large filters.
//! Every test reads the process's RSS from `/proc`, checks that the server answers `PING`
//! meanwhile, and that what was acknowledged is still there.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use crate::common::{dump, encode, Raw, Server};

/// A field of `INFO`, as a number.
fn info(c: &mut redis::Connection, field: &str) -> u64 {
    let text: String = redis::cmd("INFO").query(c).unwrap();
    let prefix = format!("{field}:");
    let line = text.lines().find_map(|l| l.strip_prefix(prefix.as_str())).expect(field);
    line.trim().parse().unwrap()
}

fn ping(c: &mut redis::Connection) {
    let pong: String = redis::cmd("PING").query(c).unwrap();
    assert_eq!(pong, "PONG");
}

/// Waits (up to ten seconds) until `done` holds, checking every 50 ms.
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

/// A fixed filter named `name` of about `mib` MiB, holding `items` items.
fn big_filter(c: &mut redis::Connection, name: &str, mib: u64, items: u64) {
    let capacity = (mib << 20) / 8 * 4 * 95 / 100;
    let _: () =
        redis::cmd("CF.RESERVE").arg(name).arg(capacity).arg("EXPANSION").arg(0).query(c).unwrap();
    for i in 0..items {
        let _: bool = redis::cmd("CF.ADD").arg(name).arg(i).query(c).unwrap();
    }
}

const MIB: u64 = 1 << 20;

/// The RSS a server process may hold beyond what the clients' buffers and the filters are
/// allowed: its runtime, threads and allocator (a fresh debug build takes about 10 MiB).
const ALLOWANCE_KIB: u64 = 48 << 10;

#[test]
fn large_requests_give_their_memory_back_once_run() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--threads", "2"]);
    let mut c = server.client();
    let idle_rss = server.rss_kib();
    // Four connections, each one 64 MiB request and the first byte of the next, then idle.
    let mut raws: Vec<Raw> = (0..4).map(|_| server.raw()).collect();
    let big = vec![b'x'; 64 << 20];
    for raw in &mut raws {
        let mut bytes = encode(&[b"CF.EXISTS", b"f", &big]);
        bytes.push(b'*');
        raw.stream.write_all(&bytes).unwrap();
        assert_eq!(raw.reply(), ":0\r\n");
    }
    let buffers = info(&mut c, "mem_clients_normal");
    assert!(buffers < 1 << 20, "{buffers} bytes of client buffers held by idle clients");
    let rss = server.rss_kib();
    assert!(rss < idle_rss + ALLOWANCE_KIB, "RSS from {idle_rss} KiB to {rss} KiB while idle");
    ping(&mut c);
    // The byte that came with each stays the start of the next request.
    for raw in &mut raws {
        raw.stream.write_all(b"1\r\n$4\r\nPING\r\n").unwrap();
        assert_eq!(raw.reply(), "+PONG\r\n");
    }
}

#[test]
fn replies_read_give_their_memory_back() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--threads", "2"]);
    let mut c = server.client();
    big_filter(&mut c, "big", 40, 1000);
    let idle_rss = server.rss_kib();
    // Thirty-two clients each read one 16 MiB chunk (512 MiB of replies), then stay idle.
    let mut clients: Vec<redis::Connection> = (0..32).map(|_| server.client()).collect();
    for client in &mut clients {
        let (_, chunk): (i64, Vec<u8>) =
            redis::cmd("CF.SCANDUMP").arg("big").arg(0).query(client).unwrap();
        assert_eq!(chunk.len() as u64, 16 * MIB);
    }
    // Each idle connection keeps small buffers (16 KiB in, 16 KiB out), not its reply.
    let held = |c: &mut redis::Connection| info(c, "mem_clients_normal");
    let small = 33 * (64 << 10);
    assert!(eventually(|| held(&mut c) < small), "{} bytes of buffers kept", held(&mut c));
    // What the allocator keeps of freed replies does not grow with the clients: one chunk being
    // made and one reply on each worker.
    let rss = server.rss_kib();
    let bound = idle_rss + 2 * 2 * (16 << 10) + ALLOWANCE_KIB;
    assert!(rss < bound, "RSS from {idle_rss} KiB to {rss} KiB while idle, over {bound} KiB");
    for client in &mut clients {
        ping(client);
    }
}

#[test]
fn transactions_are_bounded_and_freed_when_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--threads", "2"]);
    let mut c = server.client();
    let _: () = redis::cmd("CF.RESERVE").arg("f").arg(1000).query(&mut c).unwrap();
    let _: bool = redis::cmd("CF.ADD").arg("f").arg("kept").query(&mut c).unwrap();
    let idle_rss = server.rss_kib();
    server.reset_peak();
    // Four connections each open a transaction and queue sixteen 16 MiB requests (1 GiB in all).
    let big = vec![b'x'; 16 << 20];
    let mut raws: Vec<Raw> = (0..4).map(|_| server.raw()).collect();
    for raw in &mut raws {
        assert_eq!(raw.call(&["MULTI"]), "+OK\r\n");
        let mut refused = 0;
        for _ in 0..16 {
            raw.send(&[b"CF.ADD", b"f", &big]);
            let reply = raw.reply();
            if reply.starts_with("-ERR the transaction is over the limit") {
                refused += 1;
            } else {
                assert_eq!(reply, "+QUEUED\r\n");
            }
        }
        // Three fit in 64 MiB; the fourth discards the transaction, later ones are not kept.
        assert_eq!(refused, 1);
        ping(&mut c);
    }
    assert!(info(&mut c, "mem_clients_normal") < MIB, "a discarded transaction's bytes kept");
    // One transaction's 64 MiB at most (they come one after another), and requests being read.
    let peak = server.peak_rss_kib();
    let bound = idle_rss + (64 << 10) + 2 * (16 << 10) + ALLOWANCE_KIB;
    assert!(peak < bound, "RSS from {idle_rss} KiB to {peak} KiB, over {bound} KiB");
    for raw in &mut raws {
        assert!(raw.call(&["EXEC"]).starts_with("-EXECABORT"));
    }
    let rss = server.rss_kib();
    assert!(rss < idle_rss + ALLOWANCE_KIB, "RSS from {idle_rss} KiB to {rss} KiB once refused");
    let kept: bool = redis::cmd("CF.EXISTS").arg("f").arg("kept").query(&mut c).unwrap();
    assert!(kept);
}

#[test]
fn replies_never_read_are_bounded_and_their_clients_closed() {
    let dir = tempfile::tempdir().unwrap();
    let budget = 48 * MIB;
    let server = Server::start(
        dir.path(),
        &[
            "--threads",
            "2",
            "--max-buffered-bytes",
            &budget.to_string(),
            "--client-output-buffer-limit",
            "64mb 1mb 3",
        ],
    );
    let mut c = server.client();
    big_filter(&mut c, "big", 40, 1000);
    let idle_rss = server.rss_kib();
    server.reset_peak();
    // Sixteen clients each ask for the 16 MiB chunk and never read it (256 MiB of replies),
    // with a transaction of forty more chunks each behind it.
    let mut sockets = Vec::new();
    for _ in 0..16 {
        let mut raw = server.raw();
        let mut bytes = encode(&[b"CF.SCANDUMP", b"big", b"0"]);
        bytes.extend(encode(&[b"MULTI"]));
        for _ in 0..40 {
            bytes.extend(encode(&[b"CF.SCANDUMP", b"big", b"0"]));
        }
        bytes.extend(encode(&[b"EXEC"]));
        raw.stream.write_all(&bytes).unwrap();
        sockets.push(raw);
    }
    let mut buffers_peak = 0;
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(100));
        ping(&mut c);
        buffers_peak = buffers_peak.max(info(&mut c, "mem_clients_normal"));
    }
    assert!(buffers_peak <= budget, "{buffers_peak} bytes of client buffers");
    // The buffers' budget, and on each worker a chunk being made and its reply being written.
    let peak = server.peak_rss_kib();
    let bound = idle_rss + budget / 1024 + 2 * 2 * (16 << 10) + ALLOWANCE_KIB;
    assert!(peak < bound, "RSS from {idle_rss} KiB to {peak} KiB, over {bound} KiB");
    // Past the soft limit's seconds, every one of them is closed, and their bytes given back.
    assert!(eventually(|| info(&mut c, "mem_clients_normal") < MIB), "client buffers kept");
    assert_eq!(info(&mut c, "connected_clients"), 1);
    for raw in &mut sockets {
        raw.stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut sink = Vec::new();
        // Closed by the server: the read ends (what was sent before is of no interest).
        let _ = raw.stream.read_to_end(&mut sink);
    }
    let exists: bool = redis::cmd("CF.EXISTS").arg("big").arg(7).query(&mut c).unwrap();
    assert!(exists);
}

#[test]
fn a_transaction_of_large_replies_holds_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    // Under an address-space limit that two hundred chunks at once would pass.
    let server = Server::start_with_address_space(dir.path(), &["--threads", "2"], 3 << 30);
    let mut c = server.client();
    big_filter(&mut c, "big", 20, 1000);
    let mut raw = server.raw();
    let mut bytes = encode(&[b"MULTI"]);
    for _ in 0..200 {
        bytes.extend(encode(&[b"CF.SCANDUMP", b"big", b"0"]));
    }
    bytes.extend(encode(&[b"EXEC"]));
    let idle_rss = server.rss_kib();
    server.reset_peak();
    raw.stream.write_all(&bytes).unwrap();
    // Read the 3.2 GB of replies slowly at first, then at full speed.
    let mut queued = vec![0u8; 5 + 200 * 9 + 6];
    raw.stream.read_exact(&mut queued).unwrap();
    let expected = format!("+OK\r\n{}*200\r\n", "+QUEUED\r\n".repeat(200));
    assert_eq!(String::from_utf8_lossy(&queued), expected);
    std::thread::sleep(Duration::from_secs(1));
    ping(&mut c);
    let mut sink = vec![0u8; 1 << 20];
    let mut total = 0u64;
    while total < 200 * 16 * MIB {
        let n = raw.stream.read(&mut sink).unwrap();
        assert!(n > 0, "closed after {total} bytes");
        total += n as u64;
    }
    ping(&mut c);
    // One chunk made and one reply in the buffer at a time.
    let peak = server.peak_rss_kib();
    assert!(peak < idle_rss + (48 << 10) + ALLOWANCE_KIB, "{idle_rss} KiB, then {peak} KiB");
}

#[test]
fn names_are_bounded_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    let long = "n".repeat((64 << 10) + 1);
    let refused = redis::cmd("CF.RESERVE").arg(&long).arg(100).query::<()>(&mut c).unwrap_err();
    assert!(refused.to_string().contains("key name longer than 65536 bytes"), "{refused}");
    let refused = redis::cmd("CF.ADD").arg(&long).arg("a").query::<bool>(&mut c).unwrap_err();
    assert!(refused.to_string().contains("key name longer"), "{refused}");
    let longest = &long[1..];
    let _: () = redis::cmd("CF.RESERVE").arg(longest).arg(100).query(&mut c).unwrap();
    let size: std::collections::HashMap<String, i64> =
        redis::cmd("CF.INFO").arg(longest).query(&mut c).unwrap();
    assert_eq!(info(&mut c, "used_memory"), size["Size"] as u64 + (64 << 10));
}

#[test]
fn unfinished_loads_count_against_max_memory() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--max-memory", &(10 * MIB).to_string()]);
    let mut c = server.client();
    big_filter(&mut c, "src", 4, 10);
    let (_, chunk): (i64, Vec<u8>) =
        redis::cmd("CF.SCANDUMP").arg("src").arg(0).query(&mut c).unwrap();
    // Half of the snapshot, in the first chunk of a load that is never finished.
    let half = &chunk[..chunk.len() / 2];
    let _: () =
        redis::cmd("CF.LOADCHUNK").arg("copy").arg(half.len() + 1).arg(half).query(&mut c).unwrap();
    assert!(info(&mut c, "transfers_memory") >= half.len() as u64);
    // The filter, the load and a new filter of 4 MiB do not fit in 10 MiB together.
    let refused = redis::cmd("CF.RESERVE").arg("more").arg(2_000_000).query::<()>(&mut c);
    assert!(refused.is_err(), "a filter past --max-memory beside an unfinished load");
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    assert_eq!(info(&mut c, "transfers_memory"), 0);
    let _: () = redis::cmd("CF.RESERVE").arg("more").arg(2_000_000).query(&mut c).unwrap();
}

#[test]
fn a_dump_costs_its_chunk_not_the_filter() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--threads", "2"]);
    let mut c = server.client();
    big_filter(&mut c, "big", 208, 20_000);
    let idle_rss = server.rss_kib();
    server.reset_peak();
    let chunks = dump(&mut c, "big");
    assert_eq!(chunks.len(), 14);
    // Each call adds its chunk, and its reply being written: not a copy of the filter.
    let peak = server.peak_rss_kib();
    let bound = idle_rss + 2 * (16 << 10) + ALLOWANCE_KIB;
    assert!(peak < bound, "RSS from {idle_rss} KiB to {peak} KiB, over {bound} KiB");
    for (next, chunk) in chunks {
        let _: () =
            redis::cmd("CF.LOADCHUNK").arg("copy").arg(next).arg(chunk).query(&mut c).unwrap();
    }
    for i in (0..20_000).step_by(97) {
        let found: bool = redis::cmd("CF.EXISTS").arg("copy").arg(i).query(&mut c).unwrap();
        assert!(found, "{i}");
    }
    // A cursor that continues no dump is an error, not a dump from the middle.
    let refused = redis::cmd("CF.SCANDUMP").arg("big").arg(12345).query::<()>(&mut c);
    assert!(refused.unwrap_err().to_string().contains("no dump"));
}
