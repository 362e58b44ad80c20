//! Restarts lose nothing acknowledged: from an RDB file (`SAVE`, then a crash), and from an
//! AOF without the RDB preamble (a rewrite, whose filters are `CF.LOADCHUNK` commands, then
//! writes after it, then a crash). Each filter comes back with its hasher's key, so the same
//! bytes (`DEBUG DIGEST-VALUE`), from the AOF's commands too.

use redis::Value;

use crate::common::{
    cf_info, create_mix, dataset_digest, digests, info_field, rewrite_aof, run, wait_until, Node,
    ENGINES,
};

fn fill(c: &mut redis::Connection, from: usize, to: usize) {
    for i in from..to {
        run(c, &format!("CF.ADD f{} item{i}", i % 4));
    }
}

fn all_present(c: &mut redis::Connection, to: usize) -> bool {
    (0..to).all(|i| run(c, &format!("CF.EXISTS f{} item{i}", i % 4)) == Value::Int(1))
}

#[test]
fn a_restart_from_rdb_keeps_what_was_saved() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(node) = Node::start(engine, dir.path(), &["--dbfilename", "dump.rdb"]) else {
            continue;
        };
        let mut c = node.client();
        run(&mut c, "CF.RESERVE f0 100 EXPANSION 2 MAXITERATIONS 9");
        fill(&mut c, 0, 6000);
        let before = crate::common::digest(&mut c, "f0");
        assert_eq!(run(&mut c, "SAVE"), Value::Okay);
        let node = node.restart();
        let mut c = node.client();
        assert!(all_present(&mut c, 6000), "{engine:?}: an item saved in the RDB is missing");
        assert_eq!(
            crate::common::digest(&mut c, "f0"),
            before,
            "{engine:?}: the settings or bytes changed"
        );
    }
}

#[test]
fn a_restart_from_aof_keeps_every_write() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let aof =
            ["--appendonly", "yes", "--aof-use-rdb-preamble", "no", "--appendfsync", "always"];
        let Some(node) = Node::start(engine, dir.path(), &aof) else { continue };
        let mut c = node.client();
        fill(&mut c, 0, 4000);
        // The rewrite writes the filters as CF.LOADCHUNK commands; the writes after it follow.
        let _: String = redis::cmd("BGREWRITEAOF").query(&mut c).unwrap();
        wait_until(30, "the AOF rewrite", || {
            info_field(&mut c, "persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
                && info_field(&mut c, "persistence", "aof_rewrite_scheduled").as_deref()
                    == Some("0")
        });
        fill(&mut c, 4000, 6000);
        let node = node.restart();
        let mut c = node.client();
        assert!(all_present(&mut c, 6000), "{engine:?}: an item in the AOF is missing");
    }
}

#[test]
fn restarts_from_the_aof_and_the_rdb_keep_each_filters_key() {
    for engine in ENGINES {
        for preamble in ["no", "yes"] {
            let dir = tempfile::tempdir().unwrap();
            let aof = [
                "--appendonly",
                "yes",
                "--aof-use-rdb-preamble",
                preamble,
                "--appendfsync",
                "always",
            ];
            let Some(node) = Node::start(engine, dir.path(), &aof) else { continue };
            let mut c = node.client();
            let mut made = create_mix(&mut c, "");
            if preamble == "yes" {
                // The filters so far in the rewrite's RDB preamble, those after in commands.
                rewrite_aof(&mut c);
                made += create_mix(&mut c, "after-");
            }
            let (before, whole) = (digests(&mut c), dataset_digest(&mut c));
            assert_eq!(before.len(), made);
            let node = node.restart();
            let mut c = node.client();
            let after = digests(&mut c);
            let differ: Vec<&String> =
                before.iter().filter(|(k, d)| after.get(*k) != Some(d)).map(|(k, _)| k).collect();
            assert!(
                differ.is_empty(),
                "{engine:?}, preamble {preamble}: {} of {made} differ after the AOF: {differ:?}",
                differ.len()
            );
            assert_eq!(dataset_digest(&mut c), whole, "{engine:?}, preamble {preamble}");
            assert_eq!(run(&mut c, "DEBUG RELOAD"), Value::Okay);
            assert_eq!(digests(&mut c), before, "{engine:?}: DEBUG RELOAD");
        }
    }
}

/// `cuckoo.cf-max-memory` bounds what clients' transfers hold, not the chunks of an AOF: a
/// fixed filter larger than it, rewritten as `CF.LOADCHUNK` commands, comes back.
#[test]
fn a_filter_larger_than_cf_max_memory_comes_back_from_the_aof() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let args = [
            "--appendonly",
            "yes",
            "--aof-use-rdb-preamble",
            "no",
            "--cuckoo.cf-max-memory",
            "1048576",
        ];
        let Some(node) = Node::start(engine, dir.path(), &args) else { continue };
        let mut c = node.client();
        run(&mut c, "CF.RESERVE fixed 2000000 EXPANSION 0");
        for i in 0..1000 {
            run(&mut c, &format!("CF.ADD fixed item{i}"));
        }
        assert!(cf_info(&mut c, "fixed", "Size") > 2 << 20);
        rewrite_aof(&mut c);
        let node = node.restart();
        let mut c = node.client();
        assert_eq!(run(&mut c, "EXISTS fixed"), Value::Int(1), "{engine:?}: the filter is lost");
        assert!(
            (0..1000).all(|i| run(&mut c, &format!("CF.EXISTS fixed item{i}")) == Value::Int(1))
        );
    }
}
