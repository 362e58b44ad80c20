//! What `COMMAND DOCS` and `COMMAND INFO` tell of each command: its summary, complexity, the
//! version that added it, its arguments and how it uses its key, in the shapes of the module
//! API's command info (`RedisModule_SetCommandInfo`), for any host to hand on.

/// One command's documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Docs {
    /// One line, RedisBloom's where it has one.
    pub summary: &'static str,
    /// The time it takes, in this filter's terms: `k` is the number of levels of a grown filter
    /// (1 for one that never grew), each read at most once.
    pub complexity: &'static str,
    /// The module version that added it.
    pub since: &'static str,
    /// The arguments after the name, the key first.
    pub args: &'static [Arg],
    /// How it uses its key (argument 1).
    pub key: KeyUse,
}

/// One argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arg {
    /// Its name, in lower case.
    pub name: &'static str,
    /// What it holds.
    pub kind: ArgKind,
    /// The word that comes before it, if it is an option (`CAPACITY 1000`).
    pub token: Option<&'static str>,
    /// Whether it may be left out.
    pub optional: bool,
    /// Whether it may be given several times (the items of `CF.INSERT`).
    pub multiple: bool,
}

/// What an argument holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    /// The key.
    Key,
    /// An item, or bytes.
    String,
    /// An integer.
    Integer,
    /// The token alone (`NOCREATE`).
    PureToken,
}

/// How a command uses its key, in the terms of Redis's key specifications.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyUse {
    /// Reads the items (`RO ACCESS`).
    ReadsItems,
    /// Reads what the filter is, not its items (`RO`).
    ReadsMetadata,
    /// Adds items, creating the filter if it is missing (`RW INSERT`).
    Inserts,
    /// Takes items out (`RW DELETE`).
    Deletes,
    /// Changes the filter without adding or removing items (`RW UPDATE`).
    Updates,
}

const fn arg(name: &'static str, kind: ArgKind) -> Arg {
    Arg { name, kind, token: None, optional: false, multiple: false }
}

const fn option(name: &'static str, token: &'static str, kind: ArgKind) -> Arg {
    Arg { name, kind, token: Some(token), optional: true, multiple: false }
}

const KEY: Arg = arg("key", ArgKind::Key);
const ITEM: Arg = arg("item", ArgKind::String);
const ITEMS: Arg = Arg { multiple: true, ..ITEM };
const ITERATOR: Arg = arg("iterator", ArgKind::Integer);
const RESERVE_ARGS: &[Arg] = &[
    KEY,
    arg("capacity", ArgKind::Integer),
    option("bucketsize", "BUCKETSIZE", ArgKind::Integer),
    option("maxiterations", "MAXITERATIONS", ArgKind::Integer),
    option("expansion", "EXPANSION", ArgKind::Integer),
    option("seed", "SEED", ArgKind::Integer),
    option("encoding", "ENCODING", ArgKind::String),
    option("expire", "EXPIRE", ArgKind::Integer),
];
const LOADCHUNK_ARGS: &[Arg] = &[KEY, ITERATOR, arg("data", ArgKind::String)];
const TICK_ARGS: &[Arg] = &[KEY, arg("epoch", ArgKind::Integer)];
const INSERT_ARGS: &[Arg] = &[
    KEY,
    option("capacity", "CAPACITY", ArgKind::Integer),
    option("nocreate", "NOCREATE", ArgKind::PureToken),
    Arg { token: Some("ITEMS"), optional: false, ..option("items", "ITEMS", ArgKind::PureToken) },
    ITEMS,
];

/// The docs of each command, by name (as in [`COMMANDS`](crate::COMMANDS)): RedisBloom's
/// summaries and argument names, so that clients and RedisBloom's own tests find what they
/// expect; the complexities are this filter's where they differ (an insert here has no random
/// walk of `MAXITERATIONS` steps, so no `i` term), and the `SEED`, `ENCODING` and `EXPIRE`
/// options are listed.
pub(crate) const fn docs(name: &str) -> Docs {
    let per_level = "O(k), where k is the number of sub-filters";
    let per_item = "O(n * k), where n is the number of items and k is the number of sub-filters";
    let (summary, complexity, args, key): (&str, &str, &[Arg], KeyUse) = match name.as_bytes() {
        b"cf.reserve" => ("Creates a new Cuckoo Filter", "O(1)", RESERVE_ARGS, KeyUse::Inserts),
        b"cf.add" => ("Adds an item to a Cuckoo Filter", per_level, &[KEY, ITEM], KeyUse::Inserts),
        b"cf.addnx" => (
            "Adds an item to a Cuckoo Filter if the item did not exist previously.",
            per_level,
            &[KEY, ITEM],
            KeyUse::Inserts,
        ),
        b"cf.insert" => (
            "Adds one or more items to a Cuckoo Filter. A filter will be created if it does not exist",
            per_item,
            INSERT_ARGS,
            KeyUse::Inserts,
        ),
        b"cf.insertnx" => (
            "Adds one or more items to a Cuckoo Filter if the items did not exist previously. A \
             filter will be created if it does not exist",
            per_item,
            INSERT_ARGS,
            KeyUse::Inserts,
        ),
        b"cf.exists" => (
            "Checks whether one or more items exist in a Cuckoo Filter",
            per_level,
            &[KEY, ITEM],
            KeyUse::ReadsItems,
        ),
        b"cf.mexists" => (
            "Checks whether one or more items exist in a Cuckoo Filter",
            "O(k * n), where k is the number of sub-filters and n is the number of items",
            &[KEY, ITEMS],
            KeyUse::ReadsItems,
        ),
        b"cf.count" => (
            "Return the number of times an item might be in a Cuckoo Filter",
            per_level,
            &[KEY, ITEM],
            KeyUse::ReadsItems,
        ),
        b"cf.del" => {
            ("Deletes an item from a Cuckoo Filter", per_level, &[KEY, ITEM], KeyUse::Deletes)
        }
        b"cf.compact" => (
            "Does nothing: removes take their fingerprint out of the filter at once",
            "O(1)",
            &[KEY],
            KeyUse::Updates,
        ),
        b"cf.scandump" => (
            "Begins an incremental save of the bloom filter",
            "O(n), where n is the capacity",
            &[KEY, ITERATOR],
            KeyUse::ReadsItems,
        ),
        b"cf.loadchunk" => (
            "Restores a filter previously saved using SCANDUMP",
            "O(n), where n is the capacity",
            LOADCHUNK_ARGS,
            KeyUse::Inserts,
        ),
        b"cf.tick" => (
            "Starts a filter's epochs as its primary did: sent by a primary to its replicas",
            "O(n), where n is the capacity",
            TICK_ARGS,
            KeyUse::Updates,
        ),
        b"cf.info" => {
            ("Returns information about a Cuckoo Filter", "O(1)", &[KEY], KeyUse::ReadsMetadata)
        }
        b"cf.debug" => (
            "Returns RedisBloom's debugging line about a Cuckoo Filter",
            "O(1)",
            &[KEY],
            KeyUse::ReadsMetadata,
        ),
        _ => panic!("a command without docs"),
    };
    Docs { summary, complexity, since: "1.0.0", args, key }
}
