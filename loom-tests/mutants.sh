#!/usr/bin/env bash
# Shows that the loom suite catches each known protocol bug: applies one deliberate breakage at a
# time to a scratch copy of the crate, runs the suite there and prints a Markdown table of
# breakage -> failing models. Exits non-zero if any breakage goes uncaught, if the unbroken copy
# fails (in either bucket encoding), or if a breakage's pattern no longer matches the protocol's
# files in src/table/, src/levels/, src/published.rs, src/pending.rs, src/bucket/semi_sorted.rs and
# src/windowed/ (so it cannot rot silently). Breakages of the semi-sorted encoding run the suite on semi-sorted buckets
# (LFC_LOOM_ENCODING, loom-tests/README.md); the others on plain ones.
#
# Usage: loom-tests/mutants.sh [NAME...]   (LOOM_MAX_PREEMPTIONS defaults to 2, as in CI)
# With names (the functions below, e.g. `stamp_relaxed`), only those breakages run, after the
# unbroken control run.
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
table="$scratch/src/table/mod.rs"
scan="$scratch/src/table/scan.rs"
stripe="$scratch/src/table/stripe.rs"
levels="$scratch/src/levels"
published="$scratch/src/published.rs"
pending="$scratch/src/pending.rs"
semi="$scratch/src/bucket/semi_sorted.rs"
windowed="$scratch/src/windowed"
cp -r "$scratch/src/table" "$scratch/table.orig"
cp -r "$levels" "$scratch/levels.orig"
cp "$published" "$scratch/published.orig"
cp "$pending" "$scratch/pending.orig"
cp "$semi" "$scratch/semi.orig"
cp -r "$windowed" "$scratch/windowed.orig"

# mutate_in FILE FUNCTION COUNT OLD NEW: within the body of `fn FUNCTION(` in FILE (up to its
# closing brace at the indent of its `fn` line), replaces the literal OLD, which must occur
# exactly COUNT times there; otherwise aborts the whole script.
mutate_in() {
    FN="fn $2(" COUNT="$3" OLD="$4" NEW="$5" perl -0777 -i -pe '
        my ($fn, $old) = ($ENV{FN}, $ENV{OLD});
        my $at = index($_, $fn);
        die "mutants.sh: no single `$fn` in $ARGV\n"
            if $at < 0 || index($_, $fn, $at + 1) >= 0;
        my $line = rindex($_, "\n", $at) + 1;
        my ($indent) = substr($_, $line, $at - $line) =~ /^( *)/;
        my $len = index($_, "\n$indent}\n", $at) - $at;
        my $body = substr($_, $at, $len);
        my $n = () = $body =~ /\Q$old\E/g;
        die "mutants.sh: `$fn` holds $n, not $ENV{COUNT}, of:\n$old\n" if $n != $ENV{COUNT};
        $body =~ s/\Q$old\E/$ENV{NEW}/g;
        substr($_, $at, $len) = $body;
    ' "$1" || exit 2
}
mutate() { mutate_in "$table" "$@"; }
mutate_scan() { mutate_in "$scan" "$@"; }
mutate_stripe() { mutate_in "$stripe" "$@"; }
mutate_chain() { mutate_in "$levels/chain.rs" "$@"; }
mutate_insert() { mutate_in "$levels/insert.rs" "$@"; }
mutate_removal() { mutate_in "$levels/removal.rs" "$@"; }
mutate_published() { mutate_in "$published" "$@"; }
mutate_pending() { mutate_in "$pending" "$@"; }
mutate_semi() { mutate_in "$semi" "$@"; }
mutate_epochs() { mutate_in "$windowed/epochs.rs" "$@"; }
mutate_windowed() { mutate_in "$windowed/mod.rs" "$@"; }
mutate_windowed_snapshot() { mutate_in "$windowed/snapshot.rs" "$@"; }

# A removal CAS loop with no announcement, for the breakages that move or drop one.
add_take_quietly() {
    cat >>"$table" <<'RUST'

impl<E: BucketEncoding> Table<E> {
    fn take_quietly(&self, index: usize, fingerprint: Fingerprint) -> Option<u64> {
        let word = &self.buckets[index];
        let mut current = crate::sync::load_for_update(word, Ordering::Acquire);
        while let Some(next) = E::without_copy(current, fingerprint) {
            match word.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(current),
                Err(actual) => current = actual,
            }
        }
        None
    }
}
RUST
}

announce="self.announce_removal(from, self.stripes.of_pair(from, to));"
copy_in="if !self.put(to, fingerprint) {"
take_src="if self.take(from, fingerprint, self.stripes.of_pair(from, to)).is_some() {"

# The relocation's announcement moved before its copy-in.
bump_before_copy() {
    add_take_quietly
    mutate relocate 1 "$copy_in" "$announce
        $copy_in"
    mutate relocate 1 "$take_src" "if self.take_quietly(from, fingerprint).is_some() {"
}
# The relocation's announcement moved after its removal.
bump_after_removal() {
    add_take_quietly
    mutate relocate 1 "$take_src" "let taken = self.take_quietly(from, fingerprint).is_some();
        $announce
        if taken {"
}
# The relocation's removal not announced at all.
relocation_unannounced() {
    add_take_quietly
    mutate relocate 1 "$take_src" "if self.take_quietly(from, fingerprint).is_some() {"
}
# Removes and surplus removals not announced (the bug the crate shipped with).
remove_unannounced() {
    add_take_quietly
    mutate take_validated 1 "self.take(first, fingerprint, stripe)" "self.take_quietly(first, fingerprint)"
    mutate take_validated 1 "self.take(second, fingerprint, stripe)" \
        "self.take_quietly(second, fingerprint)"
}
# The stripe of a pair chosen by the bucket an operation reads first, not by the pair.
stripe_by_first_bucket() {
    mutate_stripe of_pair 1 "i.min(j) & " "i & "
}
# The stamp of every validated read (lookups, counts, removes) Relaxed.
stamp_relaxed() {
    mutate_stripe stamp 1 "self.0.load(Ordering::Acquire)" "self.0.load(Ordering::Relaxed)"
}
# Every validated read answering its first attempt without validating it.
validation_skipped() {
    mutate_stripe changes_since 1 "self.0.load(Ordering::Relaxed) ^ stamp.0" "0"
}
# What the second (Relaxed) version load of `take_validated` rests on: the Acquire bucket load
# of `take` before it.
take_bucket_load_relaxed() {
    mutate take 1 "let seen = word.load(Ordering::Acquire);" "let seen = word.load(Ordering::Relaxed);"
}
announcement_relaxed() {
    mutate_stripe announce_removal 1 "fetch_add(ANNOUNCEMENT, Ordering::AcqRel)" \
        "fetch_add(ANNOUNCEMENT, Ordering::Relaxed)"
}
removal_cas_relaxed() {
    mutate take 1 "next, Ordering::Release, Ordering::Acquire)" "next, Ordering::Relaxed, Ordering::Relaxed)"
}
reader_bucket_loads_relaxed() {
    mutate first_words_at 2 "}.load(Ordering::Acquire)" "}.load(Ordering::Relaxed)"
    mutate holds 1 "load(Ordering::Acquire)" "load(Ordering::Relaxed)"
}
surplus_unvalidated() {
    mutate relocate 1 "self.take_validated(Slots { fingerprint, first: from, second: to })" \
        "self.take(from, fingerprint, self.stripes.of_pair(from, to)) || self.take(to, fingerprint, self.stripes.of_pair(from, to))"
}
# Take the fingerprint out of src first and only then copy it into dst: the "victim" of a
# random-walk cuckoo filter, outside the table while it moves (and lost if dst is full).
kicked_outside_table() {
    mutate relocate 1 "$take_src" "if true {"
    mutate relocate 1 "$copy_in" "if !self.take(from, fingerprint, self.stripes.of_pair(from, to)) {
            return false;
        }
        $copy_in"
}
# `count` answering its first read without validating it.
count_unvalidated() {
    mutate count 1 "Attempt::IfUnchanged(copies)" "Attempt::Proven(copies)"
}
count_bucket_loads_relaxed() {
    mutate count 2 "].load(Ordering::Acquire)" "].load(Ordering::Relaxed)"
}
# The scan: a plain pass that never publishes itself, so no writer helps (the "unvalidated scan").
scan_unpublished() {
    mutate_scan open 1 "stripe.open_scan(self.id);" ""
}
# The scan's start on each stripe without its Acquire/Release halves.
scan_start_relaxed() {
    mutate_stripe open_scan 1 "Ordering::AcqRel" "Ordering::Relaxed"
}
# A writer that sees the scan running but removes without capturing the bucket.
writer_skips_capture() {
    mutate announce_removal 1 "self.rendezvous.capture(scan, index, &self.buckets[index]);" ""
}
# A writer that captures as soon as it sees the scan on its stripe, before the scan has started on
# every stripe (no READY step).
capture_before_ready() {
    mutate_scan capture 1 "(state >> 32) as u32 == id.get() && state & READY != 0" \
        "(state >> 32) as u32 == id.get()"
}
# Growth (src/published.rs, src/levels/). A new level, or overflow block of pending removals,
# published without Release (and read without Acquire): one push serves both lists.
publication_relaxed() {
    mutate_published push 1 "Ordering::AcqRel, Ordering::Acquire)" "Ordering::Relaxed, Ordering::Relaxed)"
}
newest_load_relaxed() {
    mutate_published head 1 "self.newest.load(Ordering::Acquire)" "self.newest.load(Ordering::Relaxed)"
}
# A growth that publishes its level whether or not another thread's came first.
publish_by_swap() {
    mutate_published push 1 "match self.newest.compare_exchange(seen.as_ptr(), node, Ordering::AcqRel, Ordering::Acquire)
        {" "match Ok::<_, ()>(self.newest.swap(node, Ordering::AcqRel)) {"
}
# A growth that replaces whatever level is newest now, not the one its level links to.
cas_expects_current() {
    mutate_published push 1 "compare_exchange(seen.as_ptr(), node," \
        "compare_exchange(self.newest.load(Ordering::Acquire), node,"
}
# Lookups that read only the newest level.
lookup_newest_only() {
    mutate_chain lookup 1 "read = read.and(self.level_0.first_read(mixed));" ""
    mutate_chain lookup 1 "for level in self.head.older() {" "for level in self.head.older().take(0) {"
}
# A grown filter's lookup that validates the newest level's read only, not the older levels'.
lookup_validates_newest_only() {
    mutate_in "$table" and 1 "changes: self.changes | other.changes" "changes: self.changes"
}
# A remove that takes a copy from the newest level holding one, even when another level holds
# one too.
remove_takes_first_match() {
    mutate_removal remove_grown 1 "_ => break," \
        "_ => chain.get(holders.trailing_zeros() as usize).expect(\"a level\"),"
}
# A settle that completes pending removals while another level still holds a colliding item's
# copies.
settle_ignores_collisions() {
    mutate_removal settle 1 "if pending < copies && holders.count_ones() > 1 {" "if false {"
}
# A grown filter's remove that takes its one pass over the levels as their validated reads
# without validating it.
remove_holders_unvalidated() {
    mutate_chain holders 1 "all.validated().then_some(holders)" "Some(holders)"
}
# An insert that stores into the newest level whatever level holds the item's copies.
insert_ignores_home() {
    mutate_insert insert_from 1 "if holding != 0 {" "if false {"
}
# A pending removal recorded without Release, or claimed without Acquire.
register_relaxed() {
    mutate_pending register 1 "Ordering::Release, Ordering::Relaxed" "Ordering::Relaxed, Ordering::Relaxed"
}
claim_relaxed() {
    mutate_pending claim 1 "Ordering::AcqRel, Ordering::Relaxed" "Ordering::Relaxed, Ordering::Relaxed"
}
# A claim that reads a pending removal and clears it later rather than taking it in one CAS, so
# that an insert and a settle can both own the same entry's copy.
claim_reads_then_clears() {
    mutate_pending claim 1 \
        "entry.compare_exchange(key, 0, Ordering::AcqRel, Ordering::Relaxed).is_ok()" \
        "let seen = crate::sync::load_for_update(entry, Ordering::Acquire) == key;
            crate::sync::yield_now();
            if seen {
                entry.store(0, Ordering::Release);
            }
            seen"
}
# The semi-sorted encoding (src/bucket/semi_sorted.rs). A write whose code names the third
# nibble one less than it is, so the word names other nibbles than it holds.
semi_wrong_code() {
    mutate_semi assemble 1 "nibble(2), nibble(3)]" "nibble(2).wrapping_sub(1), nibble(3)]"
}
# A lookup that trusts a matching high part without checking the lane's nibble.
semi_skips_nibble_check() {
    mutate_semi "differences<W: Lanes>" 1 "| nibbles ^ nibble_probe(fingerprint)" \
        "| (nibbles ^ nibble_probe(fingerprint)) & W::from(0)"
}
# A write that puts the new fingerprint in the free lane without sorting it among the others.
semi_unsorted_write() {
    mutate_semi with_new_entry 1 \
        "let at = flagged_lanes(sorts_below(highs, nibbles, fingerprint) >> LANE_BITS);" "let at = 0;"
}
# A semi-sorted lookup that answers its first read's miss without validating it.
semi_lookup_unvalidated() {
    mutate contains_in_two_steps_at 1 "if read.changes != 0 {" "if false {"
}
# Windowed filters: the sweep of an epoch starting while writers pinned to the epoch before still
# write (they may move an entry that is dead now into a bucket already swept).
sweep_before_drain() {
    mutate_epochs start_sweep 1 "if !self.drained(epoch.wrapping_sub(1)) {" "if false {"
}
# Windowed: the next epoch started before the sweep of the current one has finished.
advance_before_sweep() {
    mutate_epochs advance 1 \
        "if self.swept.load(Ordering::Acquire) != stamped(epoch, self.buckets) {" "if false {"
}
# Windowed: a writer pinned without reading the epoch again after counting itself.
pin_without_recheck() {
    mutate_epochs pin 1 "if now == epoch {" "if true {"
}
# Windowed: a sweep counted as done before its buckets are swept.
swept_before_sweeping() {
    mutate_windowed sweep_some 1 "self.table.sweep(claim.buckets.clone(), dead_tag_at(claim.epoch));
        self.epochs.swept(&claim);" "self.epochs.swept(&claim);
        self.table.sweep(claim.buckets.clone(), dead_tag_at(claim.epoch));"
}
# Windowed: the sweep's check for pinned writers made by plain loads, not RMWs of the slots
# (SeqCst loads would do on hardware; the argument, and the model checker, need the RMWs).
drained_by_load() {
    mutate_epochs drained 1 "slot.fetch_add(0, Ordering::AcqRel)" "slot.load(Ordering::SeqCst)"
}
# Windowed: a writer's pin Relaxed.
pin_relaxed() {
    mutate_epochs pin 1 "slot.fetch_add(unit, Ordering::AcqRel);" "slot.fetch_add(unit, Ordering::Relaxed);"
}
# Windowed: a lookup that tests the tags answers a miss without reading the epoch again.
lookup_ignores_epoch_change() {
    mutate_windowed contains_tagged 1 "if now == epoch {" "if true {"
}
# Windowed: a lookup matches lanes whatever their tag while the sweep of the epoch is under way.
lookup_any_age_unswept() {
    mutate_windowed contains_mixed 1 "if self.epochs.read().sweep_done() {" "if true {"
}
# Windowed: the flag that the sweep is done set by every claim, not the one that completes it.
swept_flag_early() {
    mutate_epochs swept 1 "if count(before) + buckets != self.buckets {" "if false {"
}
# Windowed: the flag that the sweep is done set Relaxed, so a lookup that reads it may still
# read the entries the sweep emptied.
swept_flag_relaxed() {
    mutate_epochs swept 1 "Ordering::Release," "Ordering::Relaxed,"
}
# Windowed: the sweep counted with a Release RMW only, so the claim that completes it, and its
# flag, need not carry the other claims' sweeps.
swept_count_release() {
    mutate_epochs swept 1 "self.swept.fetch_add(buckets, Ordering::AcqRel)" \
        "self.swept.fetch_add(buckets, Ordering::Release)"
}
# Windowed: a snapshot's check that the sweep is done Relaxed, so its pass may read words the
# sweep emptied.
swept_through_relaxed() {
    mutate_epochs swept_through 1 "self.swept.load(Ordering::Acquire)" "self.swept.load(Ordering::Relaxed)"
}
# Windowed: a snapshot copies the table without waiting for the current epoch's sweep.
snapshot_before_sweep() {
    mutate_windowed_snapshot settle 1 "while !self.epochs.swept_through(pinned.epoch()) {" \
        "while false && !self.epochs.swept_through(pinned.epoch()) {"
}

mutants=(
    "remove_unannounced|remove and surplus removal without their announcement"
    "relocation_unannounced|relocation's removal without its announcement"
    "bump_before_copy|relocation's announcement before the copy-in"
    "bump_after_removal|relocation's announcement after the removal"
    "stripe_by_first_bucket|stripe keyed by the first bucket, not the pair"
    "stamp_relaxed|validated read's stamp Relaxed (lookups, counts, removes)"
    "validation_skipped|validated read answers without validating"
    "take_bucket_load_relaxed|take's bucket load Relaxed (what the remove's validation rests on)"
    "announcement_relaxed|announcement Relaxed"
    "removal_cas_relaxed|removal CAS Relaxed"
    "reader_bucket_loads_relaxed|reader's bucket loads Relaxed, no fence"
    "surplus_unvalidated|surplus removal without validation"
    "kicked_outside_table|kicked fingerprint held outside the table"
    "count_unvalidated|count without validating its read"
    "count_bucket_loads_relaxed|count's bucket loads Relaxed"
    "scan_unpublished|scan not published on the stripes (a plain pass nobody helps)"
    "scan_start_relaxed|scan's start on the stripes Relaxed"
    "writer_skips_capture|writer removes without capturing for the scan"
    "capture_before_ready|writer captures before the scan started on every stripe"
    "publication_relaxed|growth: new level (and overflow block) published Relaxed"
    "newest_load_relaxed|growth: newest level loaded Relaxed"
    "publish_by_swap|growth: new level published over another growth's"
    "cas_expects_current|growth: new level replaces the current newest, not the one it links to"
    "lookup_newest_only|growth: lookups read the newest level only"
    "lookup_validates_newest_only|growth: lookups validate the newest level's read only"
    "remove_takes_first_match|growth: remove takes a copy when two levels hold one"
    "settle_ignores_collisions|growth: settle completes removals while another level collides"
    "remove_holders_unvalidated|growth: remove's one pass over the levels unvalidated"
    "insert_ignores_home|growth: inserts ignore the level holding the item's copies"
    "register_relaxed|pending removal recorded Relaxed"
    "claim_relaxed|pending removal claimed Relaxed"
    "claim_reads_then_clears|claim reads a pending removal and clears it later"
    "semi_wrong_code|semi-sorted: a write's code names a nibble wrongly|semi-sorted"
    "semi_skips_nibble_check|semi-sorted: a lookup skips the nibble check|semi-sorted"
    "semi_unsorted_write|semi-sorted: a write leaves the word unsorted|semi-sorted"
    "semi_lookup_unvalidated|semi-sorted: a lookup answers a miss unvalidated|semi-sorted"
    "sweep_before_drain|windowed: a sweep starts while writers of the epoch before still write"
    "advance_before_sweep|windowed: the next epoch starts before the sweep has finished"
    "pin_without_recheck|windowed: a writer pins without reading the epoch again"
    "drained_by_load|windowed: the sweep reads the pins with loads, not RMWs"
    "pin_relaxed|windowed: a writer's pin Relaxed"
    "swept_before_sweeping|windowed: a sweep is counted before it sweeps"
    "lookup_ignores_epoch_change|windowed: a lookup answers a miss though the epoch moved"
    "lookup_any_age_unswept|windowed: a lookup ignores the tags before the sweep is done"
    "swept_flag_early|windowed: every claim flags the sweep done"
    "swept_flag_relaxed|windowed: the sweep's flag set Relaxed"
    "swept_count_release|windowed: the sweep's count Release only"
    "swept_through_relaxed|windowed: a snapshot's check of the sweep Relaxed"
    "snapshot_before_sweep|windowed: a snapshot copies the table before the sweep is done"
)

# run_suite LOG [ENCODING]: runs the suite in the scratch copy, on plain buckets or ENCODING's;
# prints the failing models, comma-separated.
run_suite() {
    local status=0
    (cd "$scratch" && LFC_LOOM_ENCODING="${2:-plain}" timeout 1200 cargo test --release --test loom) \
        >"$1" 2>&1 || status=$?
    if grep -q '^test result:' "$1"; then
        { grep -oP '^test \K\S+(?= \.\.\. FAILED)' "$1" || true; } | sort -V | paste -sd, - | sed 's/,/, /g'
    else
        printf 'mutants.sh: the suite did not run (status %s), see:\n' "$status" >&2
        tail -n 30 "$1" >&2
        exit 2
    fi
}

echo "LOOM_MAX_PREEMPTIONS=$LOOM_MAX_PREEMPTIONS; scratch copy in $scratch" >&2
for encoding in plain semi-sorted; do
    baseline="$(run_suite "$scratch/baseline-$encoding.log" "$encoding")"
    if [[ -n "$baseline" ]]; then
        echo "mutants.sh: the unbroken crate fails on $encoding buckets: $baseline" >&2
        exit 1
    fi
done

echo "| breakage | caught by |"
echo "|---|---|"
uncaught=0
for entry in "${mutants[@]}"; do
    name="${entry%%|*}"
    if [[ $# -gt 0 && " $* " != *" $name "* ]]; then
        continue
    fi
    rm -rf "$scratch/src/table"
    cp -r "$scratch/table.orig" "$scratch/src/table"
    rm -rf "$levels"
    cp -r "$scratch/levels.orig" "$levels"
    cp "$scratch/published.orig" "$published"
    cp "$scratch/pending.orig" "$pending"
    cp "$scratch/semi.orig" "$semi"
    rm -rf "$windowed"
    cp -r "$scratch/windowed.orig" "$windowed"
    "$name"
    rest="${entry#*|}"
    description="${rest%%|*}"
    encoding=plain
    [[ "$rest" == *"|"* ]] && encoding="${rest#*|}"
    caught="$(run_suite "$scratch/$name.log" "$encoding")"
    if [[ -z "$caught" ]]; then
        caught="**NOT CAUGHT**"
        uncaught=$((uncaught + 1))
    fi
    echo "| $description | $caught |"
done
exit $((uncaught > 0))
