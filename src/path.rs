//! Breadth-first search for the shortest cuckoo path from a full item's buckets to an empty lane.
//!
//! The search only reads; it plans moves that [`Table::commit`](crate::table::Table) then carries
//! out last hop first, validating each one. Words it reads may change before the commit, which is
//! why a plan is only a plan.

use crate::bucket::{self, LANES};
use crate::hash::{alt_index, Slots};
use crate::stats::MAX_PATH_LEN;
use crate::sync::{AtomicU64, Ordering::Relaxed};

/// Buckets the search may examine: both roots and four children a bucket, `MAX_PATH_LEN` deep.
const MAX_NODES: usize =
    2 * (1 + LANES + LANES.pow(2) + LANES.pow(3) + LANES.pow(4) + LANES.pow(5));

/// One planned relocation: `fingerprint` from bucket `from` to bucket `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hop {
    pub(crate) fingerprint: u16,
    pub(crate) from: usize,
    pub(crate) to: usize,
}

#[derive(Clone, Copy, Debug)]
struct Node {
    bucket: usize,
    /// Index of the node whose bucket this one's fingerprint leaves; `usize::MAX` for a root.
    parent: usize,
    /// The fingerprint that would move from the parent's bucket into this one.
    fingerprint: u16,
    depth: u8,
}

/// A reusable search: its buffers survive retries of one insert.
#[derive(Debug, Default)]
pub(crate) struct PathSearch {
    nodes: Vec<Node>,
    hops: Vec<Hop>,
}

impl PathSearch {
    /// Plans the shortest path that frees a lane in one of `slots`' buckets. On success the hops,
    /// in commit order (last hop first), are in [`hops`](Self::hops) and the root bucket whose
    /// lane the path frees is returned.
    pub(crate) fn plan(&mut self, buckets: &[AtomicU64], slots: Slots) -> Option<usize> {
        self.nodes.clear();
        self.hops.clear();
        let roots = if slots.first == slots.second { 1 } else { 2 };
        for bucket in [slots.first, slots.second].into_iter().take(roots) {
            self.nodes.push(Node { bucket, parent: usize::MAX, fingerprint: 0, depth: 0 });
        }
        // Tiny tables would revisit their few buckets thousands of times; there a bitmask of
        // queued buckets keeps the search (and loom's models of it) small.
        let mut queued = (buckets.len() <= 64)
            .then(|| self.nodes.iter().fold(0u64, |mask, n| mask | 1 << n.bucket));
        let mut head = 0;
        while head < self.nodes.len() {
            let node = self.nodes[head];
            // Relaxed: the plan is checked again by every commit step.
            let word = buckets[node.bucket].load(Relaxed);
            if bucket::find_empty(word).is_some() {
                return Some(self.trace(head));
            }
            if usize::from(node.depth) < MAX_PATH_LEN {
                for lane in 0..LANES {
                    let fingerprint = bucket::lane(word, lane);
                    let to = alt_index(node.bucket, fingerprint, buckets.len());
                    if to == node.bucket || self.nodes.len() == MAX_NODES {
                        continue;
                    }
                    if let Some(mask) = queued.as_mut() {
                        if *mask & 1 << to != 0 {
                            continue;
                        }
                        *mask |= 1 << to;
                    }
                    self.nodes.push(Node {
                        bucket: to,
                        parent: head,
                        fingerprint,
                        depth: node.depth + 1,
                    });
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
