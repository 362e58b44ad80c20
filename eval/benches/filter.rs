//! The one benchmark entry point: every group, every peer, in one run on one machine, so the
//! ratios between peers are measured under the same conditions.
//!
//! `cargo bench -p lockfree-cuckoo-eval` runs the cache-resident (58,000 items) and
//! DRAM-resident (120,000,000 items, tables of 128 MiB and more) sizes; see
//! `eval/benches/groups/mod.rs` for the environment variables that pick sizes, peers, groups and
//! measurement times. Criterion's own arguments still apply
//! (`cargo bench -p lockfree-cuckoo-eval -- contains_50pct`), but filtering by name does not skip
//! the building of filters; `LFC_BENCH_PEERS` and `LFC_BENCH_GROUPS` do.

mod groups;

use criterion::Criterion;

fn main() {
    let cfg = groups::Config::from_env();
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(cfg.warm_up)
        .measurement_time(cfg.measure)
        .without_plots()
        .configure_from_args();
    for (label, n) in cfg.sizes() {
        let size = groups::Size::new(label, n);
        eprintln!(
            "[size] {label}: capacity {n}, {} items held, our table {:.1} MiB",
            size.fill,
            size.table_bytes as f64 / (1 << 20) as f64
        );
        groups::run(&mut c, &cfg, &size);
    }
    c.final_summary();
}
