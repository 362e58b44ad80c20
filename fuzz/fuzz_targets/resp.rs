//! `cargo fuzz run resp`: arbitrary bytes as a connection's input, whole and in two pieces.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lockfree_cuckoo_fuzz::resp(data));
