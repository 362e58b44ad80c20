//! `lockfree-cuckoo-module`: RedisBloom's cuckoo filter commands (`CF.*`) inside Valkey and
//! Redis, on [`lockfree_cuckoo`] filters, so that the engine persists, replicates and shards
//! them.
//!
//! ```text
//! valkey-server --loadmodule target/release/liblockfree_cuckoo_module.so
//! redis-server --loadmodule target/release/liblockfree_cuckoo_module.so --cuckoo.cf-initial-size 4096
//! ```
//!
//! The commands are [`lockfree_cuckoo_commands`]'s, the same as the server's: every `CF.*`
//! command, RedisBloom's options, ranges, error texts and reply shapes in RESP2 and RESP3. The
//! module adds what an engine needs:
//!
//! - **A data type** (`TYPE` answers `LFCuckooF`) saved in RDB (the filter's versioned
//!   snapshot in chunks of 16 MiB), rewritten into an AOF as `CF.LOADCHUNK` commands, and
//!   supporting `MEMORY USAGE`, `COPY`, `DUMP`/`RESTORE` and `DEBUG DIGEST` (`value.rs`).
//! - **Replication**: each new filter's hasher draws a random key (so that clients cannot aim
//!   items at chosen buckets), which replicas and the AOF must share. A command that creates a
//!   filter (`CF.RESERVE`, and `CF.ADD`, `CF.ADDNX`, `CF.INSERT`, `CF.INSERTNX` on a missing
//!   key) is replicated as `CF.RESERVE key capacity BUCKETSIZE b MAXITERATIONS m EXPANSION e
//!   SEED key-of-its-hasher` (and `ENCODING`, or `EXPIRE` for a filter whose items expire),
//!   followed by the command as sent unless it was that `CF.RESERVE`
//!   (the engine wraps the two in `MULTI`/`EXEC`). Every other write command that may have
//!   changed a filter is replicated as it was sent, and a `CF.LOADCHUNK` transfer as one
//!   command once its chunks make a filter (the snapshot records the key). The filter is
//!   deterministic, so a replica that applies the same commands holds the same bytes
//!   (`DEBUG DIGEST-VALUE` agrees on both), and so does a restart from the AOF.
//! - **Items that expire** (`CF.RESERVE key capacity EXPIRE seconds`): the primary starts each
//!   such filter's epochs, on a timer and before writes, and replicates each as `CF.TICK key
//!   epoch`, which replicas and the AOF apply and clients may not send (`expiry.rs`); the RDB,
//!   the AOF rewrite and `DUMP` keep the entries' ages and the epoch. `DEBUG DIGEST-VALUE`
//!   leaves out the one thing a replica's copy differs in, the time into the epoch.
//! - **Configuration**: RedisBloom's `cf-initial-size` (the capacity `CF.ADD` and `CF.INSERT`
//!   create a filter with, 1024), `cf-bucket-size`, `cf-max-iterations` and
//!   `cf-expansion-factor` (the options a `CF.RESERVE` leaves out), `cf-max-expansions` (the
//!   most levels a filter grows to), under `cuckoo.`, with their ranges (`CONFIGS`), and
//!   `cuckoo.cf-max-memory` (how far one growable filter grows,
//!   64 MiB: about 30 million items from 1024; a growable `CF.RESERVE` whose first table is
//!   larger gets that table and does not grow), in the engine's configuration file, on its
//!   command line (`--cuckoo.cf-initial-size 4096`) or with `CONFIG SET`. The ceiling is one
//!   key's share of an engine that many applications use: without it, any client that may
//!   write a key could grow one filter into gigabytes of the engine's `maxmemory`. Raise it
//!   for larger growable filters, or reserve a fixed filter (`EXPANSION 0`), which takes what
//!   its capacity needs. It also bounds the bytes that clients' `CF.LOADCHUNK` transfers hold
//!   together (not the chunks of the AOF or of the primary). Primary and replicas must have
//!   the same `cf-max-memory`, as for RedisBloom; `cf-initial-size` may differ, since creations
//!   replicate with their capacity.
//! - **Memory**: tables come from the engine's allocator (zeroed by `calloc`, so that a reserve
//!   of gigabytes neither blocks the engine nor touches the pages), and a filter whose first
//!   table would pass `maxmemory` is refused before it is allocated (`keys.rs`).
//! - **`INFO cuckoo`**: the number of filters and their bytes.
//! - **ACL categories** as RedisBloom's: `read` or `write` (and `fast`) by what each command
//!   does, and `cuckoo` for all of them, on engines that let a module set them (Valkey 8 and
//!   later, Redis 8; Redis 7.2 the first two). Redis 7.0 puts module commands in no category:
//!   grant them with `+@all` or by name.
//!
//! Where these commands differ from RedisBloom's is listed in the commands crate. Beyond
//! that: a key of another type is a `WRONGTYPE` error for every command (RedisBloom answers 0
//! to `CF.EXISTS` and `CF.COUNT` on it), and the module does not defragment its values.

mod alloc;
mod command_info;
mod expiry;
mod keys;
mod reply;
mod value;

use std::ffi::CString;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicI64, Ordering};

use lockfree_cuckoo_commands::{
    find, parse, Command, Keyspace, Protocol, Reply, COMMANDS, DEFAULT_BUCKET_SIZE,
    DEFAULT_EXPANSION, DEFAULT_MAX_ITERATIONS, MAX_EXPANSION, MAX_LEVELS_REACHED,
};
use valkey_module::configuration::ConfigurationFlags;
use valkey_module::{
    raw, valkey_module, Context, ContextFlags, InfoContext, Status, ValkeyResult, ValkeyString,
};
use valkey_module_macros::info_command_handler;

use crate::alloc::EngineAlloc;
use crate::keys::{
    Keys, BUCKET_SIZE, DEFAULT_MAX_MEMORY, EXPANSION_FACTOR, INITIAL_SIZE, MAX_EXPANSIONS,
    MAX_ITERATIONS, MAX_MEMORY,
};
use crate::value::CF_TYPE;

/// Every `CF.*` command, through one handler that parses it (the name is its first argument).
extern "C" fn run_command(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    let context = Context::new(ctx);
    let args = valkey_module::decode_args(ctx, argv, argc);
    let words: Vec<&[u8]> = args.iter().map(ValkeyString::as_slice).collect();
    let protocol = if context.get_flags().contains(ContextFlags::FLAGS_RESP3) {
        Protocol::Resp3
    } else {
        Protocol::Resp2
    };
    let write = words.first().and_then(|name| find(name)).is_some_and(|spec| spec.write);
    let keys = Keys::new(&context, write);
    let reply = match parse(&words[..]) {
        Some(Ok(command)) => {
            // A write finds its filter's epoch up to date; the epoch it starts is replicated
            // before the write.
            if write && !matches!(command, Command::Tick { .. }) {
                let key = command.key();
                let _ = keys.read(key, |e| e.map(|e| expiry::tick(&context, key, e)));
            }
            // A transfer's chunks are replicated once they make a filter (below).
            let loading = match command {
                Command::LoadChunk { key, .. } => Some((key, exists(&keys, key))),
                _ => None,
            };
            let reply = command.run(&keys, protocol);
            match loading {
                Some((key, existed)) => replicate_load(&context, &keys, key, existed, &reply),
                // A new filter is replicated with the key of its hasher.
                None if keys.created.get() => {
                    replicate_created(&context, &keys, &command, &args);
                }
                None if write && changed(&reply) => context.replicate_verbatim(),
                None => {}
            }
            reply
        }
        Some(Err(reply)) => reply,
        None => Reply::error("ERR unknown command"),
    };
    reply::send(ctx, &reply);
    raw::Status::Ok as c_int
}

/// Whether a write command's reply says it may have changed a filter: every reply but an
/// error, and `Filter is full` and `Maximum expansions reached`, after which a growable filter
/// at its ceiling or level limit may have completed pending removals. Replicas apply the same commands to the same bytes: the filter is
/// deterministic, so they end with the same bytes (and answer the same errors).
fn changed(reply: &Reply) -> bool {
    !reply.is_error()
        || *reply == Reply::error("Filter is full")
        || *reply == Reply::error(MAX_LEVELS_REACHED)
}

fn exists(keys: &Keys<'_>, key: &[u8]) -> bool {
    keys.read(key, |entry| entry.is_some()).unwrap_or(true)
}

/// `command` created the filter at its key, whose hasher drew a random key: replicas and the AOF
/// get `CF.RESERVE` with every setting and the hasher's key as `SEED`, then the command as sent
/// (unless it was that `CF.RESERVE`), so that they build the same filter and apply the same
/// writes to it, whatever their own `cuckoo.cf-initial-size`. The engine wraps the two in
/// `MULTI`/`EXEC` (all that one module command replicates is one transaction), so a replica
/// never holds the new filter without the command's items.
fn replicate_created(
    context: &Context,
    keys: &Keys<'_>,
    command: &Command<'_>,
    args: &[ValkeyString],
) {
    let key = command.key();
    let made = keys.read(key, |e| e.map(|e| (e.settings, e.filter.hasher().seed())));
    let Ok(Some((settings, seed))) = made else {
        // No filter under the key (the command was refused): it goes as it came.
        context.replicate_verbatim();
        return;
    };
    let mut words = vec![
        settings.capacity.to_string(),
        "BUCKETSIZE".into(),
        settings.bucket_size.to_string(),
        "MAXITERATIONS".into(),
        settings.max_iterations.to_string(),
        "EXPANSION".into(),
        settings.expansion.to_string(),
        "SEED".into(),
        seed.to_string(),
    ];
    // A filter whose items expire has its own layout, which `EXPIRE` chooses.
    match settings.expire {
        Some(seconds) => words.extend(["EXPIRE".into(), seconds.to_string()]),
        None => words.extend([
            "ENCODING".into(),
            lockfree_cuckoo_commands::encoding_name(settings.encoding).into(),
        ]),
    }
    let reserve: Vec<&[u8]> =
        std::iter::once(key).chain(words.iter().map(String::as_bytes)).collect();
    context.replicate("CF.RESERVE", &reserve[..]);
    if matches!(command, Command::Reserve { .. }) {
        return;
    }
    let (Some(name), Some(rest)) = (args.first(), args.get(1..)) else { return };
    let rest: Vec<&ValkeyString> = rest.iter().collect();
    context.replicate(&name.to_string_lossy(), &rest[..]);
}

/// `CF.LOADCHUNK` keeps its chunks aside until they make a filter: a partial transfer is in
/// no RDB and on no replica. The chunk that completes one replicates the whole snapshot as one
/// `CF.LOADCHUNK`, so replicas and the AOF create the filter in one command or not at all (the
/// snapshot records the key of the filter's hasher).
fn replicate_load(context: &Context, keys: &Keys<'_>, key: &[u8], existed: bool, reply: &Reply) {
    if existed || reply.is_error() {
        return;
    }
    let Ok(Some(snapshot)) = keys.read(key, |entry| entry.map(|e| e.filter.to_bytes())) else {
        return;
    };
    let cursor = (snapshot.len() + 1).to_string();
    context.replicate("CF.LOADCHUNK", &[key, cursor.as_bytes(), &snapshot[..]][..]);
}

/// One numeric configuration: its name (after the module's `cuckoo.`), where its value lives,
/// its default and its range.
struct Config {
    name: &'static str,
    value: &'static AtomicI64,
    default: i64,
    min: i64,
    max: i64,
}

/// Every configuration, RedisBloom's names, defaults and ranges where RedisBloom has them.
/// `valkey_module!` registers them in this order.
const CONFIGS: [Config; 6] = [
    Config { name: "cf-initial-size", value: &INITIAL_SIZE, default: 1024, min: 2, max: 1 << 30 },
    Config {
        name: "cf-max-memory",
        value: &MAX_MEMORY,
        default: DEFAULT_MAX_MEMORY,
        min: 1 << 16,
        max: i64::MAX,
    },
    Config {
        name: "cf-bucket-size",
        value: &BUCKET_SIZE,
        default: DEFAULT_BUCKET_SIZE as i64,
        min: 1,
        max: 255,
    },
    Config {
        name: "cf-max-iterations",
        value: &MAX_ITERATIONS,
        default: DEFAULT_MAX_ITERATIONS as i64,
        min: 1,
        max: 65_535,
    },
    Config {
        name: "cf-expansion-factor",
        value: &EXPANSION_FACTOR,
        default: DEFAULT_EXPANSION as i64,
        min: 0,
        max: MAX_EXPANSION,
    },
    // RedisBloom's range; past 32 (the most levels any filter has) it changes nothing.
    Config { name: "cf-max-expansions", value: &MAX_EXPANSIONS, default: 32, min: 1, max: 65_535 },
];

/// The configurations' values against their ranges. The engine checks `CONFIG SET` and the
/// configuration file, but a value given as a module argument (`--loadmodule ... cf-initial-size
/// 0`) becomes the registered default, which no engine checks: such a value stops the load with
/// a log line rather than making filters the ranges rule out.
fn configs_in_range(ctx: &Context) -> bool {
    CONFIGS.iter().all(|config| {
        let value = config.value.load(Ordering::Relaxed);
        let fits = (config.min..=config.max).contains(&value);
        if !fits {
            ctx.log_warning(&format!(
                "cuckoo.{}: {value} is out of its range [{}, {}]",
                config.name, config.min, config.max
            ));
        }
        fits
    })
}

fn init(ctx: &Context, _args: &[ValkeyString]) -> Status {
    if !configs_in_range(ctx) {
        return Status::Err;
    }
    // Short reads in RDB and RESTORE payloads become errors the type's loader sees, not aborts.
    ctx.set_module_options(raw::ModuleOptions::HANDLE_IO_ERRORS);
    for spec in COMMANDS {
        let (Ok(name), Ok(flags)) = (CString::new(spec.name), CString::new(spec.flags)) else {
            return Status::Err;
        };
        // SAFETY: the engine's API table is filled once at load, before `init`, and only read.
        let Some(create) = (unsafe { raw::RedisModule_CreateCommand }) else {
            return Status::Err;
        };
        // SAFETY: the strings outlive the call, and the handler has the engine's signature.
        let created =
            unsafe { create(ctx.ctx, name.as_ptr(), Some(run_command), flags.as_ptr(), 1, 1, 1) };
        if created == raw::Status::Err as c_int {
            ctx.log_warning(&format!("cannot register {}", spec.name));
            return Status::Err;
        }
        // SAFETY: as for `create`; the name outlives the call.
        let command = unsafe { raw::RedisModule_GetCommand }
            .map_or(std::ptr::null_mut(), |get| unsafe { get(ctx.ctx, name.as_ptr()) });
        if command.is_null() || !command_info::set(command, spec) {
            ctx.log_notice(&format!("{}: this engine takes no command docs", spec.name));
        }
    }
    set_acl_categories(ctx);
    expiry::start(ctx);
    Status::Ok
}

/// The ACL categories of every command, where the engine lets a module set them: RedisBloom's
/// `read` or `write` (and `fast`), which engines give module commands only when the module
/// names them, and `cuckoo` where the engine also lets a module add a category.
fn set_acl_categories(ctx: &Context) {
    // SAFETY: the engine's API table is filled once at load, before `init`, and only read;
    // a function the engine lacks is None.
    let api = unsafe {
        (
            raw::RedisModule_AddACLCategory,
            raw::RedisModule_GetCommand,
            raw::RedisModule_SetCommandACLCategories,
        )
    };
    let (add, Some(get), Some(set)) = api else {
        ctx.log_notice(
            "this engine sets module commands no ACL categories: grant them with +@all or by name",
        );
        return;
    };
    // SAFETY: the strings outlive the calls; the command handles come from the engine.
    unsafe {
        let cuckoo =
            add.is_some_and(|add| add(ctx.ctx, c"cuckoo".as_ptr()) == raw::Status::Ok as c_int);
        for spec in COMMANDS {
            let categories = if cuckoo {
                format!("cuckoo {}", spec.categories)
            } else {
                spec.categories.to_owned()
            };
            let (Ok(name), Ok(categories)) = (CString::new(spec.name), CString::new(categories))
            else {
                continue;
            };
            let command = get(ctx.ctx, name.as_ptr());
            if !command.is_null() {
                set(command, categories.as_ptr());
            }
        }
    }
}

#[info_command_handler]
fn info(ctx: &InfoContext, for_crash_report: bool) -> ValkeyResult<()> {
    // A crash may have happened with the set of values locked: a report leaves it alone.
    if for_crash_report {
        return Ok(());
    }
    let (filters, bytes) = value::totals();
    ctx.builder()
        .add_section("filters")
        .field("filters", filters as i64)?
        .field("memory_bytes", bytes as i64)?
        .build_section()?
        .build_info()?;
    Ok(())
}

valkey_module! {
    name: "cuckoo",
    version: 1,
    allocator: (EngineAlloc, EngineAlloc),
    data_types: [CF_TYPE],
    init: init,
    commands: [],
    configurations: [
        i64: [
            [CONFIGS[0].name, CONFIGS[0].value, CONFIGS[0].default, CONFIGS[0].min, CONFIGS[0].max, ConfigurationFlags::DEFAULT, None],
            [CONFIGS[1].name, CONFIGS[1].value, CONFIGS[1].default, CONFIGS[1].min, CONFIGS[1].max, ConfigurationFlags::DEFAULT, None],
            [CONFIGS[2].name, CONFIGS[2].value, CONFIGS[2].default, CONFIGS[2].min, CONFIGS[2].max, ConfigurationFlags::DEFAULT, None],
            [CONFIGS[3].name, CONFIGS[3].value, CONFIGS[3].default, CONFIGS[3].min, CONFIGS[3].max, ConfigurationFlags::DEFAULT, None],
            [CONFIGS[4].name, CONFIGS[4].value, CONFIGS[4].default, CONFIGS[4].min, CONFIGS[4].max, ConfigurationFlags::DEFAULT, None],
            [CONFIGS[5].name, CONFIGS[5].value, CONFIGS[5].default, CONFIGS[5].min, CONFIGS[5].max, ConfigurationFlags::DEFAULT, None],
        ],
        string: [],
        bool: [],
        enum: [],
        module_args_as_configuration: true,
    ]
}
