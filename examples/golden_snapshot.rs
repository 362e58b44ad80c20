//! Writes the golden snapshot of the current format, `tests/data/golden-v2.bin` (or the path
//! given as the first argument). The filter is built single-threaded with a hasher specified in the tests, so the
//! output is the same on every run and platform.
//!
//! ```sh
//! cargo run --example golden_snapshot -- tests/data/golden-v2.bin
//! ```
//!
//! Write a new file only together with a new format version, and keep the old ones: the golden
//! test exists to catch changes that make files unreadable.

#[path = "../tests/snapshot_common/mod.rs"]
mod snapshot_common;

fn main() -> std::io::Result<()> {
    let path = std::env::args().nth(1).unwrap_or_else(|| "tests/data/golden-v2.bin".into());
    let filter = snapshot_common::golden_filter();
    let bytes = filter.to_bytes();
    std::fs::write(&path, &bytes)?;
    println!("wrote {} bytes, {} items, to {path}", bytes.len(), filter.len());
    Ok(())
}
