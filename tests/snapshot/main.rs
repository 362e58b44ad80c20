//! Snapshots: saving and loading, the committed golden files, hostile bytes, and live snapshots
//! of a filter other threads are updating. One test binary, so the helpers in `common` are
//! compiled once and used by every part.

mod bad_input;
mod chunked;
mod common;
mod golden;
mod live;
mod roundtrip;
mod windowed;
