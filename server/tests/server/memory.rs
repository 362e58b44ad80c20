//! `--max-memory` and `INFO`'s `used_memory` under churn: the sum of the filters' sizes
//! (`CF.INFO`'s "Size", the library's `memory_usage`), growth included, and never past the
//! maximum.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::{copy_by_chunks, Server};

fn used_memory(c: &mut redis::Connection) -> usize {
    let info: String = redis::cmd("INFO").query(c).unwrap();
    let line = info.lines().find_map(|l| l.strip_prefix("used_memory:")).expect("used_memory");
    line.trim().parse().unwrap()
}

/// `CF.INFO`'s numeric fields.
fn cf_info(c: &mut redis::Connection, key: &str) -> HashMap<String, i64> {
    let fields: HashMap<String, redis::Value> = redis::cmd("CF.INFO").arg(key).query(c).unwrap();
    fields
        .into_iter()
        .filter_map(|(name, value)| match value {
            redis::Value::Int(n) => Some((name, n)),
            _ => None,
        })
        .collect()
}

/// What `key` is charged in `used_memory`: `CF.INFO`'s size, and its name.
fn size(c: &mut redis::Connection, key: &str) -> usize {
    cf_info(c, key)["Size"] as usize + key.len()
}

fn sizes<'a>(c: &mut redis::Connection, keys: impl IntoIterator<Item = &'a String>) -> usize {
    keys.into_iter().map(|key| size(c, key)).sum()
}

/// Items no other run of the test uses: random 64-bit numbers (splitmix64).
struct Items(u64);

impl Items {
    fn new(stream: u64) -> Self {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64;
        Self(now ^ stream.wrapping_mul(0xA076_1D64_78BD_642F))
    }

    fn take(&mut self, n: usize) -> Vec<String> {
        (0..n)
            .map(|_| {
                self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = self.0;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                format!("{:016x}", z ^ (z >> 31))
            })
            .collect()
    }
}

/// `CF.INSERT key ITEMS items...`: the items accepted (the others found the filter full, or no
/// memory left to grow it).
fn insert<'a>(c: &mut redis::Connection, key: &str, items: &'a [String]) -> Vec<&'a String> {
    let replies: Vec<i64> =
        redis::cmd("CF.INSERT").arg(key).arg("ITEMS").arg(items).query(c).unwrap();
    assert_eq!(replies.len(), items.len());
    items.iter().zip(replies).filter(|&(_, r)| r == 1).map(|(item, _)| item).collect()
}

/// Samples `used_memory` until `done`, and fails if it ever passes `max`.
fn watch(server: &Server, max: usize, done: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    let mut c = server.client();
    std::thread::spawn(move || {
        let mut samples = 0;
        while !done.load(Ordering::Relaxed) {
            let used = used_memory(&mut c);
            assert!(used <= max, "used_memory {used} passed --max-memory {max}");
            samples += 1;
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        samples
    })
}

#[test]
fn churn_of_many_keys_keeps_used_memory_the_sum_of_their_sizes() {
    const THREADS: usize = 4;
    const ROUNDS: usize = 10;
    const KEYS: usize = 60;
    let max = 256 << 20;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--max-memory", &max.to_string()]);
    let live = Arc::new(Mutex::new(BTreeSet::new()));
    let barrier = Arc::new(Barrier::new(THREADS + 1));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = watch(&server, max, Arc::clone(&done));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (live, barrier, mut c) = (Arc::clone(&live), Arc::clone(&barrier), server.client());
            std::thread::spawn(move || {
                let mut items = Items::new(t as u64);
                let mut created = 0;
                for round in 0..ROUNDS {
                    for k in 0..KEYS {
                        let key = format!("t{t}:k{k}");
                        let exists = live.lock().unwrap().contains(&key);
                        if exists && (k + round) % 2 == 0 {
                            let deleted: i64 = redis::cmd("DEL").arg(&key).query(&mut c).unwrap();
                            assert_eq!(deleted, 1);
                            live.lock().unwrap().remove(&key);
                            continue;
                        }
                        if !exists {
                            // Small filters, most of which grow; a few fixed ones.
                            let capacity = (8 << (k % 4)).to_string();
                            let expansion = if k % 7 == 0 { "0" } else { "1" };
                            let _: () = redis::cmd("CF.RESERVE")
                                .arg(&key)
                                .arg(&capacity)
                                .arg("EXPANSION")
                                .arg(expansion)
                                .query(&mut c)
                                .unwrap();
                            live.lock().unwrap().insert(key.clone());
                            created += 1;
                        }
                        insert(&mut c, &key, &items.take(150));
                    }
                    // The round is over for everyone: the sum is checked while nothing runs.
                    barrier.wait();
                    barrier.wait();
                }
                created
            })
        })
        .collect();
    let mut c = server.client();
    let mut grown = 0;
    for _ in 0..ROUNDS {
        barrier.wait();
        let keys = live.lock().unwrap().clone();
        let sum = sizes(&mut c, &keys);
        assert_eq!(used_memory(&mut c), sum, "{} filters", keys.len());
        grown = keys.iter().filter(|k| cf_info(&mut c, k)["Number of filters"] > 1).count();
        barrier.wait();
    }
    let created: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    done.store(true, Ordering::Relaxed);
    assert!(watcher.join().unwrap() > 0);
    assert!(created >= 1000, "{created} filters created");
    assert!(grown >= 50, "only {grown} filters grew");
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    assert_eq!(used_memory(&mut c), 0);
}

#[test]
fn filters_growing_together_stay_under_a_small_max_memory() {
    const THREADS: u64 = 4;
    let max = 3 << 20;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--max-memory", &max.to_string()]);
    let rss_before = server.rss_kib() as usize * 1024;
    let done = Arc::new(AtomicBool::new(false));
    let watcher = watch(&server, max, Arc::clone(&done));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let mut c = server.client();
            std::thread::spawn(move || {
                let mut items = Items::new(t);
                let own = format!("own{t}");
                let mut kept = Vec::new();
                // Filters of CF.ADD's default capacity, each thread's own and one they all
                // share, grown until the maximum refuses them.
                for batch in 0..300 {
                    let key = if batch % 3 == 0 { "shared" } else { own.as_str() };
                    let chunk = items.take(500);
                    match insert(&mut c, key, &chunk).first() {
                        Some(&item) => kept.push((key.to_owned(), item.clone())),
                        None if key == own => return kept,
                        None => {}
                    }
                }
                kept
            })
        })
        .collect();
    let mut kept = Vec::new();
    for t in threads {
        kept.extend(t.join().unwrap());
    }
    done.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    let mut c = server.client();
    let keys: Vec<String> =
        (0..THREADS).map(|t| format!("own{t}")).chain(["shared".into()]).collect();
    let sum = sizes(&mut c, &keys);
    assert!(sum <= max, "the filters take {sum} bytes, over --max-memory {max}");
    assert_eq!(used_memory(&mut c), sum);
    // They grew: the maximum, not the first tables, stopped them.
    assert!(sum > max / 4, "{sum} bytes");
    assert!(keys.iter().all(|k| cf_info(&mut c, k)["Number of filters"] > 1));
    // Refused inserts lost nothing: what was accepted is there.
    for (key, item) in &kept {
        let found: i64 = redis::cmd("CF.EXISTS").arg(key).arg(item).query(&mut c).unwrap();
        assert_eq!(found, 1, "{key} lost {item}");
    }
    // The process holds the filters and its buffers, not more: a few MiB beyond the maximum.
    let rss = server.rss_kib() as usize * 1024;
    assert!(rss < rss_before + max + (8 << 20), "RSS {rss} bytes, {rss_before} at the start");
}

#[test]
fn used_memory_follows_growth_loads_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    let mut items = Items::new(0);
    assert_eq!(used_memory(&mut c), 0);
    // A burst of random CF.ADDs to a new key: a filter of the default capacity, counted as it is.
    for item in items.take(200) {
        let added: i64 = redis::cmd("CF.ADD").arg("burst").arg(item).query(&mut c).unwrap();
        assert_eq!(added, 1);
    }
    let burst = size(&mut c, "burst");
    assert_eq!(used_memory(&mut c), burst);
    assert!(burst < 64 << 10, "{burst} bytes for 200 items");
    // A filter grown by a burst of as many: used_memory follows each growth.
    let _: () = redis::cmd("CF.RESERVE").arg("tiny").arg(4).query(&mut c).unwrap();
    let first = size(&mut c, "tiny");
    assert_eq!(used_memory(&mut c), burst + first);
    for item in items.take(200) {
        let added: i64 = redis::cmd("CF.ADD").arg("tiny").arg(item).query(&mut c).unwrap();
        assert_eq!(added, 1);
    }
    let grown = size(&mut c, "tiny");
    assert!(cf_info(&mut c, "tiny")["Number of filters"] > 1);
    assert!(grown > first);
    assert_eq!(used_memory(&mut c), burst + grown, "after growing from {first} to {grown} bytes");
    assert!(grown < 64 << 10, "{grown} bytes for 200 items");
    // A copy through CF.SCANDUMP and CF.LOADCHUNK is counted with its levels.
    copy_by_chunks(&mut c, "tiny", "copy");
    assert_eq!(size(&mut c, "copy"), grown);
    assert_eq!(used_memory(&mut c), burst + 2 * grown);
    // Deletes give it back; a restart counts the saved filters as they were.
    let deleted: i64 = redis::cmd("DEL").arg("copy").query(&mut c).unwrap();
    assert_eq!(deleted, 1);
    assert_eq!(used_memory(&mut c), burst + grown);
    let _: () = redis::cmd("SAVE").query(&mut c).unwrap();
    drop(c);
    server.kill();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    assert_eq!(used_memory(&mut c), burst + grown);
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    assert_eq!(used_memory(&mut c), 0);
}

#[test]
fn windowed_keys_under_a_steady_stream_hold_their_memory_and_refuse_nothing() {
    // Each key takes a stream of fresh items at three quarters of its capacity a window, and
    // sees three times its capacity in all: without expiry every filter would fill and refuse.
    const THREADS: usize = 4;
    const KEYS_EACH: usize = 4;
    const CAPACITY: usize = 4000;
    const BATCH: usize = 300;
    const SLOT: Duration = Duration::from_millis(100);
    let max = 64 << 20;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--max-memory", &max.to_string()]);
    let mut c = server.client();
    let keys: Vec<String> = (0..THREADS * KEYS_EACH).map(|k| format!("w{k}")).collect();
    for key in &keys {
        let _: () = redis::cmd("CF.RESERVE")
            .arg(key)
            .arg(CAPACITY)
            .arg("EXPIRE")
            .arg(1)
            .query(&mut c)
            .unwrap();
    }
    let reserved = used_memory(&mut c);
    assert_eq!(reserved, sizes(&mut c, &keys));
    let idle_rss = server.rss_kib();
    let done = Arc::new(AtomicBool::new(false));
    let watcher = watch(&server, max, Arc::clone(&done));
    let threads: Vec<_> = keys
        .chunks(KEYS_EACH)
        .enumerate()
        .map(|(t, mine)| {
            let (mine, mut c) = (mine.to_vec(), server.client());
            std::thread::spawn(move || {
                let mut items = Items::new(100 + t as u64);
                let (mut first, mut last) = (Vec::new(), Vec::new());
                let mut next = Instant::now();
                for slot in 0..3 * CAPACITY / BATCH {
                    // One batch a slot at most: a late thread skips slots, never catches up, so no
                    // window holds more than its capacity.
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                    next = Instant::now() + SLOT;
                    last.clear();
                    for key in &mine {
                        let batch = items.take(BATCH);
                        let accepted = insert(&mut c, key, &batch).len();
                        assert_eq!(accepted, BATCH, "{key} refused items in slot {slot}");
                        last.push((key.clone(), batch));
                    }
                    if slot == 0 {
                        first = last.clone();
                    }
                }
                (first, last)
            })
        })
        .collect();
    let batches: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    done.store(true, Ordering::Relaxed);
    assert!(watcher.join().unwrap() > 0);
    assert_eq!(used_memory(&mut c), reserved, "a windowed key's memory changed");
    let rss = server.rss_kib();
    assert!(rss < idle_rss + (16 << 10), "RSS from {idle_rss} KiB to {rss} KiB");
    let present = |c: &mut redis::Connection, key: &str, items: &[String]| -> usize {
        let found: Vec<i64> = redis::cmd("CF.MEXISTS").arg(key).arg(items).query(c).unwrap();
        found.into_iter().filter(|&f| f == 1).count()
    };
    // The last items are inside their window; the first are more than two windows old.
    let mut stale = 0;
    for (first, last) in &batches {
        for (key, items) in last {
            assert_eq!(present(&mut c, key, items), BATCH, "{key} lost items inside the window");
        }
        for (key, items) in first {
            stale += present(&mut c, key, items);
        }
    }
    // About 0.05% false positives: 2.4 expected of the 4,800 first items.
    assert!(stale <= 20, "{stale} of the first items still present");
}
