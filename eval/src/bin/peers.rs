//! Space, false-positive rate and one-shot fill/empty rates of every peer at the same item
//! count: the table behind `BENCHMARKS.md`'s "Space and false positives", and DRAM-resident
//! insert and remove rates (a 120-million-item fill is one long measurement; criterion's ten
//! samples of it would take most of an hour on two cores).
//!
//! ```text
//! cargo run --release -p lockfree-cuckoo-eval --bin peers     # 120,000,000 items
//! cargo run --release -p lockfree-cuckoo-eval --bin peers -- --items 58000 --queries 10000000
//! cargo run --release -p lockfree-cuckoo-eval --bin peers -- --peers ours,cf-ahash
//! ```
//!
//! Each filter is built for `items`, filled with `items` keys from empty on one thread (timed),
//! asked `queries` keys that were never inserted (the measured false-positive rate), and emptied
//! by removing every key (timed), then dropped before the next one is built.

use std::time::Instant;

use clap::Parser;
use lockfree_cuckoo_eval::keys::{key, ABSENT, PRESENT};
use lockfree_cuckoo_eval::number;
use lockfree_cuckoo_eval::peers::{expected_fpr, Local, Peer, Sizing, Visit};

/// Space, false-positive rate and one-shot fill and remove rates of every peer at the same item
/// count (the table behind BENCHMARKS.md's "Space and false positives").
#[derive(Debug, Parser)]
#[command(name = "peers")]
struct Args {
    /// Items each filter is built for and filled with
    #[arg(long, value_name = "N", default_value = "120000000", value_parser = positive)]
    items: usize,
    /// Never-inserted keys asked, for the measured false-positive rate
    #[arg(long, value_name = "N", default_value = "10000000", value_parser = positive)]
    queries: usize,
    /// Peers to measure, comma-separated, in the order given [default: all]
    #[arg(long, value_delimiter = ',', value_name = "PEER,...", value_parser = Peer::parser(&peers()))]
    peers: Vec<Peer>,
}

/// The peers this tool measures, in their default order: every peer that inserts and looks up
/// (`ours-batch` is ours filled through `insert_batch`).
fn peers() -> Vec<Peer> {
    Peer::matching(|peer| peer.ops().insert && peer.ops().contains)
}

fn positive(text: &str) -> Result<usize, String> {
    match number(text)? {
        0 => Err("must be positive".into()),
        n => Ok(n),
    }
}

struct Row {
    peer: Peer,
    bytes: usize,
    rss: Option<usize>,
    refused: usize,
    fill_mops: f64,
    fpr: f64,
    false_negatives: usize,
    remove_mops: Option<f64>,
    remove_missed: usize,
}

/// Resident set size from /proc (Linux), for a cross-check of the reported bytes.
fn rss() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// One peer built for `items`, filled, asked `queries` absent keys and emptied.
struct Measure {
    items: usize,
    queries: usize,
}

impl Visit for Measure {
    type Output = Row;

    fn local<F: Local, M: Fn() -> F>(self, peer: Peer, make: M) -> Row {
        let Self { items, queries } = self;
        let rss_before = rss();
        let mut filter = make();
        eprint!("{}: filling {items} ...", name(peer));
        let start = Instant::now();
        let refused = if peer.batched() { filter.fill_batched(items) } else { filter.fill(items) };
        let fill_mops = items as f64 / start.elapsed().as_secs_f64() / 1e6;
        let rss = match (rss_before, rss()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        eprint!(" {fill_mops:.2} M/s; false positives ...");
        let hits = (0..queries as u64).filter(|&i| filter.contains(key(ABSENT, i))).count();
        // A sample of the inserted keys must all be found (none was refused, or the peer said so).
        let step = (items / 1_000_000).max(1);
        let false_negatives =
            (0..items as u64).step_by(step).filter(|&i| !filter.contains(key(PRESENT, i))).count();
        let (remove_mops, remove_missed) = if peer.ops().remove {
            eprint!(" removing ...");
            let start = Instant::now();
            let missed = (0..items as u64).filter(|&i| !filter.remove(key(PRESENT, i))).count();
            (Some(items as f64 / start.elapsed().as_secs_f64() / 1e6), missed)
        } else {
            (None, 0)
        };
        eprintln!(" done");
        let bytes = filter.bytes();
        Row {
            peer,
            bytes,
            rss,
            refused,
            fill_mops,
            fpr: hits as f64 / queries as f64,
            false_negatives,
            remove_mops,
            remove_missed,
        }
    }
}

/// A row's name: ours filled through `insert_batch` says so.
fn name(peer: Peer) -> String {
    if peer.batched() {
        format!("{} (insert_batch)", peer.base().name())
    } else {
        peer.name().to_owned()
    }
}

fn main() {
    let Args { items, queries, peers: mut which } = Args::parse();
    if which.is_empty() {
        which = peers();
    }
    // The false-positive rate our filter has at `items`, for the peers sized by a target rate.
    let fp = expected_fpr(items);
    let rows: Vec<Row> = which
        .into_iter()
        .map(|peer| peer.visit(Sizing { items, fp }, Measure { items, queries }))
        .collect();

    println!(
        "{} items; {} never-inserted queries; Bloom and scalable filters sized for our \
         expected rate {:.4}%",
        items,
        queries,
        fp * 100.0
    );
    println!();
    println!(
        "| peer | bytes/item | RSS growth/item | measured FPR | fill M/s | ours/peer | refused | remove-all M/s | ours/peer | misses |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let ours = rows.iter().find(|r| r.peer == Peer::Ours);
    let ratio = |ours: Option<f64>, peer: Option<f64>| match (ours, peer) {
        (Some(o), Some(p)) => format!("{:.2}", o / p),
        _ => "-".to_string(),
    };
    for r in &rows {
        let rss = r.rss.map_or("-".to_string(), |b| format!("{:.2}", b as f64 / items as f64));
        let remove = r.remove_mops.map_or("n/a".to_string(), |m| format!("{m:.2}"));
        println!(
            "| {} | {:.2} | {} | {:.4}% | {:.2} | {} | {} | {} | {} | {} |",
            name(r.peer),
            r.bytes as f64 / items as f64,
            rss,
            r.fpr * 100.0,
            r.fill_mops,
            ratio(ours.map(|o| o.fill_mops), Some(r.fill_mops)),
            r.refused,
            remove,
            ratio(ours.and_then(|o| o.remove_mops), r.remove_mops),
            r.remove_missed + r.false_negatives
        );
    }
}
