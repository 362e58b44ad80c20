//! Every `CF.*` command through the parser and a plain map keyspace, in both protocols:
//! RedisBloom's replies, ranges and error texts.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use lockfree_cuckoo::Encoding;
use lockfree_cuckoo_commands::{
    parse, Entry, KeyError, Keyspace, Loaded, Protocol, Reply, Settings, Transfers, COMMANDS,
};

/// One database as a map; `CF.*` keys only, but `other` holds a key of another type.
struct Map {
    keys: RefCell<HashMap<Vec<u8>, Entry>>,
    transfers: Transfers,
    /// Whether the commands come from a primary (`CF.TICK` is then taken).
    replica: Cell<bool>,
}

impl Map {
    fn new() -> Self {
        Self {
            keys: RefCell::default(),
            transfers: Transfers::new(1 << 30, true),
            replica: Cell::new(false),
        }
    }
}

impl Keyspace for Map {
    fn read<R>(&self, key: &[u8], f: impl FnOnce(Option<&Entry>) -> R) -> Result<R, KeyError> {
        if key == b"other" {
            return Err(KeyError::WrongType);
        }
        Ok(f(self.keys.borrow().get(key)))
    }

    fn read_or_create<R>(
        &self,
        key: &[u8],
        settings: &Settings,
        f: impl FnOnce(&Entry) -> R,
    ) -> Result<R, KeyError> {
        if !self.keys.borrow().contains_key(key) {
            self.create(key, settings)?;
        }
        self.read(key, |e| f(e.unwrap()))
    }

    fn create(&self, key: &[u8], settings: &Settings) -> Result<(), KeyError> {
        let entry = Entry::new(*settings, 1 << 30, true).map_err(|_| KeyError::OutOfMemory)?;
        self.adopt(key, entry)
    }

    fn adopt(&self, key: &[u8], entry: Entry) -> Result<(), KeyError> {
        if key == b"other" {
            return Err(KeyError::WrongType);
        }
        let mut keys = self.keys.borrow_mut();
        if keys.contains_key(key) {
            return Err(KeyError::Exists);
        }
        keys.insert(key.to_vec(), entry);
        Ok(())
    }

    fn transfers(&self) -> &Transfers {
        &self.transfers
    }

    fn follows_primary(&self) -> bool {
        self.replica.get()
    }
}

fn run_in(map: &Map, protocol: Protocol, words: &[&[u8]]) -> Reply {
    match parse(words).expect("a CF command") {
        Ok(command) => command.run(map, protocol),
        Err(reply) => reply,
    }
}

fn text(map: &Map, protocol: Protocol, line: &str) -> String {
    let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    let mut out = Vec::new();
    run_in(map, protocol, &words).write(protocol, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn resp2(map: &Map, line: &str) -> String {
    text(map, Protocol::Resp2, line)
}

fn resp3(map: &Map, line: &str) -> String {
    text(map, Protocol::Resp3, line)
}

#[test]
fn reserve_checks_redisbloom_ranges_in_its_order() {
    let m = Map::new();
    let cases = [
        ("CF.RESERVE f", "-ERR wrong number of arguments for 'cf.reserve' command\r\n"),
        (
            "CF.RESERVE f 100 BUCKETSIZE",
            "-ERR wrong number of arguments for 'cf.reserve' command\r\n",
        ),
        ("CF.RESERVE f x", "-Bad capacity\r\n"),
        (
            "CF.RESERVE f 100 MAXITERATIONS 65536",
            "-MAXITERATIONS: value must be in the range [1, 65535]\r\n",
        ),
        (
            "CF.RESERVE f 100 MAXITERATIONS 0",
            "-MAXITERATIONS: value must be in the range [1, 65535]\r\n",
        ),
        ("CF.RESERVE f 100 MAXITERATIONS x", "-Couldn't parse MAXITERATIONS\r\n"),
        ("CF.RESERVE f 100 BUCKETSIZE 256", "-BUCKETSIZE: value must be in the range [1, 255]\r\n"),
        (
            "CF.RESERVE f 100 EXPANSION 32769",
            "-EXPANSION: value must be in the range [0, 32768]\r\n",
        ),
        ("CF.RESERVE f 100 EXPANSION -1", "-EXPANSION: value must be in the range [0, 32768]\r\n"),
        ("CF.RESERVE f 3", "-Capacity must be in the range [2 * BUCKETSIZE, 1073741824]\r\n"),
        (
            "CF.RESERVE f 1073741825",
            "-Capacity must be in the range [2 * BUCKETSIZE, 1073741824]\r\n",
        ),
        (
            "CF.RESERVE f 100 BUCKETSIZE 60",
            "-Capacity must be in the range [2 * BUCKETSIZE, 1073741824]\r\n",
        ),
        // RedisBloom checks MAXITERATIONS first, wherever it stands.
        (
            "CF.RESERVE f 100 BUCKETSIZE 0 MAXITERATIONS 0",
            "-MAXITERATIONS: value must be in the range [1, 65535]\r\n",
        ),
    ];
    for (line, want) in cases {
        assert_eq!(resp2(&m, line), want, "{line}");
    }
    assert!(m.keys.borrow().is_empty(), "a refused CF.RESERVE created its key");
    assert_eq!(
        resp2(&m, "CF.RESERVE f 100 BUCKETSIZE 8 MAXITERATIONS 65535 EXPANSION 32768"),
        "+OK\r\n"
    );
    assert_eq!(resp2(&m, "CF.RESERVE f 100"), "-ERR item exists\r\n");
    assert_eq!(
        resp2(&m, "CF.RESERVE other 100"),
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
    let info = resp2(&m, "CF.INFO f");
    assert!(info.contains("+Expansion rate\r\n:32768\r\n+Max iterations\r\n:65535\r\n"), "{info}");
}

#[test]
fn add_exists_count_del_in_both_protocols() {
    let m = Map::new();
    assert_eq!(resp2(&m, "CF.ADD f a"), ":1\r\n");
    assert_eq!(resp3(&m, "CF.ADD f a"), "#t\r\n");
    assert_eq!(resp2(&m, "CF.ADDNX f a"), ":0\r\n");
    assert_eq!(resp3(&m, "CF.ADDNX f b"), "#t\r\n");
    assert_eq!(resp3(&m, "CF.ADDNX f b"), "#f\r\n");
    assert_eq!(resp2(&m, "CF.EXISTS f a"), ":1\r\n");
    assert_eq!(resp3(&m, "CF.EXISTS f zz"), "#f\r\n");
    assert_eq!(resp2(&m, "CF.EXISTS missing a"), ":0\r\n");
    assert_eq!(
        resp2(&m, "CF.EXISTS other a"),
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
    assert_eq!(resp2(&m, "CF.MEXISTS f a zz b"), "*3\r\n:1\r\n:0\r\n:1\r\n");
    assert_eq!(resp3(&m, "CF.MEXISTS missing a"), "*1\r\n#f\r\n");
    assert_eq!(resp2(&m, "CF.COUNT f a"), ":2\r\n");
    assert_eq!(resp3(&m, "CF.COUNT f a"), ":2\r\n");
    assert_eq!(resp2(&m, "CF.COUNT missing a"), ":0\r\n");
    assert_eq!(resp2(&m, "CF.DEL f a"), ":1\r\n");
    assert_eq!(resp3(&m, "CF.DEL f a"), "#t\r\n");
    assert_eq!(resp3(&m, "CF.DEL f a"), "#f\r\n");
    assert_eq!(resp2(&m, "CF.DEL missing a"), "-Not found\r\n");
    assert_eq!(resp2(&m, "CF.ADD f"), "-ERR wrong number of arguments for 'cf.add' command\r\n");
    assert_eq!(
        resp2(&m, "CF.EXISTS f a b"),
        "-ERR wrong number of arguments for 'cf.exists' command\r\n"
    );
    let info = resp2(&m, "CF.INFO f");
    assert!(
        info.contains("+Number of items inserted\r\n:1\r\n+Number of items deleted\r\n:2\r\n"),
        "{info}"
    );
}

#[test]
fn insert_and_insertnx_as_the_client_tests_use_them() {
    let m = Map::new();
    assert_eq!(resp2(&m, "CF.INSERT captest ITEMS foo"), "*1\r\n:1\r\n");
    assert_eq!(resp3(&m, "CF.INSERT captest CAPACITY 1000 ITEMS foo"), "*1\r\n#t\r\n");
    assert_eq!(resp3(&m, "CF.INSERTNX captest NOCREATE ITEMS food"), "*1\r\n:1\r\n");
    assert_eq!(resp2(&m, "CF.INSERTNX captest items foo bar baz"), "*3\r\n:0\r\n:1\r\n:1\r\n");
    assert_eq!(resp2(&m, "CF.INSERT nope NOCREATE ITEMS a"), "-ERR not found\r\n");
    assert!(!m.keys.borrow().contains_key(&b"nope"[..]));
    let cases = [
        ("CF.INSERT f ITEMS", "-ERR wrong number of arguments for 'cf.insert' command\r\n"),
        ("CF.INSERT f CAPACITY", "-ERR wrong number of arguments for 'cf.insert' command\r\n"),
        (
            "CF.INSERT f CAPACITY 100 NOCREATE",
            "-ERR wrong number of arguments for 'cf.insert' command\r\n",
        ),
        ("CF.INSERTNX f CAPACITY x ITEMS a", "-Bad capacity\r\n"),
        (
            "CF.INSERT f CAPACITY 3 ITEMS a",
            "-Capacity must be in the range [cf-bucket-size * 2, 1073741824]\r\n",
        ),
        ("CF.INSERT f BOGUS ITEMS a", "-Unknown argument received\r\n"),
    ];
    for (line, want) in cases {
        assert_eq!(resp2(&m, line), want, "{line}");
    }
    // A fixed filter that fills answers -1 (RESP2) or false (RESP3) for the items it refused.
    assert_eq!(resp2(&m, "CF.RESERVE small 4 EXPANSION 0"), "+OK\r\n");
    let many: Vec<String> = (0..200).map(|i| format!("item{i}")).collect();
    let line = format!("CF.INSERT small ITEMS {}", many.join(" "));
    let two = resp2(&m, &line);
    assert!(two.contains(":-1\r\n"), "{two}");
    assert!(resp3(&m, &line).contains("#f\r\n"));
    assert!(resp2(&m, &line.replace("INSERT", "INSERTNX")).contains(":-1\r\n"));
    assert_eq!(resp2(&m, "CF.ADD small another-one"), "-Filter is full\r\n");
    // A growable one (the default EXPANSION 1) does not.
    assert_eq!(resp2(&m, "CF.RESERVE grows 4"), "+OK\r\n");
    let grown = resp2(&m, &line.replace("small", "grows"));
    assert!(!grown.contains(":-1\r\n"), "{grown}");
    let info = resp3(&m, "CF.INFO grows");
    assert!(info.starts_with("%8\r\n+Size\r\n"), "{info}");
    assert!(!info.contains("+Number of filters\r\n:1\r\n"), "never grew: {info}");
}

#[test]
fn info_and_compact() {
    let m = Map::new();
    assert_eq!(resp2(&m, "CF.INFO f"), "-ERR not found\r\n");
    assert_eq!(resp2(&m, "CF.COMPACT f"), "-Cuckoo filter was not found\r\n");
    resp2(&m, "CF.RESERVE f 1000");
    assert_eq!(resp2(&m, "CF.COMPACT f"), "+OK\r\n");
    let info = resp2(&m, "CF.INFO f");
    let names = [
        "Size",
        "Number of buckets",
        "Number of filters",
        "Number of items inserted",
        "Number of items deleted",
        "Bucket size",
        "Expansion rate",
        "Max iterations",
    ];
    assert!(info.starts_with("*16\r\n"), "{info}");
    for name in names {
        assert!(info.contains(&format!("+{name}\r\n:")), "{name}: {info}");
    }
    assert!(
        info.contains("+Bucket size\r\n:4\r\n+Expansion rate\r\n:1\r\n+Max iterations\r\n:20\r\n")
    );
}

/// `CF.DEBUG`: RedisBloom's line, with this filter's numbers (those of `CF.INFO`).
#[test]
fn debug_is_redisblooms_line() {
    let m = Map::new();
    assert_eq!(resp2(&m, "CF.DEBUG f"), "-ERR not found\r\n");
    assert!(resp2(&m, "CF.DEBUG").starts_with("-ERR wrong number of arguments"));
    resp2(&m, "CF.RESERVE f 1000 MAXITERATIONS 10 EXPANSION 2");
    resp2(&m, "CF.INSERT f ITEMS a b c");
    resp2(&m, "CF.DEL f b");
    let buckets = resp2(&m, "CF.INFO f")
        .split("+Number of buckets\r\n:")
        .nth(1)
        .and_then(|rest| rest.split("\r\n").next())
        .unwrap()
        .to_owned();
    let line = format!(
        "bktsize:4 buckets:{buckets} items:2 deletes:1 filters:1 max_iterations:10 expansion:2"
    );
    assert_eq!(resp2(&m, "CF.DEBUG f"), format!("${}\r\n{line}\r\n", line.len()));
    assert_eq!(resp3(&m, "CF.DEBUG f"), format!("${}\r\n{line}\r\n", line.len()));
}

/// SCANDUMP's chunks, LOADCHUNK'ed in order into another key, give the same filter.
fn copy_by_chunks(m: &Map, from: &str, to: &str) -> Vec<(i64, Vec<u8>)> {
    let mut chunks = Vec::new();
    let mut cursor = 0;
    loop {
        let reply = run_in(
            m,
            Protocol::Resp2,
            &[b"CF.SCANDUMP", from.as_bytes(), cursor.to_string().as_bytes()],
        );
        let Reply::Array(parts) = reply else { panic!("{reply:?}") };
        let Reply::Int(next) = parts[0] else { panic!("{parts:?}") };
        if next == 0 {
            assert_eq!(parts[1], Reply::Null);
            return chunks;
        }
        let Reply::Bulk(data) = &parts[1] else { panic!("{parts:?}") };
        let loaded = run_in(
            m,
            Protocol::Resp2,
            &[b"CF.LOADCHUNK", to.as_bytes(), next.to_string().as_bytes(), data],
        );
        assert_eq!(loaded, Reply::Ok);
        chunks.push((next, data.clone()));
        cursor = next;
    }
}

#[test]
fn scandump_and_loadchunk_round_trip() {
    let m = Map::new();
    for (name, reserve) in
        [("fixed", "CF.RESERVE fixed 1000 EXPANSION 0"), ("grown", "CF.RESERVE grown 100")]
    {
        assert_eq!(resp2(&m, reserve), "+OK\r\n");
        for i in 0..900 {
            assert_eq!(resp2(&m, &format!("CF.ADD {name} item{i}")), ":1\r\n");
        }
        let copy = format!("{name}-copy");
        assert!(!copy_by_chunks(&m, name, &copy).is_empty());
        for i in 0..900 {
            assert_eq!(resp2(&m, &format!("CF.EXISTS {copy} item{i}")), ":1\r\n", "{copy} item{i}");
        }
        let keys = m.keys.borrow();
        assert_eq!(
            keys[copy.as_bytes()].filter.to_bytes(),
            keys[name.as_bytes()].filter.to_bytes()
        );
    }
    // A filter holding no item answers RedisBloom's end of the dump at once, so a copy by
    // chunks makes no key; one whose items were all removed too.
    resp2(&m, "CF.RESERVE empty 100");
    assert_eq!(resp2(&m, "CF.SCANDUMP empty 0"), "*2\r\n:0\r\n$-1\r\n");
    assert_eq!(resp3(&m, "CF.SCANDUMP empty 0"), "*2\r\n:0\r\n_\r\n");
    assert!(copy_by_chunks(&m, "empty", "empty-copy").is_empty());
    assert_eq!(resp2(&m, "CF.INFO empty-copy"), "-ERR not found\r\n");
    resp2(&m, "CF.ADD emptied a");
    assert!(resp2(&m, "CF.SCANDUMP emptied 0").starts_with("*2\r\n:"));
    assert_ne!(resp2(&m, "CF.SCANDUMP emptied 0"), "*2\r\n:0\r\n$-1\r\n");
    resp2(&m, "CF.DEL emptied a");
    assert_eq!(resp2(&m, "CF.SCANDUMP emptied 0"), "*2\r\n:0\r\n$-1\r\n");
    assert_eq!(resp2(&m, "CF.SCANDUMP nope 0"), "-ERR not found\r\n");
    assert_eq!(resp2(&m, "CF.SCANDUMP fixed -1"), "-Invalid position\r\n");
    assert_eq!(resp2(&m, "CF.LOADCHUNK x 0 abc"), "-Invalid position\r\n");
}

#[test]
fn loadchunk_refuses_bad_chunks_and_leaves_the_key_as_it_was() {
    let m = Map::new();
    resp2(&m, "CF.RESERVE src 5000");
    for i in 0..3000 {
        resp2(&m, &format!("CF.ADD src k{i}"));
    }
    let whole = m.keys.borrow()[&b"src"[..]].filter.to_bytes();
    let load = |key: &str, start: usize, data: &[u8]| {
        let cursor = (start + data.len() + 1).to_string();
        run_in(&m, Protocol::Resp2, &[b"CF.LOADCHUNK", key.as_bytes(), cursor.as_bytes(), data])
    };
    // RedisBloom's texts, which its tests compare whole.
    let load_failed = Reply::error("Couldn't load chunk!");
    // Out of order: the second half first is refused, and nothing is created.
    let half = whole.len() / 2;
    assert_eq!(load("dst", half, &whole[half..]), load_failed);
    assert!(!m.keys.borrow().contains_key(&b"dst"[..]));
    // In order, but with a flipped bit: the checksum refuses it, and the key never appears.
    let mut bad = whole.clone();
    bad[half + 3] ^= 1;
    assert_eq!(load("dst", 0, &bad[..half]), Reply::Ok);
    assert_eq!(load("dst", half, &bad[half..]), load_failed);
    assert!(!m.keys.borrow().contains_key(&b"dst"[..]));
    // A repeated chunk is out of order too, and the transfer goes on after it.
    assert_eq!(load("dst", 0, &whole[..half]), Reply::Ok);
    assert_eq!(load("dst", 1, &whole[1..half]), load_failed);
    assert_eq!(load("dst", half, &whole[half..]), Reply::Ok);
    assert_eq!(resp2(&m, "CF.EXISTS dst k7"), ":1\r\n");
    // A whole snapshot onto an existing key is refused, as RedisBloom refuses its header.
    assert_eq!(load("dst", 0, &whole), Reply::error("ERR item exists"));
    // Garbage is refused at once; in a first chunk, as a filter that cannot be created.
    let create_failed = Reply::error("Couldn't create filter!");
    assert_eq!(load("junk", 0, b"not a snapshot at all"), create_failed);
    assert!(!m.keys.borrow().contains_key(&b"junk"[..]));
    // A first chunk whose header is damaged (RedisBloom's test zeroes its first 9 bytes).
    let mut header = whole.clone();
    header[..9].fill(0);
    assert_eq!(load("junk", 0, &header), create_failed);
    assert_eq!(load("junk", 0, &header[..half]), create_failed);
    // An empty chunk, and one that cannot end where its cursor says (RedisBloom's tests send
    // random bytes at random cursors and accept only this text).
    assert_eq!(run_in(&m, Protocol::Resp2, &[b"CF.LOADCHUNK", b"e", b"1", b""]), load_failed);
    assert_eq!(run_in(&m, Protocol::Resp2, &[b"CF.LOADCHUNK", b"dst", b"3", b"abcd"]), load_failed);
}

#[test]
fn every_listed_command_parses_and_only_those() {
    for spec in COMMANDS {
        let upper = spec.name.to_ascii_uppercase();
        let words: Vec<&[u8]> = vec![upper.as_bytes(); spec.arity.unsigned_abs() as usize];
        assert!(parse(&words[..]).is_some(), "{}", spec.name);
    }
    assert!(parse(&[&b"PING"[..]][..]).is_none());
    assert!(parse(&[&b"CF.NOPE"[..], b"f"][..]).is_none());
}

#[test]
fn small_chunks_in_order_make_the_filter() {
    let m = Map::new();
    resp2(&m, "CF.RESERVE src 20000");
    for i in 0..15000 {
        resp2(&m, &format!("CF.ADD src k{i}"));
    }
    let keys = m.keys.borrow();
    let filter = &keys[&b"src"[..]].filter;
    let loads = Transfers::new(1 << 20, true);
    let dumps = Transfers::new(0, true);
    let (mut cursor, mut chunks) = (0, 0);
    let loaded = loop {
        let reply = dumps.dump_chunk(b"src", filter, cursor, 1000).unwrap();
        let Reply::Array(parts) = reply else { panic!() };
        let (Reply::Int(next), Reply::Bulk(data)) = (&parts[0], &parts[1]) else { panic!() };
        assert!(data.len() <= 1000);
        chunks += 1;
        let start = *next as u64 - 1 - data.len() as u64;
        cursor = *next as u64;
        match loads.add(b"dst", start, data).unwrap() {
            Loaded::Partial => {}
            Loaded::Whole(filter) => break filter,
        }
    };
    assert!(chunks > 30, "{chunks}");
    assert_eq!(loaded.to_bytes(), filter.to_bytes());
    // The last cursor ends the dump; a cursor that continues no dump is an error.
    let end = dumps.dump_chunk(b"src", filter, cursor, 1000);
    assert!(matches!(&end, Ok(Reply::Array(parts)) if parts[0] == Reply::Int(0)), "{end:?}");
    for (key, cursor) in [(&b"src"[..], 7), (b"other", 1001)] {
        assert!(dumps.dump_chunk(key, filter, cursor, 1000).is_err(), "{cursor}");
    }
    // Over the bound on held bytes, a transfer is refused.
    let small = Transfers::new(10_000, true);
    let first = &filter.to_bytes()[..1000];
    assert!(small.add(b"dst", 0, first).is_err());
}

#[test]
fn transfers_hold_what_arrived_not_what_headers_claim() {
    // A filter whose snapshot is about 600 KB; two transfers of it under a bound of 1 MB.
    let m = Map::new();
    resp2(&m, "CF.RESERVE big 250000 EXPANSION 0");
    let snapshot = m.keys.borrow()[&b"big"[..]].filter.to_bytes();
    assert!((500_000..1_000_000).contains(&snapshot.len()), "{}", snapshot.len());
    let loads = Transfers::new(1_000_000, true);
    // Both headers fit: neither reserves the length it claims.
    for key in [&b"a"[..], b"b"] {
        assert!(matches!(loads.add(key, 0, &snapshot[..4096]), Ok(Loaded::Partial)));
    }
    // Each completes: a finished transfer gives its bytes back.
    let rest = &snapshot[4096..];
    let whole = loads.add(b"a", 4096, rest).unwrap();
    assert!(matches!(whole, Loaded::Whole(_)));
    assert!(matches!(loads.add(b"b", 4096, rest), Ok(Loaded::Whole(_))));
    // An empty chunk, and a header for more than the bound, are refused at once.
    assert!(loads.add(b"c", 0, b"").is_err());
    let small = Transfers::new(100_000, true);
    assert!(small.add(b"d", 0, &snapshot[..4096]).is_err());
}

#[test]
fn reserve_seed_keys_the_filter() {
    let m = Map::new();
    for (line, want) in [
        ("CF.RESERVE f 100 SEED", "-ERR wrong number of arguments for 'cf.reserve' command\r\n"),
        ("CF.RESERVE f 100 SEED -1", "-Couldn't parse SEED\r\n"),
        ("CF.RESERVE f 100 SEED 18446744073709551616", "-Couldn't parse SEED\r\n"),
        ("CF.RESERVE f 100 SEED x", "-Couldn't parse SEED\r\n"),
        // RedisBloom's options are checked first.
        (
            "CF.RESERVE f 100 SEED x EXPANSION -1",
            "-EXPANSION: value must be in the range [0, 32768]\r\n",
        ),
    ] {
        assert_eq!(resp2(&m, line), want, "{line}");
    }
    assert!(m.keys.borrow().is_empty(), "a refused CF.RESERVE created its key");
    let seed = |m: &Map, key: &[u8]| Some(m.keys.borrow()[key].filter.hasher().seed());
    assert_eq!(resp2(&m, "CF.RESERVE a 1000 SEED 18446744073709551615"), "+OK\r\n");
    assert_eq!(resp2(&m, "CF.RESERVE b 1000 EXPANSION 0 seed 18446744073709551615"), "+OK\r\n");
    assert_eq!(seed(&m, b"a"), Some(u64::MAX));
    assert_eq!(seed(&m, b"b"), Some(u64::MAX));
    // Without SEED, and for the filters CF.ADD creates, a random key each.
    assert_eq!(resp2(&m, "CF.RESERVE c 1000"), "+OK\r\n");
    assert_eq!(resp2(&m, "CF.ADD d x"), ":1\r\n");
    assert_eq!(resp2(&m, "CF.RESERVE e 1000"), "+OK\r\n");
    let random = [seed(&m, b"c"), seed(&m, b"d"), seed(&m, b"e")];
    assert!(random.iter().all(|s| s.is_some() && *s != Some(u64::MAX)), "{random:?}");
    assert!(random[0] != random[1] && random[1] != random[2], "{random:?}");
    // One seed, one mapping: the same inserts make the same bytes.
    assert_eq!(resp2(&m, "CF.RESERVE a2 1000 SEED 18446744073709551615"), "+OK\r\n");
    for i in 0..500 {
        resp2(&m, &format!("CF.ADD a item{i}"));
        resp2(&m, &format!("CF.ADD a2 item{i}"));
    }
    let keys = m.keys.borrow();
    assert_eq!(keys[&b"a"[..]].filter.to_bytes(), keys[&b"a2"[..]].filter.to_bytes());
}

#[test]
fn reserve_encoding_builds_semi_sorted_filters_and_info_says_so() {
    let m = Map::new();
    for (line, want) in [
        (
            "CF.RESERVE f 100 ENCODING",
            "-ERR wrong number of arguments for 'cf.reserve' command\r\n",
        ),
        ("CF.RESERVE f 100 ENCODING sorted", "-Couldn't parse ENCODING\r\n"),
        ("CF.RESERVE f 100 ENCODING 17", "-Couldn't parse ENCODING\r\n"),
        // RedisBloom's options are checked first.
        (
            "CF.RESERVE f 100 ENCODING x BUCKETSIZE 0",
            "-BUCKETSIZE: value must be in the range [1, 255]\r\n",
        ),
    ] {
        assert_eq!(resp2(&m, line), want, "{line}");
    }
    assert!(m.keys.borrow().is_empty(), "a refused CF.RESERVE created its key");
    let encoding = |m: &Map, key: &[u8]| m.keys.borrow()[key].filter.encoding();
    assert_eq!(resp2(&m, "CF.RESERVE s 1000 ENCODING SEMISORTED"), "+OK\r\n");
    assert_eq!(resp2(&m, "CF.RESERVE t 1000 encoding semisorted EXPANSION 0"), "+OK\r\n");
    assert_eq!(resp2(&m, "CF.RESERVE p 1000 ENCODING PLAIN"), "+OK\r\n");
    assert_eq!(resp2(&m, "CF.ADD a x"), ":1\r\n");
    assert_eq!(encoding(&m, b"s"), Encoding::SemiSorted);
    assert_eq!(encoding(&m, b"t"), Encoding::SemiSorted);
    assert_eq!((encoding(&m, b"p"), encoding(&m, b"a")), (Encoding::Plain, Encoding::Plain));
    assert!(!m.keys.borrow()[&b"t"[..]].filter.is_growable());
    assert_eq!(m.keys.borrow()[&b"s"[..]].settings.encoding, Encoding::SemiSorted);

    for i in 0..100 {
        assert_eq!(resp2(&m, &format!("CF.ADD s item{i}")), ":1\r\n");
    }
    assert_eq!(resp2(&m, "CF.EXISTS s item7"), ":1\r\n");
    assert_eq!(resp2(&m, "CF.DEL s item7"), ":1\r\n");
    assert_eq!(resp2(&m, "CF.EXISTS s item7"), ":0\r\n");
    // CF.INFO: RedisBloom's eight fields, and a ninth for a semi-sorted filter.
    let info = resp3(&m, "CF.INFO s");
    assert!(info.starts_with("%9\r\n"), "{info}");
    assert!(info.ends_with("+Encoding\r\n$11\r\nsemi-sorted\r\n"), "{info}");
    assert!(resp2(&m, "CF.INFO s").starts_with("*18\r\n"));
    assert!(resp3(&m, "CF.INFO p").starts_with("%8\r\n"));
    assert!(!resp2(&m, "CF.INFO p").contains("Encoding"));
    // A dump loads back as a semi-sorted filter.
    let dumped = m.keys.borrow()[&b"s"[..]].filter.to_bytes();
    let builder = lockfree_cuckoo::CuckooFilter::builder();
    let loaded = lockfree_cuckoo_commands::Filter::load(builder, &dumped).unwrap();
    assert_eq!(Settings::of_loaded(&loaded).encoding, Encoding::SemiSorted);
    assert!(lockfree_cuckoo::CuckooFilter::from_bytes(&dumped).is_err(), "loaded as plain");
}

/// Every command's docs name its key first and agree with its arity: the words its required
/// arguments take (with their tokens) are the arity's minimum, and an arity that is exact
/// leaves no argument optional or repeated.
#[test]
fn every_command_has_docs_that_agree_with_its_arity() {
    use lockfree_cuckoo_commands::ArgKind;
    for spec in COMMANDS {
        let docs = spec.docs;
        assert!(!docs.summary.is_empty() && !docs.complexity.is_empty(), "{}", spec.name);
        assert_eq!(docs.args.first().map(|a| a.kind), Some(ArgKind::Key), "{}", spec.name);
        let words = |arg: &lockfree_cuckoo_commands::Arg| match arg.kind {
            ArgKind::PureToken => 1,
            _ => 1 + usize::from(arg.token.is_some()),
        };
        let required: usize = docs.args.iter().filter(|a| !a.optional).map(words).sum();
        assert_eq!(required + 1, spec.arity.unsigned_abs() as usize, "{}", spec.name);
        let open = docs.args.iter().any(|a| a.optional || a.multiple);
        assert_eq!(open, spec.arity < 0, "{}", spec.name);
    }
}

/// `CF.RESERVE ... EXPIRE seconds`: a fixed filter whose items expire, a set (`CF.COUNT` 0 or
/// 1), whose epochs only a primary's `CF.TICK` moves, and which a dump copies with its ages.
#[test]
fn reserve_expire_builds_a_filter_whose_items_expire() {
    let m = Map::new();
    let range = "-EXPIRE: value must be in the range [1, 4294967295]\r\n";
    for (line, want) in [
        ("CF.RESERVE w 100 EXPIRE", "-ERR wrong number of arguments for 'cf.reserve' command\r\n"),
        ("CF.RESERVE w 100 EXPIRE 0", range),
        ("CF.RESERVE w 100 EXPIRE 4294967296", range),
        ("CF.RESERVE w 100 EXPIRE soon", "-Couldn't parse EXPIRE\r\n"),
        (
            "CF.RESERVE w 100 EXPIRE 60 EXPANSION 2",
            "-EXPIRE: a filter whose items expire cannot grow (EXPANSION 0)\r\n",
        ),
        (
            "CF.RESERVE w 100 EXPIRE 60 ENCODING PLAIN",
            "-EXPIRE: a filter whose items expire has its own ENCODING\r\n",
        ),
    ] {
        assert_eq!(resp2(&m, line), want, "{line}");
    }
    assert!(m.keys.borrow().is_empty(), "a refused CF.RESERVE created its key");
    assert_eq!(resp2(&m, "CF.RESERVE w 1000 EXPIRE 60"), "+OK\r\n");
    assert_eq!(resp2(&m, "CF.RESERVE z 1000 expire 60 EXPANSION 0"), "+OK\r\n");
    assert_eq!(resp2(&m, "CF.RESERVE p 1000"), "+OK\r\n");
    {
        let keys = m.keys.borrow();
        let w = &keys[&b"w"[..]];
        assert_eq!(w.filter.encoding(), Encoding::Windowed);
        assert!(!w.filter.is_growable());
        assert_eq!((w.settings.expire, w.settings.expansion), (Some(60), 0));
        assert!(w.filter.capacity() >= 1000);
    }
    // A set: a second insert refreshes the item, a remove takes it.
    assert_eq!(resp2(&m, "CF.ADD w a"), ":1\r\n");
    assert_eq!(resp2(&m, "CF.ADD w a"), ":1\r\n");
    assert_eq!(resp2(&m, "CF.ADDNX w a"), ":0\r\n");
    assert_eq!(resp2(&m, "CF.COUNT w a"), ":1\r\n");
    assert_eq!(resp2(&m, "CF.COUNT w b"), ":0\r\n");
    assert_eq!(resp2(&m, "CF.MEXISTS w a b"), "*2\r\n:1\r\n:0\r\n");
    assert_eq!(resp2(&m, "CF.DEL w a"), ":1\r\n");
    assert_eq!(resp2(&m, "CF.EXISTS w a"), ":0\r\n");
    // CF.INFO: RedisBloom's eight fields, the encoding and the window.
    let info = resp3(&m, "CF.INFO w");
    assert!(info.starts_with("%10\r\n"), "{info}");
    assert!(info.ends_with("+Encoding\r\n$8\r\nwindowed\r\n+Expire after\r\n:60\r\n"), "{info}");
    assert!(resp2(&m, "CF.DEBUG w").ends_with(" expansion:0 expire:60\r\n"));

    // CF.TICK moves the epochs only from a primary's stream, one period at a time.
    let refused =
        "-ERR CF.TICK is for a primary's replicas: a filter's own host starts its epochs\r\n";
    assert_eq!(resp2(&m, "CF.TICK w 1"), refused);
    m.replica.set(true);
    assert_eq!(resp2(&m, "CF.TICK w 1"), "+OK\r\n");
    assert_eq!(resp2(&m, "CF.TICK w 5"), "-ERR the epoch is out of this filter's reach\r\n");
    assert_eq!(resp2(&m, "CF.TICK p 2"), "-ERR the filter's items do not expire\r\n");
    assert_eq!(resp2(&m, "CF.TICK nope 2"), "-ERR not found\r\n");
    assert_eq!(resp2(&m, "CF.TICK w -1"), "-ERR epoch must be an unsigned integer\r\n");
    // Inserted in epoch 1, "b" lives through epoch 3 and is gone when epoch 4 starts.
    assert_eq!(resp2(&m, "CF.ADD w b"), ":1\r\n");
    for epoch in 2..=3 {
        assert_eq!(resp2(&m, &format!("CF.TICK w {epoch}")), "+OK\r\n");
        assert_eq!(resp2(&m, "CF.EXISTS w b"), ":1\r\n", "epoch {epoch}");
    }
    assert_eq!(resp2(&m, "CF.ADD w c"), ":1\r\n");
    assert_eq!(resp2(&m, "CF.TICK w 4"), "+OK\r\n");
    assert_eq!(resp2(&m, "CF.EXISTS w b"), ":0\r\n");
    assert_eq!(resp2(&m, "CF.EXISTS w c"), ":1\r\n");

    // A dump copies the ages and the epoch: the copy's bytes are the filter's but for the time
    // into the epoch, and it reports the window.
    assert!(!copy_by_chunks(&m, "w", "w-copy").is_empty());
    let keys = m.keys.borrow();
    let (w, copy) = (&keys[&b"w"[..]], &keys[&b"w-copy"[..]]);
    assert!(w.filter.digest_bytes() == copy.filter.digest_bytes());
    assert_eq!((copy.settings.expire, copy.filter.encoding()), (Some(60), Encoding::Windowed));
    assert_eq!(copy.filter.follow(4), Some(true));
    assert!(copy.filter.contains(&b"c"[..]) && !copy.filter.contains(&b"b"[..]));
    let duplicate = w.duplicate();
    assert!(duplicate.filter.digest_bytes() == w.filter.digest_bytes());
}

#[test]
fn the_first_table_bound_holds_the_table_built() {
    // The hosts check this bound against their memory limits before they build, so it must hold
    // for every layout a CF.RESERVE can ask for, small and large.
    for capacity in [1, 1_000, 100_000, 1_000_000] {
        for (encoding, expire) in
            [(Encoding::Plain, None), (Encoding::SemiSorted, None), (Encoding::Plain, Some(60))]
        {
            let mut settings = Settings::with_capacity(capacity);
            settings.encoding = encoding;
            settings.expire = expire;
            if expire.is_some() {
                settings.expansion = 0;
            }
            let built = settings.build(usize::MAX, false).unwrap().memory_usage();
            let bound = settings.first_table_bound();
            assert!(
                built <= bound,
                "{capacity} items, {encoding:?}, expire {expire:?}: {built} bytes, bound {bound}"
            );
        }
    }
}
