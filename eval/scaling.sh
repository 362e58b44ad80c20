#!/usr/bin/env bash
# Thread scaling of one shared filter (src/bin/scaling.rs), the default plan for a 16-core
# machine, with the prebuilt binary: no toolchain, no network, no files needed beside it.
#
#   cargo build --release -p lockfree-cuckoo-eval --bin scaling    # where Rust is
#   eval/scaling.sh > scaling.md                                    # where the cores are
#   eval/scaling.sh --rounds 1 --seconds 0.2                        # flags go to every run
#
# SCALING_BIN overrides the binary (default target/release/scaling). Markdown on stdout,
# progress on stderr. Threads 1, 2, 4, 8, 16 in every run:
#
# 1. 1,000,000 items, every workload, 3 rounds of 0.5 s a point: ours, its batch calls, ours
#    grown from 1,000, cuckoofilter+ahash behind a RwLock, atomic-cuckoo-filter, fastbloom and
#    DashSet. 31 (peer, timed workload) rows x 5 thread counts x 3 rounds = 465 points of 0.5 s
#    = 233 s, plus 105 fills of 1 M items (about 5 s a round, most of it the two peers whose
#    writers queue on a lock), the mixes' untimed clean-ups (up to half a point after each
#    mix50 point) and thread starts: about 4.7 minutes.
# 2. 100,000,000 items (213 MB for ours), the lookups and mixes, 3 rounds of 0.5 s: ours, its
#    batch calls, ours grown from 100,000. 13 rows x 5 x 3 = 195 points = 98 s, plus three
#    prefills of 95.7 M items on 16 threads (1 to 2 s each) and the clean-ups: about 2 minutes.
# 3. 100,000,000 items, the fill, one round (a fill of 100 M items is one long measurement
#    already): the same three filters, 15 fills. Measured on a 16-core machine: one thread
#    fills 100 M in 12 s (ours), 7 s (batch) and 28 s (grown), 16 threads in 1.3, 0.9 and
#    1.8 s; the five thread counts together about twice one thread: about 1.6 minutes.
#
# Estimated total on 16 cores: about 8.2 minutes (490 s), from the point counts above and
# those fill times (a calibration run of step 1 at 0.1 s a point, one round, took 24 s for
# 15.5 s of points).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${SCALING_BIN:-target/release/scaling}"
if [ ! -x "$bin" ]; then
  echo "no $bin: build it with cargo build --release -p lockfree-cuckoo-eval --bin scaling" >&2
  exit 2
fi
threads=1,2,4,8,16
started=$SECONDS
run() {
  local at=$SECONDS
  "$bin" --threads "$threads" --seconds 0.5 --rounds 3 "$@"
  echo "scaling.sh: step done in $((SECONDS - at)) s" >&2
}

run --items 1000000 --peers ours,ours-batch,ours-grown,cf-ahash,acf,fastbloom,dashset "$@"
echo
run --items 100000000 --peers ours,ours-batch,ours-grown \
  --workloads contains0,contains50,contains100,mix90,mix50 "$@"
echo
run --items 100000000 --peers ours,ours-batch,ours-grown --workloads fill --rounds 1 "$@"
echo "scaling.sh: done in $((SECONDS - started)) s" >&2
