//! `cargo fuzz run differential`: arbitrary operation sequences against a multiset model.
#![no_main]

use lockfree_cuckoo_fuzz::{differential, Op};

libfuzzer_sys::fuzz_target!(|input: (u8, Vec<Op>)| differential(input.0, &input.1));
