//! One thread against a table larger than the cache, in tight loops over key arrays: the
//! user's case of a server answering a batch of requests or a join probing a filter. For each
//! peer in turn, in one process: fill from empty to capacity (timed), look up a query array
//! once through at 0, 50 and 100% positive (scalar and, where the peer has one, batched), remove
//! every item (timed); peers take turns, for `--rounds` rounds (3), and the table gives medians.
//! Prints ns per operation, the huge pages the process held after the fill
//! (`AnonHugePages` of `/proc/self/smaps_rollup`), and the ratios `BENCHMARKS.md` reports.
//!
//! ```text
//! cargo run --release -p lockfree-cuckoo-eval --bin dram      # 120,000,000 items, 2^24 queries
//! cargo run --release -p lockfree-cuckoo-eval --bin dram -- --items 10000000 --peers ours,floor
//! ```
//!
//! The two-read floor keeps 4 KiB pages (its array is an ordinary heap allocation), so the
//! ratios against it show what the crate gains for its users; `ours-4k` is ours with
//! `Builder::huge_pages(false)`.

use std::hint::black_box;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use lockfree_cuckoo::CuckooFilter;
use lockfree_cuckoo_eval::floor::{CasFloor, Floor};
use lockfree_cuckoo_eval::keys::{key, queries, PRESENT};
use lockfree_cuckoo_eval::number;
use lockfree_cuckoo_eval::peers::{CfAhash, Local};

/// DRAM-resident single-thread rates of every peer in one run, in tight loops over key arrays.
#[derive(Debug, Parser)]
#[command(name = "dram")]
struct Args {
    /// Items each filter is built for and filled with
    #[arg(long, value_name = "N", default_value = "120000000", value_parser = positive)]
    items: usize,
    /// Queries in each lookup array (rounded up to a power of two), each looked up once
    #[arg(long, value_name = "N", default_value = "16777216", value_parser = positive)]
    queries: usize,
    /// Peers to measure, comma-separated, in the order given [default: all]
    #[arg(long, value_enum, value_delimiter = ',', value_name = "PEER,...")]
    peers: Vec<Peer>,
    /// Rounds through every peer; the table gives each measurement's median over the rounds
    #[arg(long, value_name = "N", default_value = "3", value_parser = positive)]
    rounds: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Peer {
    /// Ours, default builder (huge pages on)
    Ours,
    /// Ours with `huge_pages(false)`
    Ours4k,
    /// The two-read floor (4 KiB pages)
    Floor,
    /// The one-CAS floor under writers (4 KiB pages): its "fill" and "remove" are one load and
    /// one compare-and-swap of a random word a key
    CasFloor,
    /// cuckoofilter with ahash
    CfAhash,
}

const SHARES: [u32; 3] = [0, 50, 100];

fn positive(text: &str) -> Result<usize, String> {
    match number(text)? {
        0 => Err("must be positive".into()),
        n => Ok(n),
    }
}

/// ns per operation of one peer; `None` where it has no such operation.
#[derive(Default)]
struct Row {
    name: &'static str,
    huge_kib: Option<u64>,
    fill: Option<f64>,
    contains: [f64; 3],
    batch: Option<[f64; 3]>,
    remove: Option<f64>,
}

/// Kernel-reported huge-page memory of this process, in KiB (Linux).
fn anon_huge_kib() -> Option<u64> {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let line = rollup.lines().find(|l| l.starts_with("AnonHugePages:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn ns_per(count: usize, run: impl FnOnce() -> usize) -> f64 {
    let start = Instant::now();
    black_box(run());
    start.elapsed().as_secs_f64() * 1e9 / count as f64
}

/// ns a lookup over each query array, through `lookup(keys, out)`.
fn lookups(args: &Args, mut lookup: impl FnMut(&[u64], &mut [bool])) -> [f64; 3] {
    let len = args.queries.next_power_of_two();
    let mut out = vec![false; len];
    SHARES.map(|share| {
        let stream = queries(len, args.items, share, 11 + u64::from(share));
        let ns = ns_per(len, || {
            lookup(&stream, &mut out);
            out.iter().filter(|&&hit| hit).count()
        });
        eprint!(" {share}%: {ns:.1} ns;");
        ns
    })
}

/// ns an operation of `op` on every inserted key in turn (a fill or an emptying), printed as
/// `label`.
fn each_key(label: &str, items: usize, mut op: impl FnMut(u64) -> bool) -> f64 {
    let ns = ns_per(items, || (0..items as u64).filter(|&i| !op(key(PRESENT, i))).count());
    eprint!(" {label} {ns:.1} ns;");
    ns
}

fn ours(args: &Args, huge_pages: bool, name: &'static str) -> Row {
    let filter = CuckooFilter::builder().capacity(args.items).huge_pages(huge_pages).build();
    let fill = each_key("fill", args.items, |k| filter.insert(&k).is_ok());
    let huge_kib = anon_huge_kib();
    let contains = lookups(args, |keys, out| {
        keys.iter().zip(out).for_each(|(k, o)| *o = black_box(filter.contains(k)));
    });
    eprint!(" batch");
    let batch = lookups(args, |keys, out| filter.contains_batch(keys, out));
    let remove = each_key("remove", args.items, |k| filter.remove(&k));
    Row { name, huge_kib, fill: Some(fill), contains, batch: Some(batch), remove: Some(remove) }
}

fn floor(args: &Args) -> Row {
    let floor = Floor::new(CuckooFilter::with_capacity(args.items).bucket_count());
    let huge_kib = anon_huge_kib();
    let contains = lookups(args, |keys, out| {
        keys.iter().zip(out).for_each(|(k, o)| *o = black_box(floor.contains(*k)));
    });
    eprint!(" batch");
    let batch = lookups(args, |keys, out| floor.contains_batch(keys, out));
    Row { name: "two-read floor", huge_kib, batch: Some(batch), contains, ..Row::default() }
}

fn cas_floor(args: &Args) -> Row {
    let floor = CasFloor::new(CuckooFilter::with_capacity(args.items).bucket_count());
    let fill = each_key("fill", args.items, |k| floor.write(k));
    let remove = each_key("remove", args.items, |k| floor.write(k));
    Row {
        name: "one-CAS floor",
        huge_kib: anon_huge_kib(),
        fill: Some(fill),
        contains: [f64::NAN; 3],
        remove: Some(remove),
        ..Row::default()
    }
}

fn cf_ahash(args: &Args) -> Row {
    let mut filter = CfAhash::new(args.items);
    let fill = each_key("fill", args.items, |k| filter.insert(k));
    let huge_kib = anon_huge_kib();
    let contains = lookups(args, |keys, out| {
        keys.iter().zip(out).for_each(|(k, o)| *o = black_box(filter.contains(*k)));
    });
    let remove = each_key("remove", args.items, |k| filter.remove(k));
    Row {
        name: "cuckoofilter+ahash",
        huge_kib,
        fill: Some(fill),
        contains,
        remove: Some(remove),
        ..Row::default()
    }
}

/// The median of an odd number of values (the upper median of an even number).
fn median_of(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Each measurement's median over a peer's rounds.
fn median(rows: Vec<Row>) -> Row {
    let of = |f: &dyn Fn(&Row) -> f64| median_of(rows.iter().map(f).collect());
    let maybe = |f: &dyn Fn(&Row) -> Option<f64>| {
        let values: Option<Vec<f64>> = rows.iter().map(f).collect();
        values.map(median_of)
    };
    Row {
        name: rows[0].name,
        huge_kib: rows.iter().filter_map(|r| r.huge_kib).min(),
        fill: maybe(&|r| r.fill),
        contains: [0, 1, 2].map(|i| of(&|r| r.contains[i])),
        batch: rows[0]
            .batch
            .map(|_| [0, 1, 2].map(|i| of(&|r| r.batch.map_or(f64::NAN, |b| b[i])))),
        remove: maybe(&|r| r.remove),
    }
}

fn main() {
    let mut args = Args::parse();
    if args.peers.is_empty() {
        args.peers = Peer::value_variants().to_vec();
    }
    // Peers take turns within each round, so that a slow minute of the shared machine falls on
    // all of them alike.
    let mut rounds: Vec<Vec<Row>> = args.peers.iter().map(|_| Vec::new()).collect();
    for round in 1..=args.rounds {
        for (&peer, measured) in args.peers.iter().zip(&mut rounds) {
            let name = peer.to_possible_value().expect("no variant is skipped");
            eprint!("round {round}, {}:", name.get_name());
            measured.push(match peer {
                Peer::Ours => ours(&args, true, "lockfree-cuckoo"),
                Peer::Ours4k => ours(&args, false, "lockfree-cuckoo, 4 KiB pages"),
                Peer::Floor => floor(&args),
                Peer::CasFloor => cas_floor(&args),
                Peer::CfAhash => cf_ahash(&args),
            });
            eprintln!();
        }
    }
    let rows: Vec<Row> = rounds.into_iter().map(median).collect();

    let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    println!(
        "{} items, {} queries an array, ns per operation, one thread, medians of {} rounds",
        args.items,
        args.queries.next_power_of_two(),
        args.rounds
    );
    println!();
    println!(
        "| peer | huge pages after fill | fill | contains 0% | 50% | 100% | batch 0% | 50% | 100% \
         | remove |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        // The least any round held: the table's huge pages, not the process's leftovers.
        let huge = r.huge_kib.map_or("-".to_string(), |k| format!("{} MiB", k / 1024));
        let [b0, b50, b100] = r.batch.map_or([None; 3], |b| b.map(Some));
        let [c0, c50, c100] = r.contains.map(|ns| (!ns.is_nan()).then_some(ns));
        println!(
            "| {} | {huge} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.name,
            opt(r.fill),
            opt(c0),
            opt(c50),
            opt(c100),
            opt(b0),
            opt(b50),
            opt(b100),
            opt(r.remove)
        );
    }

    // Ratios of rates (a peer's ns over ours), for each row of ours.
    let find = |name: &str| rows.iter().find(|r| r.name == name);
    let (floor, cf) = (find("two-read floor"), find("cuckoofilter+ahash"));
    let cas = find("one-CAS floor");
    for ours in rows.iter().filter(|r| r.name.starts_with("lockfree-cuckoo")) {
        println!();
        println!("{}, rate over the peer's rate (higher is better):", ours.name);
        let share = |f: &dyn Fn(usize) -> f64| {
            SHARES.iter().enumerate().map(|(i, s)| format!("{s}%: {:.2}", f(i))).collect::<Vec<_>>()
        };
        if let Some(cf) = cf {
            let c = share(&|i| cf.contains[i] / ours.contains[i]);
            println!("- contains / cuckoofilter+ahash: {}", c.join(", "));
            if let (Some(o), Some(p)) = (ours.fill, cf.fill) {
                println!("- fill / cuckoofilter+ahash: {:.2}", p / o);
            }
            if let (Some(o), Some(p)) = (ours.remove, cf.remove) {
                println!("- remove / cuckoofilter+ahash: {:.2}", p / o);
            }
        }
        if let Some(cas) = cas {
            if let (Some(o), Some(p)) = (ours.fill, cas.fill) {
                println!("- fill / one-CAS floor: {:.2}", p / o);
            }
            if let (Some(o), Some(p)) = (ours.remove, cas.remove) {
                println!("- remove / one-CAS floor: {:.2}", p / o);
            }
        }
        if let Some(floor) = floor {
            let c = share(&|i| floor.contains[i] / ours.contains[i]);
            println!("- contains / two-read floor: {}", c.join(", "));
            if let (Some(o), Some(p)) = (ours.batch, floor.batch) {
                let b = share(&|i| p[i] / o[i]);
                println!("- contains_batch / batched floor: {}", b.join(", "));
            }
        }
    }
}
