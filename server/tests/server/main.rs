//! The server binary, started on a loopback port and driven by the `redis` crate, raw sockets,
//! `redis-cli` and `redis-benchmark`.

mod bad_input;
mod common;
mod hostile;
mod memory;
mod persistence;
mod redis_tools;
mod replies;
mod resources;
mod security;
