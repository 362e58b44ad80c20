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
#    grown from 1,000, the one-CAS floor (the ceiling any shared table's scaling meets),
#    cuckoofilter+ahash behind a RwLock, atomic-cuckoo-filter, fastbloom and DashSet. 36
#    (peer, timed workload) rows x 5 thread counts x 3 rounds = 540 points of 0.5 s = 270 s,
#    plus 120 fills of 1 M items, the mixes' untimed clean-ups and thread starts.
# 2. 100,000,000 items (213 MB for ours), the lookups and mixes, 3 rounds of 0.5 s: ours, its
#    batch calls, ours grown from 100,000, the one-CAS floor. 18 rows x 5 x 3 = 270 points =
#    135 s, plus four prefills of 95.7 M items on 16 threads (1 to 2 s each) and the clean-ups.
# 3. 100,000,000 items, the fill, one round (a fill of 100 M items is one long measurement
#    already): the same four filters, 20 fills.
#
# Measured on a 16-core machine with --rounds 2 --seconds 0.3: 129, 65 and 209 s (6.7 minutes).
# At the defaults steps 1 and 2 hold 2.5 times the point time: about 11 minutes in all.
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

run --items 1000000 --peers ours,ours-batch,ours-grown,cas-floor,cf-ahash,acf,fastbloom,dashset "$@"
echo
run --items 100000000 --peers ours,ours-batch,ours-grown,cas-floor \
  --workloads contains0,contains50,contains100,mix90,mix50 "$@"
echo
run --items 100000000 --peers ours,ours-batch,ours-grown,cas-floor --workloads fill --rounds 1 "$@"
echo "scaling.sh: done in $((SECONDS - started)) s" >&2
