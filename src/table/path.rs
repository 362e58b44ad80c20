//! Breadth-first search for the shortest cuckoo path from a full item's buckets to an empty lane.
//!
//! The search only reads; it plans moves that [`Table::commit`](super::Table) then carries
//! out last hop first, validating each one. Words it reads may change before the commit, which is
//! why a plan is only a plan.

use std::cell::RefCell;

use crate::bucket::{BucketEncoding, LANES};
use crate::fingerprint::Fingerprint;
use crate::hash::{alt_index, Slots};
use crate::stats::MAX_PATH_LEN;
use crate::sync::{self, AtomicU64, Ordering::Relaxed};

/// Buckets the search may examine: both roots and four children a bucket, `MAX_PATH_LEN` deep
/// (two trees of `1 + LANES + ... + LANES^MAX_PATH_LEN` nodes).
const MAX_NODES: usize = 2 * (LANES.pow(MAX_PATH_LEN as u32 + 1) - 1) / (LANES - 1);

/// One planned relocation: `fingerprint` from bucket `from` to bucket `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hop {
    pub(crate) fingerprint: Fingerprint,
    pub(crate) from: usize,
    pub(crate) to: usize,
}

#[derive(Clone, Copy, Debug)]
struct Node {
    bucket: usize,
    /// Index of the node whose bucket this one's fingerprint leaves; `usize::MAX` for a root.
    parent: usize,
    /// The fingerprint that would move from the parent's bucket into this one (a placeholder
    /// in a root).
    fingerprint: Fingerprint,
    depth: u8,
    /// The bucket's word when the search first read it.
    word: u64,
}

/// A reusable search: its buffers survive retries of one insert.
#[derive(Debug, Default)]
pub(crate) struct PathSearch {
    nodes: Vec<Node>,
    hops: Vec<Hop>,
}

impl PathSearch {
    /// Runs `f` with this thread's search, whose buffers then survive from one insert to the
    /// next: an insert that needs a path allocates nothing once its thread has searched before
    /// (growing the buffers from empty on every such insert cost more than the search itself).
    /// A thread keeps at most about 90 KiB. If the thread's search is in use or already
    /// destroyed, `f` gets a fresh one.
    pub(crate) fn with_reused<R>(f: impl FnOnce(&mut PathSearch) -> R) -> R {
        sync::thread_local! {
            static SEARCH: RefCell<PathSearch> = RefCell::new(PathSearch::default());
        }
        let mut f = Some(f);
        let reused = SEARCH
            .try_with(|cell| {
                let mut search = cell.try_borrow_mut().ok()?;
                f.take().map(|f| f(&mut search))
            })
            .ok()
            .flatten();
        match (reused, f) {
            (Some(result), _) => result,
            (None, Some(f)) => f(&mut PathSearch::default()),
            (None, None) => unreachable!("`f` ran but returned nothing"),
        }
    }

    /// Plans the shortest path that frees a lane in one of `slots`' buckets. On success the hops,
    /// in commit order (last hop first), are in [`hops`](Self::hops) and the root bucket whose
    /// lane the path frees is returned.
    pub(crate) fn plan<E: BucketEncoding>(
        &mut self,
        buckets: &[AtomicU64],
        slots: Slots,
    ) -> Option<usize> {
        self.nodes.clear();
        self.hops.clear();
        let roots = if slots.first == slots.second { 1 } else { 2 };
        for bucket in [slots.first, slots.second].into_iter().take(roots) {
            // Relaxed: the plan is checked again by every commit step.
            let word = buckets[bucket].load(Relaxed);
            self.nodes.push(Node {
                bucket,
                parent: usize::MAX,
                fingerprint: Fingerprint::default(),
                depth: 0,
                word,
            });
            if E::has_room(word) {
                return Some(bucket);
            }
        }
        // Tiny tables would revisit their few buckets thousands of times; there a bitmask of
        // queued buckets keeps the search (and loom's models of it) small.
        let mut queued = (buckets.len() <= 64)
            .then(|| self.nodes.iter().fold(0u64, |mask, n| mask | 1 << n.bucket));
        // Each bucket is read once, when its node is made, and a node with a free lane ends the
        // search at once: the path to it is as short as any the rest of its level could give,
        // and the search skips expanding the rest of the level (most of its work at high load).
        // So every node taken from the queue is known to be full.
        let mut head = 0;
        while head < self.nodes.len() {
            let node = self.nodes[head];
            let word = node.word;
            if usize::from(node.depth) < MAX_PATH_LEN {
                // A hop names the fingerprint it moves, not a lane: in a semi-sorted bucket a
                // fingerprint's lane can change before the commit, and the commit takes a copy
                // of the value wherever it is.
                for entry in E::entries(word) {
                    if !E::movable(entry, slots.fingerprint) {
                        continue;
                    }
                    // The search expands only full buckets, whose places all hold fingerprints.
                    let fingerprint = Fingerprint::in_occupied_entry(entry);
                    let to = alt_index(node.bucket, E::key(fingerprint), buckets.len());
                    if to == node.bucket || self.nodes.len() == MAX_NODES {
                        continue;
                    }
                    if let Some(mask) = queued.as_mut() {
                        if *mask & 1 << to != 0 {
                            continue;
                        }
                        *mask |= 1 << to;
                    }
                    // Relaxed: as above.
                    let child = buckets[to].load(Relaxed);
                    self.nodes.push(Node {
                        bucket: to,
                        parent: head,
                        fingerprint,
                        depth: node.depth + 1,
                        word: child,
                    });
                    if E::has_room(child) {
                        return Some(self.trace(self.nodes.len() - 1));
                    }
                }
            }
            head += 1;
        }
        None
    }

    /// The planned hops, last hop first.
    pub(crate) fn hops(&self) -> &[Hop] {
        &self.hops
    }

    /// Records the hops from the root down to the node at `end`, returning the root's bucket.
    fn trace(&mut self, mut end: usize) -> usize {
        loop {
            let node = self.nodes[end];
            if node.parent == usize::MAX {
                return node.bucket;
            }
            let from = self.nodes[node.parent].bucket;
            self.hops.push(Hop { fingerprint: node.fingerprint, from, to: node.bucket });
            end = node.parent;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bucket::{plain::Plain, semi_sorted::SemiSorted};
    use crate::hash::alt_index;

    const BUCKETS: usize = 97;

    /// A fingerprint whose two buckets are `from` and `to`.
    fn print_between(from: usize, to: usize) -> Fingerprint {
        (1..0xFFFF)
            .map(Fingerprint::of)
            .find(|&f| alt_index(from, f, BUCKETS) == to)
            .expect("some fingerprint links them")
    }

    fn table(words: &[(usize, u64)]) -> Vec<AtomicU64> {
        let mut table: Vec<AtomicU64> = (0..BUCKETS).map(|_| AtomicU64::new(0)).collect();
        for &(i, w) in words {
            table[i] = AtomicU64::new(w);
        }
        table
    }

    fn full<E: BucketEncoding>(prints: [Fingerprint; LANES]) -> u64 {
        prints.iter().fold(0, |w, &f| E::with_copy(w, f).expect("four fit"))
    }

    fn finds_the_shortest_path_and_lists_it_last_hop_first<E: BucketEncoding>() {
        // Item buckets 10 and 20 are full; bucket 10 holds one fingerprint that leads to full
        // bucket 30, which holds one that leads to empty bucket 40. Every other fingerprint
        // leads back into full buckets.
        let to_30 = print_between(10, 30);
        let to_40 = print_between(30, 40);
        let back_10 = print_between(10, 20);
        let back_20 = print_between(20, 10);
        let back_30 = print_between(30, 10);
        let buckets = table(&[
            (10, full::<E>([back_10, back_10, to_30, back_10])),
            (20, full::<E>([back_20; LANES])),
            (30, full::<E>([back_30, to_40, back_30, back_30])),
        ]);
        let slots = Slots { fingerprint: Fingerprint::of(7), first: 10, second: 20 };
        let mut search = PathSearch::default();
        assert_eq!(search.plan::<E>(&buckets, slots), Some(10));
        assert_eq!(
            search.hops(),
            [
                Hop { fingerprint: to_40, from: 30, to: 40 },
                Hop { fingerprint: to_30, from: 10, to: 30 }
            ]
        );
    }

    fn an_empty_place_in_a_root_is_a_path_of_no_hops<E: BucketEncoding>() {
        let buckets = table(&[(3, full::<E>([1, 2, 3, 4].map(Fingerprint::of)))]);
        let mut search = PathSearch::default();
        let slots = Slots { fingerprint: Fingerprint::of(9), first: 3, second: 5 };
        assert_eq!(search.plan::<E>(&buckets, slots), Some(5));
        assert!(search.hops().is_empty());
    }

    fn fails_when_every_reachable_bucket_is_full<E: BucketEncoding>() {
        let word = full::<E>([1, 2, 3, 4].map(Fingerprint::of));
        let buckets: Vec<AtomicU64> = (0..BUCKETS).map(|_| AtomicU64::new(word)).collect();
        let mut search = PathSearch::default();
        let slots = Slots { fingerprint: Fingerprint::of(9), first: 0, second: 1 };
        assert_eq!(search.plan::<E>(&buckets, slots), None);
        assert!(search.hops().is_empty());
    }

    fn never_plans_a_move_onto_the_same_bucket<E: BucketEncoding>() {
        // Bucket 12 holds only fingerprints whose other bucket is 12 itself.
        let fixed: Vec<Fingerprint> = (1..0xFFFF)
            .map(Fingerprint::of)
            .filter(|&f| alt_index(12, f, BUCKETS) == 12)
            .take(LANES)
            .collect();
        let buckets = table(&[(12, full::<E>([fixed[0], fixed[1], fixed[2], fixed[3]]))]);
        let mut search = PathSearch::default();
        let slots = Slots { fingerprint: Fingerprint::of(9), first: 12, second: 12 };
        assert_eq!(search.plan::<E>(&buckets, slots), None);
    }

    /// The search in either encoding: it reads fingerprints, never lane positions.
    fn searches<E: BucketEncoding>() {
        finds_the_shortest_path_and_lists_it_last_hop_first::<E>();
        an_empty_place_in_a_root_is_a_path_of_no_hops::<E>();
        fails_when_every_reachable_bucket_is_full::<E>();
        never_plans_a_move_onto_the_same_bucket::<E>();
    }

    #[test]
    fn plain_searches() {
        searches::<Plain>();
    }

    #[test]
    fn semi_sorted_searches() {
        searches::<SemiSorted>();
    }
}
