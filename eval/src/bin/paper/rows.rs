//! The rows of the CSV files: written by `output.rs` from the measurements, read back by
//! `svg.rs` to draw the figures (so a run and `--plot-only` draw from the same files).

use std::io;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub(crate) const TABLE3: &str = "table3.csv";
pub(crate) const FIG4: &str = "fig4_space.csv";
pub(crate) const FIG5: &str = "fig5_lookup_vs_positive.csv";
pub(crate) const FIG6: &str = "fig6_lookup_vs_occupancy.csv";
pub(crate) const FIG7: &str = "fig7_insert_vs_occupancy.csv";
pub(crate) const FIG8: &str = "fig8_delete_vs_occupancy.csv";
pub(crate) const RUN: &str = "run.csv";

/// A pass's name in the summary and on the plots' legends.
pub(crate) fn label(name: &str, threads: usize) -> String {
    if threads == 1 {
        name.to_owned()
    } else {
        format!("{name} ({threads} threads)")
    }
}

/// A number written with `D` decimals, so that the files do not change with rounding noise;
/// read back as any number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Fixed<const D: usize>(pub(crate) f64);

impl<const D: usize> Serialize for Fixed<D> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&format_args!("{:.*}", D, self.0))
    }
}

impl<'de, const D: usize> Deserialize<'de> for Fixed<D> {
    fn deserialize<De: Deserializer<'de>>(deserializer: De) -> Result<Self, De::Error> {
        f64::deserialize(deserializer).map(Self)
    }
}

/// Table 3: a filter when full, and at this crate's promised capacity.
#[derive(Debug, Serialize)]
pub(crate) struct Table3 {
    pub(crate) filter: String,
    pub(crate) threads: usize,
    pub(crate) fill: &'static str,
    pub(crate) items: u64,
    pub(crate) table_bytes: usize,
    pub(crate) bits_per_item: Fixed<3>,
    pub(crate) fpr: Fixed<8>,
    pub(crate) fpr_queries: u64,
    pub(crate) construction_mops: Fixed<3>,
}

/// Figure 4: bits per item against false-positive rate, a formula's point or a measured one
/// (`kind`); `svg.rs` styles the lines by their series names.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Space {
    pub(crate) series: String,
    pub(crate) kind: String,
    pub(crate) fpr: Fixed<8>,
    pub(crate) bits_per_item: Fixed<4>,
}

/// Figure 5: lookups against the fraction of positive queries.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ByPositive {
    pub(crate) filter: String,
    pub(crate) threads: usize,
    pub(crate) positive_fraction: Fixed<2>,
    pub(crate) mops: Fixed<3>,
}

/// Figure 6: lookups against occupancy, of positive or of negative `queries`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Lookups {
    pub(crate) filter: String,
    pub(crate) threads: usize,
    pub(crate) queries: String,
    pub(crate) occupancy: Fixed<4>,
    pub(crate) mops: Fixed<3>,
}

/// Figures 7 and 8: inserts or deletes against occupancy.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ByOccupancy {
    pub(crate) filter: String,
    pub(crate) threads: usize,
    pub(crate) occupancy: Fixed<4>,
    pub(crate) mops: Fixed<3>,
}

/// A setting of the run as a whole.
#[derive(Debug, Serialize)]
pub(crate) struct Setting {
    pub(crate) setting: &'static str,
    pub(crate) value: String,
}

/// Writes `rows` to the CSV file `name` in `dir`, a header first.
pub(crate) fn write<T: Serialize>(
    dir: &Path,
    name: &str,
    rows: impl IntoIterator<Item = T>,
) -> io::Result<()> {
    let mut writer = csv::Writer::from_path(dir.join(name)).map_err(|e| named(name, e))?;
    for row in rows {
        writer.serialize(row).map_err(|e| named(name, e))?;
    }
    writer.flush()
}

/// The rows of the CSV file `name` in `dir`.
pub(crate) fn read<T: DeserializeOwned>(dir: &Path, name: &str) -> io::Result<Vec<T>> {
    let mut reader = csv::Reader::from_path(dir.join(name)).map_err(|e| named(name, e))?;
    reader.deserialize().collect::<Result<_, _>>().map_err(|e| named(name, e))
}

fn named(name: &str, err: csv::Error) -> io::Error {
    let err = io::Error::from(err);
    io::Error::new(err.kind(), format!("{name}: {err}"))
}
