//! Restarts lose nothing acknowledged: from an RDB file (`SAVE`, then a crash), and from an
//! AOF without the RDB preamble (a rewrite, whose filters are `CF.LOADCHUNK` commands, then
//! writes after it, then a crash).

use redis::Value;

use crate::common::{info_field, run, wait_until, Node, ENGINES};

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
