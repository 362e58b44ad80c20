//! `lockfree-cuckoo-server`: a Redis-protocol filter service on [`lockfree_cuckoo`].
//!
//! Each worker thread runs a single-threaded tokio runtime serving the connections the accept
//! loop hands it in turn, and all of them share the named filters (values of a lock-free map).
//! Clients speak RESP2 or RESP3 (`HELLO 3`) and RedisBloom's cuckoo filter commands, from
//! [`lockfree_cuckoo_commands`], so `redis-cli`, `redis-benchmark` and Redis client libraries
//! work unchanged; `SAVE` writes every filter to disk while clients keep writing, and the file
//! is loaded at start. The server is safe by default: a password (`--requirepass`) gates every
//! command, without one only loopback clients are served (protected mode), and an HTTP request
//! line closes the connection.
//!
//! The modules, from the wire inwards: [`resp`] (framing), [`server`] (connections),
//! [`commands`] (authentication, transactions and the server's own commands), [`store`] (the
//! named filters), [`persist`] (the save file), [`config`] (the command line).

pub mod commands;
pub mod config;
pub mod persist;
pub mod resp;
pub mod server;
pub mod store;
