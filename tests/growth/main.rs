//! Filters that fill and grow: growth and its rules, inserts that must make progress in full
//! tables, fingerprint collisions, and items crafted to crowd a few buckets. One test binary,
//! linked once.

mod collisions;
mod growth;
mod growth_rules;
mod hostile;
mod insert_progress;
