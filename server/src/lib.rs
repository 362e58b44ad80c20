//! `lockfree-cuckoo-server`: a Redis-protocol filter service on [`lockfree_cuckoo`].
//!
//! Every connection is a task on a multi-threaded tokio runtime, and all of them share the
//! named filters (`Arc<CuckooFilter>` values in a map that is read without a lock). Clients
//! speak RESP2 and RedisBloom's cuckoo filter commands (`CF.RESERVE`, `CF.ADD`, `CF.ADDNX`,
//! `CF.EXISTS`, `CF.MEXISTS`, `CF.DEL`, `CF.COUNT`, `CF.INFO`), so `redis-cli`,
//! `redis-benchmark` and Redis client libraries work unchanged; `SAVE` writes every filter to
//! disk while clients keep writing, and the file is loaded at start.
//!
//! The modules, from the wire inwards: [`resp`] (framing), [`server`] (connections),
//! [`commands`] (what each command does), [`store`] (the named filters), [`persist`] (the
//! save file), [`config`] (the command line).

pub mod commands;
pub mod config;
pub mod persist;
pub mod resp;
pub mod server;
pub mod store;
