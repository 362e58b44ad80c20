//! Regenerates the evaluation of Fan, Andersen, Kaminsky and Mitzenmacher, "Cuckoo Filter:
//! Practically Better Than Bloom" (CoNEXT 2014, section 7) for this crate and its peers:
//! Table 3 (space, false-positive rate, construction rate of a 192 MiB filter), Figure 4 (bits
//! per item against false-positive rate), Figure 5 (lookups against the fraction of positive
//! queries) and Figures 6 to 8 (lookup, insert and delete throughput against occupancy, one
//! thread and several).
//!
//! ```text
//! cargo paper            # about 11 minutes on 2 cores
//! cargo paper --quick    # CI: small table, under a minute
//! cargo paper --plot-only --out eval/figures/paper   # redraw the plots, no measuring
//! cargo paper --help
//! ```
//!
//! (`cargo paper` is the workspace's alias of
//! `cargo run --release -p lockfree-cuckoo-eval --bin paper --`.)
//!
//! Writes `target/paper/*.csv` and `target/paper/*.svg` and prints a summary; `PAPER.md` at
//! the repository root discusses a default run against the paper's numbers.

mod cli;
mod experiments;
mod filters;
mod output;
mod rows;
mod svg;

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use lockfree_cuckoo::CuckooFilter;

use crate::cli::{Args, Config};
use crate::experiments::{run, Plan, Results};
use crate::filters::{Parallel, Serial};
use lockfree_cuckoo_eval::peers::{fpr_at_load, Local, Peer, Shared, Sizing, Visit};

/// The least capacity for which this crate's filter has `bytes` of table (rounded up to whole
/// buckets), through the public builder. The builder sizes by capacity and the bucket count
/// grows monotonically with it, so it is found by bisection from a guess at the crate's
/// documented 94% promise: about a dozen builds.
fn sized_capacity(bytes: u64) -> usize {
    let buckets = bytes.div_ceil(8) as usize;
    let large_enough =
        |capacity| CuckooFilter::builder().capacity(capacity).build().bucket_count() >= buckets;
    let mut hi = buckets * 4 * 94 / 100;
    while !large_enough(hi) {
        hi += hi / 64 + 1;
    }
    // Widen downwards until the bracket's low end is too small, then bisect.
    let mut width = 64;
    let mut lo = hi.saturating_sub(width);
    while lo > 0 && large_enough(lo) {
        hi = lo;
        width *= 2;
        lo = hi.saturating_sub(width);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if large_enough(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// One pass of every experiment over a peer: on one thread, or on `threads` for a concurrent
/// peer.
struct Pass<'a> {
    plan: &'a Plan,
    threads: usize,
}

impl Visit for Pass<'_> {
    type Output = Results;

    fn local<F: Local, M: Fn() -> F>(self, peer: Peer, make: M) -> Results {
        assert_eq!(self.threads, 1, "{} is not concurrent", peer.name());
        run(peer, &mut Serial(make()), self.plan)
    }

    fn shared<F: Shared, M: Fn() -> F>(self, peer: Peer, make: M) -> Results {
        match self.threads {
            1 => run(peer, &mut Serial(make()), self.plan),
            threads => run(peer, &mut Parallel { filter: make(), threads }, self.plan),
        }
    }
}

/// The 1-, 5- and 15-minute load averages, where the system reports them: other work on the
/// machine is the largest source of noise in these timings, so the output records it.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| text.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

fn main() -> ExitCode {
    let config = Config::from(Args::parse());
    if config.plot_only {
        return match svg::draw_all(&config.out) {
            Ok(files) => {
                println!("wrote {files} files to {}", config.out.display());
                ExitCode::SUCCESS
            }
            Err(err) => {
                eprintln!("error: redrawing the plots in {}: {err}", config.out.display());
                ExitCode::FAILURE
            }
        };
    }
    if cfg!(debug_assertions) {
        eprintln!("warning: built without --release; the timings will mean little");
    }
    let started = Instant::now();
    let load_before = load_average();
    let requested = sized_capacity(config.mib << 20);
    let filter = CuckooFilter::with_capacity(requested);
    let capacity = filter.capacity() as u64;
    let plan = Plan {
        ops: config.ops,
        step: config.step,
        fpr_queries: config.fpr_queries,
        positive_fractions: config.positive_fractions.clone(),
        capacity_mark: capacity,
        stop_at: None,
    };
    eprintln!(
        "paper: {} mode; {:.1} MiB table ({} buckets, promised capacity {capacity}); windows of \
         {} operations, occupancy steps of {:.0}%",
        if config.quick { "quick" } else { "default" },
        (filter.bucket_count() * 8) as f64 / f64::from(1 << 20),
        filter.bucket_count(),
        config.ops,
        config.step * 100.0
    );
    drop(filter);

    let mut results: Vec<Results> = Vec::new();
    let n = capacity as usize;
    // Only the peers sized by a rate read the rate; the cuckoo filters are built for `n` items.
    let by_capacity = Sizing { items: n, fp: 0.0 };
    let pass = |plan, threads| Pass { plan, threads };
    let ours = Sizing { items: requested, ..by_capacity };
    results.push(Peer::Ours.visit(ours, pass(&plan, 1)));
    results.push(Peer::Ours.visit(ours, pass(&plan, config.threads)));
    // The paper's ss-CF: the same table with semi-sorted buckets, one thread as in its Table 3.
    results.push(Peer::OursSemiSorted.visit(ours, pass(&plan, 1)));

    if config.peers {
        let ours = results[0].full;
        // Filters that cannot refuse are filled to the items ours held; the Bloom filters are
        // also sized for ours' measured false-positive rate (or its expected one if the
        // queries found none), to show what the same job costs them in space.
        let same_items = Plan { stop_at: Some(ours.items), ..plan.clone() };
        let fp = if ours.fpr > 0.0 { ours.fpr } else { fpr_at_load(results[0].max_load) };

        results.push(Peer::Cf.visit(by_capacity, pass(&plan, 1)));
        results.push(Peer::Acf.visit(by_capacity, pass(&plan, 1)));
        results.push(Peer::Acf.visit(by_capacity, pass(&plan, config.threads)));
        // Only the concurrent cuckoo peer gets a threaded line: it is the comparison that
        // matters for this crate, and each extra pass at 192 MiB costs a minute or two.
        let bloom = Sizing { items: ours.items as usize, fp };
        results.push(Peer::Fastbloom.visit(bloom, pass(&same_items, 1)));
        results.push(Peer::Sbbf.visit(bloom, pass(&same_items, 1)));
        // A quotient filter's rate is about its load times 2^-r for r-bit remainders (a lookup
        // compares one run), ours its load times 2^-13 (eight 16-bit fingerprints). Built for
        // our rate at 100% load, just over 2^-13, qfilter rounds up to r = 13: our rate at equal
        // loads, as the paper's QF had 9-bit remainders against its CF's 12-bit fingerprints.
        // Our measured rate lies within its noise of 2^-13, so it would give 13 or 14 bits.
        let quotient = Sizing { items: n, fp: fpr_at_load(1.0) };
        results.push(Peer::Qfilter.visit(quotient, pass(&plan, 1)));
        results.push(Peer::Scalable.visit(Sizing { items: n, fp }, pass(&same_items, 1)));
    }

    let run = output::Run { elapsed: started.elapsed(), load_before, load_after: load_average() };
    let files = match output::write_all(&config, &results, &run) {
        Ok(files) => files,
        Err(err) => {
            eprintln!("error: writing to {}: {err}", config.out.display());
            return ExitCode::FAILURE;
        }
    };
    output::print_summary(&config, &results, &run);
    println!("\nwrote {files} files to {}", config.out.display());
    // The run doubles as a smoke test in CI: this crate must never lose an item.
    let broken: Vec<String> = results
        .iter()
        .filter(|r| [Peer::Ours.legend(), Peer::OursSemiSorted.legend()].contains(&r.name.as_str()))
        .filter(|r| r.false_negatives > 0 || r.lost != Some(0))
        .map(|r| format!("{} with {} thread(s)", r.name, r.threads))
        .collect();
    if broken.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!("error: lockfree-cuckoo lost items with {}", broken.join(" and "));
        ExitCode::FAILURE
    }
}
