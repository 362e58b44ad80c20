//! Benchmark groups for `eval/benches/filter.rs`, configured from the environment.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `LFC_BENCH_SMALL` | 58000 | items of the cache-resident size (0: skip) |
//! | `LFC_BENCH_LARGE` | 120000000 | items of the DRAM-resident size (0: skip) |
//! | `LFC_BENCH_PEERS` | all | comma list of peers' command-line names (see [`peers`]) |
//! | `LFC_BENCH_GROUPS` | all | comma list of `contains,batch,threads,mixed,insert,remove` |
//! | `LFC_BENCH_SECS` | 2 | criterion measurement time per benchmark, seconds |
//! | `LFC_BENCH_WARMUP` | 0.5 | criterion warm-up time per benchmark, seconds |
//! | `LFC_BENCH_DRAM_FILLS` | unset | set: also `insert` and `remove` at the DRAM size (slow) |
//!
//! A quick smoke run:
//! `LFC_BENCH_LARGE=0 LFC_BENCH_SECS=0.2 LFC_BENCH_WARMUP=0.1 cargo bench -p lockfree-cuckoo-eval`.

pub(crate) mod single;
pub(crate) mod threads;

use std::time::{Duration, Instant};

use criterion::{measurement::WallTime, BenchmarkGroup, Criterion};
use lockfree_cuckoo_eval::keys::{self, key, PRESENT};
use lockfree_cuckoo_eval::peers::{expected_fpr, Local, Locked, Peer, Shared, Sizing, Visit};

/// The peers `LFC_BENCH_PEERS` may name, in run order: every peer that looks up (ours and the
/// floor with their batched lookups, in the same runs).
fn peers() -> Vec<Peer> {
    Peer::matching(|peer| !peer.batched() && peer.ops().contains)
}

/// The groups `LFC_BENCH_GROUPS` may name.
const GROUPS: &[&str] = &["contains", "batch", "threads", "mixed", "insert", "remove"];

/// What to run.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) small: usize,
    pub(crate) large: usize,
    pub(crate) peers: Vec<Peer>,
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

/// The comma list in variable `name`, each item one of `all` (by `name_of`); all by default.
fn env_list<T: Copy>(name: &str, all: &[T], name_of: impl Fn(T) -> String) -> Vec<T> {
    let names: Vec<String> = all.iter().map(|&item| name_of(item)).collect();
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v
            .split(',')
            .map(|item| {
                let item = item.trim();
                let at = names.iter().position(|n| n == item);
                all[at.unwrap_or_else(|| panic!("{name}: unknown `{item}`, expected {names:?}"))]
            })
            .collect(),
        _ => all.to_vec(),
    }
}

impl Config {
    pub(crate) fn from_env() -> Self {
        Self {
            small: env_num("LFC_BENCH_SMALL", 58_000.0) as usize,
            large: env_num("LFC_BENCH_LARGE", 120_000_000.0) as usize,
            peers: env_list("LFC_BENCH_PEERS", &peers(), Peer::key),
            groups: env_list("LFC_BENCH_GROUPS", GROUPS, str::to_owned)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            measure: Duration::from_secs_f64(env_num("LFC_BENCH_SECS", 2.0)),
            warm_up: Duration::from_secs_f64(env_num("LFC_BENCH_WARMUP", 0.5)),
        }
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
        let fp = expected_fpr(n);
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

/// Every group of `size`, peer by peer: each peer is built and filled once, measured, dropped.
pub(crate) fn run(c: &mut Criterion, cfg: &Config, size: &Size) {
    for &peer in &cfg.peers {
        peer.visit(Sizing { items: size.n, fp: size.fp }, Groups { c: &mut *c, cfg, size });
    }
}

/// The groups of one peer at one size, as far as the peer can do them ([`Peer::ops`]).
struct Groups<'a> {
    c: &'a mut Criterion,
    cfg: &'a Config,
    size: &'a Size,
}

impl Groups<'_> {
    /// A filter from `make`, filled with the size's items through `fill` (which returns the
    /// refusals) where the peer inserts; construction and fill are timed together.
    fn filled<F>(&self, peer: Peer, make: impl Fn() -> F, fill: impl FnOnce(&mut F) -> usize) -> F {
        let start = Instant::now();
        let mut filter = make();
        if peer.ops().insert {
            let refused = fill(&mut filter);
            eprintln!(
                "[setup] {}: {} holds {} items ({refused} refused) after {:.1} s",
                self.size.label,
                peer.key(),
                self.size.fill,
                start.elapsed().as_secs_f64()
            );
        }
        filter
    }

    /// The single-thread lookups of a filled filter, scalar and, where it has them, batched.
    fn lookups<F: Local>(&mut self, peer: Peer, filter: &F) {
        let (c, cfg, size) = (&mut *self.c, self.cfg, self.size);
        if cfg.group("contains") {
            single::contains(c, cfg, size, peer.name(), |k| filter.contains(k));
        }
        if let Some(batch) = peer.batch().filter(|_| cfg.group("batch")) {
            single::contains_batch(c, cfg, size, batch.name(), |k, o| filter.contains_batch(k, o));
        }
    }

    /// The multi-thread groups of a filled filter that threads share, named `id`.
    fn threads<S: Shared>(&mut self, peer: Peer, id: &str, filter: &S) {
        let (c, cfg, size) = (&mut *self.c, self.cfg, self.size);
        if cfg.group("threads") {
            threads::contains(c, cfg, size, id, filter);
        }
        let ops = peer.ops();
        if cfg.group("mixed") && ops.insert && ops.remove {
            let failures = threads::mixed(c, cfg, size, id, filter);
            eprintln!("[mixed] {}: {failures} failed inserts/removes", peer.key());
        }
    }

    /// Fills from empty and removes of everything, each on fresh filters from `make`; at the
    /// DRAM size only with `LFC_BENCH_DRAM_FILLS`.
    fn writes<F: Local>(&mut self, peer: Peer, make: impl Fn() -> F) {
        let (c, cfg, size) = (&mut *self.c, self.cfg, self.size);
        if size.n >= 1_000_000 && std::env::var_os("LFC_BENCH_DRAM_FILLS").is_none() {
            return;
        }
        let ops = peer.ops();
        if cfg.group("insert") && ops.insert {
            single::insert(c, cfg, size, peer.name(), &make);
            if peer.batch().is_some() {
                let id = format!("{} insert_batch", peer.name());
                single::insert_batch(c, cfg, size, &id, &make);
            }
        }
        if cfg.group("remove") && ops.remove {
            single::remove(c, cfg, size, peer.name(), &make);
        }
    }
}

impl Visit for Groups<'_> {
    type Output = ();

    fn local<F: Local, M: Fn() -> F>(mut self, peer: Peer, make: M) {
        let filter = self.filled(peer, &make, |f| f.fill(self.size.fill));
        self.lookups(peer, &filter);
        drop(filter);
        self.writes(peer, make);
    }

    /// As [`local`](Self::local), and the multi-thread groups behind a `RwLock`.
    fn lockable<F: Local + Send + Sync, M: Fn() -> F>(mut self, peer: Peer, make: M) {
        let filter = self.filled(peer, &make, |f| f.fill(self.size.fill));
        self.lookups(peer, &filter);
        let locked = Locked::new(filter);
        self.threads(peer, &format!("RwLock<{}>", peer.name()), &locked);
        drop(locked);
        self.writes(peer, make);
    }

    fn shared<F: Shared, M: Fn() -> F>(mut self, peer: Peer, make: M) {
        let (count, threads) = (self.size.fill, fill_threads(self.size));
        let filter =
            self.filled(peer, &make, |f| fill_with(count, threads, |k| Shared::insert(&*f, k)));
        self.lookups(peer, &filter);
        self.threads(peer, peer.name(), &filter);
        drop(filter);
        self.writes(peer, make);
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
