//! The figures, drawn with plotters' SVG backend from the CSV files in the output directory.
//!
//! Drawing from the CSVs rather than from the measurements in memory gives a run and
//! `--plot-only` one path, so committed figures can be redrawn from committed data alone.

use std::error::Error;
use std::fs;
use std::io;
use std::path::Path;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::element::{ComposedElement, DashedPathElement};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use lockfree_cuckoo_eval::peers::Peer;

use crate::rows::{self, label, ByOccupancy, ByPositive, Lookups, Space};

/// The whole image, in pixels; the legend takes the 300 pixels right of the plotting area.
const SIZE: (u32, u32) = (860, 480);
const LEGEND_WIDTH: u32 = 300;

/// Dashes and gaps of a concurrent pass's line, in pixels.
const DASH: (u32, u32) = (7, 4);

const OCCUPANCY: &str = "occupancy (items / slots)";

/// The font size that plotters draws as `px` pixels: plotters-svg writes a size divided by 1.24
/// as `font-size`, and the axes round sizes to whole numbers first.
fn font_size(px: f64) -> f64 {
    (px * 1.24).round()
}

/// A throughput figure's points, each with its line: (filter, threads), (x, million ops/s).
type Points = Vec<((String, usize), (f64, f64))>;

/// One of Figures 5 to 8: throughput against a fraction on the x axis, shown in percent.
struct Throughput {
    svg: &'static str,
    title: &'static str,
    x_label: &'static str,
    points: fn(&Path) -> io::Result<Points>,
}

const THROUGHPUT: [Throughput; 5] = [
    Throughput {
        svg: "fig5_lookup_vs_positive.svg",
        title: "Fig. 5: lookups on a full filter",
        x_label: "positive queries",
        points: by_positive,
    },
    Throughput {
        svg: "fig6a_lookup_positive.svg",
        title: "Fig. 6a: positive lookups",
        x_label: OCCUPANCY,
        points: |dir| lookups(dir, "positive"),
    },
    Throughput {
        svg: "fig6b_lookup_negative.svg",
        title: "Fig. 6b: negative lookups",
        x_label: OCCUPANCY,
        points: |dir| lookups(dir, "negative"),
    },
    Throughput {
        svg: "fig7_insert_vs_occupancy.svg",
        title: "Fig. 7: inserts",
        x_label: OCCUPANCY,
        points: |dir| by_occupancy(dir, rows::FIG7),
    },
    Throughput {
        svg: "fig8_delete_vs_occupancy.svg",
        title: "Fig. 8: delete until empty",
        x_label: OCCUPANCY,
        points: |dir| by_occupancy(dir, rows::FIG8),
    },
];

fn by_positive(dir: &Path) -> io::Result<Points> {
    let rows: Vec<ByPositive> = rows::read(dir, rows::FIG5)?;
    Ok(rows
        .into_iter()
        .map(|r| ((r.filter, r.threads), (r.positive_fraction.0, r.mops.0)))
        .collect())
}

/// Figure 6's points of one kind of `queries`: one CSV file holds both halves.
fn lookups(dir: &Path, queries: &str) -> io::Result<Points> {
    let rows: Vec<Lookups> = rows::read(dir, rows::FIG6)?;
    Ok(rows
        .into_iter()
        .filter(|r| r.queries == queries)
        .map(|r| ((r.filter, r.threads), (r.occupancy.0, r.mops.0)))
        .collect())
}

fn by_occupancy(dir: &Path, name: &str) -> io::Result<Points> {
    let rows: Vec<ByOccupancy> = rows::read(dir, name)?;
    Ok(rows.into_iter().map(|r| ((r.filter, r.threads), (r.occupancy.0, r.mops.0))).collect())
}

/// Draws every figure from the CSV files in `dir` into the same directory; returns how many.
pub(crate) fn draw_all(dir: &Path) -> io::Result<usize> {
    let mut plots = vec![("fig4_space.svg", space_plot(rows::read(dir, rows::FIG4)?))];
    for figure in THROUGHPUT {
        let series = throughput_series((figure.points)(dir)?);
        plots.push((
            figure.svg,
            Plot {
                title: figure.title,
                x_label: figure.x_label,
                y_label: "throughput (million operations/s)",
                x_scale: Scale::Linear,
                x_range: (0.0, 100.0),
                series,
            },
        ));
    }
    for (name, plot) in &plots {
        let text = plot.render().map_err(|e| io::Error::other(format!("drawing {name}: {e}")))?;
        fs::write(dir.join(name), text)?;
    }
    Ok(plots.len())
}

/// A filter keeps its colour on every plot; its concurrent line is dashed.
fn color(legend: &str) -> RGBColor {
    match Peer::by_legend(legend) {
        Some(Peer::Ours) => RGBColor(0xd6, 0x27, 0x28),
        Some(Peer::OursSemiSorted) => RGBColor(0x7f, 0x7f, 0x7f),
        Some(Peer::Cf) => RGBColor(0x1f, 0x77, 0xb4),
        Some(Peer::Acf) => RGBColor(0x2c, 0xa0, 0x2c),
        Some(Peer::Fastbloom) => RGBColor(0x94, 0x67, 0xbd),
        Some(Peer::Sbbf) => RGBColor(0xe3, 0x77, 0xc2),
        Some(Peer::Qfilter) => RGBColor(0x8c, 0x56, 0x4b),
        _ => RGBColor(0xff, 0x7f, 0x0e),
    }
}

/// Splits points into series by key, in the order the keys first appear.
fn group<K: PartialEq>(points: impl Iterator<Item = (K, (f64, f64))>) -> Vec<(K, Vec<(f64, f64)>)> {
    let mut groups: Vec<(K, Vec<(f64, f64)>)> = Vec::new();
    for (key, point) in points {
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, list)) => list.push(point),
            None => groups.push((key, vec![point])),
        }
    }
    groups
}

/// One line per pass (filter and thread count), x in percent.
fn throughput_series(points: Points) -> Vec<Series> {
    let points = points.into_iter().map(|(line, (x, mops))| (line, (x * 100.0, mops)));
    group(points)
        .into_iter()
        .map(|((filter, threads), points)| Series {
            name: label(&filter, threads),
            color: color(&filter),
            dashed: threads > 1,
            line: true,
            markers: true,
            points,
        })
        .collect()
}

/// Figure 4: bits per item against false-positive rate, formulas as lines and measured filters
/// as points (the `kind` column), styled by the series names `output.rs` writes.
fn space_plot(rows: Vec<Space>) -> Plot {
    let points = rows
        .into_iter()
        .map(|r| ((r.series, r.kind == "formula"), (r.fpr.0 * 100.0, r.bits_per_item.0)));
    let series = group(points)
        .into_iter()
        .map(|((name, formula), points)| {
            let (color, dashed) = if !formula {
                (color(name.trim_end_matches(", measured")), false)
            } else if name.starts_with("bound") {
                (RGBColor(0x55, 0x55, 0x55), true)
            } else if name.starts_with("Bloom") {
                (RGBColor(0x94, 0x67, 0xbd), true)
            } else {
                // The cuckoo filter's own formula, which the measured points test: solid.
                (RGBColor(0x8c, 0x56, 0x4b), false)
            };
            Series { name, color, dashed, line: formula, markers: !formula, points }
        })
        .collect();
    Plot {
        title: "Fig. 4: space against false-positive rate",
        x_label: "false-positive rate ε (log scale)",
        y_label: "bits per item",
        x_scale: Scale::Log,
        x_range: (0.001, 10.0),
        series,
    }
}

/// How the x axis maps values to pixels.
#[derive(Debug, Clone, Copy)]
enum Scale {
    Linear,
    /// Decades; every x value must be positive.
    Log,
}

/// One line (or set of markers) on a plot.
#[derive(Debug)]
struct Series {
    name: String,
    color: RGBColor,
    dashed: bool,
    /// Join the points with a line.
    line: bool,
    /// Mark each point.
    markers: bool,
    points: Vec<(f64, f64)>,
}

impl Series {
    /// Markers on a line are small; markers alone must stand out.
    fn marker_radius(&self) -> u32 {
        if self.line {
            3
        } else {
            5
        }
    }
}

/// A plot: labels, an x axis in percent and its series. The y axis is linear from 0.
#[derive(Debug)]
struct Plot {
    title: &'static str,
    x_label: &'static str,
    y_label: &'static str,
    x_scale: Scale,
    x_range: (f64, f64),
    series: Vec<Series>,
}

/// The y axis: round ticks from 0 (steps of 1, 2 or 5 times a power of ten, about five of
/// them) to a little above the largest value, so no point touches the frame.
fn y_ticks(y_max: f64) -> Vec<f64> {
    let top = if y_max > 0.0 { y_max * 1.05 } else { 1.0 };
    let raw = top / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|&s| s >= raw * 0.999)
        .unwrap_or(10.0 * magnitude);
    let last = (top / step - 1e-9).ceil().max(1.0) as u32;
    (0..=last).map(|i| f64::from(i) * step).collect()
}

/// A tick label: at most six decimals, without trailing zeros (plotters passes only the value,
/// which may carry rounding noise such as 0.30000000000000004).
fn tick_label(value: f64) -> String {
    let text = format!("{value:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}

impl Plot {
    /// The whole SVG document.
    fn render(&self) -> Result<String, Box<dyn Error + Send + Sync>> {
        let (lo, hi) = self.x_range;
        match self.x_scale {
            // Six labels: 0% to 100% in steps of 20.
            Scale::Linear => self.render_on(lo..hi, 6, 0),
            // Labels at the decades, light grid lines at 2 to 9 times each. plotters starts the
            // labels at 10^ceil(ln(lo) / ln(10)), which rounding lifts a decade when `lo` is a
            // power of ten; a hair lower keeps that decade labelled.
            Scale::Log => {
                let decades = (hi / lo).log10().round() as usize;
                self.render_on((lo * (1.0 - 1e-9)..hi).log_scale(), decades + 1, 10)
            }
        }
    }

    fn render_on<X>(
        &self,
        x_spec: X,
        x_labels: usize,
        x_light_lines: usize,
    ) -> Result<String, Box<dyn Error + Send + Sync>>
    where
        X: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
    {
        let y_max = self.series.iter().flat_map(|s| &s.points).map(|p| p.1).fold(0.0, f64::max);
        let y_ticks = y_ticks(y_max);
        let y_top = *y_ticks.last().expect("at least two ticks");

        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
            // An opaque background keeps the plot readable on dark pages.
            root.fill(&WHITE)?;
            let (chart_area, legend) = root.split_horizontally(SIZE.0 - LEGEND_WIDTH);
            let mut chart = ChartBuilder::on(&chart_area)
                .caption(
                    self.title,
                    ("sans-serif", font_size(15.0)).into_font().style(FontStyle::Bold),
                )
                .margin_top(12)
                .margin_left(12)
                .x_label_area_size(48)
                .y_label_area_size(62)
                .build_cartesian_2d(x_spec, 0.0..y_top)?;
            let x_label = |x: &f64| format!("{}%", tick_label(*x));
            let y_label = |y: &f64| tick_label(*y);
            // Asked for that many labels, plotters picks the same ticks: the finest round step
            // that gives no more.
            chart
                .configure_mesh()
                .x_labels(x_labels)
                .y_labels(y_ticks.len())
                .x_max_light_lines(x_light_lines)
                .y_max_light_lines(0)
                .x_label_formatter(&x_label)
                .y_label_formatter(&y_label)
                .label_style(("sans-serif", font_size(12.0)))
                .axis_desc_style(("sans-serif", font_size(13.0)))
                .x_desc(self.x_label)
                .y_desc(self.y_label)
                .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
                .light_line_style(RGBColor(0xf0, 0xf0, 0xf0))
                .draw()?;
            // Frame the plotting area on all four sides, as the axes only draw two.
            let (w, h) = chart.plotting_area().dim_in_pixel();
            chart.plotting_area().strip_coord_spec().draw(&Rectangle::new(
                [(0, 0), (w as i32 - 1, h as i32 - 1)],
                BLACK.stroke_width(1),
            ))?;

            for series in &self.series {
                let line = series.color.stroke_width(2);
                let points = series.points.iter().copied();
                if series.line && series.dashed {
                    chart.draw_series(DashedLineSeries::new(points, DASH.0, DASH.1, line))?;
                } else if series.line {
                    chart.draw_series(LineSeries::new(points, line))?;
                }
                if series.markers {
                    let radius = series.marker_radius();
                    chart.draw_series(
                        series.points.iter().map(|&p| marker(p, radius, series.color)),
                    )?;
                }
            }

            // The legend, right of the plotting area so that it never hides a line: a sample of
            // each series' line and marker, then its name.
            let top = chart.plotting_area().get_base_pixel().1;
            let name_style = TextStyle::from(("sans-serif", font_size(12.0)).into_font())
                .pos(Pos::new(HPos::Left, VPos::Center));
            for (i, series) in self.series.iter().enumerate() {
                let y = top + 8 + 20 * i as i32;
                let (sample, line) = ([(18, y), (46, y)], series.color.stroke_width(2));
                if series.line && series.dashed {
                    legend.draw(&DashedPathElement::new(sample, DASH.0, DASH.1, line))?;
                } else if series.line {
                    legend.draw(&PathElement::new(sample, line))?;
                }
                if series.markers {
                    legend.draw(&marker((32, y), series.marker_radius(), series.color))?;
                }
                legend.draw(&Text::new(series.name.as_str(), (54, y), name_style.clone()))?;
            }
            root.present()?;
        }
        Ok(svg)
    }
}

/// A circle around a point, in pixels from it.
type Dot = Circle<(i32, i32), u32>;

/// A filled dot with a white rim, which keeps markers apart where lines cross.
fn marker<C, DB: DrawingBackend>(
    at: C,
    radius: u32,
    color: RGBColor,
) -> ComposedElement<C, DB, Dot, Dot> {
    EmptyElement::at(at)
        + Circle::new((0, 0), radius, color.filled())
        + Circle::new((0, 0), radius, WHITE.stroke_width(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn y_ticks_are_round_and_clear_the_largest_value() {
        assert_eq!(y_ticks(23.0), vec![0.0, 5.0, 10.0, 15.0, 20.0, 25.0]);
        // 5% headroom over 38 needs 39.9: ticks of 10 up to 40.
        assert_eq!(y_ticks(38.0), vec![0.0, 10.0, 20.0, 30.0, 40.0]);
        let small = y_ticks(0.7);
        assert!(small.len() >= 4 && *small.last().unwrap() >= 0.7 * 1.05, "{small:?}");
    }

    #[test]
    fn a_missing_csv_file_is_named() {
        let err = draw_all(Path::new("no such directory")).unwrap_err();
        assert!(err.to_string().contains("fig4_space.csv"), "{err}");
    }

    #[test]
    fn tick_labels_drop_rounding_noise() {
        assert_eq!(tick_label(0.30000000000000004), "0.3");
        assert_eq!(tick_label(20.0), "20");
        assert_eq!(tick_label(0.001), "0.001");
        assert_eq!(tick_label(-0.0), "0");
    }
}
