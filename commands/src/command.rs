//! The `CF.*` commands: one table of what each is, the parser that turns a request into a
//! [`Command`] with RedisBloom's options, ranges and error texts, and [`Command::run`], which
//! carries it out on a [`Keyspace`].

use lockfree_cuckoo::Encoding;

use crate::args::{parse_i64, parse_u64, Argv};
use crate::docs::{docs, Docs};
use crate::entry::Entry;
use crate::keyspace::{KeyError, Keyspace};
use crate::reply::{Protocol, Reply};
use crate::settings::{Options, Settings, MAX_EXPANSION, MAX_EXPIRE};
use crate::transfers::{Loaded, CHUNK_BYTES, LOAD_FAILED};

/// The largest capacity RedisBloom accepts for one filter.
pub const MAX_CAPACITY: i64 = 1 << 30;

/// What a command is, for a host's command table, ACLs and replication.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The name, in lower case.
    pub name: &'static str,
    /// Redis's arity: the exact number of arguments with the name, or at least `-arity`.
    pub arity: i32,
    /// Whether it may change the key (and is replicated).
    pub write: bool,
    /// Redis's command flags, as RedisBloom registers them.
    pub flags: &'static str,
    /// Redis's ACL categories besides `cuckoo`.
    pub categories: &'static str,
    /// What `COMMAND DOCS` and `COMMAND INFO` say of it.
    pub docs: Docs,
}

const fn spec(
    name: &'static str,
    arity: i32,
    write: bool,
    flags: &'static str,
    categories: &'static str,
) -> Spec {
    Spec { name, arity, write, flags, categories, docs: docs(name) }
}

/// Every `CF.*` command, RedisBloom's arities and flags. The key is always argument 1.
pub const COMMANDS: &[Spec] = &[
    spec("cf.reserve", -3, true, "write deny-oom", "write fast"),
    spec("cf.add", 3, true, "write deny-oom", "write"),
    spec("cf.addnx", 3, true, "write deny-oom", "write"),
    spec("cf.insert", -4, true, "write deny-oom", "write"),
    spec("cf.insertnx", -4, true, "write deny-oom", "write"),
    spec("cf.exists", 3, false, "readonly fast", "read fast"),
    spec("cf.mexists", -3, false, "readonly fast", "read fast"),
    spec("cf.count", 3, false, "readonly fast", "read fast"),
    spec("cf.del", 3, true, "write fast", "write fast"),
    spec("cf.compact", 2, true, "write fast", "write fast"),
    spec("cf.scandump", 3, false, "readonly", "read"),
    spec("cf.loadchunk", 4, true, "write deny-oom", "write"),
    spec("cf.tick", 3, true, "write", "write"),
    spec("cf.info", 2, false, "readonly fast", "read fast"),
    spec("cf.debug", 2, false, "readonly fast", "read fast"),
];

/// The spec of the `CF.*` command `name` (any case), if it is one.
pub fn find(name: &[u8]) -> Option<&'static Spec> {
    COMMANDS.iter().find(|spec| spec.name.as_bytes().eq_ignore_ascii_case(name))
}

/// One parsed `CF.*` request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Command<'a> {
    /// `CF.RESERVE key capacity [BUCKETSIZE n] [MAXITERATIONS n] [EXPANSION n] [SEED n]
    /// [ENCODING PLAIN|SEMISORTED] [EXPIRE seconds]`
    Reserve {
        /// The key.
        key: &'a [u8],
        /// The capacity.
        capacity: u64,
        /// The options given, `SEED` among them; the host's defaults fill in the others.
        options: Options,
    },
    /// `CF.ADD key item`, `CF.ADDNX key item`
    Add {
        /// The key.
        key: &'a [u8],
        /// The item.
        item: &'a [u8],
        /// `CF.ADDNX`: only if not already present.
        nx: bool,
    },
    /// `CF.INSERT key [CAPACITY n] [NOCREATE] ITEMS item...`, and `CF.INSERTNX`
    Insert {
        /// The key.
        key: &'a [u8],
        /// `CAPACITY`, for a filter created by the command.
        capacity: Option<u64>,
        /// `NOCREATE`: refuse a key that does not exist.
        no_create: bool,
        /// The items.
        items: Vec<&'a [u8]>,
        /// `CF.INSERTNX`: only those not already present.
        nx: bool,
    },
    /// `CF.EXISTS key item`
    Exists {
        /// The key.
        key: &'a [u8],
        /// The item.
        item: &'a [u8],
    },
    /// `CF.MEXISTS key item...`
    MExists {
        /// The key.
        key: &'a [u8],
        /// The items.
        items: Vec<&'a [u8]>,
    },
    /// `CF.COUNT key item`
    Count {
        /// The key.
        key: &'a [u8],
        /// The item.
        item: &'a [u8],
    },
    /// `CF.DEL key item`
    Del {
        /// The key.
        key: &'a [u8],
        /// The item.
        item: &'a [u8],
    },
    /// `CF.COMPACT key`
    Compact {
        /// The key.
        key: &'a [u8],
    },
    /// `CF.SCANDUMP key cursor`
    ScanDump {
        /// The key.
        key: &'a [u8],
        /// 0 to start, else what the previous call returned.
        cursor: u64,
    },
    /// `CF.LOADCHUNK key cursor data`
    LoadChunk {
        /// The key.
        key: &'a [u8],
        /// What `CF.SCANDUMP` returned with `data`.
        cursor: u64,
        /// The chunk.
        data: &'a [u8],
    },
    /// `CF.TICK key epoch`: a primary's epoch of a filter whose items expire, for its
    /// replicas ([`Filter::follow`](crate::Filter::follow)).
    Tick {
        /// The key.
        key: &'a [u8],
        /// The epoch the primary started.
        epoch: u64,
    },
    /// `CF.INFO key`
    Info {
        /// The key.
        key: &'a [u8],
    },
    /// `CF.DEBUG key`
    Debug {
        /// The key.
        key: &'a [u8],
    },
}

fn wrong_arity(name: &str) -> Reply {
    Reply::error_owned(format!("ERR wrong number of arguments for '{name}' command"))
}

/// Parses a `CF.*` request: `None` when `args` names another command, else the command or the
/// error reply RedisBloom gives for it.
pub fn parse<A: Argv + ?Sized>(args: &A) -> Option<Result<Command<'_>, Reply>> {
    if args.is_empty() {
        return None;
    }
    let spec = find(args.get(0))?;
    let argc = args.len();
    let arity_ok = if spec.arity >= 0 {
        argc == spec.arity as usize
    } else {
        argc >= spec.arity.unsigned_abs() as usize
    };
    if !arity_ok {
        return Some(Err(wrong_arity(spec.name)));
    }
    let key = args.get(1);
    let items_from = |from: usize| (from..argc).map(|i| args.get(i)).collect::<Vec<_>>();
    Some(match spec.name {
        "cf.reserve" => reserve(args),
        "cf.add" | "cf.addnx" => {
            Ok(Command::Add { key, item: args.get(2), nx: spec.name == "cf.addnx" })
        }
        "cf.insert" | "cf.insertnx" => insert(args, spec.name == "cf.insertnx"),
        "cf.exists" => Ok(Command::Exists { key, item: args.get(2) }),
        "cf.mexists" => Ok(Command::MExists { key, items: items_from(2) }),
        "cf.count" => Ok(Command::Count { key, item: args.get(2) }),
        "cf.del" => Ok(Command::Del { key, item: args.get(2) }),
        "cf.compact" => Ok(Command::Compact { key }),
        "cf.scandump" => match parse_i64(args.get(2)).and_then(|c| u64::try_from(c).ok()) {
            Some(cursor) => Ok(Command::ScanDump { key, cursor }),
            None => Err(Reply::error("Invalid position")),
        },
        "cf.loadchunk" => {
            match parse_i64(args.get(2)).and_then(|c| u64::try_from(c).ok()).filter(|&c| c > 0) {
                Some(cursor) => Ok(Command::LoadChunk { key, cursor, data: args.get(3) }),
                None => Err(Reply::error("Invalid position")),
            }
        }
        "cf.tick" => match parse_u64(args.get(2)) {
            Some(epoch) => Ok(Command::Tick { key, epoch }),
            None => Err(Reply::error("ERR epoch must be an unsigned integer")),
        },
        "cf.info" => Ok(Command::Info { key }),
        "cf.debug" => Ok(Command::Debug { key }),
        other => unreachable!("{other} is in COMMANDS but not parsed"),
    })
}

/// `CF.RESERVE`: RedisBloom looks for each option anywhere after the capacity, checks them in
/// this order, and ignores words it does not know. `SEED` (any 64-bit unsigned integer),
/// `ENCODING` (`PLAIN` or `SEMISORTED`, in any case) and `EXPIRE` (seconds, 1 to
/// [`MAX_EXPIRE`]) are this crate's, checked after RedisBloom's options: RedisBloom ignores
/// them. A filter whose items expire is fixed and of its own layout: `EXPIRE` with `EXPANSION`
/// other than 0, or with `ENCODING`, is refused.
fn reserve<A: Argv + ?Sized>(args: &A) -> Result<Command<'_>, Reply> {
    if args.len() % 2 == 0 {
        return Err(wrong_arity("cf.reserve"));
    }
    let capacity = parse_i64(args.get(2)).ok_or(Reply::error("Bad capacity"))?;
    // The word after the option `name`, if it is there at all.
    let word_after = |name: &str| -> Option<Option<&[u8]>> {
        let at = (3..args.len()).find(|&i| args.get(i).eq_ignore_ascii_case(name.as_bytes()))?;
        Some((at + 1 < args.len()).then(|| args.get(at + 1)))
    };
    let unparsed = |name: &str| Reply::error_owned(format!("Couldn't parse {name}"));
    let option = |name: &str, min: i64, max: i64| -> Result<Option<i64>, Reply> {
        let Some(word) = word_after(name) else {
            return Ok(None);
        };
        let value = word.and_then(parse_i64).ok_or_else(|| unparsed(name))?;
        if !(min..=max).contains(&value) {
            return Err(Reply::error_owned(format!(
                "{name}: value must be in the range [{min}, {max}]"
            )));
        }
        Ok(Some(value))
    };
    // The ranges make the conversions exact.
    let max_iterations = option("MAXITERATIONS", 1, 65_535)?.map(|n| n as u16);
    let bucket_size = option("BUCKETSIZE", 1, 255)?.map(|n| n as u8);
    let expansion = option("EXPANSION", 0, MAX_EXPANSION)?.map(|n| n as u16);
    let seed = match word_after("SEED") {
        None => None,
        Some(word) => Some(word.and_then(parse_u64).ok_or_else(|| unparsed("SEED"))?),
    };
    let encoding = match word_after("ENCODING") {
        None => None,
        Some(word) => Some(word.and_then(parse_encoding).ok_or_else(|| unparsed("ENCODING"))?),
    };
    let expire = option("EXPIRE", 1, MAX_EXPIRE)?.map(|n| n as u64);
    if expire.is_some() && expansion.is_some_and(|e| e != 0) {
        return Err(Reply::error("EXPIRE: a filter whose items expire cannot grow (EXPANSION 0)"));
    }
    if expire.is_some() && encoding.is_some() {
        return Err(Reply::error("EXPIRE: a filter whose items expire has its own ENCODING"));
    }
    // Checked again with the host's default `BUCKETSIZE` when none is given (`run`).
    let capacity = u64::try_from(capacity)
        .ok()
        .filter(|&c| reserve_capacity_fits(c, bucket_size.unwrap_or(1)));
    let capacity = capacity.ok_or(Reply::error(RESERVE_RANGE))?;
    let options = Options { bucket_size, max_iterations, expansion, seed, encoding, expire };
    Ok(Command::Reserve { key: args.get(1), capacity, options })
}

/// The names of `ENCODING`'s values, as [`encoding_name`] writes them.
const ENCODINGS: [(&str, Encoding); 2] =
    [("PLAIN", Encoding::Plain), ("SEMISORTED", Encoding::SemiSorted)];

fn parse_encoding(word: &[u8]) -> Option<Encoding> {
    ENCODINGS.iter().find(|(name, _)| word.eq_ignore_ascii_case(name.as_bytes())).map(|&(_, e)| e)
}

/// The word `CF.RESERVE ... ENCODING` takes for `encoding` (a module replicates it).
pub fn encoding_name(encoding: Encoding) -> &'static str {
    ENCODINGS.iter().find(|&&(_, e)| e == encoding).map_or("PLAIN", |&(name, _)| name)
}

/// RedisBloom's refusal of an insert that would take a filter past `cf-max-expansions`
/// sub-filters.
pub const MAX_LEVELS_REACHED: &str = "Maximum expansions reached";

/// The reply to `CF.TICK` from a client.
const TICK_FROM_CLIENT: &str =
    "ERR CF.TICK is for a primary's replicas: a filter's own host starts its epochs";

const RESERVE_RANGE: &str = "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]";
const INSERT_RANGE: &str = "Capacity must be in the range [cf-bucket-size * 2, 1073741824]";

/// RedisBloom's range of capacities: two buckets at least.
fn reserve_capacity_fits(capacity: u64, bucket_size: u8) -> bool {
    (u64::from(bucket_size) * 2..=MAX_CAPACITY as u64).contains(&capacity)
}

/// `CF.INSERT`: RedisBloom tells the options by their first letter.
fn insert<A: Argv + ?Sized>(args: &A, nx: bool) -> Result<Command<'_>, Reply> {
    let name = if nx { "cf.insertnx" } else { "cf.insert" };
    let mut capacity = None;
    let mut no_create = false;
    let mut at = 2;
    loop {
        if at >= args.len() {
            return Err(wrong_arity(name));
        }
        match args.get(at).first().map(u8::to_ascii_lowercase) {
            Some(b'c') => {
                if at + 1 >= args.len() {
                    return Err(wrong_arity(name));
                }
                let value = parse_i64(args.get(at + 1)).ok_or(Reply::error("Bad capacity"))?;
                // Checked again with the host's `cf-bucket-size` (`run`).
                let fits = u64::try_from(value).ok().filter(|&c| reserve_capacity_fits(c, 1));
                capacity = Some(fits.ok_or(Reply::error(INSERT_RANGE))?);
                at += 2;
            }
            Some(b'n') => {
                no_create = true;
                at += 1;
            }
            Some(b'i') => {
                at += 1;
                break;
            }
            _ => return Err(Reply::error("Unknown argument received")),
        }
    }
    if at >= args.len() {
        return Err(wrong_arity(name));
    }
    let items = (at..args.len()).map(|i| args.get(i)).collect();
    Ok(Command::Insert { key: args.get(1), capacity, no_create, items, nx })
}

impl Command<'_> {
    /// The key the command names.
    pub fn key(&self) -> &[u8] {
        match self {
            Self::Reserve { key, .. }
            | Self::Add { key, .. }
            | Self::Insert { key, .. }
            | Self::Exists { key, .. }
            | Self::MExists { key, .. }
            | Self::Count { key, .. }
            | Self::Del { key, .. }
            | Self::Compact { key }
            | Self::ScanDump { key, .. }
            | Self::LoadChunk { key, .. }
            | Self::Tick { key, .. }
            | Self::Info { key }
            | Self::Debug { key } => key,
        }
    }

    /// Carries the command out on `keys`, and returns its reply in the shapes of `protocol`.
    pub fn run(&self, keys: &impl Keyspace, protocol: Protocol) -> Reply {
        self.run_on(keys, protocol).unwrap_or_else(|e| e.reply())
    }

    fn run_on(&self, keys: &impl Keyspace, protocol: Protocol) -> Result<Reply, KeyError> {
        Ok(match *self {
            Self::Reserve { key, capacity, ref options } => {
                let settings = keys.defaults().with_options(capacity, options);
                if !reserve_capacity_fits(capacity, settings.bucket_size) {
                    return Ok(Reply::error(RESERVE_RANGE));
                }
                keys.create(key, &settings)?;
                Reply::Ok
            }
            Self::Add { key, item, nx } => {
                let settings = keys.defaults().settings(None);
                keys.read_or_create(key, &settings, |e| match add(keys, key, e, item, nx) {
                    Added::Yes => Reply::Bool(true),
                    Added::Present => Reply::Bool(false),
                    Added::Full => Reply::error("Filter is full"),
                    Added::MaxLevels => Reply::error(MAX_LEVELS_REACHED),
                })?
            }
            Self::Insert { key, capacity, no_create, ref items, nx } => {
                let each = |e: &Entry| {
                    let insert = |item| add(keys, key, e, item, nx);
                    let replies = items.iter().map(|item| match (insert(item), nx) {
                        (Added::Yes, false) => Reply::Bool(true),
                        (Added::Yes, true) => Reply::Int(1),
                        (Added::Present, _) => Reply::Int(0),
                        (Added::Full | Added::MaxLevels, true) => Reply::Int(-1),
                        (Added::Full | Added::MaxLevels, false) => match protocol {
                            Protocol::Resp2 => Reply::Int(-1),
                            Protocol::Resp3 => Reply::Bool(false),
                        },
                    });
                    Reply::Array(replies.collect())
                };
                if no_create {
                    keys.read(key, |e| e.map_or(Reply::error("ERR not found"), each))?
                } else {
                    let settings = keys.defaults().settings(capacity);
                    if capacity.is_some()
                        && !reserve_capacity_fits(settings.capacity, settings.bucket_size)
                    {
                        return Ok(Reply::error(INSERT_RANGE));
                    }
                    keys.read_or_create(key, &settings, each)?
                }
            }
            // A missing key holds no item; RedisBloom answers 0 for a key of another type too.
            Self::Exists { key, item } => {
                Reply::Bool(keys.read(key, |e| e.is_some_and(|e| e.filter.contains(item)))?)
            }
            Self::MExists { key, ref items } => {
                let mut found = vec![false; items.len()];
                keys.read(key, |e| {
                    if let Some(e) = e {
                        // The batched lookup prefetches both buckets of a block of items ahead.
                        e.filter.contains_batch(items, &mut found);
                    }
                })?;
                Reply::Array(found.into_iter().map(Reply::Bool).collect())
            }
            Self::Count { key, item } => {
                Reply::Int(keys.read(key, |e| e.map_or(0, |e| e.filter.count(item)))? as i64)
            }
            Self::Del { key, item } => keys.read(key, |e| match e {
                None => Reply::error("Not found"),
                Some(e) => {
                    let removed = e.filter.remove(item);
                    if removed {
                        e.count_delete();
                    }
                    Reply::Bool(removed)
                }
            })?,
            // Removes here take their fingerprint out of the table at once: there are no
            // deleted slots to reclaim, so a compaction has nothing to do.
            Self::Compact { key } => keys.read(key, |e| match e {
                None => Reply::error("Cuckoo filter was not found"),
                Some(_) => Reply::Ok,
            })?,
            Self::ScanDump { key, cursor } => keys.read(key, |e| match e {
                None => Reply::error("ERR not found"),
                // RedisBloom's answer for a filter holding no item: the dump is over at once
                // (clients' dump loops stop on it, and there is nothing to load back). Read from
                // the tables, not `len`, so a fingerprint that is there is always dumped.
                Some(e) if e.filter.is_empty() => Reply::Array(vec![Reply::Int(0), Reply::Null]),
                Some(e) => keys
                    .transfers()
                    .dump_chunk(key, &e.filter, cursor, CHUNK_BYTES)
                    .unwrap_or_else(|error| error),
            })?,
            Self::LoadChunk { key, cursor, data } => {
                // A chunk that cannot end where its cursor says is a chunk RedisBloom cannot
                // load; "Invalid position" is for a cursor that is no position at all (parse).
                let Some(start) = (cursor - 1).checked_sub(data.len() as u64) else {
                    return Ok(Reply::error(LOAD_FAILED));
                };
                if start == 0 && keys.read(key, |e| e.is_some())? {
                    return Err(KeyError::Exists);
                }
                match keys.transfers().add(key, start, data) {
                    Ok(Loaded::Partial) => Reply::Ok,
                    Ok(Loaded::Whole(filter)) => {
                        let settings = Settings::of_loaded(&filter);
                        keys.adopt(key, Entry::with_filter(filter, settings, 0))?;
                        Reply::Ok
                    }
                    Err(reply) => reply,
                }
            }
            Self::Tick { key, epoch } => {
                if !keys.follows_primary() {
                    return Ok(Reply::error(TICK_FROM_CLIENT));
                }
                keys.read(key, |e| match e.map(|e| e.filter.follow(epoch)) {
                    None => Reply::error("ERR not found"),
                    Some(None) => Reply::error("ERR the filter's items do not expire"),
                    Some(Some(false)) => {
                        Reply::error("ERR the epoch is out of this filter's reach")
                    }
                    Some(Some(true)) => Reply::Ok,
                })?
            }
            Self::Info { key } => keys.read(key, |e| match e {
                None => Reply::error("ERR not found"),
                Some(e) => info(e),
            })?,
            Self::Debug { key } => keys.read(key, |e| match e {
                None => Reply::error("ERR not found"),
                Some(e) => debug(e),
            })?,
        })
    }
}

enum Added {
    Yes,
    Present,
    Full,
    /// Refused by a growable filter at its level limit (`cf-max-expansions`).
    MaxLevels,
}

/// `CF.ADDNX` is a lookup, then an insert if the lookup missed: two clients adding the same new
/// item at once on a multithreaded host may both insert it (RedisBloom runs one command at a
/// time; a module host does too). The insert is the host's ([`Keyspace::insert`]).
fn add(keys: &impl Keyspace, key: &[u8], e: &Entry, item: &[u8], nx: bool) -> Added {
    if nx && e.filter.contains(item) {
        return Added::Present;
    }
    match keys.insert(key, e, item) {
        Ok(()) => Added::Yes,
        Err(_) if e.filter.is_growable() && e.filter.stats().levels >= e.filter.max_levels() => {
            Added::MaxLevels
        }
        Err(_) => Added::Full,
    }
}

/// `CF.DEBUG`: RedisBloom's one line, from the numbers [`info`] gives ("bktsize" is this
/// filter's four lanes, "buckets" every level's, "filters" its levels).
fn debug(e: &Entry) -> Reply {
    let mut line = format!(
        "bktsize:4 buckets:{} items:{} deletes:{} filters:{} max_iterations:{} expansion:{}",
        e.filter.bucket_count(),
        e.filter.len(),
        e.deletes(),
        e.filter.stats().levels,
        e.settings.max_iterations,
        e.settings.expansion,
    );
    if let Some(window) = e.filter.window() {
        line.push_str(&format!(" expire:{}", window.as_secs()));
    }
    Reply::Bulk(line.into_bytes())
}

/// `CF.INFO`: RedisBloom's eight fields. "Number of items inserted" is the items present now,
/// as in RedisBloom (it counts down on `CF.DEL`); "Number of buckets" counts every level's;
/// "Bucket size" is this filter's four lanes, whatever `BUCKETSIZE` asked. A semi-sorted filter
/// adds a ninth, "Encoding", `semi-sorted`; a filter whose items expire "Encoding" `windowed`
/// and "Expire after", its window in seconds; a plain one answers RedisBloom's eight alone, as
/// clients and RedisBloom's tests expect.
fn info(e: &Entry) -> Reply {
    let fields: [(&'static str, i64); 8] = [
        ("Size", e.filter.memory_usage() as i64),
        ("Number of buckets", e.filter.bucket_count() as i64),
        ("Number of filters", e.filter.stats().levels as i64),
        ("Number of items inserted", e.filter.len() as i64),
        ("Number of items deleted", e.deletes() as i64),
        ("Bucket size", 4),
        ("Expansion rate", i64::from(e.settings.expansion)),
        ("Max iterations", i64::from(e.settings.max_iterations)),
    ];
    let mut map: Vec<(Reply, Reply)> =
        fields.into_iter().map(|(name, value)| (Reply::Status(name), Reply::Int(value))).collect();
    let encoding = e.filter.encoding();
    if encoding != Encoding::Plain {
        map.push((Reply::Status("Encoding"), Reply::Bulk(encoding.name().into())));
    }
    if let Some(window) = e.filter.window() {
        let seconds = i64::try_from(window.as_secs()).unwrap_or(i64::MAX);
        map.push((Reply::Status("Expire after"), Reply::Int(seconds)));
    }
    Reply::Map(map)
}
