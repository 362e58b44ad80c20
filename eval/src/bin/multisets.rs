//! First refusals of multisets: distinct items inserted `k` times each (all copies of an item in
//! a row, as a client adding a key k times does) into a fixed filter and into a growable one
//! built for the same capacity, until the first insert is refused. Prints, for each `k`, the
//! items and copies accepted before it as a share of the capacity the filter was built for.
//!
//! An item's copies share its two buckets (eight lanes), so copies of different items that meet
//! in a bucket fill it sooner than distinct items do: no relocation can move a copy out of a
//! pair its item already fills. A growable filter keeps an item's copies in one level, so it
//! refuses them where a fixed one does rather than adding a level.
//!
//! ```text
//! cargo run --release -p lockfree-cuckoo-eval --bin multisets
//! cargo run --release -p lockfree-cuckoo-eval --bin multisets -- --capacity 2000000 --runs 1
//! ```

use clap::Parser;
use lockfree_cuckoo::CuckooFilter;
use lockfree_cuckoo_eval::number;

#[derive(Debug, Parser)]
#[command(name = "multisets")]
struct Args {
    /// Items the filters are built for
    #[arg(long, value_name = "N", default_value = "100000", value_parser = number::<usize>)]
    capacity: usize,
    /// Filters of each kind for each `k`, each under its own seed; the table shows the least
    /// and the median first refusal, and the levels of the growable filters when they stopped
    #[arg(long, value_name = "N", default_value = "5", value_parser = number::<u64>)]
    runs: u64,
}

/// Copies accepted before the first refusal, when each item is inserted `k` times in a row;
/// `None` if none came within `limit` copies.
fn first_refusal(filter: &CuckooFilter, k: usize, limit: usize) -> Option<usize> {
    let mut accepted = 0;
    for item in 0u64.. {
        for _ in 0..k {
            if filter.insert(&item).is_err() {
                return Some(accepted);
            }
            accepted += 1;
        }
        if accepted >= limit {
            return None;
        }
    }
    unreachable!("the item range ends")
}

/// How far a growable filter is filled before a run stops without a refusal: this many times
/// its capacity.
const LIMIT: usize = 16;

fn main() {
    let args = Args::parse();
    println!("Items built for: {}; {} filters of each kind for each k.", args.capacity, args.runs);
    println!();
    println!("| copies of each item | fixed: copies at the first refusal, least / median | growable: least / median | growable: levels then |");
    println!("|---:|---:|---:|---:|");
    for k in [1, 2, 4, 8] {
        let share = |copies: Option<usize>| {
            copies.map_or(f64::INFINITY, |copies| copies as f64 / args.capacity as f64)
        };
        let limit = LIMIT * args.capacity;
        let mut fixed = Vec::new();
        let mut growable = Vec::new();
        let mut levels = Vec::new();
        for seed in 0..args.runs {
            let builder = || CuckooFilter::builder().capacity(args.capacity).seed(seed);
            fixed.push(share(first_refusal(&builder().build(), k, limit)));
            let filter = builder().growable().build();
            growable.push(share(first_refusal(&filter, k, limit)));
            levels.push(filter.stats().levels);
        }
        for shares in [&mut fixed, &mut growable] {
            shares.sort_by(f64::total_cmp);
        }
        levels.sort_unstable();
        let shown = |share: f64| {
            if share.is_finite() {
                format!("{:.1}%", 100.0 * share)
            } else {
                format!("none up to {LIMIT}x")
            }
        };
        println!(
            "| {k} | {} / {} | {} / {} | {} to {} |",
            shown(fixed[0]),
            shown(fixed[fixed.len() / 2]),
            shown(growable[0]),
            shown(growable[growable.len() / 2]),
            levels[0],
            levels[levels.len() - 1],
        );
    }
}
