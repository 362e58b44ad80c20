//! The properties the fuzz targets check, shared with the deterministic tests that run the same
//! properties on random inputs from fixed seeds on stable (`tests/seeded.rs`,
//! `cargo test --manifest-path fuzz/Cargo.toml`).

use std::collections::HashMap;
use std::time::Duration;

use arbitrary::Arbitrary;
use lockfree_cuckoo::{
    encoding_of_snapshot, CuckooFilter, Encoding, InsertError, Layout, LoadError, Plain,
    SemiSorted, WindowedFilter,
};

/// Loading arbitrary bytes yields a filter or a `LoadError`, never a panic, through both entry
/// points and in every layout, windowed included; at most one layout loads them, the one
/// `encoding_of_snapshot` names; a filter that loads saves back to the same bytes (a windowed
/// one but for the time into its epoch, which runs on from the saved one).
pub fn load(data: &[u8]) {
    let plain = load_as::<Plain>(data);
    let semi_sorted = load_as::<SemiSorted>(data);
    let windowed = load_windowed(data);
    let loaded = [plain, semi_sorted, windowed];
    assert!(loaded.iter().filter(|&&l| l).count() <= 1, "two layouts loaded one snapshot");
    if let Some(at) = loaded.iter().position(|&l| l) {
        let named = encoding_of_snapshot(data).expect("a loaded snapshot names its layout");
        assert_eq!(named, [Encoding::Plain, Encoding::SemiSorted, Encoding::Windowed][at]);
    }
}

/// `load` and `read_from` of the same bytes agree, but for bytes after one whole snapshot,
/// which `read_from` leaves unread (snapshots may be concatenated) and `load` refuses.
fn agree<T: std::fmt::Debug>(loaded: &Result<T, LoadError>, streamed: &Result<T, LoadError>) {
    match (loaded, streamed) {
        (Ok(_), Ok(_)) | (Err(_), Err(_)) | (Err(LoadError::TrailingBytes { .. }), Ok(_)) => {}
        _ => panic!("load and read_from disagree: {loaded:?}, {streamed:?}"),
    }
}

/// Where a windowed snapshot keeps the time into its epoch (`FORMAT.md`, "The window block").
const INTO_EPOCH: std::ops::Range<usize> = 88..96;

/// [`load`] as a windowed filter: whether the bytes loaded.
fn load_windowed(data: &[u8]) -> bool {
    let builder = || CuckooFilter::builder().expire_after(Duration::from_secs(1));
    let loaded = builder().load(data);
    let streamed = builder().read_from(data);
    agree(&loaded, &streamed);
    let Ok(filter) = &loaded else { return false };
    assert_eq!(filter.len(), streamed.unwrap().len());
    // A live snapshot may hold lanes dead at its epoch, which the loaded filter's sweep empties
    // before it saves: its own snapshot then loads and saves back unchanged.
    let saved = filter.to_bytes();
    assert_eq!(saved.len(), data.len());
    assert!(filter.len() <= data.len());
    let again = WindowedFilter::from_bytes(&saved).expect("a loaded filter's snapshot loads");
    let resaved = again.to_bytes();
    let checksum = saved.len() - 8;
    assert_eq!(resaved[..INTO_EPOCH.start], saved[..INTO_EPOCH.start], "header or window");
    assert_eq!(resaved[INTO_EPOCH.end..checksum], saved[INTO_EPOCH.end..checksum], "words");
    true
}

/// [`load`] in layout `L`: whether the bytes loaded.
fn load_as<L: Layout>(data: &[u8]) -> bool {
    let builder = || CuckooFilter::builder().layout::<L>();
    let loaded = builder().load(data);
    let streamed = builder().read_from(data);
    agree(&loaded, &streamed);
    if let Ok(filter) = &loaded {
        assert_eq!(filter.to_bytes(), data, "a loaded filter saves back differently");
        assert_eq!(filter.len(), streamed.unwrap().len());
    }
    loaded.is_ok()
}

/// One step of a single-threaded session. Keys are small so that sequences revisit them.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Op {
    Insert(u8),
    Remove(u8),
    Contains(u8),
    Count(u8),
    /// Save with `to_bytes` and continue with the loaded copy.
    Reload,
    /// Continue with a `clone`.
    Clone,
}

/// A session of operations on a filter of `capacity` (1 to 256), checked against a multiset:
/// no false negative, `count` never below the multiset's, `len` exact after every step, and a
/// refused insert changes nothing. Removes are only of keys the multiset holds, as the filter's
/// contract asks (removing an absent key may remove a colliding one). An odd `capacity` makes
/// the filter growable (from `capacity / 8` items), which refuses a key only where its copies
/// are or when its newest level, not yet full, is crowded.
pub fn differential(capacity: u8, ops: &[Op]) {
    let growable = capacity % 2 == 1;
    let mut filter = if growable {
        CuckooFilter::builder().capacity(usize::from(capacity / 8)).growable().build()
    } else {
        CuckooFilter::with_capacity(usize::from(capacity) + 1)
    };
    let mut model: HashMap<u8, usize> = HashMap::new();
    for &op in ops {
        let crowded_before = filter.stats().crowded_refusals;
        match op {
            Op::Insert(key) => match filter.insert(&key) {
                Ok(()) => *model.entry(key).or_default() += 1,
                Err(InsertError::Full) => {
                    // A growable filter refuses a key only where a fixed filter would: in the
                    // level that holds the key's copies (copies never go to another level), or,
                    // for a key with none, in a newest level that is not yet full but has no
                    // lane in reach (a crowded refusal, which copies of a few keys cause as
                    // aimed items do).
                    let copies = filter.count(&key);
                    let crowded = filter.stats().crowded_refusals > crowded_before;
                    assert!(
                        !growable || copies > 0 || crowded,
                        "refused {key} with no copies, not crowded"
                    );
                }
                Err(err) => panic!("unexpected insert error {err}"),
            },
            Op::Remove(key) => {
                if let Some(copies) = model.get_mut(&key).filter(|c| **c > 0) {
                    assert!(filter.remove(&key), "remove of held key {key} found nothing");
                    *copies -= 1;
                }
            }
            Op::Contains(key) => {
                if model.get(&key).is_some_and(|&c| c > 0) {
                    assert!(filter.contains(&key), "false negative for key {key}");
                }
            }
            Op::Count(key) => {
                let held = model.get(&key).copied().unwrap_or(0);
                assert!(filter.count(&key) >= held, "count of key {key} below {held}");
            }
            Op::Reload => {
                let bytes = filter.to_bytes();
                filter = CuckooFilter::from_bytes(&bytes).expect("a saved filter loads");
            }
            Op::Clone => filter = filter.clone(),
        }
        assert_eq!(filter.len(), model.values().sum::<usize>(), "len after {op:?}");
    }
    for (key, &copies) in &model {
        assert!(filter.count(key) >= copies, "final count of key {key} below {copies}");
    }
}

/// Arbitrary requests (each a list of arguments, the command name first) through the server's
/// session, which runs the `CF.*` commands of `lockfree-cuckoo-commands` and its own: never a
/// panic, and every reply one whole RESP frame in the protocol the session speaks. Command
/// names are drawn from the known ones by the first argument's first byte, so that sequences
/// reach the commands' options rather than only "unknown command".
pub fn commands(requests: &[Vec<Vec<u8>>]) {
    use lockfree_cuckoo_server::commands::{
        exec_next, execute, Next, Session, Shared, SERVER_COMMANDS,
    };
    use lockfree_cuckoo_server::store::Store;

    let names: Vec<&str> = lockfree_cuckoo_commands::COMMANDS
        .iter()
        .map(|spec| spec.name)
        .chain(SERVER_COMMANDS.iter().map(|command| command.name))
        .filter(|&name| name != "save" && name != "shutdown")
        .collect();
    let shared = Shared {
        // Small enough that no request allocates much.
        store: Store::new(1 << 22, 64),
        password: None,
        clients: std::sync::atomic::AtomicUsize::new(0),
        client_buffers: std::sync::atomic::AtomicUsize::new(0),
        started: std::time::Instant::now(),
    };
    let mut session = Session::new(1, &shared);
    for request in requests.iter().take(64) {
        let Some((first, rest)) = request.split_first() else { continue };
        let name = first
            .first()
            .map_or(first.as_slice(), |&b| names[usize::from(b) % names.len()].as_bytes());
        let mut args: Vec<&[u8]> = vec![name];
        args.extend(rest.iter().take(16).map(Vec::as_slice));
        let mut out = Vec::new();
        // An EXEC's replies follow its header, as the connection sends them.
        if execute(&shared, &mut session, &args[..], &mut out) == Next::Exec {
            while exec_next(&shared, &mut session, &mut out) {}
        }
        if !out.is_empty() {
            assert_eq!(frame_len(&out), Some(out.len()), "not one RESP frame: {out:?}");
        }
    }
}

/// The length of the RESP2 or RESP3 frame at the start of `buf`, if it is one whole frame.
pub fn frame_len(buf: &[u8]) -> Option<usize> {
    let line_end = buf.windows(2).position(|w| w == b"\r\n")?;
    let line = &buf[1..line_end];
    if line.contains(&b'\r') || line.contains(&b'\n') {
        return None;
    }
    let after = line_end + 2;
    let number = || std::str::from_utf8(line).ok()?.parse::<i64>().ok();
    match buf.first()? {
        b'+' | b'-' => Some(after),
        b':' => number().map(|_| after),
        b'#' => matches!(line, b"t" | b"f").then_some(after),
        b'_' => line.is_empty().then_some(after),
        b'$' => match number()? {
            -1 => Some(after),
            len if len >= 0 => {
                let end = after + len as usize;
                (buf.get(end..end + 2)? == b"\r\n").then_some(end + 2)
            }
            _ => None,
        },
        kind @ (b'*' | b'%') => {
            let count = usize::try_from(number()?).ok()? * if *kind == b'%' { 2 } else { 1 };
            let mut at = after;
            for _ in 0..count {
                at += frame_len(&buf[at..])?;
            }
            Some(at)
        }
        _ => None,
    }
}

/// The server's request parser on arbitrary input: never a panic, and the same requests (or
/// the same error) whether the bytes arrive whole or in two pieces split at any point.
pub fn resp(data: &[u8]) {
    let Some((&split, data)) = data.split_first() else { return };
    let whole = requests(data, data.len());
    let split = usize::from(split) * data.len() / 255;
    assert_eq!(requests(data, split), whole, "split at {split}");
}

/// The requests in `data`, as the server reads them when the first `first` bytes arrive
/// before the rest: the arguments of each, then the error that stopped it, if any.
fn requests(data: &[u8], first: usize) -> (Vec<Vec<Vec<u8>>>, Option<String>) {
    use lockfree_cuckoo_server::resp::{Parsed, Parser};

    // An argument limit under the request's, so that inputs reach both refusals.
    let mut parser = Parser::new(1 << 16, 1 << 12);
    let mut found = Vec::new();
    let mut at = 0;
    let mut available = first.min(data.len());
    loop {
        match parser.parse(&data[at..available]) {
            Ok(Parsed::Request(n)) => {
                let args = parser.args(&data[at..available]);
                found.push(args.iter_from(0).map(<[u8]>::to_vec).collect());
                at += n;
            }
            Ok(Parsed::Nothing(n)) => at += n,
            Ok(Parsed::Incomplete) if available < data.len() => available = data.len(),
            Ok(Parsed::Incomplete) => return (found, None),
            Err(e) => return (found, Some(e.to_string())),
        }
    }
}
