//! The commands: RedisBloom's `CF.*` subset on the shared filters, the few generic commands
//! clients send (`PING`, `HELLO`, `CLIENT`, `COMMAND`, `CONFIG GET`, `SELECT`, `INFO`), and the
//! keyspace commands that make sense for a map of filters (`DEL`, `EXISTS`, `TYPE`, `DBSIZE`).
//!
//! Reply shapes and error texts follow RedisBloom's `rebloom.c` and Redis 7's where they
//! exist. Where this server differs, the difference is named at the command.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use lockfree_cuckoo::InsertError;

use crate::resp::{parse_i64, reply, Args};
use crate::store::{CreateError, Entry, Settings, Store};

/// RedisBloom's default `MAXITERATIONS`.
const DEFAULT_MAX_ITERATIONS: u64 = 20;
/// The buckets of this filter always hold four fingerprints.
const BUCKET_SIZE: i64 = 4;
const OOM_ERROR: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// Every command this server knows, for `COMMAND COUNT`.
const COMMANDS: &[&str] = &[
    "cf.reserve",
    "cf.add",
    "cf.addnx",
    "cf.exists",
    "cf.mexists",
    "cf.del",
    "cf.count",
    "cf.info",
    "ping",
    "echo",
    "del",
    "exists",
    "type",
    "dbsize",
    "save",
    "shutdown",
    "quit",
    "select",
    "hello",
    "client",
    "command",
    "config",
    "info",
];

/// State every connection shares.
#[derive(Debug)]
pub struct Shared {
    /// The named filters.
    pub store: Store,
    /// Capacity of a filter that `CF.ADD` or `CF.ADDNX` creates implicitly.
    pub default_capacity: u64,
    /// Connections open now (for `INFO`; the accept loop also bounds it).
    pub clients: AtomicUsize,
    /// When the server started.
    pub started: Instant,
}

/// What the connection does after a command's reply is queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Read the next command.
    Continue,
    /// `SAVE`: write the save file, then reply (the connection does it, off the runtime's
    /// worker threads).
    Save,
    /// `QUIT`: send the replies so far and close.
    Quit,
    /// `SHUTDOWN`: save unless told not to, then end the process (if the save fails, the
    /// error is the reply and the server goes on, as Redis does).
    Shutdown {
        /// Whether to save first (`NOSAVE` says no).
        save: bool,
    },
}

/// Runs one command, appending its reply to `out`.
pub fn execute(shared: &Shared, client_id: u64, args: Args<'_>, out: &mut Vec<u8>) -> Next {
    let mut name = [0u8; 16];
    let raw = args.get(0);
    let lower = if raw.len() <= name.len() {
        name[..raw.len()].copy_from_slice(raw);
        name[..raw.len()].make_ascii_lowercase();
        &name[..raw.len()]
    } else {
        raw
    };
    let argc = args.len();
    let arity = |ok: bool, out: &mut Vec<u8>, f: &mut dyn FnMut(&mut Vec<u8>)| {
        if ok {
            f(out);
        } else {
            wrong_arity(out, lower);
        }
    };
    let store = &shared.store;
    match lower {
        b"cf.exists" => arity(argc == 3, out, &mut |out| {
            let found =
                store.with(args.get(1), |e| e.is_some_and(|e| e.filter.contains(args.get(2))));
            reply::int(out, i64::from(found));
        }),
        b"cf.add" | b"cf.addnx" => arity(argc == 3, out, &mut |out| {
            add(shared, args.get(1), args.get(2), lower == b"cf.addnx", out);
        }),
        b"cf.mexists" => arity(argc >= 3, out, &mut |out| mexists(store, args, out)),
        b"cf.del" => arity(argc == 3, out, &mut |out| {
            store.with(args.get(1), |e| match e {
                // RedisBloom's text for a missing filter here.
                None => reply::error(out, "Not found"),
                Some(e) => {
                    let removed = e.filter.remove(args.get(2));
                    if removed {
                        e.count_delete();
                    }
                    reply::int(out, i64::from(removed));
                }
            });
        }),
        b"cf.count" => arity(argc == 3, out, &mut |out| {
            let n = store.with(args.get(1), |e| e.map_or(0, |e| e.filter.count(args.get(2))));
            reply::int(out, n as i64);
        }),
        b"cf.reserve" => {
            arity(argc >= 3 && argc % 2 == 1, out, &mut |out| reserve(store, args, out))
        }
        b"cf.info" => arity(argc == 2, out, &mut |out| {
            store.with(args.get(1), |e| match e {
                None => reply::error(out, "ERR not found"),
                Some(e) => info(e, out),
            });
        }),
        b"ping" => match argc {
            1 => reply::simple(out, "PONG"),
            2 => reply::bulk(out, args.get(1)),
            _ => wrong_arity(out, lower),
        },
        b"echo" => arity(argc == 2, out, &mut |out| reply::bulk(out, args.get(1))),
        b"del" => arity(argc >= 2, out, &mut |out| {
            let removed = store.delete(args.iter_from(1));
            reply::int(out, removed as i64);
        }),
        b"exists" => arity(argc >= 2, out, &mut |out| {
            reply::int(out, store.count_existing(args.iter_from(1)) as i64);
        }),
        b"type" => arity(argc == 2, out, &mut |out| {
            // RedisBloom's module type name for cuckoo filters.
            let found = store.with(args.get(1), |e| e.is_some());
            reply::simple(out, if found { "MBbloomCF" } else { "none" });
        }),
        b"dbsize" => arity(argc == 1, out, &mut |out| reply::int(out, store.len() as i64)),
        b"save" => {
            if argc == 1 {
                return Next::Save;
            }
            wrong_arity(out, lower);
        }
        b"shutdown" => match args.iter_from(1).next() {
            None => return Next::Shutdown { save: true },
            Some(arg) if argc == 2 && arg.eq_ignore_ascii_case(b"SAVE") => {
                return Next::Shutdown { save: true }
            }
            Some(arg) if argc == 2 && arg.eq_ignore_ascii_case(b"NOSAVE") => {
                return Next::Shutdown { save: false }
            }
            Some(_) => reply::error(out, "ERR syntax error"),
        },
        b"quit" => {
            reply::simple(out, "OK");
            return Next::Quit;
        }
        b"select" => arity(argc == 2, out, &mut |out| match parse_i64(args.get(1)) {
            Some(0) => reply::simple(out, "OK"),
            Some(_) => reply::error(out, "ERR DB index is out of range"),
            None => reply::error(out, "ERR value is not an integer or out of range"),
        }),
        b"hello" => hello(client_id, args, out),
        b"client" => arity(argc >= 2, out, &mut |out| client(client_id, args, out)),
        b"command" => command(args, out),
        b"config" => arity(argc >= 2, out, &mut |out| config(store, args, out)),
        b"info" => server_info(shared, out),
        _ => unknown_command(args, out),
    }
    Next::Continue
}

fn add(shared: &Shared, name: &[u8], item: &[u8], only_if_absent: bool, out: &mut Vec<u8>) {
    let settings =
        Settings { capacity: shared.default_capacity, max_iterations: DEFAULT_MAX_ITERATIONS };
    // CF.ADDNX is a lookup, then an insert if the lookup missed: two connections adding the
    // same new item at once may both insert it (RedisBloom runs one command at a time).
    let outcome = shared.store.with_or_create(name, settings, |e| {
        if only_if_absent && e.filter.contains(item) {
            return Ok(false);
        }
        e.filter.insert(item).map(|()| true)
    });
    match outcome {
        Ok(Ok(added)) => reply::int(out, i64::from(added)),
        Ok(Err(InsertError::Full)) => reply::error(out, "Filter is full"),
        Ok(Err(e)) => reply::error(out, &format!("ERR {e}")),
        Err(CreateError::OutOfMemory) => reply::error(out, OOM_ERROR),
        // An implicit create never reports an existing name: it uses that filter.
        Err(CreateError::Exists) => reply::error(out, "ERR item exists"),
    }
}

fn mexists(store: &Store, args: Args<'_>, out: &mut Vec<u8>) {
    let items: Vec<&[u8]> = args.iter_from(2).collect();
    let mut found = vec![false; items.len()];
    store.with(args.get(1), |e| {
        if let Some(e) = e {
            // The batched lookup prefetches both buckets of a block of items ahead.
            e.filter.contains_batch(&items, &mut found);
        }
    });
    reply::array(out, found.len());
    for hit in found {
        reply::int(out, i64::from(hit));
    }
}

/// `CF.RESERVE key capacity [BUCKETSIZE n] [MAXITERATIONS n] [EXPANSION n]`, validated in
/// RedisBloom's order with its texts. The filter's buckets hold four fingerprints whatever
/// `BUCKETSIZE` says, and it does not expand: `EXPANSION` is checked and `CF.INFO` reports 0.
fn reserve(store: &Store, args: Args<'_>, out: &mut Vec<u8>) {
    let Some(capacity) = parse_i64(args.get(2)) else {
        return reply::error(out, "Bad capacity");
    };
    let mut bucket_size = 2;
    let mut max_iterations = DEFAULT_MAX_ITERATIONS as i64;
    let mut i = 3;
    while i + 1 < args.len() {
        let option = args.get(i).to_ascii_uppercase();
        let value = parse_i64(args.get(i + 1));
        let (slot, name, positive) = match option.as_slice() {
            b"BUCKETSIZE" => (&mut bucket_size, "BUCKETSIZE", true),
            b"MAXITERATIONS" => (&mut max_iterations, "MAXITERATIONS", true),
            b"EXPANSION" => (&mut 0, "EXPANSION", false),
            _ => return reply::error(out, "Unknown argument received"),
        };
        let Some(value) = value else {
            return reply::error(out, &format!("Couldn't parse {name}"));
        };
        if positive && value <= 0 {
            return reply::error(out, &format!("{name} parameter needs to be a positive integer"));
        }
        if !positive && value < 0 {
            return reply::error(
                out,
                &format!("{name} parameter needs to be a non-negative integer"),
            );
        }
        *slot = value;
        i += 2;
    }
    if bucket_size.saturating_mul(2) > capacity {
        return reply::error(out, "Capacity must be at least (BucketSize * 2)");
    }
    let settings = Settings { capacity: capacity as u64, max_iterations: max_iterations as u64 };
    match store.create(args.get(1), settings) {
        Ok(_) => reply::simple(out, "OK"),
        Err(CreateError::Exists) => reply::error(out, "ERR item exists"),
        Err(CreateError::OutOfMemory) => reply::error(out, OOM_ERROR),
    }
}

/// `CF.INFO`: RedisBloom's sixteen elements, name and value in turn. "Number of items
/// inserted" is the items present now, as in RedisBloom (it counts down on `CF.DEL`).
fn info(e: &Entry, out: &mut Vec<u8>) {
    let fields: [(&str, i64); 8] = [
        ("Size", e.filter.memory_usage() as i64),
        ("Number of buckets", e.filter.bucket_count() as i64),
        ("Number of filters", 1),
        ("Number of items inserted", e.filter.len() as i64),
        ("Number of items deleted", e.deletes() as i64),
        ("Bucket size", BUCKET_SIZE),
        ("Expansion rate", 0),
        ("Max iterations", e.settings.max_iterations as i64),
    ];
    reply::array(out, fields.len() * 2);
    for (name, value) in fields {
        reply::simple(out, name);
        reply::int(out, value);
    }
}

/// `HELLO [2 [SETNAME name]]`: RESP2 only.
fn hello(client_id: u64, args: Args<'_>, out: &mut Vec<u8>) {
    if args.len() >= 2 {
        match parse_i64(args.get(1)) {
            Some(2) => {}
            Some(_) => {
                return reply::error(out, "NOPROTO sorry, this protocol version is not supported")
            }
            None => {
                return reply::error(out, "ERR Protocol version is not an integer or out of range")
            }
        }
    }
    reply::array(out, 14);
    for (name, value) in [("server", "redis"), ("version", "7.0.0")] {
        reply::bulk(out, name.as_bytes());
        reply::bulk(out, value.as_bytes());
    }
    reply::bulk(out, b"proto");
    reply::int(out, 2);
    reply::bulk(out, b"id");
    reply::int(out, client_id as i64);
    for (name, value) in [("mode", "standalone"), ("role", "master")] {
        reply::bulk(out, name.as_bytes());
        reply::bulk(out, value.as_bytes());
    }
    reply::bulk(out, b"modules");
    reply::array(out, 0);
}

/// The `CLIENT` subcommands client libraries send on connecting.
fn client(client_id: u64, args: Args<'_>, out: &mut Vec<u8>) {
    let sub = args.get(1).to_ascii_uppercase();
    match sub.as_slice() {
        b"SETNAME" | b"SETINFO" => reply::simple(out, "OK"),
        b"GETNAME" => reply::null(out),
        b"ID" => reply::int(out, client_id as i64),
        _ => unknown_subcommand(out, args.get(1), "CLIENT"),
    }
}

/// `COMMAND`, `COMMAND DOCS` and the like: an empty table (clients fall back to plain
/// behaviour), and `COMMAND COUNT`.
fn command(args: Args<'_>, out: &mut Vec<u8>) {
    if args.len() >= 2 && args.get(1).eq_ignore_ascii_case(b"COUNT") {
        return reply::int(out, COMMANDS.len() as i64);
    }
    reply::array(out, 0);
}

/// `CONFIG GET name...`: the settings load generators and clients ask about.
fn config(store: &Store, args: Args<'_>, out: &mut Vec<u8>) {
    if !args.get(1).eq_ignore_ascii_case(b"GET") {
        return reply::error(out, "ERR CONFIG subcommands other than GET are not supported");
    }
    let max_memory = store.max_memory().to_string();
    let known =
        [("save", ""), ("appendonly", "no"), ("databases", "1"), ("maxmemory", &max_memory)];
    let mut found = Vec::new();
    for wanted in args.iter_from(2) {
        for (name, value) in known {
            if wanted == b"*" || wanted.eq_ignore_ascii_case(name.as_bytes()) {
                found.push((name, value));
            }
        }
    }
    reply::array(out, found.len() * 2);
    for (name, value) in found {
        reply::bulk(out, name.as_bytes());
        reply::bulk(out, value.as_bytes());
    }
}

fn server_info(shared: &Shared, out: &mut Vec<u8>) {
    let text = format!(
        "# Server\r\nredis_version:7.0.0\r\nlockfree_cuckoo_server:{}\r\nuptime_in_seconds:{}\r\n\
         \r\n# Clients\r\nconnected_clients:{}\r\n\
         \r\n# Memory\r\nused_memory:{}\r\nmaxmemory:{}\r\n\
         \r\n# Keyspace\r\ndb0:keys={},expires=0,avg_ttl=0\r\n",
        env!("CARGO_PKG_VERSION"),
        shared.started.elapsed().as_secs(),
        shared.clients.load(Ordering::Relaxed),
        shared.store.used_memory(),
        shared.store.max_memory(),
        shared.store.len(),
    );
    reply::bulk(out, text.as_bytes());
}

fn wrong_arity(out: &mut Vec<u8>, lower_name: &[u8]) {
    let name = String::from_utf8_lossy(lower_name);
    reply::error(out, &format!("ERR wrong number of arguments for '{name}' command"));
}

fn unknown_subcommand(out: &mut Vec<u8>, sub: &[u8], command: &str) {
    let sub = String::from_utf8_lossy(&sub[..sub.len().min(128)]).into_owned();
    reply::error(out, &format!("ERR unknown subcommand '{sub}'. Try {command} HELP."));
}

/// Redis 7's text: the name and the start of the arguments, 128 characters at most each.
fn unknown_command(args: Args<'_>, out: &mut Vec<u8>) {
    let clip = |bytes: &[u8]| String::from_utf8_lossy(&bytes[..bytes.len().min(128)]).into_owned();
    let mut text =
        format!("ERR unknown command '{}', with args beginning with: ", clip(args.get(0)));
    for arg in args.iter_from(1) {
        if text.len() > 256 {
            break;
        }
        text.push_str(&format!("'{}' ", clip(arg)));
    }
    reply::error(out, &text);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::{Parsed, Parser};

    #[test]
    fn every_listed_command_is_known() {
        let shared = Shared {
            store: Store::new(1 << 20),
            default_capacity: 16,
            clients: AtomicUsize::new(0),
            started: Instant::now(),
        };
        for name in COMMANDS.iter().filter(|&&n| n != "shutdown") {
            let request = format!("*1\r\n${}\r\n{name}\r\n", name.len());
            let mut parser = Parser::new(1 << 20);
            assert!(matches!(parser.parse(request.as_bytes()), Ok(Parsed::Request(_))));
            let mut out = Vec::new();
            execute(&shared, 1, parser.args(request.as_bytes()), &mut out);
            let reply = String::from_utf8(out).unwrap();
            assert!(!reply.starts_with("-ERR unknown command"), "{name}: {reply}");
        }
    }
}
