//! Writes the golden snapshot `tests/data/golden-v1.bin` (or the path given as the first
//! argument). The filter is built single-threaded with a hasher specified in the tests, so the
//! output is the same on every run and platform.
//!
//! ```sh
//! cargo run --example golden_snapshot -- tests/data/golden-v1.bin
//! ```
//!
//! Regenerate only together with a new format version: the golden test exists to catch changes
//! that make old files unreadable.

#[path = "../tests/snapshot_common/mod.rs"]
mod snapshot_common;

fn main() -> std::io::Result<()> {
    let path = std::env::args().nth(1).unwrap_or_else(|| "tests/data/golden-v1.bin".into());
    let filter = snapshot_common::golden_filter();
    let bytes = filter.to_bytes();
    std::fs::write(&path, &bytes)?;
    println!("wrote {} bytes, {} items, to {path}", bytes.len(), filter.len());
    Ok(())
}
