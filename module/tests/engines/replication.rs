//! A primary with a replica: every write acknowledged by `WAIT 1` is on the replica, whose
//! filters hold the same bytes (`DEBUG DIGEST-VALUE`); `CF.SCANDUMP` on one engine and
//! `CF.LOADCHUNK` on another round-trip, across engines too (the snapshot's bytes; the settings
//! a filter was reserved with are not in them).

use redis::Value;

use crate::common::{
    call, create_mix, dataset_digest, digest, digests, dump, load, primary_and_replica, run,
    wait_replica, Node, ENGINES,
};

/// Writes of every kind to `filters` filters: reserves (fixed, growable from small, tuned),
/// adds, inserts, removes; returns the items that must be present.
fn write_mix(c: &mut redis::Connection, filters: usize) -> Vec<(String, String)> {
    let mut present = Vec::new();
    for f in 0..filters {
        let name = format!("f{f}");
        match f % 3 {
            0 => run(c, &format!("CF.RESERVE {name} 200")), // grows
            1 => run(c, &format!("CF.RESERVE {name} 5000 EXPANSION 0 MAXITERATIONS 7")),
            _ => Value::Okay, // created by its first CF.ADD
        };
        for i in 0..1500 {
            let item = format!("item{i}");
            run(c, &format!("CF.ADD {name} {item}"));
            if i % 5 == 0 {
                assert_eq!(run(c, &format!("CF.DEL {name} {item}")), Value::Int(1));
            } else {
                present.push((name.clone(), item));
            }
        }
        run(c, &format!("CF.INSERT {name} ITEMS x{f} y{f}"));
        present.push((name.clone(), format!("x{f}")));
    }
    present
}

#[test]
fn a_replica_holds_every_acknowledged_write_byte_for_byte() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some((primary, replica)) = primary_and_replica(engine, dir.path(), &[]) else {
            continue;
        };
        let (mut p, mut r) = (primary.client(), replica.client());
        let present = write_mix(&mut p, 6);
        let acked: i64 = redis::cmd("WAIT").arg(1).arg(10_000).query(&mut p).unwrap();
        assert_eq!(acked, 1, "{engine:?}: the replica did not acknowledge");
        for (name, item) in &present {
            assert_eq!(
                run(&mut r, &format!("CF.EXISTS {name} {item}")),
                Value::Int(1),
                "{engine:?} {name} {item}"
            );
        }
        let differ: Vec<String> = (0..6)
            .map(|f| format!("f{f}"))
            .filter(|name| digest(&mut r, name) != digest(&mut p, name))
            .collect();
        assert!(differ.is_empty(), "{engine:?}: {differ:?} differ on the replica");
        // CF.LOADCHUNK is replicated too: the copy's snapshot is the original's, on both.
        let chunks = dump(&mut p, "f0");
        assert!(!chunks.is_empty());
        load(&mut p, "f0-copy", &chunks);
        let _: i64 = redis::cmd("WAIT").arg(1).arg(10_000).query(&mut p).unwrap();
        assert_eq!(digest(&mut r, "f0-copy"), digest(&mut p, "f0-copy"));
        assert_eq!(dump(&mut r, "f0-copy"), chunks);
        // A transfer in two pieces: nothing of it reaches the replica until it makes a filter.
        let whole = &chunks[0].1;
        let half = whole.len() / 2;
        let halves = [
            ((half + 1) as i64, whole[..half].to_vec()),
            ((whole.len() + 1) as i64, whole[half..].to_vec()),
        ];
        load(&mut p, "f0-halves", &halves[..1]);
        let _: i64 = redis::cmd("WAIT").arg(1).arg(10_000).query(&mut p).unwrap();
        assert_eq!(run(&mut r, "EXISTS f0-halves"), Value::Int(0));
        load(&mut p, "f0-halves", &halves[1..]);
        let _: i64 = redis::cmd("WAIT").arg(1).arg(10_000).query(&mut p).unwrap();
        assert_eq!(digest(&mut r, "f0-halves"), digest(&mut p, "f0-halves"));
        // And a replica refuses writes, as the engine does for every write command.
        assert!(call(&mut r, &[b"CF.ADD", b"f0", b"z"]).is_err());
    }
}

#[test]
fn scandump_on_one_engine_loadchunk_on_another() {
    let dir = tempfile::tempdir().unwrap();
    let nodes: Vec<Node> = ENGINES
        .iter()
        .filter_map(|&e| Node::start(e, &dir.path().join(format!("{e:?}")), &[]))
        .collect();
    for from in &nodes {
        for to in &nodes {
            let (mut a, mut b) = (from.client(), to.client());
            let name = format!("from-{:?}", from.engine);
            run(&mut a, &format!("CF.RESERVE {name} 100"));
            for i in 0..2000 {
                run(&mut a, &format!("CF.ADD {name} item{i}"));
            }
            let copy = format!("{name}-to-{:?}", to.engine);
            let chunks = dump(&mut a, &name);
            load(&mut b, &copy, &chunks);
            assert_eq!(dump(&mut b, &copy), chunks, "{name} -> {copy}: other bytes");
            assert!((0..2000)
                .all(|i| run(&mut b, &format!("CF.EXISTS {copy} item{i}")) == Value::Int(1)));
            run(&mut a, &format!("DEL {name}"));
        }
    }
}

/// Each filter a command creates draws its hasher's key on the primary: the replica must build
/// it with that key, or it maps every item elsewhere (and `DEBUG DIGEST` differs). The replica
/// here has another `cuckoo.cf-initial-size`, which the creations replicated whole override.
#[test]
fn replicas_get_the_key_of_every_filter_a_command_creates() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some((primary, replica)) =
            primary_and_replica(engine, dir.path(), &["--cuckoo.cf-initial-size", "4096"])
        else {
            continue;
        };
        let (mut p, mut r) = (primary.client(), replica.client());
        let made = create_mix(&mut p, "");
        wait_replica(&mut p, &format!("{engine:?}"));
        let (on_primary, on_replica) = (digests(&mut p), digests(&mut r));
        assert_eq!(on_primary.len(), made, "{engine:?}: {on_primary:?}");
        let differ: Vec<&String> = on_primary
            .iter()
            .filter(|(k, d)| on_replica.get(*k) != Some(d))
            .map(|(k, _)| k)
            .collect();
        assert!(
            differ.is_empty(),
            "{engine:?}: {} of {made} differ on the replica: {differ:?}",
            differ.len()
        );
        assert_eq!(dataset_digest(&mut r), dataset_digest(&mut p), "{engine:?}: DEBUG DIGEST");
        // The same key maps the same items alike: the snapshots are the same bytes.
        assert_eq!(dump(&mut r, "grows"), dump(&mut p, "grows"), "{engine:?}");
        // A semi-sorted filter is one on the replica too.
        assert_eq!(dump(&mut r, "semi-sorted"), dump(&mut p, "semi-sorted"), "{engine:?}");
        let info = run(&mut r, "CF.INFO semi-sorted");
        let Value::Array(fields) = info else { panic!("{engine:?}: CF.INFO {info:?}") };
        assert_eq!(
            fields[fields.len() - 2..],
            [Value::SimpleString("Encoding".into()), Value::BulkString(b"semi-sorted".to_vec())],
            "{engine:?}"
        );
    }
}

/// `CF.SCANDUMP` then `CF.LOADCHUNK` make a filter with the source's key: the same bytes, the
/// same items, and new items land alike in both.
#[test]
fn scandump_and_loadchunk_carry_the_filters_key() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(node) = Node::start(engine, dir.path(), &[]) else { continue };
        let mut c = node.client();
        for i in 0..3000 {
            run(&mut c, &format!("CF.ADD src item{i}"));
        }
        let chunks = dump(&mut c, "src");
        load(&mut c, "copy", &chunks);
        assert_eq!(dump(&mut c, "copy"), chunks, "{engine:?}");
        assert!((0..3000).all(|i| run(&mut c, &format!("CF.EXISTS copy item{i}")) == Value::Int(1)));
        // A loaded filter reports the settings its snapshot gives: a second copy is the first.
        load(&mut c, "copy2", &chunks);
        assert_eq!(digest(&mut c, "copy2"), digest(&mut c, "copy"), "{engine:?}");
        for i in 3000..6000 {
            run(&mut c, &format!("CF.ADD src item{i}"));
            run(&mut c, &format!("CF.ADD copy item{i}"));
        }
        assert_eq!(dump(&mut c, "copy"), dump(&mut c, "src"), "{engine:?}: other keys");
        // A filter reserved with a seed is another filter, whose snapshot records that seed.
        run(&mut c, "CF.RESERVE seeded 1000 SEED 7");
        run(&mut c, "CF.RESERVE seeded-too 1000 SEED 7");
        for i in 0..2000 {
            run(&mut c, &format!("CF.ADD seeded item{i}"));
            run(&mut c, &format!("CF.ADD seeded-too item{i}"));
        }
        assert_eq!(digest(&mut c, "seeded"), digest(&mut c, "seeded-too"), "{engine:?}");
        let chunks = dump(&mut c, "seeded");
        load(&mut c, "seeded-copy", &chunks);
        assert_eq!(dump(&mut c, "seeded-copy"), dump(&mut c, "seeded-too"), "{engine:?}");
    }
}

/// A filter whose snapshot is over 16 MiB (a fixed filter for 10 million items, 22 MB) goes
/// through `CF.SCANDUMP` in several chunks and back through `CF.LOADCHUNK` whole, in both
/// engines: the copy's chunks are the original's bytes.
#[test]
fn a_filter_over_16_mib_goes_through_scandump_and_loadchunk() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(node) = Node::start(engine, dir.path(), &[]) else { continue };
        let mut c = node.client();
        run(&mut c, "CF.RESERVE big 10000000 EXPANSION 0");
        for i in 0..1000 {
            run(&mut c, &format!("CF.ADD big item{i}"));
        }
        let chunks = dump(&mut c, "big");
        let bytes: usize = chunks.iter().map(|(_, data)| data.len()).sum();
        assert!(chunks.len() >= 2 && bytes > 16 << 20, "{engine:?}: {} chunks", chunks.len());
        load(&mut c, "copy", &chunks);
        assert_eq!(dump(&mut c, "copy"), chunks, "{engine:?}: other bytes");
        assert!((0..1000).all(|i| run(&mut c, &format!("CF.EXISTS copy item{i}")) == Value::Int(1)));
    }
}
