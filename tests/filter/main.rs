//! One filter's behaviour, whatever its size: the set and multiset semantics, merges, serde,
//! statistics, batches, sizing, false-positive rates, huge pages, semi-sorted buckets and
//! windowed filters. One test binary, linked once.

mod accuracy;
mod batch;
mod expiry;
mod huge_pages;
mod merge;
mod multiset;
mod semantics;
mod semi_sorted;
mod serde;
mod sizing;
mod stats;
