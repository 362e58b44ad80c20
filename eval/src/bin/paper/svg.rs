//! A small SVG line-plot writer: axes with "nice" ticks (linear, or decades for a log axis),
//! grid, axis labels, a legend, and series drawn as lines, markers or both.
//!
//! Hand-written so the example needs no plotting dependency: plots render in any browser and on
//! GitHub, and regenerating them needs nothing from the network.

use std::fmt::Write;

/// Width and height of the whole image, in pixels.
const WIDTH: f64 = 860.0;
const HEIGHT: f64 = 480.0;
/// The plotting area; the legend takes the space to its right.
const LEFT: f64 = 74.0;
const RIGHT: f64 = 560.0;
const TOP: f64 = 48.0;
const BOTTOM: f64 = 412.0;

/// How the x axis maps values to pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Scale {
    Linear,
    /// Decades; every x value must be positive.
    Log,
}

/// One line (or set of markers) on a plot.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub(crate) name: String,
    /// Any SVG colour.
    pub(crate) color: &'static str,
    pub(crate) dashed: bool,
    /// Join the points with a line.
    pub(crate) line: bool,
    /// Mark each point; a series without a line gets larger markers.
    pub(crate) markers: bool,
    pub(crate) points: Vec<(f64, f64)>,
}

/// A plot: labels, an x scale and its series. The y axis is linear from 0.
#[derive(Debug, Clone)]
pub(crate) struct Plot {
    pub(crate) title: String,
    pub(crate) x_label: String,
    pub(crate) y_label: String,
    pub(crate) x_scale: Scale,
    /// Appended to each x tick label, such as "%".
    pub(crate) x_unit: &'static str,
    /// The x range to show; `None` fits the data.
    pub(crate) x_range: Option<(f64, f64)>,
    pub(crate) series: Vec<Series>,
}

/// Evenly spaced round ticks (steps of 1, 2 or 5 times a power of ten) covering `lo..=hi`.
fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
    let raw = span / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|&s| s >= raw * 0.999)
        .unwrap_or(10.0 * magnitude);
    let first = (lo / step).floor() as i64;
    let last = (hi / step - 1e-9).ceil().max(first as f64 + 1.0) as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// `value` with as many decimals as the tick step needs; exactly "0" at zero (never "-0.0").
fn tick_label(value: f64, step: f64) -> String {
    if value.abs() < step.abs() * 1e-6 {
        return "0".to_owned();
    }
    let decimals = (-(step.abs().log10() + 1e-9).floor()).max(0.0) as usize;
    format!("{value:.decimals$}")
}

/// Escapes text for SVG content and attribute values.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The x axis as drawn.
struct XAxis {
    /// Labelled ticks.
    ticks: Vec<(f64, String)>,
    /// Unlabelled grid lines (a log axis's 2..9 times each decade).
    minor: Vec<f64>,
    /// From a value to its pixel column.
    to_px: Box<dyn Fn(f64) -> f64>,
}

impl Plot {
    fn x_axis(&self) -> XAxis {
        let xs = self.series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
        let (lo, hi) = self.x_range.unwrap_or_else(|| {
            xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)))
        });
        let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
        match self.x_scale {
            Scale::Linear => {
                let ticks = nice_ticks(lo, hi);
                let step = ticks[1] - ticks[0];
                let (a, b) = (ticks[0], *ticks.last().expect("at least two ticks"));
                let labelled =
                    ticks.iter().map(|&t| (t, tick_label(t, step) + self.x_unit)).collect();
                XAxis {
                    ticks: labelled,
                    minor: Vec::new(),
                    to_px: Box::new(move |x| LEFT + (x - a) / (b - a) * (RIGHT - LEFT)),
                }
            }
            Scale::Log => {
                let first = lo.log10().floor() as i32;
                let last = (hi.log10().ceil() as i32).max(first + 1);
                let labelled = (first..=last)
                    .map(|e| {
                        let v = 10f64.powi(e);
                        (v, tick_label(v, v) + self.x_unit)
                    })
                    .collect();
                let minor = (first..last)
                    .flat_map(|e| (2..10).map(move |m| f64::from(m) * 10f64.powi(e)))
                    .collect();
                let (a, b) = (f64::from(first), f64::from(last));
                XAxis {
                    ticks: labelled,
                    minor,
                    to_px: Box::new(move |x: f64| {
                        LEFT + (x.log10() - a) / (b - a) * (RIGHT - LEFT)
                    }),
                }
            }
        }
    }

    /// The whole SVG document.
    pub(crate) fn render(&self) -> String {
        let XAxis { ticks: x_ticks, minor: x_minor, to_px: px } = self.x_axis();
        let y_max =
            self.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).fold(0.0, f64::max);
        let y_ticks = nice_ticks(0.0, if y_max > 0.0 { y_max * 1.05 } else { 1.0 });
        let y_step = y_ticks[1] - y_ticks[0];
        let y_top = *y_ticks.last().expect("at least two ticks");
        let py = |y: f64| BOTTOM - y / y_top * (BOTTOM - TOP);

        let mut svg = String::new();
        // Writing to a String cannot fail; the `let _` keeps the format calls short.
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="Helvetica, Arial, sans-serif" font-size="12">"#
        );
        // An opaque background keeps the plot readable on dark pages.
        let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="26" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
            (LEFT + RIGHT) / 2.0,
            escape(&self.title)
        );

        for &x in &x_minor {
            let _ = writeln!(
                svg,
                r##"<line x1="{0:.1}" y1="{TOP}" x2="{0:.1}" y2="{BOTTOM}" stroke="#f0f0f0"/>"##,
                px(x)
            );
        }
        for (x, label) in &x_ticks {
            let _ = writeln!(
                svg,
                r##"<line x1="{0:.1}" y1="{TOP}" x2="{0:.1}" y2="{BOTTOM}" stroke="#dddddd"/><line x1="{0:.1}" y1="{BOTTOM}" x2="{0:.1}" y2="{1}" stroke="black"/><text x="{0:.1}" y="{2}" text-anchor="middle">{3}</text>"##,
                px(*x),
                BOTTOM + 5.0,
                BOTTOM + 19.0,
                escape(label)
            );
        }
        for &y in &y_ticks {
            let _ = writeln!(
                svg,
                r##"<line x1="{LEFT}" y1="{0:.1}" x2="{RIGHT}" y2="{0:.1}" stroke="#dddddd"/><line x1="{1}" y1="{0:.1}" x2="{LEFT}" y2="{0:.1}" stroke="black"/><text x="{2}" y="{3:.1}" text-anchor="end">{4}</text>"##,
                py(y),
                LEFT - 5.0,
                LEFT - 8.0,
                py(y) + 4.0,
                tick_label(y, y_step)
            );
        }
        let _ = writeln!(
            svg,
            r#"<rect x="{LEFT}" y="{TOP}" width="{}" height="{}" fill="none" stroke="black"/>"#,
            RIGHT - LEFT,
            BOTTOM - TOP
        );
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle" font-size="13">{}</text>"#,
            (LEFT + RIGHT) / 2.0,
            BOTTOM + 42.0,
            escape(&self.x_label)
        );
        let _ = writeln!(
            svg,
            r#"<text transform="translate(20 {}) rotate(-90)" text-anchor="middle" font-size="13">{}</text>"#,
            (TOP + BOTTOM) / 2.0,
            escape(&self.y_label)
        );

        for (i, series) in self.series.iter().enumerate() {
            let dash = if series.dashed { r#" stroke-dasharray="7 4""# } else { "" };
            let coords: Vec<(f64, f64)> =
                series.points.iter().map(|&(x, y)| (px(x), py(y))).collect();
            if series.line && coords.len() > 1 {
                let list: Vec<String> =
                    coords.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
                let _ = writeln!(
                    svg,
                    r#"<polyline fill="none" stroke="{}" stroke-width="2"{dash} points="{}"/>"#,
                    series.color,
                    list.join(" ")
                );
            }
            let radius = if series.line { 3.0 } else { 5.0 };
            if series.markers {
                for (x, y) in &coords {
                    let _ = writeln!(
                        svg,
                        r#"<circle cx="{x:.1}" cy="{y:.1}" r="{radius}" fill="{}" stroke="white" stroke-width="1"/>"#,
                        series.color
                    );
                }
            }

            // Legend entry: a sample of the line and marker, then the name.
            let ly = TOP + 8.0 + 20.0 * i as f64;
            let lx = RIGHT + 18.0;
            if series.line {
                let _ = writeln!(
                    svg,
                    r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{}" stroke-width="2"{dash}/>"#,
                    lx + 28.0,
                    series.color
                );
            }
            if series.markers {
                let _ = writeln!(
                    svg,
                    r#"<circle cx="{}" cy="{ly}" r="{radius}" fill="{}" stroke="white" stroke-width="1"/>"#,
                    lx + 14.0,
                    series.color
                );
            }
            let _ = writeln!(
                svg,
                r#"<text x="{}" y="{}">{}</text>"#,
                lx + 36.0,
                ly + 4.0,
                escape(&series.name)
            );
        }
        svg.push_str("</svg>\n");
        svg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(nice_ticks(0.0, 23.0), vec![0.0, 5.0, 10.0, 15.0, 20.0, 25.0]);
        assert_eq!(nice_ticks(0.0, 100.0), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        let small = nice_ticks(0.0, 0.7);
        assert!(small.len() >= 4 && *small.last().unwrap() >= 0.7, "{small:?}");
    }

    #[test]
    fn labels_use_the_step_precision() {
        assert_eq!(tick_label(0.25, 0.05), "0.25");
        assert_eq!(tick_label(20.0, 5.0), "20");
        assert_eq!(tick_label(0.001, 0.001), "0.001");
    }

    #[test]
    fn every_series_reaches_the_document() {
        let plot = Plot {
            title: "t <1>".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_scale: Scale::Log,
            x_unit: "%",
            x_range: None,
            series: vec![Series {
                name: "a & b".into(),
                color: "red",
                dashed: true,
                line: true,
                markers: true,
                points: vec![(0.01, 1.0), (10.0, 2.0)],
            }],
        };
        let svg = plot.render();
        assert!(svg.contains("a &amp; b") && svg.contains("t &lt;1&gt;") && svg.contains("10%"));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
    }
}
