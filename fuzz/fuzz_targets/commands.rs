//! `cargo fuzz run commands`: arbitrary requests through the commands and the server's session.
#![no_main]

libfuzzer_sys::fuzz_target!(|requests: Vec<Vec<Vec<u8>>>| lockfree_cuckoo_fuzz::commands(
    &requests
));
