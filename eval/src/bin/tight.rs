//! One thread in tight loops over key arrays, at a cache-sized table and a DRAM-sized one: the
//! user's case of a server answering a batch of requests or a join probing a filter.
//!
//! For each table size and each peer in turn, in one process: insert to capacity from empty
//! (timed), look up a query array once through at 0, 50 and 100% positive (scalar and, where
//! the peer has one, batched), remove every item (timed). A small table is filled and emptied
//! again until a million operations are timed. Peers take turns within each round, for
//! `--rounds` rounds, and the tables give medians in ns per operation, with the ratios
//! `BENCHMARKS.md` reports.
//!
//! ```text
//! cargo run --release -p lockfree-cuckoo-eval --bin tight      # 50,000 and 120,000,000 items
//! cargo run --release -p lockfree-cuckoo-eval --bin tight -- --items 50000 --peers ours,cf-ahash
//! ```
//!
//! **Two builds of the crate, paired.** `--against OTHER` runs `OTHER`, this tool built against
//! another revision of the crate (`eval/paired.sh` builds both), and this build in turns, one
//! round each, and gives each measurement's median in both builds with the median and range of
//! the pairwise ratios: a slow minute of the shared machine falls on both builds alike.
//!
//! The tool, and the peers it is built with, use only the API every revision since the first
//! benchmarks has (`with_capacity`, `insert`, `insert_batch`, `contains`, `contains_batch`,
//! `remove`, `bucket_count`, `memory_usage`), so that it builds against them. The two-read floor
//! keeps 4 KiB pages (its array is an ordinary heap allocation).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use clap::Parser;
use lockfree_cuckoo_eval::keys::{key, queries, PRESENT};
use lockfree_cuckoo_eval::number;
use lockfree_cuckoo_eval::peers::{Local, Peer, Sizing, Visit};
use serde::{Deserialize, Serialize};

/// Single-thread rates of every peer in tight loops over key arrays, at each table size.
#[derive(Debug, Parser)]
#[command(name = "tight")]
struct Args {
    /// Items each filter is built for and filled with, one run per value, comma-separated
    #[arg(long, value_name = "N,...", value_delimiter = ',', default_value = "50000,120000000",
          value_parser = positive)]
    items: Vec<usize>,
    /// Queries in each lookup array (rounded up to a power of two), each looked up once
    #[arg(long, value_name = "N", default_value = "4194304", value_parser = positive)]
    queries: usize,
    /// Peers to measure, comma-separated, in the order given [default: all]
    #[arg(long, value_delimiter = ',', value_name = "PEER,...", value_parser = Peer::parser(PEERS))]
    peers: Vec<Peer>,
    /// Rounds through every peer; the tables give each measurement's median over the rounds
    #[arg(long, value_name = "N", default_value = "3", value_parser = positive)]
    rounds: usize,
    /// Print the medians as JSON lines instead of tables
    #[arg(long)]
    json: bool,
    /// Another build of this tool: run it and this build in turns, one round each, and compare
    #[arg(long, value_name = "PATH")]
    against: Option<PathBuf>,
}

/// The peers this tool measures, in their default order.
const PEERS: &[Peer] = &[
    Peer::Ours,
    Peer::OursSemiSorted,
    #[cfg(feature = "windowed")]
    Peer::OursWindowed,
    Peer::Floor,
    Peer::CasFloor,
    Peer::CfAhash,
];

const SHARES: [u32; 3] = [0, 50, 100];

/// The measurements, in the order of the tables' columns.
const MEASURES: [&str; 8] = [
    "fill",
    "contains 0%",
    "contains 50%",
    "contains 100%",
    "batch 0%",
    "batch 50%",
    "batch 100%",
    "remove",
];

/// Fills and removes of a small table are repeated until this many operations are timed.
const TIMED_WRITES: usize = 1 << 20;

fn positive(text: &str) -> Result<usize, String> {
    match number(text)? {
        0 => Err("must be positive".into()),
        n => Ok(n),
    }
}

/// ns per operation of one peer at one size, by measure name; a peer without an operation has
/// no entry for it.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    items: usize,
    peer: String,
    ns: BTreeMap<String, f64>,
}

/// Seconds of `run`, which returns something to keep its work from being optimised away.
fn seconds(run: impl FnOnce() -> usize) -> f64 {
    let start = Instant::now();
    black_box(run());
    start.elapsed().as_secs_f64()
}

/// One size's measurements of one peer, as they are taken.
struct Measure<'a> {
    args: &'a Args,
    items: usize,
    ns: BTreeMap<String, f64>,
}

impl Measure<'_> {
    fn record(&mut self, name: String, ns: f64) {
        eprint!(" {name}: {ns:.1};");
        self.ns.insert(name, ns);
    }

    /// Lookups over each query array through `lookup(keys, out)`, recorded as `label` and the
    /// positive share.
    fn lookups(&mut self, label: &str, mut lookup: impl FnMut(&[u64], &mut [bool])) {
        let len = self.args.queries.next_power_of_two();
        let mut out = vec![false; len];
        for share in SHARES {
            let stream = queries(len, self.items, share, 11 + u64::from(share));
            let s = seconds(|| {
                lookup(&stream, &mut out);
                out.iter().filter(|&&hit| hit).count()
            });
            self.record(format!("{label} {share}%"), s * 1e9 / len as f64);
        }
    }

    /// Fills a filter with every key and empties it again, `reps` times, timing the inserts and
    /// the removes apart, with `between` (the lookups) run once after the first fill.
    fn cycles<F: Local>(&mut self, filter: &mut F, between: impl FnOnce(&mut Self, &mut F)) {
        let reps = TIMED_WRITES.div_ceil(self.items);
        let keys = 0..self.items as u64;
        let (mut filled, mut removed) = (0.0, 0.0);
        let mut between = Some(between);
        for _ in 0..reps {
            filled += seconds(|| keys.clone().filter(|&i| !filter.insert(key(PRESENT, i))).count());
            if let Some(between) = between.take() {
                between(self, filter);
            }
            removed +=
                seconds(|| keys.clone().filter(|&i| !filter.remove(key(PRESENT, i))).count());
        }
        let ops = (reps * self.items) as f64;
        self.record("fill".into(), filled * 1e9 / ops);
        self.record("remove".into(), removed * 1e9 / ops);
    }
}

/// One size's measurements of one peer, each operation it has.
impl Visit for Measure<'_> {
    type Output = BTreeMap<String, f64>;

    fn local<F: Local, M: Fn() -> F>(mut self, peer: Peer, make: M) -> Self::Output {
        let mut filter = make();
        let ops = peer.ops();
        let lookups = |m: &mut Self, filter: &mut F| {
            if ops.contains {
                m.lookups("contains", |keys, out| {
                    keys.iter().zip(out).for_each(|(k, o)| *o = black_box(filter.contains(*k)));
                });
            }
            if peer.has_batch_calls() {
                m.lookups("batch", |keys, out| filter.contains_batch(keys, out));
            }
        };
        if ops.insert {
            self.cycles(&mut filter, lookups);
        } else {
            lookups(&mut self, &mut filter);
        }
        self.ns
    }
}

/// The median of an odd number of values (the upper median of an even number).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Each measurement's median over the rounds of each (size, peer).
fn medians(rounds: &[Vec<Record>]) -> Vec<Record> {
    let Some(first) = rounds.first() else { return Vec::new() };
    first
        .iter()
        .enumerate()
        .map(|(i, record)| Record {
            items: record.items,
            peer: record.peer.clone(),
            ns: record
                .ns
                .keys()
                .map(|name| (name.clone(), median(rounds.iter().map(|r| r[i].ns[name]).collect())))
                .collect(),
        })
        .collect()
}

/// Every size and peer once, in the order given.
fn round(args: &Args, number: usize) -> Vec<Record> {
    let mut records = Vec::new();
    for &items in &args.items {
        for &peer in &args.peers {
            eprint!("round {number}, {items} items, {}:", peer.name());
            let ns =
                peer.visit(Sizing::like_ours(items), Measure { args, items, ns: BTreeMap::new() });
            eprintln!();
            records.push(Record { items, peer: peer.name().into(), ns });
        }
    }
    records
}

fn print_tables(args: &Args, records: &[Record]) {
    let cell = |r: &Record, name: &str| r.ns.get(name).map_or("-".into(), |v| format!("{v:.1}"));
    for &items in &args.items {
        let rows: Vec<&Record> = records.iter().filter(|r| r.items == items).collect();
        println!();
        println!(
            "{items} items, {} queries an array, ns per operation, one thread, medians of {} \
             rounds",
            args.queries.next_power_of_two(),
            args.rounds
        );
        println!();
        println!("| peer | {} |", MEASURES.join(" | "));
        println!("|---|{}", "---:|".repeat(MEASURES.len()));
        for r in &rows {
            let cells: Vec<String> = MEASURES.iter().map(|m| cell(r, m)).collect();
            println!("| {} | {} |", r.peer, cells.join(" | "));
        }
        let find = |peer: Peer| rows.iter().find(|r| r.peer == peer.name());
        let Some(ours) = find(Peer::Ours) else { continue };
        println!();
        println!("{}, rate over the peer's rate (higher is better):", ours.peer);
        // The peer's measure `theirs` over ours `mine`, for every measure both have.
        let ratios = |peer: Peer, pairs: &[(&str, &str)]| {
            let Some(other) = find(peer) else { return };
            let shown: Vec<String> = pairs
                .iter()
                .filter_map(|&(mine, theirs)| {
                    Some(format!("{mine}: {:.2}", other.ns.get(theirs)? / ours.ns.get(mine)?))
                })
                .collect();
            println!("- against {}: {}", other.peer, shown.join(", "));
        };
        let same: Vec<(&str, &str)> = MEASURES.iter().map(|m| (*m, *m)).collect();
        ratios(Peer::CfAhash, &same);
        ratios(Peer::Floor, &same);
        ratios(Peer::CasFloor, &[("fill", "fill"), ("remove", "remove")]);
        // The semi-sorted and windowed layouts' rates over the plain one's (BENCHMARKS.md,
        // "Semi-sorted buckets", "Expiry").
        let layouts = [
            Peer::OursSemiSorted,
            #[cfg(feature = "windowed")]
            Peer::OursWindowed,
        ];
        for layout in layouts {
            let Some(other) = find(layout) else { continue };
            let shown: Vec<String> = MEASURES
                .iter()
                .filter_map(|m| Some(format!("{m}: {:.2}", ours.ns.get(*m)? / other.ns.get(*m)?)))
                .collect();
            println!("- {} over {}: {}", other.peer, ours.peer, shown.join(", "));
        }
    }
}

/// Runs `program` for one round of every size and peer, and reads its JSON lines.
fn run_round(program: &std::path::Path, args: &Args) -> Vec<Record> {
    let list = |values: Vec<String>| values.join(",");
    let peers = args.peers.iter().map(|p| p.key());
    let output = Command::new(program)
        .args(["--json", "--rounds", "1", "--queries", &args.queries.to_string()])
        .args(["--items", &list(args.items.iter().map(ToString::to_string).collect())])
        .args(["--peers", &list(peers.collect())])
        .stderr(std::process::Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    assert!(output.status.success(), "{} failed", program.display());
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON record from the tool"))
        .collect()
}

/// Runs this build and `other` in turns and prints each measurement of every peer in both with
/// the pairwise ratios of their rates.
fn paired(args: &Args, other: &std::path::Path) {
    let this = std::env::current_exe().expect("the path of this tool");
    let (mut mine, mut theirs) = (Vec::new(), Vec::new());
    for number in 1..=args.rounds {
        eprintln!("pair {number}: this build");
        mine.push(run_round(&this, args));
        eprintln!("pair {number}: {}", other.display());
        theirs.push(run_round(other, args));
    }
    println!(
        "This build against {}, one thread, {} pairs of runs in turns; ns per operation \
         (medians) and this build's rate over the other's (median and range of the pairs)",
        other.display(),
        args.rounds
    );
    for (i, record) in mine[0].iter().enumerate() {
        println!();
        println!("{} items, {}", record.items, record.peer);
        println!();
        println!("| measure | this build | other build | rate ratio | range |");
        println!("|---|---:|---:|---:|---|");
        for name in MEASURES.iter().filter(|m| record.ns.contains_key(**m)) {
            let of = |runs: &[Vec<Record>]| runs.iter().map(|r| r[i].ns[*name]).collect::<Vec<_>>();
            let (a, b) = (of(&mine), of(&theirs));
            let mut ratios: Vec<f64> = b.iter().zip(&a).map(|(b, a)| b / a).collect();
            ratios.sort_by(f64::total_cmp);
            println!(
                "| {name} | {:.2} | {:.2} | {:.3} | {:.3} to {:.3} |",
                median(a),
                median(b),
                median(ratios.clone()),
                ratios[0],
                ratios[ratios.len() - 1]
            );
        }
    }
}

fn main() {
    let mut args = Args::parse();
    if args.peers.is_empty() {
        args.peers = PEERS.to_vec();
    }
    if let Some(other) = &args.against {
        paired(&args, other);
        return;
    }
    let rounds: Vec<Vec<Record>> = (1..=args.rounds).map(|n| round(&args, n)).collect();
    let records = medians(&rounds);
    if args.json {
        for record in &records {
            println!("{}", serde_json::to_string(record).expect("records serialise"));
        }
    } else {
        print_tables(&args, &records);
    }
}
