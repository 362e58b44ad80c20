//! What a client can make the module allocate stays under the engine's limits: a forged
//! snapshot of a filter that would grow without bound, growth near `maxmemory`, and the cost of
//! a dump of a large filter.

use std::time::{Duration, Instant};

use lockfree_cuckoo::CuckooFilter;
use redis::Value;

use crate::common::{call, dump, load, run, used_memory, Node, ENGINES};

/// A client's snapshot of a growable filter with no byte ceiling, one full level of it, sent
/// in three chunks: refused, where its next growth would have taken five times its size. One
/// with a ceiling loads.
#[test]
fn a_forged_unbounded_growable_snapshot_is_refused() {
    let forged = CuckooFilter::builder().capacity(200_000).growable().build();
    let mut i = 0u64;
    while forged.stats().levels == 1 {
        forged.insert(&i).unwrap();
        i += 1;
    }
    let bytes = forged.to_bytes();
    let bounded = CuckooFilter::builder().capacity(200_000).max_memory(8 << 20).build();
    bounded.insert(b"1".as_slice()).unwrap();
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(node) = Node::start(engine, dir.path(), &["--maxmemory", "64mb"]) else {
            continue;
        };
        let mut c = node.client();
        let third = bytes.len() / 3 + 1;
        let mut replies = Vec::new();
        for (k, chunk) in bytes.chunks(third).enumerate() {
            let cursor = (k * third + chunk.len() + 1).to_string();
            replies.push(call(&mut c, &[b"CF.LOADCHUNK", b"forged", cursor.as_bytes(), chunk]));
        }
        assert!(replies[..2].iter().all(|r| r.is_ok()), "{engine:?}: {replies:?}");
        assert!(replies[2].is_err(), "{engine:?}: the forged filter was taken");
        assert_eq!(run(&mut c, "EXISTS forged"), Value::Int(0), "{engine:?}");
        let bytes = bounded.to_bytes();
        let cursor = (bytes.len() + 1).to_string();
        let reply = call(&mut c, &[b"CF.LOADCHUNK", b"bounded", cursor.as_bytes(), &bytes]);
        assert_eq!(reply.unwrap(), Value::Okay, "{engine:?}");
        assert_eq!(run(&mut c, "CF.EXISTS bounded 1"), Value::Int(1), "{engine:?}");
    }
}

/// Under `maxmemory 64mb`, most of it taken by another filter, with `cf-max-memory` far above
/// it, adds to a growable filter until it is refused: no growth takes `used_memory` past
/// `maxmemory`.
#[test]
fn no_growth_passes_maxmemory() {
    const MAX: i64 = 64 << 20;
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(node) = Node::start(engine, dir.path(), &["--maxmemory", &MAX.to_string()]) else {
            continue;
        };
        let mut c = node.client();
        run(&mut c, "CONFIG SET cuckoo.cf-max-memory 1073741824");
        run(&mut c, "CF.RESERVE grows 10000");
        // A fixed filter that leaves about 1.5 MB: room for levels of 84 KB and 336 KB, not
        // for the next, of 1.3 MB.
        // (Fixed filters of a third of the room left, until about 1.5 MB are left.)
        for ballast in 0.. {
            let room = MAX - used_memory(&mut c) - 1_500_000;
            if room < 100_000 {
                break;
            }
            run(&mut c, &format!("CF.RESERVE ballast{ballast} {} EXPANSION 0", room / 3));
        }
        assert!(MAX - used_memory(&mut c) > 1_300_000, "{engine:?}");
        let mut added = 0usize;
        let refused = loop {
            let items: Vec<String> = (added..added + 1000).map(|i| format!("i{i}")).collect();
            let reply = run(&mut c, &format!("CF.INSERT grows ITEMS {}", items.join(" ")));
            let Value::Array(replies) = reply else { panic!("{engine:?}: {reply:?}") };
            let used = used_memory(&mut c);
            assert!(used <= MAX, "{engine:?}: used_memory {used} after {added} items");
            if let Some(at) = replies.iter().position(|r| *r != Value::Int(1)) {
                break added + at;
            }
            added += 1000;
        };
        // It grew as far as the room allowed: two levels added.
        assert!(refused > 150_000, "{engine:?}: refused at {refused} items");
        // Reads and deletes go on.
        assert_eq!(run(&mut c, "CF.EXISTS grows i7"), Value::Int(1), "{engine:?}");
        assert_eq!(run(&mut c, "CF.DEL grows i7"), Value::Int(1), "{engine:?}");
    }
}

/// A dump of a filter of 208 MB in chunks of 16 MiB: each call takes about a chunk's time (the
/// engine is blocked for one call at a time), and the dump about one pass (the engine's `DUMP`
/// of the key, which writes the whole snapshot at once). Printed with PING's worst latency from
/// a second client while the dump runs; the copy it makes is checked.
#[test]
fn a_dump_blocks_the_engine_for_one_chunk_at_a_time() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(node) = Node::start(engine, dir.path(), &[]) else { continue };
        let mut c = node.client();
        run(&mut c, "CF.RESERVE big 100000000 EXPANSION 0");
        // The copy loads whole: its chunks are held until the last, within cf-max-memory.
        run(&mut c, "CONFIG SET cuckoo.cf-max-memory 1073741824");
        run(&mut c, "CF.INSERT big ITEMS a b c");
        let port = node.port;
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let pinging = {
            let done = std::sync::Arc::clone(&done);
            std::thread::spawn(move || {
                let url = format!("redis://127.0.0.1:{port}/");
                let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
                let mut worst = Duration::ZERO;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let start = Instant::now();
                    let _: String = redis::cmd("PING").query(&mut c).unwrap();
                    worst = worst.max(start.elapsed());
                    std::thread::sleep(Duration::from_millis(5));
                }
                worst
            })
        };
        let start = Instant::now();
        let _: Vec<u8> = redis::cmd("DUMP").arg("big").query(&mut c).unwrap();
        let one_pass = start.elapsed();
        let start = Instant::now();
        let mut calls = Vec::new();
        let mut cursor = 0i64;
        let mut chunks = Vec::new();
        loop {
            let call_start = Instant::now();
            let (next, data): (i64, Option<Vec<u8>>) =
                redis::cmd("CF.SCANDUMP").arg("big").arg(cursor).query(&mut c).unwrap();
            calls.push(call_start.elapsed());
            let Some(data) = data else { break };
            chunks.push((next, data));
            cursor = next;
        }
        let whole = start.elapsed();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let worst_ping = pinging.join().unwrap();
        let slowest = calls.iter().max().unwrap();
        eprintln!(
            "{engine:?}: {} chunks in {whole:?} (DUMP: {one_pass:?}), slowest call {slowest:?}, \
             worst PING {worst_ping:?}",
            chunks.len()
        );
        assert_eq!(chunks.len(), 13, "{engine:?}");
        load(&mut c, "copy", &chunks);
        assert_eq!(dump(&mut c, "copy"), chunks, "{engine:?}");
        assert_eq!(run(&mut c, "CF.EXISTS copy b"), Value::Int(1), "{engine:?}");
    }
}
