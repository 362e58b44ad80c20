#!/usr/bin/env bash
# Shows that the loom suite catches each known protocol bug: applies one deliberate breakage at a
# time to a scratch copy of the crate, runs the suite there and prints a Markdown table of
# breakage -> failing models. Exits non-zero if any breakage goes uncaught, if the unbroken copy
# fails, or if a breakage's pattern no longer matches src/table.rs (so it cannot rot silently).
#
# Usage: loom-tests/mutants.sh   (LOOM_MAX_PREEMPTIONS defaults to 2, as in CI)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# One scratch path and one target dir for every run, so each rebuild is incremental.
export CARGO_TARGET_DIR="$root/target/mutants"
export RUSTFLAGS="--cfg loom"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"

# -m: fresh mtimes, or cargo could take a stale binary from the shared target dir as up to date.
tar -C "$root" --exclude=./target --exclude=./.git -cf - . | tar -C "$scratch" -xmf -
table="$scratch/src/table.rs"
cp "$table" "$scratch/table.rs.orig"

# mutate FUNCTION COUNT OLD NEW: within the body of `fn FUNCTION(` in src/table.rs (up to its
# closing brace at method indent), replaces the literal OLD, which must occur exactly COUNT times
# there; otherwise aborts the whole script.
mutate() {
    FN="fn $1(" COUNT="$2" OLD="$3" NEW="$4" perl -0777 -i -pe '
        my ($fn, $old) = ($ENV{FN}, $ENV{OLD});
        my $at = index($_, $fn);
        die "mutants.sh: no single `$fn` in src/table.rs\n"
            if $at < 0 || index($_, $fn, $at + 1) >= 0;
        my $len = index($_, "\n    }\n", $at) - $at;
        my $body = substr($_, $at, $len);
        my $n = () = $body =~ /\Q$old\E/g;
        die "mutants.sh: `$fn` holds $n, not $ENV{COUNT}, of:\n$old\n" if $n != $ENV{COUNT};
        $body =~ s/\Q$old\E/$ENV{NEW}/g;
        substr($_, $at, $len) = $body;
    ' "$table" || exit 2
}

bump="self.version(slots).fetch_add(1, Ordering::AcqRel);"
copy_in="if !self.put(to, fingerprint) {"
take_src="if self.take(from, fingerprint) {"

bump_before_copy() {
    mutate relocate 1 "$bump" ""
    mutate relocate 1 "$copy_in" \
        "self.version(Slots { fingerprint, first: from, second: to }).fetch_add(1, Ordering::AcqRel);
        $copy_in"
}
bump_after_removal() {
    mutate relocate 1 "$bump" ""
    mutate relocate 1 "$take_src" "let removed = self.take(from, fingerprint);
        $bump
        if removed {"
}
no_bump() { mutate relocate 1 "$bump" ""; }
# Every lookup attempt: the straight-line first one and the retries.
reader_first_load_relaxed() {
    mutate contains 1 "version.load(Ordering::Acquire)" "version.load(Ordering::Relaxed)"
    mutate contains_retry 1 "version.load(Ordering::Acquire)" "version.load(Ordering::Relaxed)"
}
bump_relaxed() { mutate relocate 1 "fetch_add(1, Ordering::AcqRel)" "fetch_add(1, Ordering::Relaxed)"; }
removal_cas_relaxed() {
    mutate take 1 "Ordering::AcqRel," "Ordering::Relaxed,"
    mutate take 1 "Ordering::Acquire," "Ordering::Relaxed,"
}
reader_bucket_loads_relaxed() {
    mutate contains 2 "].load(Ordering::Acquire)" "].load(Ordering::Relaxed)"
    mutate holds 1 "load(Ordering::Acquire)" "load(Ordering::Relaxed)"
}
surplus_unvalidated() {
    mutate relocate 1 "self.take_validated(slots)" \
        "self.take(from, fingerprint) || self.take(to, fingerprint)"
}
# Take the fingerprint out of src first and only then copy it into dst: the "victim" of a
# random-walk cuckoo filter, outside the table while it moves (and lost if dst is full).
kicked_outside_table() {
    mutate relocate 1 "$take_src" "if true {"
    mutate relocate 1 "$copy_in" "if !self.take(from, fingerprint) {
            return false;
        }
        $copy_in"
}

mutants=(
    "bump_before_copy|version bump before the copy"
    "bump_after_removal|version bump after the removal"
    "no_bump|no version bump"
    "reader_first_load_relaxed|reader's first version load Relaxed"
    "bump_relaxed|version bump Relaxed"
    "removal_cas_relaxed|removal CAS Relaxed"
    "reader_bucket_loads_relaxed|reader's bucket loads Relaxed, no fence"
    "surplus_unvalidated|surplus removal without validation"
    "kicked_outside_table|kicked fingerprint held outside the table"
)

# run_suite LOG: runs the suite in the scratch copy; prints the failing models, comma-separated.
run_suite() {
    local status=0
    (cd "$scratch" && timeout 1200 cargo test --release --test loom) >"$1" 2>&1 || status=$?
    if grep -q '^test result:' "$1"; then
        { grep -oP '^test \K\S+(?= \.\.\. FAILED)' "$1" || true; } | sort -V | paste -sd, - | sed 's/,/, /g'
    else
        printf 'mutants.sh: the suite did not run (status %s), see:\n' "$status" >&2
        tail -n 30 "$1" >&2
        exit 2
    fi
}

echo "LOOM_MAX_PREEMPTIONS=$LOOM_MAX_PREEMPTIONS; scratch copy in $scratch" >&2
baseline="$(run_suite "$scratch/baseline.log")"
if [[ -n "$baseline" ]]; then
    echo "mutants.sh: the unbroken crate fails: $baseline" >&2
    exit 1
fi

echo "| breakage | caught by |"
echo "|---|---|"
uncaught=0
for entry in "${mutants[@]}"; do
    name="${entry%%|*}"
    cp "$scratch/table.rs.orig" "$table"
    "$name"
    caught="$(run_suite "$scratch/$name.log")"
    if [[ -z "$caught" ]]; then
        caught="**NOT CAUGHT**"
        uncaught=$((uncaught + 1))
    fi
    echo "| ${entry#*|} | $caught |"
done
exit $((uncaught > 0))
