//! The fuzz targets' properties on random inputs from fixed seeds, on stable: what `cargo fuzz`
//! explores with coverage guidance, sampled deterministically for every `cargo test`.

use std::time::Duration;

use lockfree_cuckoo::CuckooFilter;
use lockfree_cuckoo_fuzz::{differential, load, Op};
use rand::{rngs::StdRng, Rng, SeedableRng};

fn op(rng: &mut StdRng) -> Op {
    let key = rng.random_range(0..24u8);
    match rng.random_range(0..100) {
        0..35 => Op::Insert(key),
        35..60 => Op::Remove(key),
        60..80 => Op::Contains(key),
        80..96 => Op::Count(key),
        96..98 => Op::Reload,
        _ => Op::Clone,
    }
}

#[test]
fn random_sessions_match_the_multiset_model() {
    for seed in 0..300 {
        let mut rng = StdRng::seed_from_u64(seed);
        let capacity = rng.random_range(0..64u8);
        let ops: Vec<Op> = (0..rng.random_range(0..400)).map(|_| op(&mut rng)).collect();
        differential(capacity, &ops);
    }
}

#[test]
fn random_and_damaged_snapshots_load_or_fail_cleanly() {
    let filter = CuckooFilter::with_capacity(200);
    let windowed =
        CuckooFilter::builder().capacity(200).expire_after(Duration::from_secs(60)).build();
    for k in 0..150u32 {
        filter.insert(&k).unwrap();
        windowed.insert(&k).unwrap();
    }
    for good in [filter.to_bytes(), windowed.to_bytes()] {
        damaged(&good);
    }
}

/// `good`, which loads, and damaged and random bytes around it, through [`load`].
fn damaged(good: &[u8]) {
    load(good);
    let mut rng = StdRng::seed_from_u64(1);
    for _ in 0..2_000 {
        let mut bytes = good.to_vec();
        for _ in 0..rng.random_range(1..4) {
            let at = rng.random_range(0..bytes.len());
            bytes[at] = rng.random();
        }
        bytes.truncate(rng.random_range(0..=bytes.len()));
        load(&bytes);
        let noise: Vec<u8> = (0..rng.random_range(0..300)).map(|_| rng.random()).collect();
        load(&noise);
    }
}

#[test]
fn random_requests_get_one_whole_reply_each() {
    use lockfree_cuckoo_fuzz::commands;
    let words: [&[u8]; 12] = [
        b"f",
        b"g",
        b"ITEMS",
        b"CAPACITY",
        b"NOCREATE",
        b"EXPANSION",
        b"BUCKETSIZE",
        b"0",
        b"1",
        b"100",
        b"-1",
        b"\r\nx",
    ];
    for seed in 0..300 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut requests: Vec<Vec<Vec<u8>>> = Vec::new();
        for _ in 0..rng.random_range(1..40) {
            let mut request = vec![vec![rng.random::<u8>()]];
            for _ in 0..rng.random_range(0..6) {
                request.push(words[rng.random_range(0..words.len())].to_vec());
            }
            requests.push(request);
        }
        commands(&requests);
    }
}

#[test]
fn random_input_parses_the_same_in_two_pieces() {
    use lockfree_cuckoo_fuzz::resp;
    let pieces: [&[u8]; 10] = [
        b"*2\r\n",
        b"$4\r\nPING\r\n",
        b"$1\r\nx\r\n",
        b"PING a\r\n",
        b"\n",
        b"*0\r\n",
        b"$-1\r\n",
        b"*x\r\n",
        b":1\r\n",
        b"\r\n",
    ];
    for seed in 0..2_000 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut data = vec![rng.random()];
        for _ in 0..rng.random_range(0..12) {
            data.extend_from_slice(pieces[rng.random_range(0..pieces.len())]);
        }
        resp(&data);
    }
}
