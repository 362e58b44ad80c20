#!/usr/bin/env bash
# The library's unsafe code under Miri: the unit tests, and the integration tests that go through
# the raw pointers (the chain of levels, the snapshot scan's published copy, pending removals,
# the bucket words) with a few threads: growth, live snapshots and clones, golden files, merges,
# serde and concurrency. Tests too slow for the interpreter are `#[cfg_attr(miri, ignore)]`, and
# others shrink under `cfg!(miri)`. Budget: about 8 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
if ! cargo +nightly miri --version >/dev/null 2>&1 \
  && ! timeout 300 rustup component add miri rust-src --toolchain nightly >/dev/null 2>&1; then
  echo "skipped: no nightly toolchain with Miri here, and none could be installed"
  exit 0
fi
cargo +nightly miri --version

# Strict provenance: the crate makes no integer-to-pointer casts. The huge-page mapping is off
# under Miri, which cannot model trimming a mapping with a partial `munmap`.
export MIRIFLAGS="-Zmiri-strict-provenance"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/miri"
# Miri interprets a test binary on one thread, so the tests run one per process, two at a time,
# under cargo-nextest where it is installed, and one binary after another where it is not.
if cargo nextest --version >/dev/null 2>&1; then
  cargo +nightly miri nextest run -p lockfree-cuckoo --test-threads 2 --no-fail-fast \
    --lib --test snapshot --test concurrency --test growth --test filter -E \
    'kind(lib) | binary(snapshot) | binary(concurrency) | (binary(growth) & test(/^growth::/))
      | (binary(filter) & (test(/^merge::/) | test(/^serde::/)))'
else
  miri() {
    cargo +nightly miri test -p lockfree-cuckoo "$@"
  }
  miri --lib --test snapshot --test concurrency
  miri --test growth -- growth::
  miri --test filter -- merge:: serde::
fi

echo "Miri: $((SECONDS - start)) s"
