//! Whether a snapshot moves between builds: `write` saves a filter of `u64`, string and byte-string
//! keys, `check` loads the file and finds every key, in another build. CI writes with
//! `-C target-cpu=native` (AES and every other feature of the machine) and checks in the normal
//! build, so a default hasher whose output depended on CPU features would fail there.
//!
//! ```text
//! RUSTFLAGS="-C target-cpu=native" CARGO_TARGET_DIR=target/native \
//!     cargo run --release -p lockfree-cuckoo-eval --bin portable -- write /tmp/filter.bin
//! cargo run --release -p lockfree-cuckoo-eval --bin portable -- check /tmp/filter.bin
//! ```
//!
//! `--hasher ahash` does the same with `AHashBuilder`, whose output is only promised within one
//! build: on a machine with AES its check fails, which shows that the check can.

use std::hash::BuildHasher;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use lockfree_cuckoo::{AHashBuilder, CuckooFilter, DefaultHashBuilder};

/// Saves a filter in one build and finds its keys in another.
#[derive(Debug, Parser)]
#[command(name = "portable")]
struct Args {
    #[command(subcommand)]
    step: Step,
    /// The filter's hasher
    #[arg(long, value_enum, default_value = "default", global = true)]
    hasher: Hasher,
}

#[derive(Debug, Subcommand)]
enum Step {
    /// Saves the filter to PATH
    Write { path: PathBuf },
    /// Loads the filter from PATH and looks up every key
    Check { path: PathBuf },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Hasher {
    /// `DefaultHashBuilder` under a fixed seed, specified in FORMAT.md
    Default,
    /// `AHashBuilder`
    Ahash,
}

/// Keys of each kind.
const KEYS: u64 = 20_000;

/// The default hasher's seed, the same in both builds: what is checked is that one seed maps
/// items alike in each.
const SEED: u64 = 0x243F_6A88_85A3_08D3;

fn text(i: u64) -> String {
    format!("user:{i:08}")
}

fn bytes(i: u64) -> Vec<u8> {
    // 8 to 64 bytes, so that every length of word and tail is written.
    let len = 8 + (i % 57) as usize;
    (0..len).map(|j| (i as usize).wrapping_mul(31).wrapping_add(j) as u8).collect()
}

fn write<S: BuildHasher + 'static>(path: &PathBuf, hasher: S) -> ExitCode {
    let filter = CuckooFilter::builder().capacity(3 * KEYS as usize).hasher(hasher).build();
    for i in 0..KEYS {
        filter.insert(&i).expect("the filter has room");
        filter.insert(text(i).as_str()).expect("the filter has room");
        filter.insert(&bytes(i)[..]).expect("the filter has room");
    }
    std::fs::write(path, filter.to_bytes()).expect("the snapshot is written");
    println!("wrote {} items to {}", filter.len(), path.display());
    ExitCode::SUCCESS
}

fn check<S: BuildHasher + 'static>(path: &PathBuf, hasher: S) -> ExitCode {
    let bytes_read = std::fs::read(path).expect("the snapshot is read");
    let filter = match CuckooFilter::from_bytes_with_hasher(&bytes_read, hasher) {
        Ok(filter) => filter,
        Err(err) => {
            eprintln!("error: {} does not load: {err}", path.display());
            return ExitCode::FAILURE;
        }
    };
    let missing = (0..KEYS)
        .filter(|&i| {
            !(filter.contains(&i)
                && filter.contains(text(i).as_str())
                && filter.contains(&bytes(i)[..]))
        })
        .count();
    if missing > 0 {
        eprintln!("error: {missing} of {KEYS} key triples missing from {}", path.display());
        return ExitCode::FAILURE;
    }
    println!("{}: all {} items found", path.display(), filter.len());
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args = Args::parse();
    match (args.step, args.hasher) {
        (Step::Write { path }, Hasher::Default) => {
            write(&path, DefaultHashBuilder::with_seed(SEED))
        }
        (Step::Write { path }, Hasher::Ahash) => write(&path, AHashBuilder::default()),
        (Step::Check { path }, Hasher::Default) => {
            check(&path, DefaultHashBuilder::with_seed(SEED))
        }
        (Step::Check { path }, Hasher::Ahash) => check(&path, AHashBuilder::default()),
    }
}
