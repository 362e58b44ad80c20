#!/usr/bin/env bash
# The multithreaded tests under ThreadSanitizer, in release: the default ones of every test file
# with threads, and the long `stress_` runs of tests/concurrency.rs. The standard library is built
# with the sanitizer too (-Zbuild-std), or its atomics and thread joins would be invisible to it
# and it would report races that are none. Budget: about 6 minutes on 2 cores, half of it building.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
if ! rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^rust-src' \
  && ! timeout 300 rustup component add rust-src --toolchain nightly >/dev/null 2>&1; then
  echo "skipped: no nightly toolchain with rust-src here, and none could be installed"
  exit 0
fi

target="$(rustc +nightly -vV | sed -n 's/^host: //p')"
export RUSTFLAGS="-Zsanitizer=thread"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/tsan"
tsan() {
  cargo +nightly test -q -Zbuild-std --target "$target" --release -p lockfree-cuckoo "$@"
}
tsan --test concurrency --test snapshot
tsan --test growth -- growth:: collisions:: insert_progress::
tsan --test filter -- merge:: batch::
tsan --test concurrency -- --ignored stress_

echo "ThreadSanitizer: $((SECONDS - start)) s"
