#!/usr/bin/env bash
# Two builds of the crate, paired: builds the tight-loop tool (src/bin/tight.rs) against this
# checkout's crate and against the crate at REV, once in the release profile and once with
# lto = "fat" and codegen-units = 1, and runs each pair of builds in turns.
#
#   eval/paired.sh REV [flags of the tool]     e.g. eval/paired.sh HEAD~1 --items 50000 --rounds 7
#
# With BIN set to another tool of src/bin (e.g. BIN=grow), that tool is built the same way and
# the two builds run in turns ROUNDS times (default 3), each run's output printed under its
# build's name:  BIN=grow eval/paired.sh HEAD~1 --filters presized,growable --start 1000
#
# The other revision's crate gets this checkout's eval sources (the tool uses only API that
# every revision since the first benchmarks has, without the default feature `windowed`) and this checkout's Cargo.lock, in
# target/paired/, so the two builds differ in the crate alone.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ]; then
  echo "usage: eval/paired.sh REV [flags of the tight tool]" >&2
  exit 2
fi
rev="$(git rev-parse --short "$1")"
shift
work="$PWD/target/paired/$rev"
rm -rf "$work/crate" "$work/eval"
mkdir -p "$work/crate" "$work/eval"
git archive "$rev" | tar -x -C "$work/crate"
cp -r eval/Cargo.toml eval/src eval/benches "$work/eval/"
cp Cargo.lock "$work/eval/"
# The copy depends on the other revision's crate and is a workspace of its own.
sed -i 's|^lockfree-cuckoo = { path = ".."|lockfree-cuckoo = { path = "../crate"|' \
  "$work/eval/Cargo.toml"
printf '\n[workspace]\n' >>"$work/eval/Cargo.toml"

lto=(env CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1)
bin="${BIN:-tight}"
build() { # target dir, manifest, then the profile's environment
  local target="$1" manifest="$2"
  shift 2
  "$@" CARGO_TARGET_DIR="$target" cargo build -q --release --bin "$bin" \
    --no-default-features --manifest-path "$manifest"
}
build target/release-paired eval/Cargo.toml env
build "$work/target" "$work/eval/Cargo.toml" env
build target/lto-paired eval/Cargo.toml "${lto[@]}"
build "$work/target-lto" "$work/eval/Cargo.toml" "${lto[@]}"

# in_turns THIS OTHER [flags]: the two builds of the tool, compared by the tight tool itself, or
# run in turns.
in_turns() {
  local this="$1" other="$2"
  shift 2
  if [ "$bin" = tight ]; then
    "$this" --against "$other" "$@"
    return
  fi
  for round in $(seq "${ROUNDS:-3}"); do
    echo "### Round $round: this checkout"
    "$this" "$@"
    echo "### Round $round: $rev"
    "$other" "$@"
  done
}

echo "## Release profile: this checkout against $rev"
in_turns "target/release-paired/release/$bin" "$work/target/release/$bin" "$@"
echo
echo '## lto = "fat", codegen-units = 1: this checkout against '"$rev"
in_turns "target/lto-paired/release/$bin" "$work/target-lto/release/$bin" "$@"
