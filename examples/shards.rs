//! Shards built on four threads (or four machines), shipped as snapshot bytes, merged into one
//! filter.
//!
//! `cargo run --release --example shards`

use std::thread;

use lockfree_cuckoo::CuckooFilter;

const SHARDS: u64 = 4;
const PER_SHARD: u64 = 250_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Every shard is built with the same capacity and seed, so they can be merged. The seed is
    // the job's secret: drawn once, then handed to every shard's builder.
    let capacity = (SHARDS * PER_SHARD) as usize;
    let seed = lockfree_cuckoo::DefaultHashBuilder::new().seed();
    let shard_filter = move || CuckooFilter::builder().capacity(capacity).seed(seed).build();
    let shipped: Vec<Vec<u8>> = (0..SHARDS)
        .map(|shard| {
            thread::spawn(move || {
                let filter = shard_filter();
                for i in 0..PER_SHARD {
                    filter.insert(&(shard, i)).expect("within capacity");
                }
                filter.to_bytes()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|worker| worker.join().expect("shard builder panicked"))
        .collect();

    let merged = shard_filter();
    for (shard, bytes) in shipped.iter().enumerate() {
        let filter = CuckooFilter::from_bytes(bytes)?;
        merged.merge(&filter)?;
        println!(
            "shard {shard}: {} items in {} bytes, merged: {} items",
            filter.len(),
            bytes.len(),
            merged.len()
        );
    }
    let missing = (0..SHARDS)
        .flat_map(|shard| (0..PER_SHARD).map(move |i| (shard, i)))
        .filter(|item| !merged.contains(item))
        .count();
    println!(
        "{} items from {SHARDS} shards, {missing} missing, load {:.3}",
        merged.len(),
        merged.load_factor()
    );
    assert_eq!(missing, 0);
    Ok(())
}
