//! Benchmark groups for `eval/benches/filter.rs`, configured from the environment.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `LFC_BENCH_SMALL` | 58000 | items of the cache-resident size (0: skip) |
//! | `LFC_BENCH_LARGE` | 120000000 | items of the DRAM-resident size (0: skip) |
//! | `LFC_BENCH_PEERS` | all | comma list of peer keys (see [`PEERS`]) |
//! | `LFC_BENCH_GROUPS` | all | comma list of `contains,batch,threads,mixed,insert,remove` |
//! | `LFC_BENCH_SECS` | 2 | criterion measurement time per benchmark, seconds |
//! | `LFC_BENCH_WARMUP` | 0.5 | criterion warm-up time per benchmark, seconds |
//! | `LFC_BENCH_DRAM_FILLS` | unset | set: also `insert` and `remove` at the DRAM size (slow) |
//!
//! A quick smoke run:
//! `LFC_BENCH_LARGE=0 LFC_BENCH_SECS=0.2 LFC_BENCH_WARMUP=0.1 cargo bench -p lockfree-cuckoo-eval`.

pub(crate) mod single;
pub(crate) mod threads;

use std::time::Duration;

use criterion::{measurement::WallTime, BenchmarkGroup, Criterion};
use lockfree_cuckoo_eval::keys::{self, key, PRESENT};
use lockfree_cuckoo_eval::peers::Local;

/// Peer keys accepted by `LFC_BENCH_PEERS`, in run order.
pub(crate) const PEERS: &[&str] =
    &["ours", "floor", "cf-ahash", "cf", "acf", "fastbloom", "scalable", "dashset"];

/// What to run.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) small: usize,
    pub(crate) large: usize,
    pub(crate) peers: Vec<String>,
    pub(crate) groups: Vec<String>,
    pub(crate) measure: Duration,
    pub(crate) warm_up: Duration,
}

fn env_num(name: &str, default: f64) -> f64 {
    match std::env::var(name) {
        Ok(v) => v.replace('_', "").parse().unwrap_or_else(|_| panic!("{name}={v}: not a number")),
        Err(_) => default,
    }
}

fn env_list(name: &str, all: &[&str]) -> Vec<String> {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => {
            let list: Vec<String> = v.split(',').map(|s| s.trim().to_string()).collect();
            for item in &list {
                assert!(all.contains(&item.as_str()), "{name}: unknown `{item}`, expected {all:?}");
            }
            list
        }
        _ => all.iter().map(|s| s.to_string()).collect(),
    }
}

impl Config {
    pub(crate) fn from_env() -> Self {
        Self {
            small: env_num("LFC_BENCH_SMALL", 58_000.0) as usize,
            large: env_num("LFC_BENCH_LARGE", 120_000_000.0) as usize,
            peers: env_list("LFC_BENCH_PEERS", PEERS),
            groups: env_list(
                "LFC_BENCH_GROUPS",
                &["contains", "batch", "threads", "mixed", "insert", "remove"],
            ),
            measure: Duration::from_secs_f64(env_num("LFC_BENCH_SECS", 2.0)),
            warm_up: Duration::from_secs_f64(env_num("LFC_BENCH_WARMUP", 0.5)),
        }
    }

    pub(crate) fn peer(&self, key: &str) -> bool {
        self.peers.iter().any(|p| p == key)
    }

    pub(crate) fn group(&self, key: &str) -> bool {
        self.groups.iter().any(|g| g == key)
    }

    /// The sizes to run, labelled.
    pub(crate) fn sizes(&self) -> Vec<(&'static str, usize)> {
        let mut sizes = Vec::new();
        if self.small > 0 {
            sizes.push(("cache", self.small));
        }
        if self.large > 0 {
            sizes.push(("dram", self.large));
        }
        sizes
    }
}

/// One benchmark size: `n` is the capacity every filter is built for; `fill` the items each holds
/// during the lookup and mixed benchmarks (90% of our lanes, about 0.957 n).
#[derive(Clone, Debug)]
pub(crate) struct Size {
    pub(crate) label: &'static str,
    pub(crate) n: usize,
    pub(crate) fill: usize,
    /// Our table's bytes, for the floor's array.
    pub(crate) table_bytes: usize,
    /// Our false-positive rate at `n` items, to size the Bloom filter and scalable filter.
    pub(crate) fp: f64,
    /// Query streams at 0, 50 and 100% positive.
    pub(crate) queries: [Vec<u64>; 3],
}

/// The positive fractions of the query streams.
pub(crate) const PERCENTS: [u32; 3] = [0, 50, 100];

impl Size {
    pub(crate) fn new(label: &'static str, n: usize) -> Self {
        let ours = lockfree_cuckoo::CuckooFilter::with_capacity(n);
        let lanes = ours.bucket_count() * 4;
        let fill = (lanes as f64 * 0.90) as usize;
        let fp = 8.0 * (n as f64 / lanes as f64) / 65532.0;
        // Cache-resident: a query stream that stays in L2 beside the table; DRAM: 32 MiB.
        let len = if n < 1_000_000 { 1 << 14 } else { 1 << 22 };
        let queries = PERCENTS.map(|p| keys::queries(len, fill, p, u64::from(p) + 7));
        Self { label, n, fill, table_bytes: ours.bucket_count() * 8, fp, queries }
    }
}

/// Whether to build the filters of `size` in parallel (saves minutes at the DRAM size).
pub(crate) fn fill_threads(size: &Size) -> usize {
    if size.n >= 1_000_000 {
        2
    } else {
        1
    }
}

/// Inserts `PRESENT` keys `0..count` through `insert` on `threads` threads; returns refusals.
fn fill_with(count: usize, threads: usize, insert: impl Fn(u64) -> bool + Sync) -> usize {
    std::thread::scope(|s| {
        let insert = &insert;
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (lo, hi) = (t * count / threads, (t + 1) * count / threads);
                s.spawn(move || {
                    (lo as u64..hi as u64).filter(|&i| !insert(key(PRESENT, i))).count()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    })
}

fn fill_local<P: Local>(filter: &mut P, count: usize) -> usize {
    (0..count as u64).filter(|&i| !filter.insert(key(PRESENT, i))).count()
}

fn report_fill(size: &Size, name: &str, refused: usize, start: std::time::Instant) {
    eprintln!(
        "[setup] {}: {name} holds {} items ({refused} refused) after {:.1} s",
        size.label,
        size.fill,
        start.elapsed().as_secs_f64()
    );
}

/// Every group of `size`, peer by peer: each peer is built and filled once, measured, dropped.
pub(crate) fn run(c: &mut criterion::Criterion, cfg: &Config, size: &Size) {
    use lockfree_cuckoo_eval::floor::Floor;
    use lockfree_cuckoo_eval::peers::*;
    use std::time::Instant;
    let dram_fills = std::env::var_os("LFC_BENCH_DRAM_FILLS").is_some();
    let fills = size.n < 1_000_000 || dram_fills;
    let threads = fill_threads(size);
    for peer in PEERS.iter().filter(|p| cfg.peer(p)) {
        let start = Instant::now();
        match *peer {
            "ours" => {
                let filter = Ours::new(size.n);
                let refused = fill_with(size.fill, threads, |k| Shared::insert(&filter, k));
                report_fill(size, "ours", refused, start);
                if cfg.group("contains") {
                    single::contains(c, cfg, size, "lockfree-cuckoo", |k| filter.0.contains(&k));
                }
                if cfg.group("batch") {
                    single::contains_batch(c, cfg, size, "lockfree-cuckoo batch", |k, o| {
                        filter.0.contains_batch(k, o)
                    });
                }
                if cfg.group("threads") {
                    threads::contains(c, cfg, size, &filter);
                }
                if cfg.group("mixed") {
                    let failures = threads::mixed(c, cfg, size, &filter);
                    eprintln!("[mixed] ours: {failures} failed inserts/removes");
                }
                drop(filter);
                if fills && cfg.group("insert") {
                    single::insert(c, cfg, size, || Ours::new(size.n));
                    single::insert_batch(c, cfg, size);
                }
                if fills && cfg.group("remove") {
                    single::remove(c, cfg, size, || Ours::new(size.n));
                }
            }
            "floor" => {
                let floor = Floor::new(size.table_bytes / 8);
                if cfg.group("contains") {
                    single::contains(c, cfg, size, "two-read floor", |k| floor.contains(k));
                }
                if cfg.group("batch") {
                    single::contains_batch(c, cfg, size, "two-read floor batch", |k, o| {
                        floor.contains_batch(k, o)
                    });
                }
                if cfg.group("threads") {
                    threads::contains(c, cfg, size, &floor);
                }
            }
            "cf-ahash" | "cf" => {
                fn local<P: Local + Send + Sync>(
                    c: &mut criterion::Criterion,
                    cfg: &Config,
                    size: &Size,
                    mut filter: P,
                    fills: bool,
                    make: impl Fn() -> P,
                ) {
                    let start = Instant::now();
                    let refused = fill_local(&mut filter, size.fill);
                    report_fill(size, filter.name(), refused, start);
                    if cfg.group("contains") {
                        let name = filter.name();
                        single::contains(c, cfg, size, name, |k| filter.contains(k));
                    }
                    let locked = Locked(std::sync::RwLock::new(filter));
                    if cfg.group("threads") {
                        threads::contains(c, cfg, size, &locked);
                    }
                    if cfg.group("mixed") {
                        let failures = threads::mixed(c, cfg, size, &locked);
                        eprintln!(
                            "[mixed] {}: {failures} failed inserts/removes",
                            Shared::name(&locked)
                        );
                    }
                    drop(locked);
                    if fills && cfg.group("insert") {
                        single::insert(c, cfg, size, &make);
                    }
                    if fills && cfg.group("remove") {
                        single::remove(c, cfg, size, &make);
                    }
                }
                if *peer == "cf" {
                    local(c, cfg, size, CfSip::new(size.n), fills, || CfSip::new(size.n));
                } else {
                    local(c, cfg, size, CfAhash::new(size.n), fills, || CfAhash::new(size.n));
                }
            }
            "acf" => {
                let filter = Acf::new(size.n);
                let refused = fill_with(size.fill, threads, |k| Shared::insert(&filter, k));
                report_fill(size, "acf", refused, start);
                if cfg.group("contains") {
                    single::contains(c, cfg, size, "atomic-cuckoo-filter", |k| {
                        filter.0.contains(&k)
                    });
                }
                if cfg.group("threads") {
                    threads::contains(c, cfg, size, &filter);
                }
                if cfg.group("mixed") {
                    let failures = threads::mixed(c, cfg, size, &filter);
                    eprintln!("[mixed] acf: {failures} failed inserts/removes");
                }
                drop(filter);
                if fills && cfg.group("insert") {
                    single::insert(c, cfg, size, || Acf::new(size.n));
                }
                if fills && cfg.group("remove") {
                    single::remove(c, cfg, size, || Acf::new(size.n));
                }
            }
            "fastbloom" => {
                let filter = Bloom::new(size.n, size.fp);
                let refused = fill_with(size.fill, threads, |k| Shared::insert(&filter, k));
                report_fill(size, "fastbloom", refused, start);
                if cfg.group("contains") {
                    single::contains(c, cfg, size, "fastbloom (atomic)", |k| {
                        filter.inner.contains(&k)
                    });
                }
                if cfg.group("threads") {
                    threads::contains(c, cfg, size, &filter);
                }
                drop(filter);
                if fills && cfg.group("insert") {
                    single::insert(c, cfg, size, || Bloom::new(size.n, size.fp));
                }
            }
            "scalable" => {
                let mut filter = Scalable::new(size.n, size.fp);
                let refused = fill_local(&mut filter, size.fill);
                report_fill(size, "scalable", refused, start);
                if cfg.group("contains") {
                    single::contains(c, cfg, size, "scalable_cuckoo_filter", |k| {
                        filter.0.contains(&k)
                    });
                }
                drop(filter);
                if fills && cfg.group("insert") {
                    single::insert(c, cfg, size, || Scalable::new(size.n, size.fp));
                }
                if fills && cfg.group("remove") {
                    single::remove(c, cfg, size, || Scalable::new(size.n, size.fp));
                }
            }
            "dashset" => {
                let set = Dash::new(size.n);
                let refused = fill_with(size.fill, threads, |k| Shared::insert(&set, k));
                report_fill(size, "dashset", refused, start);
                if cfg.group("contains") {
                    single::contains(c, cfg, size, "DashSet<u64>", |k| set.0.contains(&k));
                }
                if cfg.group("threads") {
                    threads::contains(c, cfg, size, &set);
                }
                if cfg.group("mixed") {
                    let failures = threads::mixed(c, cfg, size, &set);
                    eprintln!("[mixed] dashset: {failures} failed inserts/removes");
                }
                drop(set);
                if fills && cfg.group("insert") {
                    single::insert(c, cfg, size, || Dash::new(size.n));
                }
                if fills && cfg.group("remove") {
                    single::remove(c, cfg, size, || Dash::new(size.n));
                }
            }
            other => unreachable!("{other}"),
        }
    }
}

/// A criterion group with the run's sample size, warm-up and measurement times.
pub(crate) fn group<'a>(
    c: &'a mut Criterion,
    cfg: &Config,
    name: String,
) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10).warm_up_time(cfg.warm_up).measurement_time(cfg.measure);
    g
}
