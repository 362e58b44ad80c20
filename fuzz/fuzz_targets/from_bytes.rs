//! `cargo fuzz run from_bytes`: arbitrary bytes as a snapshot.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lockfree_cuckoo_fuzz::load(data));
