//! The CSV files, the SVG plots drawn from them, and the printed summary.

use std::fs;
use std::io;
use std::time::Duration;

use crate::cli::Config;
use crate::experiments::{Point, Results, Snapshot};
use lockfree_cuckoo_eval::grouped;

use crate::rows::{self, label, ByOccupancy, ByPositive, Fixed, Lookups, Setting, Space, Table3};

/// The paper's Table 3 (192 MB filters, 12-bit fingerprints for the cuckoo filters, one
/// thread of a Xeon L5640): name, million items, bits per item, false-positive rate in percent,
/// construction rate in million keys a second.
pub(crate) const PAPER_TABLE3: [(&str, f64, f64, f64, f64); 6] = [
    ("CF", 127.78, 12.60, 0.19, 5.00),
    ("ss-CF", 128.04, 12.58, 0.09, 3.13),
    ("BF", 123.89, 13.00, 0.19, 3.91),
    ("blk-BF", 123.89, 13.00, 0.43, 7.64),
    ("QF", 120.80, 13.33, 0.18, 1.91),
    ("dl-CBF", 103.82, 15.51, 0.76, 4.78),
];

/// The Table 3 rows of one pass: when full, and at this crate's promised capacity.
fn table_rows(r: &Results) -> Vec<(&'static str, Snapshot)> {
    let full = if r.refused { "first refusal" } else { "same items as ours" };
    let mut rows = vec![(full, r.full)];
    rows.extend(r.at_capacity.map(|s| ("promised capacity", s)));
    rows
}

/// Figure 4's data: bits per item against false-positive rate, as formulas over a grid of
/// rates and as measured points.
fn space_rows(results: &[Results]) -> Vec<Space> {
    // Our table's achieved load stands in for α, as the paper uses empirical load factors.
    let alpha = results[0].max_load;
    let formulas: [(String, &dyn Fn(f64) -> f64); 3] = [
        ("bound: log2(1/ε)".into(), &|e: f64| (1.0 / e).log2()),
        ("Bloom, optimal: 1.44 log2(1/ε)".into(), &|e: f64| 1.44 * (1.0 / e).log2()),
        (format!("cuckoo: (log2(1/ε)+3)/α, α={alpha:.3}"), &|e: f64| {
            ((1.0 / e).log2() + 3.0) / alpha
        }),
    ];
    let grid: Vec<f64> = (0..=80).map(|i| 10f64.powf(-5.0 + 4.0 * f64::from(i) / 80.0)).collect();
    let mut rows = Vec::new();
    for (name, bits) in &formulas {
        rows.extend(grid.iter().map(|&e| Space {
            series: name.clone(),
            kind: "formula".into(),
            fpr: Fixed(e),
            bits_per_item: Fixed(bits(e)),
        }));
    }
    for r in results.iter().filter(|r| r.threads == 1) {
        for (_, s) in table_rows(r).iter().filter(|(_, s)| s.fpr > 0.0) {
            rows.push(Space {
                series: format!("{}, measured", r.name),
                kind: "measured".into(),
                fpr: Fixed(s.fpr),
                bits_per_item: Fixed(s.bits_per_item()),
            });
        }
    }
    rows
}

/// Picks one measured line out of a pass.
type Pick = fn(&Results) -> &[Point];

fn positive(r: &Results) -> &[Point] {
    &r.lookup_positive
}
fn negative(r: &Results) -> &[Point] {
    &r.lookup_negative
}
fn inserts(r: &Results) -> &[Point] {
    &r.insert
}
fn deletes(r: &Results) -> &[Point] {
    &r.delete
}

/// Facts about the run as a whole.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) elapsed: Duration,
    /// Load averages before and after, as "1min 5min 15min".
    pub(crate) load_before: String,
    pub(crate) load_after: String,
}

/// Writes every CSV file, then the SVG plots drawn from them; returns how many files.
pub(crate) fn write_all(config: &Config, results: &[Results], run: &Run) -> io::Result<usize> {
    let dir = config.out.as_path();
    fs::create_dir_all(dir)?;
    let mut files = 0;

    let table3 = results.iter().flat_map(|r| {
        table_rows(r).into_iter().map(|(fill, s)| Table3 {
            filter: r.name.clone(),
            threads: r.threads,
            fill,
            items: s.items,
            table_bytes: s.bytes,
            bits_per_item: Fixed(s.bits_per_item()),
            fpr: Fixed(s.fpr),
            fpr_queries: s.fpr_queries,
            construction_mops: Fixed(s.construction_mops()),
        })
    });
    rows::write(dir, rows::TABLE3, table3)?;
    files += 1;

    rows::write(dir, rows::FIG4, space_rows(results))?;

    files += 1;

    let by_positive = results.iter().flat_map(|r| {
        r.by_positive.iter().map(|p| ByPositive {
            filter: r.name.clone(),
            threads: r.threads,
            positive_fraction: Fixed(p.x),
            mops: Fixed(p.mops),
        })
    });
    rows::write(dir, rows::FIG5, by_positive)?;
    files += 1;

    let lookups = results.iter().flat_map(|r| {
        [("positive", positive as Pick), ("negative", negative)].into_iter().flat_map(
            move |(kind, pick)| {
                pick(r).iter().map(move |p| Lookups {
                    filter: r.name.clone(),
                    threads: r.threads,
                    queries: kind.to_owned(),
                    occupancy: Fixed(p.x),
                    mops: Fixed(p.mops),
                })
            },
        )
    });
    rows::write(dir, rows::FIG6, lookups)?;
    files += 1;

    for (name, pick) in [(rows::FIG7, inserts as Pick), (rows::FIG8, deletes)] {
        let points = results.iter().flat_map(|r| {
            pick(r).iter().map(|p| ByOccupancy {
                filter: r.name.clone(),
                threads: r.threads,
                occupancy: Fixed(p.x),
                mops: Fixed(p.mops),
            })
        });
        rows::write(dir, name, points)?;
        files += 1;
    }

    let settings = [
        ("mode", if config.quick { "quick" } else { "default" }.to_owned()),
        ("table_mib", config.mib.to_string()),
        ("window_ops", config.ops.to_string()),
        ("occupancy_step", config.step.to_string()),
        ("fpr_queries", config.fpr_queries.to_string()),
        ("threads", config.threads.to_string()),
        ("cpus", std::thread::available_parallelism().map_or(0, |n| n.get()).to_string()),
        ("elapsed_s", format!("{:.1}", run.elapsed.as_secs_f64())),
        ("load_average_before", run.load_before.clone()),
        ("load_average_after", run.load_after.clone()),
    ];
    let settings = settings.into_iter().map(|(setting, value)| Setting { setting, value });
    rows::write(dir, rows::RUN, settings)?;
    files += 1;
    Ok(files + crate::svg::draw_all(dir)?)
}

fn mean(points: &[Point]) -> Option<f64> {
    (!points.is_empty()).then(|| points.iter().map(|p| p.mops).sum::<f64>() / points.len() as f64)
}

fn cell(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"))
}

/// Prints Table 3 beside the paper's and the figures' headline numbers.
pub(crate) fn print_summary(config: &Config, results: &[Results], run: &Run) {
    println!(
        "\nTable 3: filters of this crate's {} MiB table, filled until the first refused insert \
         (or to the same items)\nand to this crate's promised capacity",
        config.mib
    );
    println!(
        "{:<34} {:<19} {:>13} {:>8} {:>9} {:>9} {:>11}",
        "filter", "fill", "items", "MiB", "bits/item", "FPR", "M inserts/s"
    );
    for r in results {
        for (fill, s) in table_rows(r) {
            println!(
                "{:<34} {:<19} {:>13} {:>8.1} {:>9.2} {:>8.4}% {:>11.2}",
                label(&r.name, r.threads),
                fill,
                grouped(s.items),
                s.bytes as f64 / f64::from(1 << 20),
                s.bits_per_item(),
                s.fpr * 100.0,
                s.construction_mops()
            );
        }
    }
    println!("paper (192 MB, Xeon L5640 @ 2.27 GHz, one thread):");
    for (name, items, bits, fpr, rate) in PAPER_TABLE3 {
        println!(
            "{:<34} {:<19} {:>13} {:>8.1} {:>9.2} {:>8.4}% {:>11.2}",
            name,
            "paper",
            grouped((items * 1e6) as u64),
            192.0,
            bits,
            fpr,
            rate
        );
    }

    println!(
        "\nFigures 5-8, million operations/s: lookups and deletes averaged over the occupancy \
         steps; inserts at the step nearest 50% and at the last step before full"
    );
    println!(
        "{:<34} {:>8} {:>8} {:>10} {:>10} {:>8} {:>15}",
        "filter", "lookup+", "lookup-", "insert@50", "insert@end", "delete", "fig5 0/50/100%"
    );
    for r in results {
        let near =
            |x: f64| r.insert.iter().min_by(|a, b| (a.x - x).abs().total_cmp(&(b.x - x).abs()));
        let fig5 = |p: f64| r.by_positive.iter().find(|q| (q.x - p).abs() < 1e-9).map(|q| q.mops);
        println!(
            "{:<34} {:>8} {:>8} {:>10} {:>10} {:>8} {:>15}",
            label(&r.name, r.threads),
            cell(mean(&r.lookup_positive)),
            cell(mean(&r.lookup_negative)),
            cell(near(0.5).map(|p| p.mops)),
            cell(r.insert.last().map(|p| p.mops)),
            cell(mean(&r.delete)),
            format!("{}/{}/{}", cell(fig5(0.0)), cell(fig5(0.5)), cell(fig5(1.0)))
        );
    }
    for r in results.iter().filter(|r| r.false_negatives > 0 || r.lost.is_some_and(|n| n > 0)) {
        println!(
            "note: {}: lost an item: {} positive lookups answered false, {} removes of inserted \
             keys found nothing",
            label(&r.name, r.threads),
            r.false_negatives,
            r.lost.unwrap_or(0)
        );
    }
    let passes: Vec<String> = results
        .iter()
        .map(|r| format!("{} {:.0}s", label(&r.name, r.threads), r.elapsed.as_secs_f64()))
        .collect();
    println!("\npasses: {}", passes.join(", "));
    println!(
        "total: {:.1} s; load average before {}, after {} (other work on the machine slows \
         every number)",
        run.elapsed.as_secs_f64(),
        run.load_before,
        run.load_after
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::Snapshot;
    use clap::Parser;

    /// A pass with two points on every figure and a Table 3 row.
    fn pass(name: &str, threads: usize) -> Results {
        let full = Snapshot {
            items: 1000,
            bytes: 2048,
            fpr: 0.001,
            fpr_queries: 1 << 20,
            construction: Duration::from_millis(1),
        };
        let points = vec![Point { x: 0.5, mops: 10.0 }, Point { x: 0.9, mops: 5.0 }];
        Results {
            name: name.to_owned(),
            threads,
            refused: true,
            full,
            max_load: 0.95,
            at_capacity: None,
            lookup_positive: points.clone(),
            lookup_negative: points.clone(),
            insert: points.clone(),
            delete: points.clone(),
            by_positive: points,
            false_negatives: 0,
            lost: Some(0),
            elapsed: Duration::from_secs(1),
        }
    }

    #[test]
    fn every_plot_is_drawn_from_the_csv_files_written() {
        let dir = std::env::temp_dir().join(format!("paper-output-{}", std::process::id()));
        let out = dir.display().to_string();
        let config = Config::from(crate::cli::Args::parse_from(["paper", "--out", out.as_str()]));
        let results =
            [pass("lockfree-cuckoo", 1), pass("lockfree-cuckoo", 2), pass("fastbloom", 1)];
        let run = Run {
            elapsed: Duration::from_secs(3),
            load_before: "0.00 0.00 0.00".to_owned(),
            load_after: "0.00 0.00 0.00".to_owned(),
        };
        assert_eq!(write_all(&config, &results, &run).unwrap(), 7 + 6, "7 CSV files, 6 plots");

        let svg = |name: &str| fs::read_to_string(dir.join(name)).unwrap();
        for name in [
            "fig5_lookup_vs_positive.svg",
            "fig6a_lookup_positive.svg",
            "fig6b_lookup_negative.svg",
            "fig7_insert_vs_occupancy.svg",
            "fig8_delete_vs_occupancy.svg",
        ] {
            let text = svg(name);
            for series in ["lockfree-cuckoo", "lockfree-cuckoo (2 threads)", "fastbloom"] {
                assert!(text.contains(&format!("\n{series}\n")), "{name} lacks {series}");
            }
            assert!(text.contains("\n100%\n"), "{name} lacks its x axis");
        }
        // Figure 4 reads back the names with commas, and draws only one-thread passes.
        let text = svg("fig4_space.svg");
        for series in
            ["Bloom, optimal", "α=0.950", "lockfree-cuckoo, measured", "fastbloom, measured"]
        {
            assert!(text.contains(series), "Figure 4 lacks {series}");
        }
        assert!(!text.contains("threads") && text.contains("\n0.001%\n"));
        fs::remove_dir_all(dir).unwrap();
    }
}
