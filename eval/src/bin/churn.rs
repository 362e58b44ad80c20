//! Churn of live items in a grown filter: the workload that made growable filters grow without
//! bound. `--live` items go into a growable filter built for `--start` items (by default, for
//! them); if that did not grow it, it then grows once (fillers inserted until a second level
//! exists, then removed), so that the live items sit in level 0 and the newest level is empty. `--threads` threads, each owning an equal share of the live items,
//! then insert each of theirs once more and remove it again, `--rounds` times. Prints, before and
//! after the churn: levels, memory, `len`, fingerprints of removed items still held (pending and
//! for good), inserts refused, false negatives, and the churn's time. `--encoding semi-sorted`
//! churns a filter of semi-sorted buckets.
//!
//! ```text
//! cargo run --release -p lockfree-cuckoo-eval --bin churn                      # 2,000 items
//! cargo run --release -p lockfree-cuckoo-eval --bin churn -- --live 200000 --threads 4
//! cargo run --release -p lockfree-cuckoo-eval --bin churn -- --ceiling memory
//! cargo run --release -p lockfree-cuckoo-eval --bin churn -- --live 1000000 --start 1000 --rounds 3
//! cargo run --release -p lockfree-cuckoo-eval --bin churn -- --ceiling items --encoding semi-sorted
//! ```
//!
//! Exit status 1 if the churn grew the filter, lost an item, or left `len` inexact.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use clap::{Parser, ValueEnum};
use lockfree_cuckoo::{CuckooFilter, DefaultHashBuilder, Layout, Plain, SemiSorted};
use lockfree_cuckoo_eval::keys::{key, FILLER, PRESENT};
use lockfree_cuckoo_eval::number;

#[derive(Debug, Parser)]
#[command(name = "churn")]
struct Args {
    /// Live items, inserted once and kept
    #[arg(long, value_name = "N", default_value = "2000", value_parser = number::<u64>)]
    live: u64,
    /// Items the filter is built for [default: --live]
    #[arg(long, value_name = "N", value_parser = number::<u64>)]
    start: Option<u64>,
    /// Rounds of re-inserting and removing every live item
    #[arg(long, value_name = "N", default_value = "30", value_parser = number::<u64>)]
    rounds: u64,
    /// Threads sharing the live items
    #[arg(long, value_name = "N", default_value = "1", value_parser = number::<u64>)]
    threads: u64,
    /// A ceiling on the filter: none, items (4 times the live count), or memory (4 times the
    /// memory of a filter presized for the live items)
    #[arg(long, value_enum, default_value = "none")]
    ceiling: Ceiling,
    /// The filter's bucket encoding
    #[arg(long, value_enum, default_value = "plain")]
    encoding: BucketEncoding,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum BucketEncoding {
    Plain,
    SemiSorted,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Ceiling {
    None,
    Items,
    Memory,
}

/// The filter's state as the churn sees it.
#[derive(Debug)]
struct State {
    levels: usize,
    memory: usize,
    len: usize,
    kept: u64,
    pending: u64,
}

impl State {
    fn of<L: Layout>(filter: &CuckooFilter<DefaultHashBuilder, L>) -> Self {
        let stats = filter.stats();
        Self {
            levels: stats.levels,
            memory: filter.memory_usage(),
            len: filter.len(),
            kept: stats.retained_removals,
            pending: stats.pending_removals,
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    match args.encoding {
        BucketEncoding::Plain => churn::<Plain>(&args),
        BucketEncoding::SemiSorted => churn::<SemiSorted>(&args),
    }
}

/// The churn in a filter of layout `L`.
fn churn<L: Layout>(args: &Args) -> ExitCode {
    let live = args.live;
    let builder =
        CuckooFilter::builder().capacity(args.start.unwrap_or(live) as usize).layout::<L>();
    let filter = match args.ceiling {
        Ceiling::None => builder.growable().build(),
        Ceiling::Items => builder.max_capacity(4 * live as usize).build(),
        Ceiling::Memory => {
            let presized = CuckooFilter::builder()
                .capacity(live as usize)
                .layout::<L>()
                .build()
                .memory_usage();
            builder.max_memory(4 * presized).build()
        }
    };
    for i in 0..live {
        filter.insert(&key(PRESENT, i)).expect("a growable filter grows");
    }
    let mut fillers = 0;
    while filter.stats().levels < 2 {
        filter.insert(&key(FILLER, fillers)).expect("a growable filter grows");
        fillers += 1;
    }
    for i in 0..fillers {
        assert!(filter.remove(&key(FILLER, i)));
    }
    let before = State::of(&filter);
    let (refused, missed) = (AtomicU64::new(0), AtomicU64::new(0));
    let started = Instant::now();
    std::thread::scope(|scope| {
        for thread in 0..args.threads {
            let (filter, refused, missed) = (&filter, &refused, &missed);
            let mine = (0..live).filter(move |i| i % args.threads == thread);
            scope.spawn(move || {
                for _ in 0..args.rounds {
                    for i in mine.clone() {
                        if filter.insert(&key(PRESENT, i)).is_err() {
                            refused.fetch_add(1, Relaxed);
                        } else if !filter.remove(&key(PRESENT, i)) {
                            missed.fetch_add(1, Relaxed);
                        }
                    }
                }
            });
        }
    });
    let elapsed = started.elapsed();
    let after = State::of(&filter);
    let lost = (0..live).filter(|&i| !filter.contains(&key(PRESENT, i))).count();
    let (refused, missed) = (refused.into_inner(), missed.into_inner());
    println!(
        "churn: {live} live items, {} thread(s), {} rounds, ceiling {:?}, {} buckets",
        args.threads,
        args.rounds,
        args.ceiling,
        filter.encoding()
    );
    for (when, s) in [("before", &before), ("after", &after)] {
        println!(
            "  {when:<6} levels {}, memory {} B ({:.2} B/item), len {}, kept {} ({} pending)",
            s.levels,
            s.memory,
            s.memory as f64 / live as f64,
            s.len,
            s.kept,
            s.pending
        );
    }
    println!(
        "  churn {:.3} s ({:.1} ns per insert + remove), refused {refused}, removes that found \
         nothing {missed}, false negatives {lost}",
        elapsed.as_secs_f64(),
        elapsed.as_nanos() as f64 / (live * args.rounds) as f64 * args.threads as f64
    );
    let grew = after.levels > before.levels || after.memory > before.memory;
    let ok = !grew && lost == 0 && after.len == live as usize && refused == 0 && missed == 0;
    println!("  {}", if ok { "bounded" } else { "FAILED: grew, lost, refused or miscounted" });
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
