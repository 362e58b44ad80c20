//! Snapshots written a chunk at a time: the bytes of `to_bytes` for a filter nobody writes,
//! whatever the chunk size, and `Changed` for the writes a chunked snapshot can see.

use lockfree_cuckoo::{ChunkError, CuckooFilter, DefaultHashBuilder, Layout, Plain, SemiSorted};

type Filter<L> = CuckooFilter<DefaultHashBuilder, L>;

/// Every chunk of `snapshot` of at most `max` bytes, concatenated.
fn chunks<L: Layout>(filter: &Filter<L>, max: usize) -> Result<Vec<u8>, ChunkError> {
    let mut snapshot = filter.chunked_snapshot();
    let mut bytes = Vec::new();
    loop {
        let before = bytes.len();
        let n = snapshot.write_next(filter, max, &mut bytes)?;
        assert_eq!(n, bytes.len() - before);
        assert!(n <= max.max(1));
        if n == 0 {
            assert!(snapshot.is_done());
            assert_eq!(snapshot.offset(), snapshot.total_bytes());
            return Ok(bytes);
        }
    }
}

/// Fixed and grown filters of layout `L`, one with removes kept pending across levels.
fn filters<L: Layout>() -> Vec<Filter<L>> {
    let fixed = CuckooFilter::builder().capacity(5_000).layout::<L>().build();
    for i in 0..4_000u32 {
        fixed.insert(&i).unwrap();
    }
    let grown = CuckooFilter::builder().capacity(500).layout::<L>().growable().build();
    let mut inserted = 0u32;
    while grown.stats().levels < 3 {
        grown.insert(&inserted).unwrap();
        inserted += 1;
    }
    for i in 0..inserted / 6 {
        assert!(grown.remove(&(i * 3)));
    }
    assert!(grown.stats().levels >= 3);
    vec![CuckooFilter::builder().capacity(10).layout::<L>().build(), fixed, grown]
}

#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn a_filter_nobody_writes_gives_the_bytes_of_to_bytes_at_every_chunk_size() {
    every_chunk_size::<Plain>();
    every_chunk_size::<SemiSorted>();
}

fn every_chunk_size<L: Layout>() {
    for filter in filters::<L>() {
        let whole = filter.to_bytes();
        let sizes =
            if cfg!(miri) { &[7, 100, usize::MAX][..] } else { &[0, 1, 3, 7, 8, 9, 72][..] };
        let ends = [100, 4096, whole.len() - 1, whole.len(), usize::MAX];
        for &max in sizes.iter().chain(&ends) {
            let bytes = chunks(&filter, max).unwrap();
            assert!(bytes == whole, "{} bytes in chunks of {max}", whole.len());
        }
        let bytes = chunks(&filter, 1000).unwrap();
        let loaded = CuckooFilter::builder().layout::<L>().load(&bytes).unwrap();
        assert_eq!(loaded.len(), filter.len());
    }
}

#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn writes_the_snapshot_can_see_end_it() {
    writes_end_it::<Plain>();
    writes_end_it::<SemiSorted>();
}

fn writes_end_it<L: Layout>() {
    for filter in filters::<L>() {
        let len = filter.to_bytes().len();
        // An insert (a new item, or a level added) before the last chunk.
        let mut snapshot = filter.chunked_snapshot();
        let mut bytes = Vec::new();
        snapshot.write_next(&filter, len / 2, &mut bytes).unwrap();
        let mut item = 1_000_000u32;
        while filter.insert(&item).is_err() {
            item += 1;
        }
        let rest = chunks_from(&mut snapshot, &filter, &mut bytes);
        assert_eq!(rest, Err(ChunkError::Changed), "{len}");
        // Nothing was written by the refused call.
        assert!(bytes.len() < len);
        // Another filter is refused at once, of either layout.
        let mut snapshot = filter.chunked_snapshot();
        let other = CuckooFilter::with_capacity(10);
        assert_eq!(snapshot.write_next(&other, 8, &mut Vec::new()), Err(ChunkError::Changed));
        let other = CuckooFilter::builder().capacity(10).layout::<SemiSorted>().build();
        assert_eq!(snapshot.write_next(&other, 8, &mut Vec::new()), Err(ChunkError::Changed));
    }
}

fn chunks_from<L: Layout>(
    snapshot: &mut lockfree_cuckoo::ChunkedSnapshot,
    filter: &Filter<L>,
    bytes: &mut Vec<u8>,
) -> Result<(), ChunkError> {
    while snapshot.write_next(filter, 1 << 12, bytes)? > 0 {}
    Ok(())
}

#[test]
fn a_growth_is_seen_at_the_next_chunk() {
    let filter = CuckooFilter::builder().capacity(100).growable().build();
    let mut snapshot = filter.chunked_snapshot();
    let mut bytes = Vec::new();
    snapshot.write_next(&filter, 10, &mut bytes).unwrap();
    let mut i = 0u32;
    while filter.stats().levels == 1 {
        filter.insert(&i).unwrap();
        i += 1;
    }
    assert_eq!(snapshot.write_next(&filter, 10, &mut bytes), Err(ChunkError::Changed));
    assert_eq!(bytes.len(), 10);
}
