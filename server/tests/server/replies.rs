//! Every command's reply, byte for byte, and the filters used the way an application would.

use std::collections::HashSet;
use std::sync::Arc;

use crate::common::{copy_by_chunks, Server};

#[test]
fn cuckoo_filter_commands_reply_as_redisbloom() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.raw();
    assert_eq!(c.call(&["CF.RESERVE", "f", "1000"]), "+OK\r\n");
    assert_eq!(c.call(&["cf.reserve", "f", "1000"]), "-ERR item exists\r\n");
    assert_eq!(c.call(&["CF.ADD", "f", "a"]), ":1\r\n");
    assert_eq!(c.call(&["CF.ADD", "f", "a"]), ":1\r\n");
    assert_eq!(c.call(&["CF.ADDNX", "f", "a"]), ":0\r\n");
    assert_eq!(c.call(&["CF.ADDNX", "f", "b"]), ":1\r\n");
    assert_eq!(c.call(&["CF.EXISTS", "f", "a"]), ":1\r\n");
    assert_eq!(c.call(&["CF.EXISTS", "f", "zz"]), ":0\r\n");
    assert_eq!(c.call(&["CF.EXISTS", "nofilter", "a"]), ":0\r\n");
    assert_eq!(c.call(&["CF.MEXISTS", "f", "a", "zz", "b"]), "*3\r\n:1\r\n:0\r\n:1\r\n");
    assert_eq!(c.call(&["CF.MEXISTS", "nofilter", "a", "b"]), "*2\r\n:0\r\n:0\r\n");
    assert_eq!(c.call(&["CF.COUNT", "f", "a"]), ":2\r\n");
    assert_eq!(c.call(&["CF.COUNT", "nofilter", "a"]), ":0\r\n");
    assert_eq!(c.call(&["CF.DEL", "f", "a"]), ":1\r\n");
    assert_eq!(c.call(&["CF.COUNT", "f", "a"]), ":1\r\n");
    assert_eq!(c.call(&["CF.DEL", "f", "zz"]), ":0\r\n");
    assert_eq!(c.call(&["CF.DEL", "nofilter", "a"]), "-Not found\r\n");
    assert_eq!(c.call(&["CF.INFO", "nofilter"]), "-ERR not found\r\n");
    let info = c.call(&["CF.INFO", "f"]);
    let expected_tail = "+Number of buckets\r\n:273\r\n+Number of filters\r\n:1\r\n\
         +Number of items inserted\r\n:2\r\n+Number of items deleted\r\n:1\r\n\
         +Bucket size\r\n:4\r\n+Expansion rate\r\n:1\r\n+Max iterations\r\n:20\r\n";
    assert!(info.starts_with("*16\r\n+Size\r\n:"), "{info}");
    assert!(info.ends_with(expected_tail), "{info}");
    // CF.ADD creates a filter for a new name.
    assert_eq!(c.call(&["CF.ADD", "auto", "x"]), ":1\r\n");
    assert_eq!(c.call(&["CF.EXISTS", "auto", "x"]), ":1\r\n");
    assert_eq!(
        c.call(&["CF.RESERVE", "g", "100", "MAXITERATIONS", "7", "BUCKETSIZE", "2"]),
        "+OK\r\n"
    );
    assert!(c.call(&["CF.INFO", "g"]).ends_with("+Max iterations\r\n:7\r\n"));
}

const CAPACITY_RANGE: &str = "-Capacity must be in the range [2 * BUCKETSIZE, 1073741824]\r\n";

#[test]
fn reserve_is_validated_in_redisbloom_order() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--max-memory", "100000000"]);
    let mut c = server.raw();
    for (args, reply) in [
        (&["CF.RESERVE", "f"][..], "-ERR wrong number of arguments for 'cf.reserve' command\r\n"),
        (
            &["CF.RESERVE", "f", "10", "BUCKETSIZE"],
            "-ERR wrong number of arguments for 'cf.reserve' command\r\n",
        ),
        (&["CF.RESERVE", "f", "ten"], "-Bad capacity\r\n"),
        (&["CF.RESERVE", "f", "3"], CAPACITY_RANGE),
        (&["CF.RESERVE", "f", "-5"], CAPACITY_RANGE),
        (&["CF.RESERVE", "f", "10", "BUCKETSIZE", "x"], "-Couldn't parse BUCKETSIZE\r\n"),
        (
            &["CF.RESERVE", "f", "10", "BUCKETSIZE", "0"],
            "-BUCKETSIZE: value must be in the range [1, 255]\r\n",
        ),
        (
            &["CF.RESERVE", "f", "10", "MAXITERATIONS", "165536"],
            "-MAXITERATIONS: value must be in the range [1, 65535]\r\n",
        ),
        (
            &["CF.RESERVE", "f", "10", "BUCKETSIZE", "33554432"],
            "-BUCKETSIZE: value must be in the range [1, 255]\r\n",
        ),
        (
            &["CF.RESERVE", "f", "10", "EXPANSION", "32769"],
            "-EXPANSION: value must be in the range [0, 32768]\r\n",
        ),
        (&["CF.RESERVE", "f", "10", "BUCKETSIZE", "8"], CAPACITY_RANGE),
        (&["CF.RESERVE", "f", "1000000000000"], CAPACITY_RANGE),
        // Over --max-memory: refused before anything is allocated.
        (&["CF.RESERVE", "f", "100000000"], "-ERR Insufficient memory to create filter\r\n"),
    ] {
        assert_eq!(c.call(args), reply, "{args:?}");
    }
    assert_eq!(c.call(&["EXISTS", "f"]), ":0\r\n");
    assert_eq!(c.call(&["CF.RESERVE", "f", "10", "EXPANSION", "0"]), "+OK\r\n");
}

#[test]
fn arity_and_unknown_commands() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.raw();
    for (name, args) in [
        ("cf.add", &["CF.ADD", "f"][..]),
        ("cf.addnx", &["CF.ADDNX", "f", "a", "b"]),
        ("cf.exists", &["cf.exists", "f"]),
        ("cf.mexists", &["CF.MEXISTS", "f"]),
        ("cf.del", &["CF.DEL", "f"]),
        ("cf.count", &["CF.COUNT"]),
        ("cf.info", &["CF.INFO"]),
        ("del", &["DEL"]),
        ("ping", &["PING", "a", "b"]),
    ] {
        let want = format!("-ERR wrong number of arguments for '{name}' command\r\n");
        assert_eq!(c.call(args), want, "{args:?}");
    }
    assert_eq!(
        c.call(&["NOSUCH", "a", "b"]),
        "-ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' \r\n"
    );
    assert_eq!(c.call(&["PING"]), "+PONG\r\n");
}

#[test]
fn generic_commands_clients_send() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.raw();
    assert_eq!(c.call(&["PING", "hi"]), "$2\r\nhi\r\n");
    assert_eq!(c.call(&["ECHO", "x y"]), "$3\r\nx y\r\n");
    assert_eq!(c.call(&["SELECT", "0"]), "+OK\r\n");
    assert_eq!(c.call(&["SELECT", "1"]), "-ERR DB index is out of range\r\n");
    assert_eq!(
        c.call(&["HELLO", "4"]),
        "-NOPROTO sorry, this protocol version is not supported.\r\n"
    );
    assert!(c.call(&["HELLO", "2"]).starts_with("*14\r\n$6\r\nserver\r\n"));
    assert!(c.call(&["HELLO", "3"]).starts_with("%7\r\n$6\r\nserver\r\n"));
    assert_eq!(c.call(&["CF.EXISTS", "a", "1"]), "#f\r\n");
    assert!(c.call(&["HELLO", "2"]).starts_with("*14\r\n"));
    assert!(c.call(&["CLIENT", "LIST"]).starts_with("-ERR CLIENT LIST and CLIENT KILL are not"));
    assert_eq!(c.call(&["CLIENT", "SETINFO", "LIB-NAME", "x"]), "+OK\r\n");
    assert_eq!(c.call(&["CLIENT", "GETNAME"]), "$-1\r\n");
    assert_eq!(c.call(&["COMMAND", "DOCS"]), "*0\r\n");
    assert_eq!(c.call(&["CONFIG", "GET", "save"]), "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
    assert_eq!(c.call(&["CONFIG", "GET", "appendonly"]), "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n");
    assert_eq!(c.call(&["CONFIG", "GET", "nothing"]), "*0\r\n");
    assert_eq!(c.call(&["CF.ADD", "a", "1"]), ":1\r\n");
    assert_eq!(c.call(&["CF.ADD", "b", "1"]), ":1\r\n");
    assert_eq!(c.call(&["DBSIZE"]), ":2\r\n");
    assert_eq!(c.call(&["TYPE", "a"]), "+MBbloomCF\r\n");
    assert_eq!(c.call(&["TYPE", "zz"]), "+none\r\n");
    assert_eq!(c.call(&["EXISTS", "a", "b", "zz"]), ":2\r\n");
    assert_eq!(c.call(&["DEL", "a", "zz"]), ":1\r\n");
    assert_eq!(c.call(&["CF.EXISTS", "a", "1"]), ":0\r\n");
    assert!(c.call(&["INFO"]).contains("db0:keys=1,"));
    assert_eq!(c.call(&["QUIT"]), "+OK\r\n");
    assert_eq!(c.until_closed(), "");
}

#[test]
fn a_full_filter_refuses_and_keeps_what_it_has() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    let reserve =
        redis::cmd("CF.RESERVE").arg("small").arg(8).arg("EXPANSION").arg(0).query(&mut c);
    let _: () = reserve.unwrap();
    let mut accepted = Vec::new();
    let mut refusal = None;
    for i in 0..1000u32 {
        match redis::cmd("CF.ADD").arg("small").arg(i).query::<i64>(&mut c) {
            Ok(1) => accepted.push(i),
            Ok(other) => panic!("CF.ADD replied {other}"),
            Err(e) => {
                refusal = Some(e.to_string());
                break;
            }
        }
    }
    let refusal = refusal.expect("a filter of capacity 8 took 1000 items");
    assert!(refusal.contains("Filter") && refusal.contains("full"), "{refusal}");
    assert!(accepted.len() >= 8, "only {} accepted", accepted.len());
    let found: Vec<i64> =
        redis::cmd("CF.MEXISTS").arg("small").arg(&accepted).query(&mut c).unwrap();
    assert!(found.iter().all(|&f| f == 1), "a refused insert lost an item");
}

#[test]
fn many_clients_share_one_filter_without_false_negatives() {
    let dir = tempfile::tempdir().unwrap();
    let server = Arc::new(Server::start(dir.path(), &[]));
    let mut c = server.client();
    let _: () = redis::cmd("CF.RESERVE").arg("shared").arg(200_000).query(&mut c).unwrap();
    let threads: Vec<_> = (0..8u32)
        .map(|t| {
            let server = Arc::clone(&server);
            std::thread::spawn(move || {
                let mut c = server.client();
                let mut mine = Vec::new();
                for round in 0..40u32 {
                    let items: Vec<String> = (0..500).map(|i| format!("{t}:{round}:{i}")).collect();
                    let mut pipe = redis::pipe();
                    for item in &items {
                        pipe.cmd("CF.ADD").arg("shared").arg(item);
                    }
                    let added: Vec<i64> = pipe.query(&mut c).unwrap();
                    assert!(added.iter().all(|&a| a == 1));
                    mine.extend(items);
                    // Everything this client added so far is visible, while the others write.
                    let found: Vec<i64> =
                        redis::cmd("CF.MEXISTS").arg("shared").arg(&mine).query(&mut c).unwrap();
                    assert!(found.iter().all(|&f| f == 1), "false negative");
                }
                // Remove every other item again.
                let mut pipe = redis::pipe();
                for item in mine.iter().step_by(2) {
                    pipe.cmd("CF.DEL").arg("shared").arg(item);
                }
                let removed: Vec<i64> = pipe.query(&mut c).unwrap();
                assert!(removed.iter().all(|&r| r == 1), "a remove missed");
                mine.into_iter().skip(1).step_by(2).collect::<Vec<_>>()
            })
        })
        .collect();
    let kept: Vec<String> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    assert_eq!(kept.iter().collect::<HashSet<_>>().len(), 80_000);
    let found: Vec<i64> = redis::cmd("CF.MEXISTS").arg("shared").arg(&kept).query(&mut c).unwrap();
    assert!(found.iter().all(|&f| f == 1), "a kept item went missing");
    let info: Vec<redis::Value> = redis::cmd("CF.INFO").arg("shared").query(&mut c).unwrap();
    assert_eq!(info[7], redis::Value::Int(80_000), "items present");
    assert_eq!(info[9], redis::Value::Int(80_000), "items deleted");
}

/// Items added `k` times (`k` up to 24) and deleted `k` times in a filter of three levels: the
/// first eight adds (four for an item of one bucket) are accepted and the rest refused, as a
/// fixed filter refuses them; the first deletes answer 1 and every later one 0; `CF.COUNT`
/// ends at 0 and "Number of items inserted" where it was; then a `CF.SCANDUMP`/`CF.LOADCHUNK`
/// copy holds every item.
#[test]
fn multisets_in_a_grown_filter_delete_exactly_and_dump_whole() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    let info = |c: &mut redis::Connection, key: &str, field: &str| -> i64 {
        let fields: std::collections::HashMap<String, i64> =
            redis::cmd("CF.INFO").arg(key).query(c).unwrap();
        fields[field]
    };
    let _: () = redis::cmd("CF.RESERVE").arg("f").arg(100).query(&mut c).unwrap();
    let mut fillers = 0u64;
    while info(&mut c, "f", "Number of filters") < 3 {
        let added: Vec<i64> = redis::cmd("CF.INSERT")
            .arg("f")
            .arg("ITEMS")
            .arg(&[fillers, fillers + 1])
            .query(&mut c)
            .unwrap();
        assert_eq!(added, [1, 1], "a filler refused");
        fillers += 2;
    }
    let inserted = info(&mut c, "f", "Number of items inserted");
    for k in 1..=24usize {
        // An item that matches no filler (no false positive), so the counts are its own.
        let exists = |c: &mut redis::Connection, item: &str| -> i64 {
            redis::cmd("CF.EXISTS").arg("f").arg(item).query(c).unwrap()
        };
        let item = (0..).map(|n| format!("dup{k}-{n}")).find(|i| exists(&mut c, i) == 0).unwrap();
        let replies: Vec<redis::RedisResult<i64>> =
            (0..k).map(|_| redis::cmd("CF.ADD").arg("f").arg(&item).query(&mut c)).collect();
        // Eight copies fit, or four where the item's two buckets are one (its filter's key is
        // random); the refusals come after every accepted copy.
        let accepted = replies.iter().take_while(|reply| reply.is_ok()).count();
        assert!((k.min(4)..=k.min(8)).contains(&accepted), "{k} adds: {replies:?}");
        for reply in &replies[accepted..] {
            let refused = reply.as_ref().unwrap_err().to_string().replacen(": ", " ", 1);
            assert_eq!(refused, "Filter is full");
        }
        for i in 0..k + 2 {
            let deleted: i64 = redis::cmd("CF.DEL").arg("f").arg(&item).query(&mut c).unwrap();
            assert_eq!(deleted, i64::from(i < accepted), "delete {i} of {k} copies");
        }
        let count: i64 = redis::cmd("CF.COUNT").arg("f").arg(&item).query(&mut c).unwrap();
        assert_eq!(count, 0);
        assert_eq!(info(&mut c, "f", "Number of items inserted"), inserted);
    }
    copy_by_chunks(&mut c, "f", "copy");
    assert_eq!(info(&mut c, "copy", "Number of items inserted"), inserted);
    let items: Vec<u64> = (0..fillers).collect();
    let found: Vec<i64> = redis::cmd("CF.MEXISTS").arg("copy").arg(&items).query(&mut c).unwrap();
    assert!(found.iter().all(|&f| f == 1), "the copy lost an item");
}
