//! Filters whose items expire (`CF.RESERVE ... EXPIRE`): the primary's timer forgets items
//! nobody writes, replicas follow its epochs and hold the same bytes while items expire, a
//! failover keeps the window, the RDB and the AOF keep the ages, and a steady stream of items
//! runs in a fixed amount of memory.

use std::time::{Duration, Instant};

use redis::Value;

use crate::common::{
    call, cf_info, digest, info_field, memory_usage, primary_and_replica, rewrite_aof, run,
    used_memory, wait_until, Node, ENGINES,
};

/// `CF.EXISTS key item` as 0 or 1.
fn exists(c: &mut redis::Connection, key: &str, item: &str) -> Value {
    run(c, &format!("CF.EXISTS {key} {item}"))
}

/// The replication offset of `c`'s engine: on a replica, how far it has applied the stream.
fn offset(c: &mut redis::Connection) -> u64 {
    info_field(c, "replication", "master_repl_offset").unwrap().parse().unwrap()
}

/// The primary's and the replica's digests of `key` at one moment: the replica's is read once
/// it has applied all the primary had sent (`WAIT` counts only the client's own writes, not
/// the timer's `CF.TICK`s), and both are read again until the primary's did not change around
/// the replica's read (an epoch may start at any time).
fn digests_at_one_moment(
    p: &mut redis::Connection,
    r: &mut redis::Connection,
    key: &str,
) -> (String, String) {
    for _ in 0..100 {
        let before = digest(p, key);
        let sent = offset(p);
        wait_until(10, "the replica's offset", || offset(r) >= sent);
        let replica = digest(r, key);
        if digest(p, key) == before {
            return (before, replica);
        }
    }
    panic!("the primary's digest never held still across the replica's read");
}

#[test]
fn replicas_follow_the_primarys_epochs_and_a_failover_keeps_the_window() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some((primary, replica)) = primary_and_replica(engine, dir.path(), &[]) else {
            continue;
        };
        let (mut p, mut r) = (primary.client(), replica.client());
        assert_eq!(run(&mut p, "CF.RESERVE w 5000 EXPIRE 1"), Value::Okay);
        assert_eq!(run(&mut p, "CF.RESERVE kept 1000 EXPIRE 3600"), Value::Okay);
        run(&mut p, "CF.ADD kept k");
        // A client may not move the epochs.
        let refused = redis::cmd("CF.TICK").arg("w").arg(1).query::<Value>(&mut p);
        assert!(refused.is_err(), "{engine:?}: {refused:?}");

        // Items go in for 3 s, three windows: at every moment the replica holds the
        // primary's bytes, and the first items expire on both.
        let start = Instant::now();
        let mut seen = std::collections::BTreeSet::new();
        let mut batch = 0;
        while start.elapsed() < Duration::from_secs(3) {
            for i in 0..20 {
                run(&mut p, &format!("CF.ADD w {batch}-{i}"));
            }
            batch += 1;
            let (on_primary, on_replica) = digests_at_one_moment(&mut p, &mut r, "w");
            assert_eq!(on_primary, on_replica, "{engine:?}: the replica's bytes differ");
            seen.insert(on_primary);
            std::thread::sleep(Duration::from_millis(40));
        }
        assert!(seen.len() > 10, "{engine:?}: {} states compared", seen.len());
        for c in [&mut p, &mut r] {
            assert_eq!(exists(c, "w", "0-0"), Value::Int(0), "{engine:?}: never expired");
            assert_eq!(exists(c, "w", &format!("{}-19", batch - 1)), Value::Int(1));
            assert_eq!(exists(c, "kept", "k"), Value::Int(1));
        }

        // The replica becomes the primary: its own timer goes on from the last epoch.
        drop(primary);
        assert_eq!(run(&mut r, "REPLICAOF NO ONE"), Value::Okay);
        assert_eq!(cf_info(&mut r, "kept", "Expire after"), 3600);
        run(&mut r, "CF.ADD w late");
        let added = Instant::now();
        while exists(&mut r, "w", "late") == Value::Int(1) {
            assert!(added.elapsed() < Duration::from_secs(4), "{engine:?}: never expired");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(added.elapsed() >= Duration::from_secs(1), "{engine:?}: {:?}", added.elapsed());
        assert_eq!(exists(&mut r, "kept", "k"), Value::Int(1));
    }
}

#[test]
fn the_rdb_and_the_aof_keep_the_window_and_the_ages() {
    for engine in ENGINES {
        for aof in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let args: &[&str] = if aof {
                &["--appendonly", "yes", "--aof-use-rdb-preamble", "no", "--appendfsync", "always"]
            } else {
                &["--dbfilename", "dump.rdb"]
            };
            let Some(node) = Node::start(engine, dir.path(), args) else { continue };
            let mut c = node.client();
            assert_eq!(run(&mut c, "CF.RESERVE w 1000 EXPIRE 3600"), Value::Okay);
            for i in 0..500 {
                run(&mut c, &format!("CF.ADD w item{i}"));
            }
            if aof {
                rewrite_aof(&mut c);
                // Written after the rewrite: in the AOF as commands.
                run(&mut c, "CF.ADD w after");
            } else {
                assert_eq!(run(&mut c, "SAVE"), Value::Okay);
            }
            let before = digest(&mut c, "w");
            // DUMP and RESTORE make a copy with the same bytes.
            let dumped: Vec<u8> = redis::cmd("DUMP").arg("w").query(&mut c).unwrap();
            let _: () = redis::cmd("RESTORE").arg("copy").arg(0).arg(dumped).query(&mut c).unwrap();
            assert_eq!(digest(&mut c, "copy"), before, "{engine:?}: RESTORE");
            let node = node.restart();
            let mut c = node.client();
            assert_eq!(digest(&mut c, "w"), before, "{engine:?} aof {aof}: the bytes changed");
            assert_eq!(cf_info(&mut c, "w", "Expire after"), 3600);
            assert_eq!(exists(&mut c, "w", "item7"), Value::Int(1));
            if aof {
                assert_eq!(exists(&mut c, "w", "after"), Value::Int(1));
            }
        }
    }
}

/// Sixteen keys each take a stream of fresh items at three quarters of their capacity a window,
/// three capacities in all (without expiry every filter would fill and refuse): nothing is
/// refused, the keys' `MEMORY USAGE` does not move, `used_memory` (which also counts the
/// client's buffers) stays within 1 MiB and the resident set within 16 MiB of where they
/// started, and the last items are present while the first are gone.
#[test]
fn a_steady_stream_into_windowed_keys_runs_in_fixed_memory() {
    const KEYS: usize = 16;
    const CAPACITY: usize = 4000;
    const BATCH: usize = 300;
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(node) = Node::start(engine, dir.path(), &[]) else { continue };
        let mut c = node.client();
        let keys: Vec<String> = (0..KEYS).map(|k| format!("w{k}")).collect();
        for key in &keys {
            assert_eq!(run(&mut c, &format!("CF.RESERVE {key} {CAPACITY} EXPIRE 1")), Value::Okay);
        }
        let rss = |c: &mut redis::Connection| -> i64 {
            info_field(c, "memory", "used_memory_rss").unwrap().parse().unwrap()
        };
        let usage = |c: &mut redis::Connection| -> i64 {
            keys.iter().map(|key| memory_usage(c, key)).sum()
        };
        let (filters, used, resident) = (usage(&mut c), used_memory(&mut c), rss(&mut c));
        let batch_of = |slot: usize, key: usize| -> Vec<String> {
            (0..BATCH).map(|i| format!("{slot}:{key}:{i}")).collect()
        };
        let slots = 3 * CAPACITY / BATCH;
        let mut next = Instant::now();
        for slot in 0..slots {
            // One batch a slot at most: a late slot is not made up, so no window holds more
            // than a key's capacity.
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
            next = Instant::now() + Duration::from_millis(100);
            for (k, key) in keys.iter().enumerate() {
                let batch = batch_of(slot, k);
                let mut words: Vec<&[u8]> = vec![b"CF.INSERT", key.as_bytes(), b"ITEMS"];
                words.extend(batch.iter().map(|item| item.as_bytes()));
                let Value::Array(replies) = call(&mut c, &words).unwrap() else { panic!() };
                assert!(
                    replies.iter().all(|r| *r == Value::Int(1)),
                    "{engine:?}: {key} refused items in slot {slot}"
                );
            }
        }
        assert_eq!(usage(&mut c), filters, "{engine:?}: a windowed key's memory changed");
        let more = used_memory(&mut c) - used;
        assert!(more < 1 << 20, "{engine:?}: used_memory grew by {more} bytes");
        let grown = rss(&mut c) - resident;
        assert!(grown < 16 << 20, "{engine:?}: the resident set grew by {grown} bytes");
        let present = |c: &mut redis::Connection, key: &str, items: &[String]| -> usize {
            let mut words: Vec<&[u8]> = vec![b"CF.MEXISTS", key.as_bytes()];
            words.extend(items.iter().map(|item| item.as_bytes()));
            let Value::Array(found) = call(c, &words).unwrap() else { panic!() };
            found.iter().filter(|f| **f == Value::Int(1)).count()
        };
        let mut stale = 0;
        for (k, key) in keys.iter().enumerate() {
            let last = present(&mut c, key, &batch_of(slots - 1, k));
            assert_eq!(last, BATCH, "{engine:?}: {key} lost items inside the window");
            stale += present(&mut c, key, &batch_of(0, k));
        }
        // About 0.05% false positives: 2.4 expected of the 4,800 first items.
        assert!(stale <= 20, "{engine:?}: {stale} of the first items still present");
    }
}
