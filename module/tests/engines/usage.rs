//! The commands as clients use them, in both engines and both protocols, and the engine's own
//! commands on the module's values: `TYPE`, `MEMORY USAGE`, `COPY`, `DUMP`/`RESTORE`,
//! `DEBUG RELOAD`, `INFO`, `CONFIG`, ACL categories; bad input is an error, never a crash.

use redis::Value;

use crate::common::{
    call, cf_info, digest, dump, free_port, info_field, load, memory_usage, module, run,
    used_memory, wait_until, Node, ENGINES,
};

#[test]
fn the_commands_in_both_protocols() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(node) = Node::start(engine, dir.path(), &[]) else { continue };
        let mut c = node.client();
        assert_eq!(run(&mut c, "CF.RESERVE f 1000"), Value::Okay);
        assert_eq!(run(&mut c, "CF.ADD f a"), Value::Int(1));
        assert_eq!(run(&mut c, "CF.ADDNX f a"), Value::Int(0));
        assert_eq!(
            run(&mut c, "CF.INSERTNX f ITEMS a b"),
            Value::Array(vec![Value::Int(0), Value::Int(1)])
        );
        assert_eq!(
            run(&mut c, "CF.MEXISTS f a b zz"),
            Value::Array(vec![Value::Int(1), Value::Int(1), Value::Int(0)])
        );
        assert_eq!(run(&mut c, "CF.COUNT f a"), Value::Int(1));
        assert_eq!(run(&mut c, "CF.DEL f a"), Value::Int(1));
        assert_eq!(run(&mut c, "CF.EXISTS f a"), Value::Int(0));
        assert_eq!(run(&mut c, "TYPE f"), Value::SimpleString("LFCuckooF".into()));
        let Value::Array(info) = run(&mut c, "CF.INFO f") else { panic!() };
        assert_eq!(info.len(), 16);
        assert_eq!(info[6], Value::SimpleString("Number of items inserted".into()));
        assert_eq!(info[7], Value::Int(1));
        let Value::BulkString(debug) = run(&mut c, "CF.DEBUG f") else { panic!() };
        let debug = String::from_utf8(debug).unwrap();
        assert!(debug.starts_with("bktsize:4 buckets:") && debug.contains(" items:1 "), "{debug}");
        // Errors are RedisBloom's, and a key of another type is WRONGTYPE.
        run(&mut c, "SET plain x");
        let error = |c: &mut redis::Connection, command: &[&[u8]]| {
            let e = call(c, command).unwrap_err();
            format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or(""))
        };
        let wrong = error(&mut c, &[b"CF.ADD", b"plain", b"a"]);
        assert_eq!(wrong, "WRONGTYPE Operation against a key holding the wrong kind of value");
        let bad = error(&mut c, &[b"CF.RESERVE", b"g", b"100", b"EXPANSION", b"32769"]);
        assert_eq!(bad, "EXPANSION: value must be in the range [0, 32768]");
        assert_eq!(error(&mut c, &[b"CF.DEL", b"nofilter", b"a"]), "Not found");

        // RESP3: booleans and a map, as RedisBloom answers.
        let client =
            redis::Client::open(format!("redis://127.0.0.1:{}/?protocol=resp3", node.port));
        let mut three = client.unwrap().get_connection().unwrap();
        assert_eq!(run(&mut three, "CF.EXISTS f b"), Value::Boolean(true));
        assert_eq!(run(&mut three, "CF.ADD f c"), Value::Boolean(true));
        assert!(matches!(run(&mut three, "CF.INFO f"), Value::Map(fields) if fields.len() == 8));
        assert_eq!(run(&mut three, "CF.INSERTNX f ITEMS c"), Value::Array(vec![Value::Int(0)]));

        // A write to a filter is a change the engine sees: it aborts a transaction watching it.
        for change in ["CF.DEL f b", "CF.ADD f d", "CF.INSERT f NOCREATE ITEMS e"] {
            run(&mut c, "WATCH f");
            run(&mut c, "MULTI");
            run(&mut c, "CF.EXISTS f b");
            run(&mut three, change);
            assert_eq!(run(&mut c, "EXEC"), Value::Nil, "{engine:?}: {change} went unseen");
        }
    }
}

#[test]
fn engine_commands_on_the_values() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(node) = Node::start(engine, dir.path(), &["--cuckoo.cf-initial-size", "5000"])
        else {
            continue;
        };
        let mut c = node.client();
        for i in 0..3000 {
            run(&mut c, &format!("CF.ADD f item{i}"));
        }
        let before = digest(&mut c, "f");
        let Value::Int(bytes) = run(&mut c, "MEMORY USAGE f") else { panic!() };
        assert!((10_000..20_000).contains(&bytes), "{engine:?}: MEMORY USAGE {bytes}");
        assert_eq!(run(&mut c, "COPY f g"), Value::Int(1));
        assert_eq!(digest(&mut c, "g"), before);
        run(&mut c, "CF.ADD g only-in-g");
        assert_ne!(digest(&mut c, "g"), before, "COPY shares the filter");
        assert_eq!(run(&mut c, "CF.EXISTS f only-in-g"), Value::Int(0));
        let dump: Vec<u8> = redis::cmd("DUMP").arg("f").query(&mut c).unwrap();
        let _: () = redis::cmd("RESTORE").arg("h").arg(0).arg(&dump).query(&mut c).unwrap();
        assert_eq!(digest(&mut c, "h"), before);
        assert_eq!(run(&mut c, "DEBUG RELOAD"), Value::Okay);
        assert_eq!(digest(&mut c, "f"), before);
        assert!((0..3000).all(|i| run(&mut c, &format!("CF.EXISTS h item{i}")) == Value::Int(1)));
        assert_eq!(info_field(&mut c, "cuckoo", "cuckoo_filters").as_deref(), Some("3"));
        let memory: usize =
            info_field(&mut c, "cuckoo", "cuckoo_memory_bytes").unwrap().parse().unwrap();
        assert!(memory > 3 * 10_000, "{memory}");
        let Value::Array(config) = run(&mut c, "CONFIG GET cuckoo.cf-initial-size") else {
            panic!()
        };
        assert_eq!(config[1], Value::BulkString(b"5000".to_vec()));
        // The implicit filter took the configured capacity.
        let Value::Array(info) = run(&mut c, "CF.INFO f") else { panic!() };
        assert_eq!(info[5], Value::Int(1), "{engine:?}: grew past cf-initial-size 5000");
        if engine == crate::common::Engine::Valkey {
            let Value::Array(listed) = run(&mut c, "ACL CAT cuckoo") else { panic!() };
            assert_eq!(listed.len(), lockfree_cuckoo_commands::COMMANDS.len());
        }
    }
}

#[test]
fn bad_input_is_an_error_never_a_crash() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(mut node) = Node::start(engine, dir.path(), &[]) else { continue };
        let mut c = node.client();
        for i in 0..500 {
            run(&mut c, &format!("CF.ADD f item{i}"));
        }
        // A filter holding no item ends its dump at once, as RedisBloom's does.
        run(&mut c, "CF.RESERVE empty 100");
        assert_eq!(
            run(&mut c, "CF.SCANDUMP empty 0"),
            Value::Array(vec![Value::Int(0), Value::Nil])
        );
        // A truncated transfer never makes the key; garbage is refused at once.
        let Value::Array(chunk) = run(&mut c, "CF.SCANDUMP f 0") else { panic!() };
        let Value::BulkString(bytes) = &chunk[1] else { panic!() };
        let half = &bytes[..bytes.len() / 2];
        let cursor = (bytes.len() + 1).to_string();
        assert!(call(&mut c, &[b"CF.LOADCHUNK", b"t", cursor.as_bytes(), half]).is_err());
        let cursor = (half.len() + 1).to_string();
        assert_eq!(
            call(&mut c, &[b"CF.LOADCHUNK", b"t", cursor.as_bytes(), half]).unwrap(),
            Value::Okay
        );
        assert_eq!(run(&mut c, "EXISTS t"), Value::Int(0), "a partial transfer made the key");
        assert!(call(&mut c, &[b"CF.LOADCHUNK", b"u", b"10", b"not a snap"]).is_err());
        // Hostile RESTORE payloads: the module's bytes damaged under a valid payload checksum.
        let dump: Vec<u8> = redis::cmd("DUMP").arg("f").query(&mut c).unwrap();
        let mut refused = 0;
        for at in (10..dump.len() - 10).step_by(97) {
            let mut bad = dump.clone();
            bad[at] ^= 0x5A;
            reseal(&mut bad);
            let restored: redis::RedisResult<()> =
                redis::cmd("RESTORE").arg(format!("bad{at}")).arg(0).arg(&bad).query(&mut c);
            if restored.is_err() {
                refused += 1;
            }
        }
        assert!(refused > 0);
        // Truncated payloads, resealed.
        for cut in [20, dump.len() / 2, dump.len() - 11] {
            let mut short = dump[..cut].to_vec();
            short.extend_from_slice(&dump[dump.len() - 10..]);
            reseal(&mut short);
            let restored: redis::RedisResult<()> =
                redis::cmd("RESTORE").arg("short").arg(0).arg(&short).query(&mut c);
            assert!(restored.is_err(), "{engine:?}: a truncated payload restored");
        }
        assert!(node.is_running(), "{engine:?} crashed: {}", node.log());
        assert_eq!(run(&mut c, "CF.EXISTS f item7"), Value::Int(1));
    }
}

/// Recomputes a `DUMP` payload's trailing CRC-64 (the engines' variant, Jones), so that the
/// engine's own check passes and the module's checks are what refuse damaged bytes.
fn reseal(payload: &mut [u8]) {
    const CRC: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_REDIS);
    let body = payload.len() - 8;
    let sum = CRC.checksum(&payload[..body]);
    payload[body..].copy_from_slice(&sum.to_le_bytes());
}

/// Inserts `count` items named from `from` into `key` in one `CF.INSERT`; whether all went in.
fn insert_batch(c: &mut redis::Connection, key: &str, from: usize, count: usize) -> bool {
    let items: Vec<String> = (from..from + count).map(|i| format!("item{i}")).collect();
    let Value::Array(replies) = run(c, &format!("CF.INSERT {key} ITEMS {}", items.join(" ")))
    else {
        panic!("CF.INSERT")
    };
    replies.iter().all(|r| *r == Value::Int(1))
}

/// `MEMORY USAGE` of a filter and the engine's `used_memory` count each level it adds, and
/// `used_memory` gives the bytes back on `DEL`.
#[test]
fn memory_usage_and_used_memory_follow_growth() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(node) = Node::start(engine, dir.path(), &[]) else { continue };
        let mut c = node.client();
        run(&mut c, "CF.RESERVE g 1000");
        let (size0, usage0, used0) =
            (cf_info(&mut c, "g", "Size"), memory_usage(&mut c, "g"), used_memory(&mut c));
        let (mut levels, mut usage, mut at) = (1, usage0, 0);
        while levels < 6 {
            assert!(insert_batch(&mut c, "g", at, 1000), "{engine:?}: refused at {at}");
            at += 1000;
            let now = cf_info(&mut c, "g", "Number of filters");
            if now > levels {
                let grown = memory_usage(&mut c, "g");
                assert!(grown > usage, "{engine:?}: level {now}, MEMORY USAGE {grown} <= {usage}");
                (levels, usage) = (now, grown);
            }
        }
        // MEMORY USAGE adds the filter's bytes (CF.INFO's Size) to fixed overheads.
        let size = cf_info(&mut c, "g", "Size");
        assert_eq!(usage - usage0, size - size0, "{engine:?}: MEMORY USAGE against CF.INFO Size");
        assert!(size - size0 > 2 << 20, "{engine:?}: grew by {} bytes", size - size0);
        let used = used_memory(&mut c);
        let grown = used - used0;
        assert!(
            grown >= (size - size0) * 9 / 10 && grown <= (size - size0) * 3 / 2,
            "{engine:?}: used_memory grew by {grown} for a filter grown by {}",
            size - size0
        );
        let counted: i64 =
            info_field(&mut c, "cuckoo", "cuckoo_memory_bytes").unwrap().parse().unwrap();
        assert_eq!(counted, size, "{engine:?}: INFO cuckoo");
        assert_eq!(run(&mut c, "DEL g"), Value::Int(1));
        wait_until(10, "the filter's bytes to be freed", || {
            used - used_memory(&mut c) >= size * 9 / 10
        });
        assert_eq!(info_field(&mut c, "cuckoo", "cuckoo_memory_bytes").as_deref(), Some("0"));
    }
}

/// `cuckoo.cf-max-memory` is 64 MiB unless configured: a growable filter stops growing there.
/// A growable reservation whose first table is past it gets that table and does not grow.
#[test]
fn growth_stops_at_cf_max_memory_64_mib_by_default() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(node) = Node::start(engine, dir.path(), &[]) else { continue };
        let mut c = node.client();
        let Value::Array(config) = run(&mut c, "CONFIG GET cuckoo.cf-max-memory") else { panic!() };
        assert_eq!(config[1], Value::BulkString(b"67108864".to_vec()), "{engine:?}");
        // The same bound, scaled down to 1 MiB so that the test fills it.
        run(&mut c, "CONFIG SET cuckoo.cf-max-memory 1048576");
        let mut at = 0;
        while insert_batch(&mut c, "implicit", at, 1000) {
            at += 1000;
            assert!(at < 2_000_000, "{engine:?}: no ceiling");
        }
        let usage = memory_usage(&mut c, "implicit");
        assert!((900 << 10..(1 << 20) + 4096).contains(&usage), "{engine:?}: MEMORY USAGE {usage}");
        assert!(!insert_batch(&mut c, "implicit", at + 1000, 1000), "{engine:?}: grew again");
        assert_eq!(memory_usage(&mut c, "implicit"), usage);
        // A growable filter reserved past the ceiling: its table, no growth.
        assert_eq!(run(&mut c, "CF.RESERVE big 1000000"), Value::Okay, "{engine:?}");
        assert!(memory_usage(&mut c, "big") > 2 << 20);
        assert_eq!(cf_info(&mut c, "big", "Number of filters"), 1);
        assert!(insert_batch(&mut c, "big", 0, 1000));
    }
}

/// A filter whose first table would take `used_memory` past `maxmemory` is refused with the
/// engine's OOM error before anything is allocated, whichever command creates it; one that fits
/// is made. (The engine itself checks its limit only before a command, not against what the
/// command allocates.)
#[test]
fn a_filter_past_maxmemory_is_refused_before_it_is_allocated() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(node) = Node::start(engine, dir.path(), &["--maxmemory", "50mb"]) else {
            continue;
        };
        let mut c = node.client();
        let used = used_memory(&mut c);
        let refused = call(&mut c, &[b"CF.RESERVE", b"big", b"100000000"]).unwrap_err();
        assert_eq!(refused.code(), Some("OOM"), "{engine:?}: {refused}");
        assert_eq!(run(&mut c, "EXISTS big"), Value::Int(0), "{engine:?}");
        let grown = used_memory(&mut c) - used;
        assert!(grown < 1 << 20, "{engine:?}: used_memory grew by {grown} for a refused reserve");
        assert_eq!(run(&mut c, "CF.RESERVE small 100000"), Value::Okay, "{engine:?}");
        assert_eq!(run(&mut c, "CF.ADD implicit a"), Value::Int(1), "{engine:?}");
        // A filter that CF.ADD would create at a configured initial size past the limit.
        run(&mut c, "CONFIG SET cuckoo.cf-initial-size 100000000");
        let refused = call(&mut c, &[b"CF.ADD", b"large", b"a"]).unwrap_err();
        assert_eq!(refused.code(), Some("OOM"), "{engine:?}: {refused}");
        assert_eq!(run(&mut c, "EXISTS large"), Value::Int(0), "{engine:?}");
    }
}

/// A reserve of 10^9 items counts its 2 GB in `used_memory` at once, but the engine does not
/// write them: the table is the allocator's zeroed memory, so the reserve returns at once
/// (measured: 3.5 s in Redis 7.0 and 2.7 s in Valkey 9 before) and the resident memory grows
/// only as items arrive.
#[test]
fn a_reserve_of_a_billion_items_does_not_write_its_table() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(node) = Node::start(engine, dir.path(), &[]) else { continue };
        let mut c = node.client();
        let rss = |c: &mut redis::Connection| -> i64 {
            info_field(c, "memory", "used_memory_rss").unwrap().parse().unwrap()
        };
        let (used, resident) = (used_memory(&mut c), rss(&mut c));
        assert_eq!(run(&mut c, "CF.RESERVE x 1000000000 EXPANSION 0"), Value::Okay, "{engine:?}");
        assert!(used_memory(&mut c) - used > 2_000_000_000, "{engine:?}: used_memory");
        let touched = rss(&mut c) - resident;
        assert!(touched < 64 << 20, "{engine:?}: the reserve wrote {touched} bytes");
        assert_eq!(run(&mut c, "CF.ADD x a"), Value::Int(1), "{engine:?}");
        assert_eq!(run(&mut c, "CF.EXISTS x a"), Value::Int(1), "{engine:?}");
        assert_eq!(run(&mut c, "DEL x"), Value::Int(1), "{engine:?}");
    }
}

/// RedisBloom's configuration (`cf-initial-size`, `cf-bucket-size`, `cf-max-iterations`,
/// `cf-expansion-factor`, under the module's `cuckoo.`): its defaults and ranges, and what each
/// changes: the options a `CF.RESERVE` leaves out and the filters the adds create.
#[test]
fn redisbloom_configuration_names_defaults_and_ranges() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(node) = Node::start(engine, dir.path(), &[]) else { continue };
        let mut c = node.client();
        let get = |c: &mut redis::Connection, name: &str| {
            let Value::Array(pair) = run(c, &format!("CONFIG GET cuckoo.{name}")) else { panic!() };
            let Value::BulkString(value) = &pair[1] else { panic!("{name}: {pair:?}") };
            String::from_utf8(value.clone()).unwrap()
        };
        let defaults = [
            ("cf-initial-size", "1024"),
            ("cf-bucket-size", "2"),
            ("cf-max-iterations", "20"),
            ("cf-expansion-factor", "1"),
        ];
        for (name, value) in defaults {
            assert_eq!(get(&mut c, name), value, "{engine:?}: {name}");
        }
        let out_of_range = [
            ("cf-initial-size", "1"),
            ("cf-initial-size", "1073741825"),
            ("cf-bucket-size", "0"),
            ("cf-bucket-size", "256"),
            ("cf-max-iterations", "0"),
            ("cf-max-iterations", "65536"),
            ("cf-expansion-factor", "-1"),
            ("cf-expansion-factor", "32769"),
        ];
        for (name, value) in out_of_range {
            let set = format!("cuckoo.{name}");
            let refused = call(&mut c, &[b"CONFIG", b"SET", set.as_bytes(), value.as_bytes()]);
            assert!(refused.is_err(), "{engine:?}: {name} {value} taken");
        }
        // What each one changes.
        run(&mut c, "CONFIG SET cuckoo.cf-expansion-factor 0");
        run(&mut c, "CONFIG SET cuckoo.cf-max-iterations 30");
        run(&mut c, "CONFIG SET cuckoo.cf-initial-size 2000");
        run(&mut c, "CF.RESERVE r 1000");
        assert_eq!(cf_info(&mut c, "r", "Expansion rate"), 0, "{engine:?}");
        assert_eq!(cf_info(&mut c, "r", "Max iterations"), 30, "{engine:?}");
        run(&mut c, "CF.RESERVE given 1000 EXPANSION 2 MAXITERATIONS 5");
        assert_eq!(cf_info(&mut c, "given", "Expansion rate"), 2, "{engine:?}");
        assert_eq!(cf_info(&mut c, "given", "Max iterations"), 5, "{engine:?}");
        run(&mut c, "CF.ADD added a");
        assert_eq!(cf_info(&mut c, "added", "Expansion rate"), 0, "{engine:?}");
        assert!(cf_info(&mut c, "added", "Size") > cf_info(&mut c, "r", "Size"), "{engine:?}");
        // A fixed filter: it fills and refuses, and never adds a level.
        let mut at = 0;
        while insert_batch(&mut c, "added", at, 500) {
            at += 500;
            assert!(at < 100_000, "{engine:?}: no refusal");
        }
        assert_eq!(cf_info(&mut c, "added", "Number of filters"), 1, "{engine:?}");
        // The capacity's range follows the bucket size in force.
        run(&mut c, "CONFIG SET cuckoo.cf-bucket-size 3");
        let refused = call(&mut c, &[b"CF.RESERVE", b"b", b"5"]).unwrap_err();
        assert!(refused.to_string().contains("must be in the range"), "{engine:?}: {refused}");
        assert_eq!(run(&mut c, "CF.RESERVE b 6"), Value::Okay, "{engine:?}");
        assert_eq!(run(&mut c, "CF.RESERVE b4 5 BUCKETSIZE 2"), Value::Okay, "{engine:?}");
    }
}

/// A configuration given out of its range as a module argument, which becomes the registered
/// default that no engine checks, stops the load with a log line naming it.
#[test]
fn an_out_of_range_module_argument_stops_the_load() {
    for engine in ENGINES {
        let Some(binary) = engine.binary() else { continue };
        for (name, value) in [("cf-initial-size", "0"), ("cf-expansion-factor", "-5")] {
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("log");
            let mut engine_process = std::process::Command::new(&binary)
                .args(["--port", &free_port().to_string(), "--bind", "127.0.0.1", "--save", ""])
                .arg("--logfile")
                .arg(&log)
                .arg("--loadmodule")
                .arg(module())
                .args([name, value])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            let status = loop {
                if let Some(status) = engine_process.try_wait().unwrap() {
                    break Some(status);
                }
                if std::time::Instant::now() > deadline {
                    engine_process.kill().unwrap();
                    engine_process.wait().unwrap();
                    break None;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            };
            assert!(status.is_some_and(|s| !s.success()), "{engine:?}: loaded with {name} {value}");
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(
                log.contains(&format!("cuckoo.{name}: {value} is out of its range")),
                "{engine:?}: {log}"
            );
        }
    }
}

/// `COMMAND DOCS`, `COMMAND INFO` and `COMMAND GETKEYS` know every command: its summary,
/// complexity, arguments (the key first, RedisBloom's `CF.RESERVE` summary among them) and its
/// key specification, from the commands' own docs.
#[test]
fn command_docs_and_key_specs_for_every_command() {
    fn text(value: &Value) -> String {
        match value {
            Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            Value::SimpleString(text) => text.clone(),
            Value::Int(n) => n.to_string(),
            other => format!("{other:?}"),
        }
    }
    /// A flat `[name, value, ...]` array (or a RESP3 map) as pairs.
    fn fields(value: &Value) -> Vec<(String, Value)> {
        match value {
            Value::Array(items) => {
                items.chunks(2).map(|pair| (text(&pair[0]), pair[1].clone())).collect()
            }
            Value::Map(pairs) => pairs.iter().map(|(k, v)| (text(k), v.clone())).collect(),
            other => panic!("not fields: {other:?}"),
        }
    }
    fn field(value: &Value, name: &str) -> Value {
        let found = fields(value).into_iter().find(|(k, _)| k == name);
        found.unwrap_or_else(|| panic!("no {name} in {value:?}")).1
    }
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(node) = Node::start(engine, dir.path(), &[]) else { continue };
        let mut c = node.client();
        for spec in lockfree_cuckoo_commands::COMMANDS {
            let docs = call(&mut c, &[b"COMMAND", b"DOCS", spec.name.as_bytes()]).unwrap();
            let (name, docs) = fields(&docs).pop().unwrap_or_else(|| panic!("{}", spec.name));
            assert_eq!(name, spec.name, "{engine:?}");
            assert_eq!(text(&field(&docs, "summary")), spec.docs.summary, "{engine:?}");
            assert_eq!(text(&field(&docs, "complexity")), spec.docs.complexity, "{engine:?}");
            assert_eq!(text(&field(&docs, "group")), "module", "{engine:?}");
            let Value::Array(args) = field(&docs, "arguments") else { panic!("{engine:?}") };
            let names: Vec<String> = args.iter().map(|a| text(&field(a, "name"))).collect();
            let want: Vec<&str> = spec.docs.args.iter().map(|a| a.name).collect();
            assert_eq!(names, want, "{engine:?}: {}", spec.name);
            assert_eq!(text(&field(&args[0], "type")), "key", "{engine:?}: {}", spec.name);
            assert_eq!(text(&field(&args[0], "key_spec_index")), "0", "{engine:?}");
            // COMMAND INFO: the arity, and one key specification that begins at argument 1.
            let info = call(&mut c, &[b"COMMAND", b"INFO", spec.name.as_bytes()]).unwrap();
            let Value::Array(info) = info else { panic!() };
            let Value::Array(info) = &info[0] else { panic!("{engine:?}: {info:?}") };
            assert_eq!(info[1], Value::Int(spec.arity.into()), "{engine:?}: {}", spec.name);
            let Value::Array(key_specs) = &info[8] else { panic!("{engine:?}: {info:?}") };
            assert_eq!(key_specs.len(), 1, "{engine:?}: {}", spec.name);
            let begin = field(&field(&key_specs[0], "begin_search"), "spec");
            assert_eq!(text(&field(&begin, "index")), "1", "{engine:?}: {}", spec.name);
            let flags = format!("{:?}", field(&key_specs[0], "flags"));
            let access = if spec.write { "RW" } else { "RO" };
            assert!(flags.contains(access), "{engine:?}: {}: {flags}", spec.name);
        }
        let keys = run(&mut c, "COMMAND GETKEYS CF.INSERT k CAPACITY 100 ITEMS a b");
        assert_eq!(keys, Value::Array(vec![Value::BulkString(b"k".to_vec())]), "{engine:?}");
    }
}

/// `spec`'s name, the key `f`, and `a` for the other words its arity asks at least: a line the
/// engine passes to its ACL check (it refuses a wrong arity first).
fn command_line(spec: &lockfree_cuckoo_commands::Spec) -> String {
    let mut words = vec![spec.name.to_uppercase(), "f".into()];
    words.resize(spec.arity.unsigned_abs() as usize, "a".into());
    words.join(" ")
}

/// RedisBloom's ACL behaviour: `+@read` lets a user run the commands that only read, `+@write`
/// the others, and (on engines with module categories) `+@cuckoo` all of them, as RedisBloom's
/// `cuckoo` category does; a user without them runs none. Redis before 7.2 puts module
/// commands in no category of their flags (RedisBloom's ACL tests skip it): there only `+@all`
/// or the commands by name grant them, as `module/README.md` says.
#[test]
fn acl_categories_grant_the_commands_as_redisbloom_s_do() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(node) = Node::start(engine, dir.path(), &[]) else { continue };
        let mut admin = node.client();
        run(&mut admin, "CF.ADD f a");
        let version = info_field(&mut admin, "server", "redis_version").unwrap();
        let numbers: Vec<u32> = version.split('.').map(|n| n.parse().unwrap_or(0)).collect();
        let by_flags = engine == crate::common::Engine::Valkey || numbers[..2] >= [7, 2][..];
        let denied = |c: &mut redis::Connection, line: &str| {
            let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
            match call(c, &words) {
                Err(e) => e.to_string().contains("no permissions"),
                Ok(_) => false,
            }
        };
        let users = [("none", ""), ("reader", "+@read"), ("writer", "+@write"), ("any", "+@all")];
        for (user, rules) in users {
            run(&mut admin, &format!("ACL SETUSER {user} on >pw ~* &* {rules}"));
            let mut c = node.client();
            run(&mut c, &format!("AUTH {user} pw"));
            for spec in lockfree_cuckoo_commands::COMMANDS {
                let line = command_line(spec);
                let allowed = match user {
                    "reader" => by_flags && !spec.write,
                    "writer" => by_flags && spec.write,
                    "any" => true,
                    _ => false,
                };
                assert_eq!(denied(&mut c, &line), !allowed, "{engine:?}: {user}: {line}");
            }
        }
        if engine == crate::common::Engine::Valkey {
            run(&mut admin, "ACL SETUSER all on >pw ~* &* +@cuckoo");
            let mut c = node.client();
            run(&mut c, "AUTH all pw");
            for spec in lockfree_cuckoo_commands::COMMANDS {
                let line = command_line(spec);
                assert!(!denied(&mut c, &line), "{engine:?}: +@cuckoo: {line}");
            }
        }
    }
}

/// `cuckoo.cf-max-expansions` (RedisBloom's `cf-max-expansions`, 32, from 1 to 65,535): a
/// growable filter adds no level past it, and the add that would need one answers `Maximum
/// expansions reached` and loses nothing; a raised limit lets it grow again.
#[test]
fn cf_max_expansions_stops_growth_with_redisbloom_s_error() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(node) = Node::start(engine, dir.path(), &[]) else { continue };
        let mut c = node.client();
        let Value::Array(config) = run(&mut c, "CONFIG GET cuckoo.cf-max-expansions") else {
            panic!()
        };
        assert_eq!(config[1], Value::BulkString(b"32".to_vec()), "{engine:?}");
        for value in ["0", "65536"] {
            let set = [&b"CONFIG"[..], b"SET", b"cuckoo.cf-max-expansions", value.as_bytes()];
            assert!(call(&mut c, &set).is_err(), "{engine:?}: {value} taken");
        }
        run(&mut c, "CONFIG SET cuckoo.cf-max-expansions 2");
        run(&mut c, "CF.RESERVE cf 100");
        let mut added = 0;
        let refused = loop {
            match call(&mut c, &[b"CF.ADD", b"cf", format!("x{added}").as_bytes()]) {
                Ok(_) => added += 1,
                Err(e) => break e,
            }
            assert!(added < 100_000, "{engine:?}: no refusal");
        };
        // The client splits the first word off as the error's code.
        let text = refused.to_string().replacen(": ", " ", 1);
        assert_eq!(text, "Maximum expansions reached", "{engine:?}");
        assert_eq!(cf_info(&mut c, "cf", "Number of filters"), 2, "{engine:?}");
        assert!(added > 100, "{engine:?}: refused after {added}");
        let last = format!("x{}", added - 1);
        assert_eq!(run(&mut c, &format!("CF.EXISTS cf {last}")), Value::Int(1), "{engine:?}");
        run(&mut c, "CONFIG SET cuckoo.cf-max-expansions 3");
        assert_eq!(run(&mut c, &format!("CF.ADD cf x{added}")), Value::Int(1), "{engine:?}");
        assert_eq!(cf_info(&mut c, "cf", "Number of filters"), 3, "{engine:?}");
    }
}

/// Thousands of keys created and deleted in rounds under `maxmemory`: creation stops with the
/// engine's OOM error before `used_memory` passes the limit, every round, and `INFO cuckoo`
/// counts exactly the filters that live.
#[test]
fn churn_of_thousands_of_keys_under_maxmemory_never_passes_it() {
    const MAX: i64 = 30 << 20;
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let max = MAX.to_string();
        let Some(node) = Node::start(engine, dir.path(), &["--maxmemory", &max]) else {
            continue;
        };
        let mut c = node.client();
        // About 44 KB a filter: hundreds fit, thousands are made over the rounds.
        run(&mut c, "CONFIG SET cuckoo.cf-initial-size 20000");
        let mut live: Vec<String> = Vec::new();
        let mut made = 0;
        for round in 0..6 {
            let refused = loop {
                let key = format!("k{round}-{made}");
                match call(&mut c, &[b"CF.ADD", key.as_bytes(), b"item"]) {
                    Ok(_) => {
                        live.push(key);
                        made += 1;
                    }
                    Err(e) => break e,
                }
                assert!(made < 100_000, "{engine:?}: never refused");
            };
            assert_eq!(refused.code(), Some("OOM"), "{engine:?}: {refused}");
            let used = used_memory(&mut c);
            assert!(used <= MAX, "{engine:?}: round {round}: used_memory {used} over {MAX}");
            let counted: usize =
                info_field(&mut c, "cuckoo", "cuckoo_filters").unwrap().parse().unwrap();
            assert_eq!(counted, live.len(), "{engine:?}: round {round}");
            // Half the keys go; the next round fills their room again.
            let gone: Vec<String> = live.iter().step_by(2).cloned().collect();
            for key in &gone {
                assert_eq!(run(&mut c, &format!("DEL {key}")), Value::Int(1));
            }
            live.retain(|key| !gone.contains(key));
        }
        assert!(made > 1000, "{engine:?}: {made} filters made");
    }
}

/// Items added `k` times (`k` up to 24) and deleted `k` times in a filter of three levels: the
/// first eight adds (four for an item of one bucket) are accepted and the rest refused, as a
/// fixed filter refuses them; the first deletes answer 1 and every later one 0; `CF.COUNT`
/// ends at 0 and "Number of items inserted" where it was; then a `CF.SCANDUMP`/`CF.LOADCHUNK`
/// copy holds every item.
#[test]
fn multisets_in_a_grown_filter_delete_exactly_and_dump_whole() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let Some(node) = Node::start(engine, dir.path(), &[]) else { continue };
        let mut c = node.client();
        run(&mut c, "CF.RESERVE f 100");
        let mut fillers = 0;
        while cf_info(&mut c, "f", "Number of filters") < 3 {
            assert!(insert_batch(&mut c, "f", fillers, 50), "{engine:?}: a filler refused");
            fillers += 50;
        }
        let inserted = cf_info(&mut c, "f", "Number of items inserted");
        for k in 1..=24usize {
            // An item that matches no filler (no false positive), so the counts are its own.
            let item = (0..)
                .map(|n| format!("dup{k}-{n}"))
                .find(|item| run(&mut c, &format!("CF.EXISTS f {item}")) == Value::Int(0))
                .unwrap();
            let add = [&b"CF.ADD"[..], b"f", item.as_bytes()];
            let replies: Vec<_> = (0..k).map(|_| call(&mut c, &add)).collect();
            // Eight copies fit, or four where the item's two buckets are one (its filter's key
            // is random); the refusals come after every accepted copy.
            let accepted = replies.iter().take_while(|reply| reply.is_ok()).count();
            let fit = k.min(4)..=k.min(8);
            assert!(fit.contains(&accepted), "{engine:?}: {k} adds: {replies:?}");
            for reply in &replies[accepted..] {
                let refused = reply.as_ref().unwrap_err().to_string().replacen(": ", " ", 1);
                assert_eq!(refused, "Filter is full", "{engine:?}");
            }
            for i in 0..k + 2 {
                let deleted = run(&mut c, &format!("CF.DEL f {item}"));
                let expected = Value::Int(i64::from(i < accepted));
                assert_eq!(deleted, expected, "{engine:?}: delete {i} of {k} copies");
            }
            assert_eq!(run(&mut c, &format!("CF.COUNT f {item}")), Value::Int(0), "{engine:?}");
            assert_eq!(cf_info(&mut c, "f", "Number of items inserted"), inserted, "{engine:?}");
        }
        let chunks = dump(&mut c, "f");
        load(&mut c, "copy", &chunks);
        assert_eq!(cf_info(&mut c, "copy", "Number of items inserted"), inserted, "{engine:?}");
        for from in (0..fillers).step_by(500) {
            let items: Vec<String> =
                (from..fillers.min(from + 500)).map(|i| format!("item{i}")).collect();
            let Value::Array(found) = run(&mut c, &format!("CF.MEXISTS copy {}", items.join(" ")))
            else {
                panic!("CF.MEXISTS")
            };
            assert!(found.iter().all(|f| *f == Value::Int(1)), "{engine:?}: the copy lost an item");
        }
    }
}
