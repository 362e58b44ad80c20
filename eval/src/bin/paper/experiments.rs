//! One pass over a filter that yields every experiment of the paper's section 7.
//!
//! Filling a 192 MiB table is the expensive part, so each filter is filled once: the clock
//! that measures the construction rate (Table 3) pauses at every occupancy step while lookups
//! are measured (Figure 6), and the first operations after each step are timed on their own as
//! the insert throughput at that occupancy (Figure 7). The full filter then answers the
//! positive-fraction workloads (Figure 5) and the false-positive queries, and is emptied again
//! with the first removes after each step timed (Figure 8).

use std::hint::black_box;
use std::time::{Duration, Instant};

use lockfree_cuckoo_eval::keys::{KeySet, Queries};
use lockfree_cuckoo_eval::peers::Peer;

use crate::filters::Driver;

/// What to measure and how much.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Operations in each timed window: throughput at an occupancy is measured over this many
    /// operations, not over the whole table, so a step costs the same at any table size.
    pub(crate) ops: u64,
    /// Occupancy between measurement points (0.05: every 5%).
    pub(crate) step: f64,
    /// Never-inserted keys asked to measure a false-positive rate.
    pub(crate) fpr_queries: u64,
    /// Fractions of positive queries for Figure 5.
    pub(crate) positive_fractions: Vec<f64>,
    /// Item count at which to record a second Table 3 row: this crate's promised capacity.
    pub(crate) capacity_mark: u64,
    /// Stop filling at this many items; `None` fills until the first refused insert. Filters
    /// that never refuse (Bloom, scalable) are filled to this crate's item count instead.
    pub(crate) stop_at: Option<u64>,
}

/// The filter at one moment of the fill: a Table 3 row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Snapshot {
    pub(crate) items: u64,
    pub(crate) bytes: usize,
    pub(crate) fpr: f64,
    pub(crate) fpr_queries: u64,
    /// Time spent inserting the `items`, lookups excluded.
    pub(crate) construction: Duration,
}

impl Snapshot {
    pub(crate) fn bits_per_item(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.items as f64
    }

    pub(crate) fn construction_mops(&self) -> f64 {
        mops(self.items, self.construction)
    }
}

/// A throughput measurement at an occupancy (0.0 to 1.0) or a positive fraction.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Point {
    pub(crate) x: f64,
    pub(crate) mops: f64,
}

/// Everything one pass measured.
#[derive(Debug)]
pub(crate) struct Results {
    pub(crate) name: String,
    pub(crate) threads: usize,
    /// Whether the fill ended at a refused insert (else at [`Plan::stop_at`]).
    pub(crate) refused: bool,
    pub(crate) full: Snapshot,
    /// Occupancy when full: items over slots (for this crate, the load factor).
    pub(crate) max_load: f64,
    pub(crate) at_capacity: Option<Snapshot>,
    pub(crate) lookup_positive: Vec<Point>,
    pub(crate) lookup_negative: Vec<Point>,
    pub(crate) insert: Vec<Point>,
    pub(crate) delete: Vec<Point>,
    pub(crate) by_positive: Vec<Point>,
    /// Positive-only lookups that answered `false`: 0 unless the filter lost an item.
    pub(crate) false_negatives: u64,
    /// Removes that did not find their key, over the whole emptying: 0 unless the filter lost
    /// an item. `None` when the filter cannot remove.
    pub(crate) lost: Option<u64>,
    /// Wall time of the whole pass.
    pub(crate) elapsed: Duration,
}

/// Million operations a second.
fn mops(ops: u64, time: Duration) -> f64 {
    ops as f64 / time.as_secs_f64().max(1e-9) / 1e6
}

/// Seed of the query streams: the same for every filter, so all answer the same questions.
const QUERY_SEED: u64 = 5;

/// Runs every experiment on `peer`'s (empty) filter behind `driver`, reporting progress on
/// stderr.
pub(crate) fn run(peer: Peer, driver: &mut dyn Driver, plan: &Plan) -> Results {
    let name = peer.legend();
    let started = Instant::now();
    let threads = driver.threads();
    let mut queries = Queries::new(QUERY_SEED);
    let mut held = KeySet::default();
    let mut next_index = 0u64;
    let mut construction = Duration::ZERO;
    let mut at_capacity = None;
    let mut refused = false;
    let mut lookup_positive = Vec::new();
    let mut lookup_negative = Vec::new();
    let mut insert = Vec::new();
    let mut false_negatives = 0;
    // A cuckoo filter never holds more items than it has slots; this bound only guards the loop.
    let limit = plan.stop_at.unwrap_or_else(|| driver.filter().slots());

    // Inserts the next `count` keys; returns how many went in, the time, and whether one was
    // refused. Sequence numbers past a refusal are skipped, never reused: held keys need not be
    // contiguous.
    let mut insert_next = |driver: &mut dyn Driver, held: &mut KeySet, count: u64| {
        let start = Instant::now();
        let done = driver.insert(next_index..next_index + count);
        let time = start.elapsed();
        next_index += count;
        let before = held.len();
        for range in done.ranges {
            held.push(range);
        }
        (held.len() - before, time, done.refused)
    };

    let mut k = 0u32;
    loop {
        let step_items = (f64::from(k) * plan.step * driver.filter().slots() as f64).ceil() as u64;
        let mut target = step_items.min(limit);
        // A timed window must not straddle the capacity mark (that row must hold exactly the
        // promised items), so when the mark falls inside the next window it is reached first
        // and the step is measured just past it, at the occupancy the point records.
        let mark_pending = at_capacity.is_none() && plan.capacity_mark > held.len();
        if mark_pending && plan.capacity_mark <= step_items + plan.ops {
            target = plan.capacity_mark.min(limit);
        }
        if target > held.len() {
            let count = target - held.len();
            let (_, time, stopped) = insert_next(driver, &mut held, count);
            construction += time;
            if stopped {
                refused = true;
                break;
            }
        }
        if at_capacity.is_none() && held.len() == plan.capacity_mark {
            at_capacity = Some(snapshot(driver, &held, &mut queries, plan, construction));
        }
        if held.len() >= limit {
            break;
        }
        if held.len() < step_items {
            continue;
        }

        let x = held.len() as f64 / driver.filter().slots() as f64;
        if !held.is_empty() {
            let positives = queries.mixed(&held, plan.ops as usize, 1.0);
            let (mops, hits) = timed_lookups(driver, &positives);
            false_negatives += positives.len() as u64 - hits;
            lookup_positive.push(Point { x, mops });
        }
        let negatives = queries.mixed(&held, plan.ops as usize, 0.0);
        lookup_negative.push(Point { x, mops: timed_lookups(driver, &negatives).0 });

        let window = plan.ops.min(limit - held.len());
        let (done, time, stopped) = insert_next(driver, &mut held, window);
        construction += time;
        if done > 0 {
            insert.push(Point { x, mops: mops(done, time) });
        }
        if stopped {
            refused = true;
            break;
        }
        k += 1;
    }
    let full = snapshot(driver, &held, &mut queries, plan, construction);
    let slots = driver.filter().slots() as f64;
    let full_x = full.items as f64 / slots;
    eprintln!(
        "  {name} ({threads} thread{}): {:.2} M items ({:.1}% of {:.2} M slots) in {:.1} s{}",
        if threads == 1 { "" } else { "s" },
        full.items as f64 / 1e6,
        full_x * 100.0,
        slots / 1e6,
        construction.as_secs_f64(),
        if refused { ", then a refused insert" } else { "" },
    );

    // Figure 5 on the full filter; its 0% and 100% points are also the last points of
    // Figure 6, measured at full occupancy.
    let by_positive: Vec<Point> = plan
        .positive_fractions
        .iter()
        .map(|&p| {
            let mixed = queries.mixed(&held, plan.ops as usize, p);
            let (mops, hits) = timed_lookups(driver, &mixed);
            if p == 1.0 {
                false_negatives += mixed.len() as u64 - hits;
            }
            Point { x: p, mops }
        })
        .collect();
    for point in &by_positive {
        if point.x == 1.0 {
            lookup_positive.push(Point { x: full_x, mops: point.mops });
        }
        if point.x == 0.0 {
            lookup_negative.push(Point { x: full_x, mops: point.mops });
        }
    }

    let (delete, lost) = if peer.ops().remove {
        let (delete, lost) = empty(driver, &mut held, plan);
        (delete, Some(lost))
    } else {
        (Vec::new(), None)
    };
    Results {
        name: name.to_owned(),
        threads,
        refused,
        full,
        max_load: full_x,
        at_capacity,
        lookup_positive,
        lookup_negative,
        insert,
        delete,
        by_positive,
        false_negatives,
        lost,
        elapsed: started.elapsed(),
    }
}

/// Deletes every held key, oldest first, timing the first removes after each occupancy step
/// from full down to the lowest step. Returns the points and how many removes missed.
fn empty(driver: &mut dyn Driver, held: &mut KeySet, plan: &Plan) -> (Vec<Point>, u64) {
    let slots = driver.filter().slots() as f64;
    let mut points = Vec::new();
    let mut lost = 0;
    // The first window starts at full occupancy, the paper's starting point.
    let mut level = f64::INFINITY;
    while !held.is_empty() {
        let target = (level * slots).ceil() as u64;
        if target < held.len() {
            let ranges = held.take_front(held.len() - target);
            let count: u64 = ranges.iter().map(|r| r.end - r.start).sum();
            lost += count - driver.remove(&ranges);
        }
        if held.is_empty() || level == 0.0 {
            break;
        }
        let x = held.len() as f64 / slots;
        let ranges = held.take_front(plan.ops.min(held.len()));
        let count: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        let start = Instant::now();
        let found = driver.remove(&ranges);
        points.push(Point { x, mops: mops(count, start.elapsed()) });
        lost += count - found;
        // The highest step below where this window ended; 0 removes the rest untimed.
        level = (held.len() as f64 / slots / plan.step).floor() * plan.step;
    }
    (points, lost)
}

/// Looks up `queries`; returns the throughput and how many answered `true`.
fn timed_lookups(driver: &mut dyn Driver, queries: &[u64]) -> (f64, u64) {
    let start = Instant::now();
    let hits = black_box(driver.lookup(queries));
    (mops(queries.len() as u64, start.elapsed()), hits)
}

/// A Table 3 row for the filter as it is now: the false-positive rate is measured with
/// never-inserted keys, in batches to bound the memory the queries take.
fn snapshot(
    driver: &mut dyn Driver,
    held: &KeySet,
    queries: &mut Queries,
    plan: &Plan,
    construction: Duration,
) -> Snapshot {
    let mut hits = 0;
    let mut asked = 0;
    while asked < plan.fpr_queries {
        let batch = (plan.fpr_queries - asked).min(1 << 20);
        hits += driver.lookup(&queries.mixed(held, batch as usize, 0.0));
        asked += batch;
    }
    Snapshot {
        items: held.len(),
        bytes: driver.filter().table_bytes(),
        fpr: hits as f64 / asked.max(1) as f64,
        fpr_queries: asked,
        construction,
    }
}
