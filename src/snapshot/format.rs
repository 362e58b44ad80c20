//! The snapshot format of `FORMAT.md`, byte for byte: its only encoder and decoder.
//!
//! Sections follow `FORMAT.md`: the layout table (constants and the encoder), "Fields", then
//! "Reading" (the decoder and its checks, numbered as there). A change here that an older reader
//! could misread needs a new format version and golden file (`FORMAT.md`, "The golden files").

use core::hash::BuildHasher;
use std::io::{self, Read, Write};

use crc::{Crc, Digest, Table, CRC_64_XZ};

use crate::bucket::plain::Plain;
use crate::bucket::semi_sorted::SemiSorted;
use crate::bucket::windowed::Windowed;
use crate::bucket::{BucketEncoding, LANES};
use crate::encoding::Encoding;
use crate::error::LoadError;
use crate::hasher::adopt_snapshot_key;
use crate::sizing::{Ceiling, MAX_LEVELS};
use crate::table::ScannedWords;
use crate::windowed::{EPOCH_MASK, MIN_WINDOW};

// FORMAT.md, the layout table.

/// The first eight bytes of every snapshot. The leading non-ASCII byte marks the file as binary,
/// and the trailing line feed catches line-ending translation.
const MAGIC: [u8; 8] = *b"\x89CUCKOO\n";

/// The format version, the only one: a reader refuses every other, since another version may
/// map items to fingerprints and buckets differently (and reading it would answer false
/// negatives).
const VERSION: u16 = 1;

/// Flag: a level block follows the header (a growable filter).
const FLAG_LEVELS: u32 = 1;

/// Flag: the seed field holds the seed of the keyed default hasher.
const FLAG_SEED: u32 = 2;

/// Flag: a window block follows the header (a windowed filter).
const FLAG_WINDOW: u32 = 4;

/// Bytes of the level block before its bucket counts: the level count, the two ceilings and the
/// retained removals.
const LEVEL_BLOCK_LEN: usize = 32;

/// Bytes of the window block: the window, the epoch, and the time into the epoch.
pub(crate) const WINDOW_BLOCK_LEN: usize = 24;

/// The encoding of a layout field (fingerprint bits, lanes), if it has one: 16-bit plain
/// fingerprints, 17-bit semi-sorted ones, or 14-bit windowed ones (each with a 2-bit tag).
fn encoding_of(bits: u8, lanes: u8) -> Option<Encoding> {
    let encoding = match bits {
        16 => Encoding::Plain,
        17 => Encoding::SemiSorted,
        14 => Encoding::Windowed,
        _ => return None,
    };
    debug_assert_eq!(encoding.fingerprint_bits(), u32::from(bits));
    (usize::from(lanes) == LANES).then_some(encoding)
}

/// Bytes of the header.
const HEADER_LEN: usize = 72;

/// Bytes of the trailing checksum.
pub(super) const CHECKSUM_LEN: usize = 8;

/// Bytes of one bucket word.
pub(super) const WORD_LEN: usize = 8;

/// Header offsets.
const AT_VERSION: usize = 8;
const AT_FINGERPRINT_BITS: usize = 10;
const AT_LANES: usize = 11;
const AT_FLAGS: usize = 12;
const AT_BUCKETS: usize = 16;
const AT_ITEMS: usize = 24;
const AT_PROBES: usize = 32;
const AT_SEED: usize = 64;

/// Hashes of fixed keys under the filter's hasher, recorded so that a load with a hasher that
/// maps items differently is refused instead of answering false negatives.
const PROBES: usize = 4;

/// Bytes encoded or decoded at a time.
const CHUNK: usize = 64 * 1024;

/// The most buckets a snapshot may declare: the whole file length, with the longest level
/// block, must fit in a `u64`, and the table in the address space.
const MAX_BUCKETS: u64 = {
    let fixed = HEADER_LEN + CHECKSUM_LEN + LEVEL_BLOCK_LEN + WORD_LEN * MAX_LEVELS;
    let by_length = (u64::MAX - fixed as u64) / WORD_LEN as u64;
    let by_memory = (isize::MAX as u64) / WORD_LEN as u64;
    if by_length < by_memory {
        by_length
    } else {
        by_memory
    }
};

/// Bytes of a snapshot of `buckets` buckets in total, for `buckets` up to [`MAX_BUCKETS`], whose
/// block after the header takes `block` bytes ([`Block::len`]).
pub(crate) const fn snapshot_len(buckets: u64, block: usize) -> u64 {
    (HEADER_LEN + CHECKSUM_LEN + block) as u64 + buckets * WORD_LEN as u64
}

/// A windowed filter's clock, as its window block holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    /// The window, in nanoseconds.
    pub(crate) window_ns: u64,
    /// The epoch the words' tags are read at, at most [`EPOCH_MASK`] (epochs wrap at `2^20`).
    pub(crate) epoch: u64,
    /// Nanoseconds since the epoch started.
    pub(crate) into_epoch_ns: u64,
}

/// What follows the header: nothing (a fixed filter), the level block (a growable filter, with
/// `retained` fingerprints of removed items), or the window block (a windowed filter).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Block {
    Fixed,
    Levels { ceiling: Ceiling, retained: u64 },
    Window(Window),
}

impl Block {
    /// A growable filter's level block, or none.
    pub(crate) fn levels(growth: Option<Ceiling>, retained: u64) -> Self {
        growth.map_or(Self::Fixed, |ceiling| Self::Levels { ceiling, retained })
    }

    /// The header flag that announces the block.
    const fn flag(self) -> u32 {
        match self {
            Self::Fixed => 0,
            Self::Levels { .. } => FLAG_LEVELS,
            Self::Window(_) => FLAG_WINDOW,
        }
    }

    /// Bytes of the block, in a snapshot of `levels` levels.
    pub(crate) const fn len(self, levels: usize) -> usize {
        match self {
            Self::Fixed => 0,
            Self::Levels { .. } => LEVEL_BLOCK_LEN + WORD_LEN * levels,
            Self::Window(_) => WINDOW_BLOCK_LEN,
        }
    }
}

/// Writes a snapshot of `levels`, the words of each level of a filter with `hasher`, oldest
/// first, with `block`. Returns the item count written (the occupied lanes).
pub(crate) fn encode<E: BucketEncoding, S: BuildHasher + 'static>(
    mut w: impl Write,
    levels: &[ScannedWords],
    block: Block,
    hasher: &S,
) -> io::Result<u64> {
    let items = levels.iter().flat_map(ScannedWords::words).map(|w| E::occupied(w) as u64).sum();
    let buckets: Vec<usize> = levels.iter().map(ScannedWords::len).collect();
    let prefix = encode_prefix(E::ENCODING, &buckets, items, block, hasher);
    let mut crc = checksum();
    crc.update(&prefix);
    w.write_all(&prefix)?;
    let mut words = levels.iter().flat_map(ScannedWords::words);
    let total: usize = buckets.iter().sum();
    let mut chunk = Vec::with_capacity(CHUNK.min(total * WORD_LEN));
    loop {
        chunk.clear();
        chunk.extend(words.by_ref().take(CHUNK / WORD_LEN).flat_map(u64::to_le_bytes));
        if chunk.is_empty() {
            break;
        }
        crc.update(&chunk);
        w.write_all(&chunk)?;
    }
    w.write_all(&crc.finalize().to_le_bytes())?;
    Ok(items)
}

/// What comes before the words: the header, then `block`. `buckets` holds each level's bucket
/// count, oldest first; `items` the occupied lanes of them all, of which a level block's
/// `retained` (at most `items`) are fingerprints of removed items.
pub(crate) fn encode_prefix<S: BuildHasher + 'static>(
    encoding: Encoding,
    buckets: &[usize],
    items: u64,
    block: Block,
    hasher: &S,
) -> Vec<u8> {
    let total = buckets.iter().map(|&b| b as u64).sum();
    let mut prefix = encode_header(encoding, block.flag(), total, items, hasher).to_vec();
    match block {
        Block::Fixed => {}
        Block::Levels { ceiling, retained } => {
            prefix.extend(encode_level_block(buckets, ceiling, retained.min(items)));
        }
        Block::Window(window) => prefix.extend(
            [window.window_ns, window.epoch, window.into_epoch_ns]
                .into_iter()
                .flat_map(u64::to_le_bytes),
        ),
    }
    prefix
}

/// The level block: level count, item ceiling, byte ceiling (0 for none),
/// retained removals, then each level's bucket count, oldest first.
fn encode_level_block(
    buckets: &[usize],
    ceiling: Ceiling,
    retained: u64,
) -> impl Iterator<Item = u8> + '_ {
    let fields = [buckets.len(), ceiling.items.unwrap_or(0), ceiling.bytes.unwrap_or(0)];
    fields
        .into_iter()
        .map(|field| field as u64)
        .chain([retained])
        .chain(buckets.iter().map(|&level| level as u64))
        .flat_map(u64::to_le_bytes)
}

fn encode_header<S: BuildHasher + 'static>(
    encoding: Encoding,
    block_flag: u32,
    buckets: u64,
    items: u64,
    hasher: &S,
) -> [u8; HEADER_LEN] {
    let seed = crate::hasher::seed_of(hasher);
    let flags = block_flag | if seed.is_some() { FLAG_SEED } else { 0 };
    let mut header = [0u8; HEADER_LEN];
    header[..AT_VERSION].copy_from_slice(&MAGIC);
    header[AT_VERSION..AT_FINGERPRINT_BITS].copy_from_slice(&VERSION.to_le_bytes());
    header[AT_FINGERPRINT_BITS] = encoding.fingerprint_bits() as u8;
    header[AT_LANES] = LANES as u8;
    header[AT_FLAGS..AT_BUCKETS].copy_from_slice(&flags.to_le_bytes());
    header[AT_BUCKETS..AT_ITEMS].copy_from_slice(&buckets.to_le_bytes());
    header[AT_ITEMS..AT_PROBES].copy_from_slice(&items.to_le_bytes());
    for (k, probe) in probes(hasher).iter().enumerate() {
        let at = AT_PROBES + 8 * k;
        header[at..at + 8].copy_from_slice(&probe.to_le_bytes());
    }
    header[AT_SEED..].copy_from_slice(&seed.unwrap_or(0).to_le_bytes());
    header
}

// FORMAT.md "Fields". Magic, version, layout, flags and bucket count are the constants above.

/// Probes: the hashes of the probe keys under `hasher`, in the order `FORMAT.md` lists them.
///
/// Keys of several types, none of which hashes a `usize`: a `usize` is hashed with the
/// platform's width by many hashers, which would refuse a snapshot moving between 32- and 64-bit
/// platforms even for filters whose items contain none.
pub(crate) fn probes(hasher: &impl BuildHasher) -> [u64; PROBES] {
    [
        hasher.hash_one(0u64),
        hasher.hash_one(0x0123_4567_89AB_CDEFu64),
        hasher.hash_one("lockfree-cuckoo"),
        hasher.hash_one(0xFFFF_FFFFu32),
    ]
}

// Bucket words are copied as they are: their meaning ("What the words mean") is `crate::hash`'s.

/// Checksum: CRC-64/XZ with the `crc` crate's slice-by-16 tables (32 KiB, built at compile
/// time), its fastest implementation: a snapshot is checked at close to the speed it is read.
static CRC64: Crc<u64, Table<16>> = Crc::<u64, Table<16>>::new(&CRC_64_XZ);

/// A running checksum of a snapshot's bytes.
pub(super) type Checksum = Digest<'static, u64, Table<16>>;

pub(super) fn checksum() -> Checksum {
    CRC64.digest()
}

// FORMAT.md "Reading".

/// Bytes of a snapshot's start that say its encoding: the magic, the version and the layout.
pub(super) const ENCODING_PREFIX_LEN: usize = AT_FLAGS;

/// The encoding of the snapshot that starts with `prefix`, after steps 1 and the layout check
/// of step 6 on those bytes alone: a load of the whole snapshot may still refuse it.
pub(super) fn encoding_of_prefix(prefix: &[u8]) -> Result<Encoding, LoadError> {
    let magic_part = prefix.len().min(MAGIC.len());
    if prefix[..magic_part] != MAGIC[..magic_part] {
        return Err(LoadError::BadMagic { found: prefix[..magic_part].to_vec() });
    }
    if prefix.len() < ENCODING_PREFIX_LEN {
        let found = prefix.len() as u64;
        return Err(LoadError::Truncated { expected: ENCODING_PREFIX_LEN as u64, found });
    }
    let version = u16::from_le_bytes([prefix[AT_VERSION], prefix[AT_VERSION + 1]]);
    if version != VERSION {
        return Err(LoadError::UnsupportedVersion { found: version, supported: VERSION });
    }
    let (bits, lanes) = (prefix[AT_FINGERPRINT_BITS], prefix[AT_LANES]);
    encoding_of(bits, lanes).ok_or(LoadError::UnsupportedLayout { fingerprint_bits: bits, lanes })
}

/// A snapshot that passed every check.
pub(crate) struct Decoded {
    /// The encoding of its words.
    pub(crate) encoding: Encoding,
    /// The bucket words of each level, oldest first, in bucket order.
    pub(crate) levels: Vec<Vec<u64>>,
    /// What followed the header.
    pub(crate) block: Block,
}

/// Reads and checks one snapshot written under `hasher`, in the order of `FORMAT.md`; `len` is
/// the exact input length when the caller knows it. A default hasher takes the key that the
/// snapshot records (`FORMAT.md`, "Hashers").
pub(crate) fn decode<S: BuildHasher + 'static>(
    mut r: impl Read,
    len: Option<usize>,
    hasher: &mut S,
) -> Result<Decoded, LoadError> {
    // 1. Magic, then the version, as far as the input goes.
    let mut header = [0u8; HEADER_LEN];
    let got = read_full(&mut r, &mut header)?;
    let magic_part = got.min(MAGIC.len());
    if header[..magic_part] != MAGIC[..magic_part] {
        return Err(LoadError::BadMagic { found: header[..magic_part].to_vec() });
    }
    let version = u16::from_le_bytes([header[AT_VERSION], header[AT_VERSION + 1]]);
    if got >= AT_FINGERPRINT_BITS && version != VERSION {
        return Err(LoadError::UnsupportedVersion { found: version, supported: VERSION });
    }
    // 2. The whole header.
    if got < HEADER_LEN {
        return Err(LoadError::Truncated { expected: HEADER_LEN as u64, found: got as u64 });
    }
    let mut crc = checksum();
    crc.update(&header);

    // 3. A length that fits.
    let buckets = read_u64(&header, AT_BUCKETS);
    if buckets > MAX_BUCKETS {
        return Err(LoadError::InconsistentHeader {
            field: "bucket count",
            expected: format!("at most {MAX_BUCKETS} on this platform"),
            found: buckets,
        });
    }
    // 3b. The level block, whose bucket counts add up to the header's, or the window block.
    // (Step 6 checks the flags; a flipped one fails the checksum first.)
    let flags = read_flags(&header);
    let (level_buckets, block) = if flags & FLAG_LEVELS != 0 {
        let (level_buckets, ceiling, retained) = read_level_block(&mut r, buckets, &mut crc)?;
        (level_buckets, Block::Levels { ceiling, retained })
    } else if flags & FLAG_WINDOW != 0 {
        (vec![buckets as usize], Block::Window(read_window_block(&mut r, &mut crc)?))
    } else {
        (vec![buckets as usize], Block::Fixed)
    };
    // Cannot overflow: MAX_BUCKETS keeps the total within u64 and `buckets` within usize / 8.
    let total = snapshot_len(buckets, block.len(level_buckets.len()));
    let prefix = total - CHECKSUM_LEN as u64 - buckets * WORD_LEN as u64;
    // 4. The length of a byte slice, before allocating; a stream's as its words arrive.
    if let Some(len) = len {
        if (len as u64) < total {
            return Err(LoadError::Truncated { expected: total, found: len as u64 });
        }
        if len as u64 > total {
            return Err(LoadError::TrailingBytes { expected: total, found: len as u64 });
        }
    }
    // Each level into its own vector, so that the table of a level is its words, not a copy.
    let mut levels = Vec::with_capacity(level_buckets.len());
    let mut before = prefix;
    for &level in &level_buckets {
        levels.push(read_words(&mut r, level, len.is_some(), &mut crc, before, total)?);
        before += (level * WORD_LEN) as u64;
    }
    let mut stored = [0u8; CHECKSUM_LEN];
    let got = read_full(&mut r, &mut stored)?;
    if got < CHECKSUM_LEN {
        let found = total - (CHECKSUM_LEN - got) as u64;
        return Err(LoadError::Truncated { expected: total, found });
    }

    // 5. The checksum.
    let stored = u64::from_le_bytes(stored);
    let computed = crc.finalize();
    if stored != computed {
        return Err(LoadError::ChecksumMismatch { expected: stored, found: computed });
    }

    // 6. Header fields, 7. bucket words, 8. probes.
    let encoding = check_header(&header, &levels, block)?;
    let items = read_u64(&header, AT_ITEMS);
    match encoding {
        Encoding::Plain => check_words::<Plain>(&levels, items)?,
        Encoding::SemiSorted => check_words::<SemiSorted>(&levels, items)?,
        Encoding::Windowed => check_words::<Windowed>(&levels, items)?,
    }
    let seed = (flags & FLAG_SEED != 0).then(|| read_u64(&header, AT_SEED));
    adopt_snapshot_key(hasher, seed);
    check_probes(&header, hasher)?;
    Ok(Decoded { encoding, levels, block })
}

/// Step 3b for a windowed filter: reads the window block, feeding its bytes to `crc` (its fields
/// are checked in step 6).
fn read_window_block(r: &mut impl Read, crc: &mut Checksum) -> Result<Window, LoadError> {
    let mut block = [0u8; WINDOW_BLOCK_LEN];
    let got = read_full(r, &mut block)?;
    if got < WINDOW_BLOCK_LEN {
        return Err(LoadError::Truncated {
            expected: (HEADER_LEN + WINDOW_BLOCK_LEN) as u64,
            found: (HEADER_LEN + got) as u64,
        });
    }
    crc.update(&block);
    let field = |k: usize| u64::from_le_bytes(block[8 * k..8 * k + 8].try_into().expect("8 bytes"));
    Ok(Window { window_ns: field(0), epoch: field(1), into_epoch_ns: field(2) })
}

/// Step 3b: reads the level block, feeding its bytes to `crc`; returns each level's
/// bucket count, oldest first, the ceiling and the retained removals (checked in step 6).
fn read_level_block(
    r: &mut impl Read,
    buckets: u64,
    crc: &mut Checksum,
) -> Result<(Vec<usize>, Ceiling, u64), LoadError> {
    let mut block = [0u8; LEVEL_BLOCK_LEN + WORD_LEN * MAX_LEVELS];
    let truncated = |got: usize| LoadError::Truncated {
        expected: (HEADER_LEN + LEVEL_BLOCK_LEN) as u64,
        found: (HEADER_LEN + got) as u64,
    };
    let got = read_full(r, &mut block[..LEVEL_BLOCK_LEN])?;
    if got < LEVEL_BLOCK_LEN {
        return Err(truncated(got));
    }
    let field = |block: &[u8], at: usize| {
        u64::from_le_bytes(block[at..at + 8].try_into().expect("8 bytes"))
    };
    let levels = field(&block, 0);
    if levels == 0 || levels > MAX_LEVELS as u64 {
        return Err(LoadError::InconsistentHeader {
            field: "level count",
            expected: format!("1 to {MAX_LEVELS}"),
            found: levels,
        });
    }
    let levels = levels as usize;
    let ceiling = |value: u64| (value != 0).then(|| usize::try_from(value).unwrap_or(usize::MAX));
    let ceiling = Ceiling { items: ceiling(field(&block, 8)), bytes: ceiling(field(&block, 16)) };
    let counts_len = WORD_LEN * levels;
    let got = read_full(r, &mut block[LEVEL_BLOCK_LEN..LEVEL_BLOCK_LEN + counts_len])?;
    if got < counts_len {
        return Err(LoadError::Truncated {
            expected: (HEADER_LEN + LEVEL_BLOCK_LEN + counts_len) as u64,
            found: (HEADER_LEN + LEVEL_BLOCK_LEN + got) as u64,
        });
    }
    crc.update(&block[..LEVEL_BLOCK_LEN + counts_len]);
    let counts: Vec<u64> =
        (0..levels).map(|k| field(&block, LEVEL_BLOCK_LEN + WORD_LEN * k)).collect();
    let sum = counts.iter().try_fold(0u64, |sum, &count| sum.checked_add(count));
    if counts.contains(&0) || sum != Some(buckets) {
        return Err(LoadError::InconsistentHeader {
            field: "level bucket counts",
            expected: format!("each at least 1, adding up to the bucket count {buckets}"),
            found: sum.unwrap_or(u64::MAX),
        });
    }
    // Each count is at most `buckets`, which step 3 kept within the address space.
    Ok((counts.into_iter().map(|count| count as usize).collect(), ceiling, field(&block, 24)))
}

/// Step 4 for the words: reads `buckets` little-endian words, feeding their bytes to `crc`. With
/// `exact` the caller has checked the input holds them all, so the vector is allocated at once;
/// otherwise it grows with the data that arrives, at most doubling, so a forged bucket count over
/// a short stream costs no more than about twice the bytes actually read.
fn read_words(
    r: &mut impl Read,
    buckets: usize,
    exact: bool,
    crc: &mut Checksum,
    prefix: u64,
    total: u64,
) -> Result<Vec<u64>, LoadError> {
    let mut words: Vec<u64> = Vec::new();
    if exact {
        reserve(&mut words, buckets)?;
    }
    let mut chunk = vec![0u8; CHUNK.min(buckets * WORD_LEN)];
    let mut remaining = buckets;
    while remaining > 0 {
        let want = (remaining * WORD_LEN).min(CHUNK);
        let got = read_full(r, &mut chunk[..want])?;
        if got < want {
            let found = prefix + (words.len() * WORD_LEN + got) as u64;
            return Err(LoadError::Truncated { expected: total, found });
        }
        crc.update(&chunk[..got]);
        let arrived = got / WORD_LEN;
        if words.capacity() - words.len() < arrived {
            let grow = words.len().max(arrived).min(remaining);
            reserve(&mut words, grow)?;
        }
        words.extend(chunk[..got].chunks_exact(WORD_LEN).map(|bytes| {
            let mut word = [0u8; WORD_LEN];
            word.copy_from_slice(bytes);
            u64::from_le_bytes(word)
        }));
        remaining -= arrived;
    }
    Ok(words)
}

/// Step 6: the header fields the checksum cannot vouch for. It proves the bytes are as written,
/// not that the writer was this crate. Returns the encoding of the words; the item count is
/// checked against them with step 7 ([`check_words`]), which needs it.
fn check_header(
    header: &[u8; HEADER_LEN],
    levels: &[Vec<u64>],
    block: Block,
) -> Result<Encoding, LoadError> {
    let (bits, lanes) = (header[AT_FINGERPRINT_BITS], header[AT_LANES]);
    let encoding = encoding_of(bits, lanes)
        .ok_or(LoadError::UnsupportedLayout { fingerprint_bits: bits, lanes })?;
    let flags = read_flags(header);
    let known = FLAG_LEVELS | FLAG_SEED | FLAG_WINDOW;
    let windowed = encoding == Encoding::Windowed;
    let inconsistent = |expected: String| LoadError::InconsistentHeader {
        field: "flags",
        expected,
        found: u64::from(flags),
    };
    if flags & !known != 0 {
        return Err(inconsistent(format!("no bits but {known:#x}")));
    }
    if windowed != (flags & FLAG_WINDOW != 0) || (windowed && flags & FLAG_LEVELS != 0) {
        return Err(inconsistent(format!(
            "bit 2 set for the 14-bit layout alone, and not with bit 0 (window flag {FLAG_WINDOW:#x})"
        )));
    }
    if let Block::Window(window) = block {
        check_window(window)?;
    }
    let seed = read_u64(header, AT_SEED);
    if flags & FLAG_SEED == 0 && seed != 0 {
        return Err(LoadError::InconsistentHeader {
            field: "seed",
            expected: "0 (flag bit 1 is clear)".into(),
            found: seed,
        });
    }
    let buckets: usize = levels.iter().map(Vec::len).sum();
    if buckets == 0 {
        return Err(LoadError::InconsistentHeader {
            field: "bucket count",
            expected: "at least 1".into(),
            found: 0,
        });
    }
    let items = read_u64(header, AT_ITEMS);
    let lanes = buckets as u64 * LANES as u64;
    if items > lanes {
        return Err(LoadError::InconsistentHeader {
            field: "item count",
            expected: format!("at most {lanes} ({LANES} lanes in each of {buckets} buckets)"),
            found: items,
        });
    }
    let retained = match block {
        Block::Levels { retained, .. } => retained,
        _ => 0,
    };
    if retained > items {
        return Err(LoadError::InconsistentHeader {
            field: "retained removals",
            expected: format!("at most the item count {items}"),
            found: retained,
        });
    }
    Ok(encoding)
}

/// Step 6 for the window block: a window a filter can be built with, and an epoch in range.
fn check_window(window: Window) -> Result<(), LoadError> {
    let shortest = MIN_WINDOW.as_nanos() as u64;
    if window.window_ns < shortest {
        return Err(LoadError::InconsistentHeader {
            field: "window",
            expected: format!("at least {shortest} ns"),
            found: window.window_ns,
        });
    }
    if window.epoch > EPOCH_MASK {
        return Err(LoadError::InconsistentHeader {
            field: "epoch",
            expected: format!("at most {EPOCH_MASK}"),
            found: window.epoch,
        });
    }
    Ok(())
}

/// The end of step 6 and step 7, in the snapshot's encoding: the item count is the number of
/// fingerprints the words hold, and every word is one a table of the encoding can hold
/// ([`BucketEncoding::check`]): this crate never writes another, and the table relies on no
/// bucket word being `bucket::UNUSED_WORD`.
fn check_words<E: BucketEncoding>(levels: &[Vec<u64>], items: u64) -> Result<(), LoadError> {
    let words = || levels.iter().flatten();
    let occupied: u64 = words().map(|&word| E::occupied(word) as u64).sum();
    if items != occupied {
        return Err(LoadError::InconsistentHeader {
            field: "item count",
            expected: format!("{occupied}, the number of occupied lanes"),
            found: items,
        });
    }
    words().enumerate().try_for_each(|(bucket, &word)| E::check(word, bucket as u64))
}

fn reserve(words: &mut Vec<u64>, additional: usize) -> Result<(), LoadError> {
    words.try_reserve_exact(additional).map_err(|_| LoadError::AllocationFailed {
        bytes: (words.len() + additional).saturating_mul(WORD_LEN),
    })
}

/// Fills `buf` from `r` as far as the input goes; returns the bytes read (less than `buf.len()`
/// only at the end of the input).
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> Result<usize, LoadError> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n.min(buf.len() - filled),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(LoadError::Io(err)),
        }
    }
    Ok(filled)
}

/// Step 8: the probes under `hasher` against those recorded.
fn check_probes(header: &[u8; HEADER_LEN], hasher: &impl BuildHasher) -> Result<(), LoadError> {
    let found = probes(hasher);
    let recorded = (0..PROBES).map(|k| read_u64(header, AT_PROBES + 8 * k));
    match recorded.enumerate().find(|&(k, expected)| expected != found[k]) {
        None => Ok(()),
        Some((probe, expected)) => {
            Err(LoadError::HasherMismatch { probe, expected, found: found[probe] })
        }
    }
}

fn read_flags(header: &[u8; HEADER_LEN]) -> u32 {
    let mut bytes = [0u8; 4];
    bytes.copy_from_slice(&header[AT_FLAGS..AT_BUCKETS]);
    u32::from_le_bytes(bytes)
}

fn read_u64(header: &[u8; HEADER_LEN], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&header[at..at + 8]);
    u64::from_le_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// The reflected ECMA-182 polynomial of `FORMAT.md`, "Checksum".
    const CRC64_POLY: u64 = 0xC96C_5795_D787_0F42;

    /// Bit-at-a-time CRC-64/XZ, straight from the definition.
    fn crc64_bitwise(bytes: &[u8]) -> u64 {
        let mut crc = !0u64;
        for &byte in bytes {
            crc ^= u64::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 { (crc >> 1) ^ CRC64_POLY } else { crc >> 1 };
            }
        }
        !crc
    }

    fn crc64(bytes: &[u8]) -> u64 {
        let mut crc = checksum();
        crc.update(bytes);
        crc.finalize()
    }

    #[test]
    fn crc64_matches_the_published_check_values() {
        // The CRC catalogue's check value for CRC-64/XZ, and the empty input.
        assert_eq!(crc64(b"123456789"), 0x995D_C9BB_DF19_39FA);
        assert_eq!(crc64(b""), 0);
        assert_eq!(crc64_bitwise(b"123456789"), 0x995D_C9BB_DF19_39FA);
    }

    #[test]
    #[cfg_attr(miri, ignore = "arithmetic only, too slow under Miri")]
    fn crc64_slicing_matches_bitwise_at_every_length_and_split() {
        let mut rng = StdRng::seed_from_u64(5);
        let data: Vec<u8> = (0..300).map(|_| rng.random()).collect();
        for len in 0..data.len() {
            let whole = crc64(&data[..len]);
            assert_eq!(whole, crc64_bitwise(&data[..len]), "len {len}");
            for split in [0, 1, 3, 7, 8, 9, len / 2, len] {
                let split = split.min(len);
                let mut crc = checksum();
                crc.update(&data[..split]);
                crc.update(&data[split..len]);
                assert_eq!(crc.finalize(), whole, "len {len} split {split}");
            }
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "arithmetic only, too slow under Miri")]
    fn crc64_detects_every_single_bit_flip_and_short_burst() {
        let mut rng = StdRng::seed_from_u64(6);
        let data: Vec<u8> = (0..200).map(|_| rng.random()).collect();
        let clean = crc64(&data);
        let mut flipped = data.clone();
        for bit in 0..data.len() * 8 {
            flipped[bit / 8] ^= 1 << (bit % 8);
            assert_ne!(crc64(&flipped), clean, "flip of bit {bit} undetected");
            flipped[bit / 8] ^= 1 << (bit % 8);
        }
        for _ in 0..10_000 {
            let at = rng.random_range(0..data.len() - 8);
            let burst: u64 = rng.random_range(1..=u64::MAX);
            let mut bytes = data.clone();
            for (k, b) in burst.to_le_bytes().iter().enumerate() {
                bytes[at + k] ^= b;
            }
            assert_ne!(crc64(&bytes), clean, "burst at {at} undetected");
        }
    }

    #[test]
    fn max_buckets_keeps_the_length_in_range() {
        let total = (HEADER_LEN + CHECKSUM_LEN + LEVEL_BLOCK_LEN + WORD_LEN * MAX_LEVELS) as u128
            + u128::from(MAX_BUCKETS) * WORD_LEN as u128;
        assert!(total <= u128::from(u64::MAX));
        assert!(MAX_BUCKETS as u128 * WORD_LEN as u128 <= isize::MAX as u128);
    }
}
