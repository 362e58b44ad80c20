//! The CSV files, the SVG plots and the printed summary.

use std::fs;
use std::io;
use std::time::Duration;

use crate::cli::Config;
use crate::experiments::{Point, Results, Snapshot};
use crate::svg::{Plot, Scale, Series};

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

/// A filter keeps its colour on every plot; its concurrent line is dashed.
fn color(name: &str) -> &'static str {
    match name {
        "lockfree-cuckoo" => "#d62728",
        "cuckoofilter" => "#1f77b4",
        "atomic-cuckoo-filter" => "#2ca02c",
        "fastbloom" => "#9467bd",
        _ => "#ff7f0e",
    }
}

fn label(r: &Results) -> String {
    if r.threads == 1 {
        r.name.clone()
    } else {
        format!("{} ({} threads)", r.name, r.threads)
    }
}

/// The Table 3 rows of one pass: when full, and at this crate's promised capacity.
fn table_rows(r: &Results) -> Vec<(&'static str, Snapshot)> {
    let full = if r.refused { "first refusal" } else { "same items as ours" };
    let mut rows = vec![(full, r.full)];
    rows.extend(r.at_capacity.map(|s| ("promised capacity", s)));
    rows
}

/// Writes `name` in the output directory, counting it.
fn write(config: &Config, files: &mut usize, name: &str, text: &str) -> io::Result<()> {
    fs::write(config.out.join(name), text)?;
    *files += 1;
    Ok(())
}

/// A CSV document; no field here contains a comma or a quote.
fn csv(header: &str, rows: impl IntoIterator<Item = String>) -> String {
    let mut text = format!("{header}\n");
    for row in rows {
        text.push_str(&row);
        text.push('\n');
    }
    text
}

/// One line per pass with points, occupancy on the x axis in percent.
fn occupancy_series(results: &[Results], points: Pick) -> Vec<Series> {
    results
        .iter()
        .filter(|r| !points(r).is_empty())
        .map(|r| Series {
            name: label(r),
            color: color(&r.name),
            dashed: r.threads > 1,
            line: true,
            markers: true,
            points: points(r).iter().map(|p| (p.x * 100.0, p.mops)).collect(),
        })
        .collect()
}

fn throughput_plot(title: &str, x_label: &str, series: Vec<Series>) -> Plot {
    Plot {
        title: title.to_owned(),
        x_label: x_label.to_owned(),
        y_label: "throughput (million operations/s)".to_owned(),
        x_scale: Scale::Linear,
        x_unit: "%",
        x_range: Some((0.0, 100.0)),
        series,
    }
}

/// Figure 4: bits per item against false-positive rate, formulas and measured points.
fn space_plot(results: &[Results]) -> (Plot, String) {
    // Our table's achieved load stands in for α, as the paper uses empirical load factors.
    let alpha = results[0].max_load;
    let grid: Vec<f64> = (0..=80).map(|i| 10f64.powf(-5.0 + 4.0 * f64::from(i) / 80.0)).collect();
    let curve = |name: String, color, dashed, bits: &dyn Fn(f64) -> f64| Series {
        name,
        color,
        dashed,
        line: true,
        markers: false,
        points: grid.iter().map(|&e| (e * 100.0, bits(e))).collect(),
    };
    let mut series = vec![
        curve("bound: log2(1/ε)".into(), "#555555", true, &|e: f64| (1.0 / e).log2()),
        curve("Bloom, optimal: 1.44 log2(1/ε)".into(), "#9467bd", true, &|e: f64| {
            1.44 * (1.0 / e).log2()
        }),
        curve(format!("cuckoo: (log2(1/ε)+3)/α, α={alpha:.3}"), "#8c564b", false, &|e: f64| {
            ((1.0 / e).log2() + 3.0) / alpha
        }),
    ];
    for r in results.iter().filter(|r| r.threads == 1) {
        let points: Vec<(f64, f64)> = table_rows(r)
            .iter()
            .filter(|(_, s)| s.fpr > 0.0)
            .map(|(_, s)| (s.fpr * 100.0, s.bits_per_item()))
            .collect();
        if !points.is_empty() {
            series.push(Series {
                name: format!("{}, measured", r.name),
                color: color(&r.name),
                dashed: false,
                line: false,
                markers: true,
                points,
            });
        }
    }
    let rows = series.iter().flat_map(|s| {
        let kind = if s.line { "formula" } else { "measured" };
        s.points.iter().map(move |(x, y)| format!("{},{kind},{:.8},{y:.4}", s.name, x / 100.0))
    });
    let text = csv("series,kind,fpr,bits_per_item", rows);
    let plot = Plot {
        title: "Fig. 4: space against false-positive rate".to_owned(),
        x_label: "false-positive rate ε (log scale)".to_owned(),
        y_label: "bits per item".to_owned(),
        x_scale: Scale::Log,
        x_unit: "%",
        x_range: Some((0.001, 10.0)),
        series,
    };
    (plot, text)
}

/// Picks one measured line out of a pass.
type Pick = fn(&Results) -> &[Point];

fn by_positive(r: &Results) -> &[Point] {
    &r.by_positive
}
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

/// Writes every CSV and SVG file; returns how many.
pub(crate) fn write_all(config: &Config, results: &[Results], run: &Run) -> io::Result<usize> {
    fs::create_dir_all(&config.out)?;
    let mut files = 0;

    let rows = results.iter().flat_map(|r| {
        table_rows(r).into_iter().map(move |(fill, s)| {
            format!(
                "{},{},{fill},{},{},{:.3},{:.8},{},{:.3}",
                r.name,
                r.threads,
                s.items,
                s.bytes,
                s.bits_per_item(),
                s.fpr,
                s.fpr_queries,
                s.construction_mops()
            )
        })
    });
    let header =
        "filter,threads,fill,items,table_bytes,bits_per_item,fpr,fpr_queries,construction_mops";
    write(config, &mut files, "table3.csv", &csv(header, rows))?;

    let (plot, text) = space_plot(results);
    write(config, &mut files, "fig4_space.csv", &text)?;
    write(config, &mut files, "fig4_space.svg", &plot.render())?;

    let rows = results.iter().flat_map(|r| {
        r.by_positive
            .iter()
            .map(move |p| format!("{},{},{:.2},{:.3}", r.name, r.threads, p.x, p.mops))
    });
    let text = csv("filter,threads,positive_fraction,mops", rows);
    write(config, &mut files, "fig5_lookup_vs_positive.csv", &text)?;
    let plot = throughput_plot(
        "Fig. 5: lookups on a full filter",
        "positive queries",
        occupancy_series(results, by_positive),
    );
    write(config, &mut files, "fig5_lookup_vs_positive.svg", &plot.render())?;

    let rows = results.iter().flat_map(|r| {
        [("positive", positive as Pick), ("negative", negative)].into_iter().flat_map(
            move |(kind, pick)| {
                pick(r).iter().map(move |p| {
                    format!("{},{},{kind},{:.4},{:.3}", r.name, r.threads, p.x, p.mops)
                })
            },
        )
    });
    let text = csv("filter,threads,queries,occupancy,mops", rows);
    write(config, &mut files, "fig6_lookup_vs_occupancy.csv", &text)?;
    for (name, title, pick) in [
        ("fig6a_lookup_positive.svg", "Fig. 6a: positive lookups", positive as Pick),
        ("fig6b_lookup_negative.svg", "Fig. 6b: negative lookups", negative),
    ] {
        let plot =
            throughput_plot(title, "occupancy (items / slots)", occupancy_series(results, pick));
        write(config, &mut files, name, &plot.render())?;
    }

    for (stem, title, pick) in [
        ("fig7_insert_vs_occupancy", "Fig. 7: inserts", inserts as Pick),
        ("fig8_delete_vs_occupancy", "Fig. 8: delete until empty", deletes),
    ] {
        let rows = results.iter().flat_map(|r| {
            pick(r)
                .iter()
                .map(move |p| format!("{},{},{:.4},{:.3}", r.name, r.threads, p.x, p.mops))
        });
        write(
            config,
            &mut files,
            &format!("{stem}.csv"),
            &csv("filter,threads,occupancy,mops", rows),
        )?;
        let plot =
            throughput_plot(title, "occupancy (items / slots)", occupancy_series(results, pick));
        write(config, &mut files, &format!("{stem}.svg"), &plot.render())?;
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
    let rows = settings.iter().map(|(k, v)| format!("{k},{v}"));
    write(config, &mut files, "run.csv", &csv("setting,value", rows))?;
    Ok(files)
}

/// `n` with thousands separators.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
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
                label(r),
                fill,
                thousands(s.items),
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
            thousands((items * 1e6) as u64),
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
            label(r),
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
            label(r),
            r.false_negatives,
            r.lost.unwrap_or(0)
        );
    }
    let passes: Vec<String> =
        results.iter().map(|r| format!("{} {:.0}s", label(r), r.elapsed.as_secs_f64())).collect();
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
    use super::thousands;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(127_780_000), "127,780,000");
    }
}
