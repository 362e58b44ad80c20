//! Items crafted from `FORMAT.md` to crowd a few buckets, sent as a client would: crafted
//! against a key the attacker knows (seed 0), they are random items to the server's filters,
//! whose keys are drawn at random; and whatever a client sends, the filters' sum stays under
//! `--max-memory`.

use lockfree_cuckoo::{CuckooFilter, DefaultHashBuilder};

use crate::common::Server;

/// `CF.INFO`'s size of `key`.
fn size(c: &mut redis::Connection, key: &str) -> usize {
    let info: std::collections::HashMap<String, i64> =
        redis::cmd("CF.INFO").arg(key).query(c).unwrap();
    info["Size"] as usize
}

fn used_memory(c: &mut redis::Connection) -> usize {
    let info: String = redis::cmd("INFO").arg("memory").query(c).unwrap();
    let line = info.lines().find_map(|l| l.strip_prefix("used_memory:")).expect("used_memory");
    line.trim().parse().unwrap()
}

/// 208 items that crowd the server's default filter (1,024 items) 16 times over under seed 0:
/// 13 an attack, each adding a level to a filter that grew on every refusal.
fn crafted() -> Vec<[u8; 16]> {
    let model = CuckooFilter::builder()
        .capacity(1024)
        .growable()
        .hasher(DefaultHashBuilder::with_seed(0))
        .build();
    (0..16)
        .flat_map(|round| {
            let items = model.crowding_items(0, round);
            for item in &items[..12] {
                model.insert(item).expect("the triangle has room");
            }
            assert!(model.insert(&items[12]).is_err(), "the 13th is crowded out");
            items
        })
        .collect()
}

/// `CF.ADD`s of `items` to `key`; returns how many were accepted.
fn add_all(c: &mut redis::Connection, key: &str, items: &[Vec<u8>]) -> usize {
    items
        .iter()
        .filter(|item| redis::cmd("CF.ADD").arg(key).arg(item.as_slice()).query::<i64>(c).is_ok())
        .count()
}

#[test]
fn crafted_adds_leave_memory_where_random_ones_would() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    let rss = server.rss_kib();
    let crafted: Vec<Vec<u8>> = crafted().iter().map(|item| item.to_vec()).collect();
    let random: Vec<Vec<u8>> = (0..crafted.len() as u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes().repeat(2))
        .collect();
    assert_eq!(add_all(&mut c, "victim", &crafted), crafted.len(), "a crafted item was refused");
    assert_eq!(add_all(&mut c, "control", &random), random.len());
    assert_eq!(
        size(&mut c, "victim"),
        size(&mut c, "control"),
        "the crafted items grew the filter"
    );
    // Names are charged with their filters.
    let names = "victim".len() + "control".len();
    assert_eq!(used_memory(&mut c), size(&mut c, "victim") + size(&mut c, "control") + names);
    assert!(used_memory(&mut c) < 64 << 10, "{} bytes", used_memory(&mut c));
    assert!(server.rss_kib() < rss + (16 << 10), "RSS from {rss} KiB to {} KiB", server.rss_kib());
}

#[test]
fn many_keys_crafted_against_stay_under_max_memory() {
    let dir = tempfile::tempdir().unwrap();
    let max = 8usize << 20;
    let server = Server::start(dir.path(), &["--max-memory", &max.to_string()]);
    let mut c = server.client();
    let crafted: Vec<Vec<u8>> = crafted().iter().map(|item| item.to_vec()).collect();
    let keys: Vec<String> = (0..64).map(|k| format!("victim:{k}")).collect();
    for key in &keys {
        assert_eq!(add_all(&mut c, key, &crafted), crafted.len(), "{key}");
    }
    let sizes: usize = keys.iter().map(|key| size(&mut c, key)).sum();
    let names: usize = keys.iter().map(String::len).sum();
    assert_eq!(used_memory(&mut c), sizes + names);
    assert!(sizes <= max);
    // Each key as one filter of 1,024 items would be: no key grew.
    let one = size(&mut c, &keys[0]);
    assert!(keys.iter().all(|key| size(&mut c, key) == one));
    assert!(one < 16 << 10, "{one} bytes a key");
}
