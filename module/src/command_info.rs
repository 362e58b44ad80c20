//! Each command's info for `COMMAND DOCS` and `COMMAND INFO` (summary, complexity, arguments,
//! key specification), from the commands' [`Docs`], through `RedisModule_SetCommandInfo` on
//! engines that have it (Redis 7.0 and later, Valkey).

use std::ffi::{c_char, c_int, CString};
use std::mem::size_of;
use std::ptr;

use lockfree_cuckoo_commands::{ArgKind, KeyUse, Spec};
use valkey_module::raw;

/// The strings of one command's info, kept until the engine has copied them.
#[derive(Default)]
struct Strings(Vec<CString>);

impl Strings {
    /// `text` as a C string that lives as long as `self`.
    fn add(&mut self, text: &str) -> *const c_char {
        let text = CString::new(text).expect("the docs hold no NUL");
        // The string's bytes are on the heap: the pointer stays valid as the vector grows.
        let pointer = text.as_ptr();
        self.0.push(text);
        pointer
    }
}

/// An all-zero entry, which ends the engine's arrays of arguments and key specifications.
fn terminator<T>() -> T {
    // SAFETY: used only for the engine's plain C structs of pointers and integers, for which
    // all-zero bits are valid (null pointers, zero numbers).
    unsafe { std::mem::zeroed() }
}

/// The key specification of a command whose key is argument 1.
fn key_spec(key: KeyUse) -> raw::RedisModuleCommandKeySpec {
    let flags = match key {
        KeyUse::ReadsItems => raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
        KeyUse::ReadsMetadata => raw::REDISMODULE_CMD_KEY_RO,
        KeyUse::Inserts => raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_INSERT,
        KeyUse::Deletes => raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_DELETE,
        KeyUse::Updates => raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE,
    };
    let mut spec: raw::RedisModuleCommandKeySpec = terminator();
    spec.flags = u64::from(flags);
    spec.begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
    spec.bs.index.pos = 1;
    spec.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
    // One key: the last is the first, step 1, no limit.
    spec.fk.range = raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_1 {
        lastkey: 0,
        keystep: 1,
        limit: 0,
    };
    spec
}

/// Sets `spec`'s info on `command`, the engine's handle of it. False when the engine has no
/// command info (it then lists the command without docs) or refuses it.
pub(crate) fn set(command: *mut raw::RedisModuleCommand, spec: &Spec) -> bool {
    // SAFETY: the engine's API table is filled at load, before `init`, and only read after; a
    // function the engine lacks is None.
    let Some(set_info) = (unsafe { raw::RedisModule_SetCommandInfo }) else { return false };
    let docs = spec.docs;
    let mut strings = Strings::default();
    let mut args: Vec<raw::RedisModuleCommandArg> = docs
        .args
        .iter()
        .map(|arg| {
            let mut flags = raw::REDISMODULE_CMD_ARG_NONE;
            if arg.optional {
                flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL;
            }
            if arg.multiple {
                flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE;
            }
            let mut entry: raw::RedisModuleCommandArg = terminator();
            entry.name = strings.add(arg.name);
            entry.type_ = match arg.kind {
                ArgKind::Key => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
                ArgKind::String => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
                ArgKind::Integer => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
                ArgKind::PureToken => {
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN
                }
            };
            // The key's argument refers to the one key specification.
            entry.key_spec_index = if arg.kind == ArgKind::Key { 0 } else { -1 };
            entry.token = arg.token.map_or(ptr::null(), |token| strings.add(token));
            entry.flags = flags as c_int;
            entry
        })
        .collect();
    args.push(terminator());
    let mut key_specs = [key_spec(docs.key), terminator()];
    let version = raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: size_of::<raw::RedisModuleCommandArg>(),
    };
    let mut info: raw::RedisModuleCommandInfo = terminator();
    info.version = &version;
    info.summary = strings.add(docs.summary);
    info.complexity = strings.add(docs.complexity);
    info.since = strings.add(docs.since);
    info.arity = spec.arity;
    info.key_specs = key_specs.as_mut_ptr();
    info.args = args.as_mut_ptr();
    // SAFETY: `command` is the engine's handle, and every pointer in `info` points into
    // `strings`, `args`, `key_specs` and `version`, which live past the call; the engine copies
    // what it keeps.
    unsafe { set_info(command, &info) == raw::Status::Ok as c_int }
}
