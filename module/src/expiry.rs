//! Filters whose items expire (`CF.RESERVE ... EXPIRE`): the primary starts their epochs, and
//! its replicas and its AOF follow.
//!
//! A windowed filter built by the commands starts an epoch only when it is ticked
//! (`Filter::tick`), so that every copy of it holds the same words. On a primary, a filter is
//! ticked before each write command on it, and by a timer every [`TICK_INTERVAL`] that visits
//! the keyspace a bounded number of keys at a time ([`SCAN_STEPS`]), so that one nobody writes
//! still forgets. Each epoch a tick starts is replicated as `CF.TICK key epoch`, after the
//! writes made in the epoch before and before those of the new one, and replicas (and a
//! restart from the AOF) apply it with `Filter::follow`: a replica never starts an epoch of
//! its own, and after a failover the new primary's timer goes on from the last epoch it
//! followed.
//!
//! A filter is ticked at least as often as the timer's scan comes back to it: every key
//! within a tenth of a second in a keyspace of up to about [`SCAN_STEPS`] keys in all, every
//! second for ten times as many. While no filter's items expire, the timer scans nothing. A
//! late tick only keeps expired items present longer (stale positives, and room
//! taken), never removes one early.

use std::os::raw::c_int;
use std::time::Duration;

use lockfree_cuckoo_commands::Entry;
use valkey_module::key::ValkeyKey;
use valkey_module::{raw, Context, ContextFlags, KeysCursor, ValkeyString};

use crate::value::{any_windowed, CF_TYPE};

/// How often the timer runs: a tenth of the shortest window (`EXPIRE 1`).
const TICK_INTERVAL: Duration = Duration::from_millis(100);

/// Scan steps (about one key each) a timer run takes, so that it holds the engine a bounded
/// time however many keys there are.
const SCAN_STEPS: usize = 1_000;

/// Where the timer's scan of the keyspace is.
struct Scan {
    cursor: KeysCursor,
    db: c_int,
}

/// Starts the timer (at module load).
pub(crate) fn start(ctx: &Context) {
    ctx.create_timer(TICK_INTERVAL, run, Scan { cursor: KeysCursor::new(), db: 0 });
}

/// Ticks the filter at `key` if its items expire, and replicates the epoch it started.
/// Nothing on a replica or while loading: their filters follow the primary's `CF.TICK`s.
pub(crate) fn tick(ctx: &Context, key: &[u8], entry: &Entry) {
    if follower(ctx) {
        return;
    }
    if let Some(epoch) = entry.filter.tick() {
        ctx.replicate("CF.TICK", &[key, epoch.to_string().as_bytes()][..]);
    }
}

/// Whether this engine follows another (a replica, or loading its data): its filters'
/// epochs are the primary's.
pub(crate) fn follower(ctx: &Context) -> bool {
    ctx.get_flags()
        .intersects(ContextFlags::SLAVE | ContextFlags::LOADING | ContextFlags::REPLICATED)
}

/// One timer run: a bounded part of the scan, then the timer again.
fn run(ctx: &Context, mut scan: Scan) {
    if !follower(ctx) && any_windowed() {
        step(ctx, &mut scan);
    }
    ctx.create_timer(TICK_INTERVAL, run, scan);
}

/// Scans on from where the last run stopped, database after database, for at most
/// [`SCAN_STEPS`] steps, and past the last database at most once.
fn step(ctx: &Context, scan: &mut Scan) {
    // SAFETY: the engine's API table is filled at load and only read after.
    let Some(select) = (unsafe { raw::RedisModule_SelectDb }) else { return };
    let visit = |ctx: &Context, name: ValkeyString, key: Option<&ValkeyKey>| {
        if let Some(Ok(Some(entry))) = key.map(|key| key.get_value::<Entry>(&CF_TYPE)) {
            tick(ctx, name.as_slice(), entry);
        }
    };
    let mut wrapped = false;
    let mut steps = 0;
    while steps < SCAN_STEPS {
        // SAFETY: a timer's context; a database past the last one is refused.
        if unsafe { select(ctx.ctx, scan.db) } != raw::Status::Ok as c_int {
            if wrapped || scan.db == 0 {
                return;
            }
            (scan.db, wrapped) = (0, true);
            continue;
        }
        steps += 1;
        if !scan.cursor.scan(ctx, &visit) {
            scan.cursor.restart();
            scan.db += 1;
        }
    }
}
