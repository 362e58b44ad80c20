//! Snapshots: saving a filter to bytes and loading it back, also while other threads update it.
//!
//! The byte format is specified in `FORMAT.md` at the repository root; this module is its only
//! reader and writer. In short: a 64-byte header (magic, format version, fingerprint layout,
//! bucket count, item count, hasher probes), the bucket words in little-endian, and a CRC-64 of
//! everything before it.
//!
//! # Saving a live table
//!
//! The words come from one pass of [`Table::scan`](crate::table), which writers that remove a
//! fingerprint during the pass help by copying the bucket into the scan first; see that module
//! for the argument that every item present when the scan starts is in the copy. The copy is
//! taken into a private buffer, then encoded and written, so a slow writer never slows the
//! filter's users.

use core::fmt;
use core::hash::BuildHasher;
use std::io::{self, Read, Write};

use crate::bucket::{self, LANES};
use crate::error::LoadError;
use crate::filter::CuckooFilter;
use crate::hash::DefaultHashBuilder;
use crate::sizing::capacity_of;
use crate::table::{ScannedWords, Table, DEFAULT_LOOKUP_RETRIES};

/// The first eight bytes of every snapshot. The leading non-ASCII byte marks the file as binary,
/// and the trailing line feed catches line-ending translation.
pub(crate) const MAGIC: [u8; 8] = *b"\x89CUCKOO\n";

/// The format version this build writes and the only one it reads. Version 2 mixes the hash
/// before splitting it into fingerprint and bucket and reserves the lane value 0xFFFF; a version 1
/// file maps items differently, so reading it would answer false negatives.
pub(crate) const FORMAT_VERSION: u16 = 2;

/// Bits of a fingerprint lane in format version 2.
const FINGERPRINT_BITS: u8 = 16;

/// Bytes before the first bucket word.
pub(crate) const HEADER_LEN: usize = 64;

/// Bytes of the trailing checksum.
const CHECKSUM_LEN: usize = 8;

/// Bytes of one bucket word.
const WORD_LEN: usize = 8;

/// Header offsets; see `FORMAT.md`.
const AT_VERSION: usize = 8;
const AT_FINGERPRINT_BITS: usize = 10;
const AT_LANES: usize = 11;
const AT_FLAGS: usize = 12;
const AT_BUCKETS: usize = 16;
const AT_ITEMS: usize = 24;
const AT_PROBES: usize = 32;

/// Hashes of fixed keys under the filter's hasher, recorded so that a load with a hasher that
/// maps items differently is refused instead of answering false negatives.
const PROBES: usize = 4;

/// Bytes encoded or decoded at a time.
const CHUNK: usize = 64 * 1024;

/// The most buckets a snapshot may declare: the whole file length must fit in a `u64`, and the
/// table in the address space.
const MAX_BUCKETS: u64 = {
    let by_length = (u64::MAX - (HEADER_LEN + CHECKSUM_LEN) as u64) / WORD_LEN as u64;
    let by_memory = (isize::MAX as u64) / WORD_LEN as u64;
    if by_length < by_memory {
        by_length
    } else {
        by_memory
    }
};

/// What [`CuckooFilter::write_to`] wrote.
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::CuckooFilter;
///
/// let filter = CuckooFilter::with_capacity(100);
/// filter.insert("a")?;
/// let mut out = Vec::new();
/// let info = filter.write_to(&mut out)?;
/// assert_eq!(info.bytes, out.len() as u64);
/// assert_eq!(info.items, 1);
/// assert_eq!(info.buckets, filter.bucket_count() as u64);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SnapshotInfo {
    /// Bytes written: the whole snapshot.
    pub bytes: u64,
    /// Buckets written.
    pub buckets: u64,
    /// Items written: the occupied fingerprint lanes of the copy, which is what a filter loaded
    /// from it reports as its [`len`](CuckooFilter::len).
    pub items: u64,
    /// Buckets that other threads copied into the snapshot on its behalf, because they removed a
    /// fingerprint from the bucket while the snapshot's pass ran (0 on a filter nobody updates).
    pub captured_by_writers: u64,
}

impl<S: BuildHasher> CuckooFilter<S> {
    /// Writes a snapshot of the filter to `w`, in the format of `FORMAT.md`.
    ///
    /// Safe on a live filter: other threads may insert, remove and relocate meanwhile.
    ///
    /// - **Guarantee.** Every item whose insert returned before `write_to` was called, and that
    ///   no remove takes before `write_to` returns, is present in a filter loaded from the
    ///   snapshot, whatever relocations, inserts and removes (of the same key or of colliding
    ///   ones) run meanwhile.
    /// - Inserts and removes that run concurrently with the snapshot may or may not show in it.
    /// - A relocation in flight may be captured with its fingerprint in both of its buckets, and
    ///   a remove during the snapshot may be captured before it took its copy: the loaded filter
    ///   then holds a surplus copy of that item, which takes one extra remove to disappear. The
    ///   item count written is the number of occupied lanes written, surplus copies included, so
    ///   it can differ from [`len`](Self::len) while updates run. A snapshot of a filter nobody
    ///   updates is exact.
    /// - **Cost.** One pass over the table into a private buffer (8 bytes a bucket, the size of
    ///   the table), about 0.4 ms per million items, then encoding and writing with the
    ///   checksum. No operation on the filter waits for it: lookups are untouched, and a remove
    ///   or relocation that takes a fingerprint out of a bucket during the pass first copies that
    ///   bucket into the snapshot (a load and a compare-and-swap). Snapshots of one filter take
    ///   turns: a second `write_to` that starts during a pass waits for that pass to end.
    ///
    /// The hasher is not written, only hashes of four fixed probe keys under it; see
    /// [`read_from_with_hasher`](Self::read_from_with_hasher).
    ///
    /// # Errors
    ///
    /// Any error from `w`, which then holds part of a snapshot; an
    /// [`io::ErrorKind::OutOfMemory`] error if the copy of the table cannot be allocated.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(1_000);
    /// filter.insert("apple")?;
    ///
    /// let mut saved = Vec::new(); // or a `File`, a `BufWriter`, a socket
    /// filter.write_to(&mut saved)?;
    ///
    /// let loaded = CuckooFilter::read_from(saved.as_slice())?;
    /// assert!(loaded.contains("apple"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_to(&self, mut w: impl Write) -> io::Result<SnapshotInfo> {
        let scan = Scan::of(self.table().scan()?);
        let header = self.header(&scan);
        let mut crc = Crc64::new();
        crc.update(&header);
        w.write_all(&header)?;
        let mut words = scan.scanned.words();
        let mut chunk = Vec::with_capacity(CHUNK.min(words.len() * WORD_LEN));
        while words.len() > 0 {
            chunk.clear();
            chunk.extend(words.by_ref().take(CHUNK / WORD_LEN).flat_map(u64::to_le_bytes));
            crc.update(&chunk);
            w.write_all(&chunk)?;
        }
        w.write_all(&crc.finish().to_le_bytes())?;
        Ok(scan.info())
    }

    /// A snapshot of the filter as bytes: [`write_to`](Self::write_to) into a `Vec`, with the
    /// same guarantee on a live filter.
    ///
    /// # Panics
    ///
    /// If the snapshot does not fit in memory (as any `Vec` allocation).
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(100);
    /// filter.insert(&7u64)?;
    /// let bytes = filter.to_bytes();
    /// assert_eq!(bytes.len(), 72 + 8 * filter.bucket_count());
    /// assert!(CuckooFilter::from_bytes(&bytes)?.contains(&7u64));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let len = HEADER_LEN + self.bucket_count() * WORD_LEN + CHECKSUM_LEN;
        let mut bytes = Vec::with_capacity(len);
        match self.write_to(&mut bytes) {
            Ok(_) => bytes,
            // Writing into a `Vec` cannot fail; only the copy of the table can.
            Err(err) => panic!("cannot snapshot the cuckoo filter: {err}"),
        }
    }

    /// Loads a snapshot written by [`write_to`](Self::write_to) or
    /// [`to_bytes`](Self::to_bytes), with `hasher` as the filter's hasher.
    ///
    /// Reads exactly one snapshot and nothing after it, so snapshots can be concatenated in one
    /// stream. Memory grows with the data that actually arrives: a header that claims a huge
    /// table over a short stream fails with [`LoadError::Truncated`] having allocated no more
    /// than about twice what was read.
    ///
    /// `hasher` must map items exactly as the saving filter's hasher did, or the loaded filter
    /// would answer false negatives. The snapshot records the hashes of four fixed probe keys;
    /// a hasher that disagrees on any of them is refused with [`LoadError::HasherMismatch`]. A
    /// hasher that agrees on the probes but not on other keys cannot be detected: use the same
    /// hasher type, with the same keys, as the saving process.
    ///
    /// # Errors
    ///
    /// A [`LoadError`] saying what was expected and what was found: not a snapshot
    /// ([`BadMagic`](LoadError::BadMagic)), a format version or layout this build does not read,
    /// an input that ends early ([`Truncated`](LoadError::Truncated)), corrupted bytes
    /// ([`ChecksumMismatch`](LoadError::ChecksumMismatch)), header fields that contradict each
    /// other ([`InconsistentHeader`](LoadError::InconsistentHeader)), a bucket word with a lane no
    /// fingerprint takes ([`ReservedFingerprint`](LoadError::ReservedFingerprint)), a different hasher
    /// ([`HasherMismatch`](LoadError::HasherMismatch)), a table too large to allocate, or an
    /// error from `r` ([`Io`](LoadError::Io)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::hash_map::RandomState;
    /// use lockfree_cuckoo::{CuckooFilter, LoadError};
    ///
    /// let hasher = RandomState::new(); // keys fixed for this process
    /// let filter = CuckooFilter::builder().capacity(100).hasher(hasher.clone()).build();
    /// filter.insert("pear")?;
    /// let saved = filter.to_bytes();
    ///
    /// let loaded = CuckooFilter::read_from_with_hasher(saved.as_slice(), hasher)?;
    /// assert!(loaded.contains("pear"));
    ///
    /// // Another RandomState has other keys: refused rather than silently wrong.
    /// let other = CuckooFilter::read_from_with_hasher(saved.as_slice(), RandomState::new());
    /// assert!(matches!(other, Err(LoadError::HasherMismatch { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_from_with_hasher(r: impl Read, hasher: S) -> Result<Self, LoadError> {
        decode(r, None, hasher)
    }

    /// Loads a snapshot from `bytes`, which must hold exactly one snapshot, with `hasher` as the
    /// filter's hasher; see [`read_from_with_hasher`](Self::read_from_with_hasher).
    ///
    /// Any byte string yields a filter or an error, never a panic, and the table is allocated
    /// only after the length of `bytes` has been checked against the bucket count.
    ///
    /// # Errors
    ///
    /// As [`read_from_with_hasher`](Self::read_from_with_hasher), and
    /// [`LoadError::TrailingBytes`] if `bytes` continues after the snapshot.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::hash::BuildHasherDefault;
    /// use std::collections::hash_map::DefaultHasher; // SipHash with fixed keys
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// type Sip = BuildHasherDefault<DefaultHasher>;
    /// let filter = CuckooFilter::builder().capacity(100).hasher(Sip::default()).build();
    /// filter.insert(&42u32)?;
    ///
    /// let loaded = CuckooFilter::from_bytes_with_hasher(&filter.to_bytes(), Sip::default())?;
    /// assert!(loaded.contains(&42u32));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bytes_with_hasher(bytes: &[u8], hasher: S) -> Result<Self, LoadError> {
        decode(bytes, Some(bytes.len()), hasher)
    }

    fn header(&self, scan: &Scan) -> [u8; HEADER_LEN] {
        let mut header = [0u8; HEADER_LEN];
        header[..AT_VERSION].copy_from_slice(&MAGIC);
        header[AT_VERSION..AT_FINGERPRINT_BITS].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        header[AT_FINGERPRINT_BITS] = FINGERPRINT_BITS;
        header[AT_LANES] = LANES as u8;
        // Bytes AT_FLAGS..AT_BUCKETS: flags, all zero in version 2.
        header[AT_BUCKETS..AT_ITEMS].copy_from_slice(&(scan.scanned.len() as u64).to_le_bytes());
        header[AT_ITEMS..AT_PROBES].copy_from_slice(&scan.items.to_le_bytes());
        for (k, probe) in probes(self.hasher()).iter().enumerate() {
            let at = AT_PROBES + 8 * k;
            header[at..at + 8].copy_from_slice(&probe.to_le_bytes());
        }
        header
    }
}

impl CuckooFilter<DefaultHashBuilder> {
    /// Loads a snapshot saved by a filter with the default hasher; see
    /// [`read_from_with_hasher`](Self::read_from_with_hasher).
    ///
    /// The default hasher is aHash with fixed seeds. aHash does not promise the same output
    /// across its own versions, target architectures or CPU features (a build with
    /// `target-cpu=native` may use AES instructions), so a snapshot is guaranteed to load only
    /// into a build of the same crate versions for the same target. Elsewhere the load either
    /// succeeds, if the hashes agree, or fails with [`LoadError::HasherMismatch`]; it never
    /// yields a filter with false negatives because of a hasher change that the probes see.
    /// Filters that must move between builds should use a hasher with a specified output.
    ///
    /// # Errors
    ///
    /// As [`read_from_with_hasher`](Self::read_from_with_hasher).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::fs::File;
    /// use std::io::{BufReader, BufWriter};
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(1_000_000);
    /// filter.insert("key")?;
    /// filter.write_to(BufWriter::new(File::create("seen.cuckoo")?))?;
    ///
    /// let loaded = CuckooFilter::read_from(BufReader::new(File::open("seen.cuckoo")?))?;
    /// assert!(loaded.contains("key"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_from(r: impl Read) -> Result<Self, LoadError> {
        Self::read_from_with_hasher(r, DefaultHashBuilder::default())
    }

    /// Loads a snapshot from `bytes` with the default hasher; see
    /// [`from_bytes_with_hasher`](Self::from_bytes_with_hasher) and [`read_from`](Self::read_from).
    ///
    /// # Errors
    ///
    /// As [`from_bytes_with_hasher`](Self::from_bytes_with_hasher).
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::{CuckooFilter, LoadError};
    ///
    /// let filter = CuckooFilter::with_capacity(100);
    /// filter.insert("a")?;
    /// let bytes = filter.to_bytes();
    /// assert!(CuckooFilter::from_bytes(&bytes)?.contains("a"));
    ///
    /// let err = CuckooFilter::from_bytes(&bytes[..bytes.len() - 1]).unwrap_err();
    /// assert!(matches!(err, LoadError::Truncated { .. }));
    /// assert!(matches!(CuckooFilter::from_bytes(b"hello"), Err(LoadError::BadMagic { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, LoadError> {
        Self::from_bytes_with_hasher(bytes, DefaultHashBuilder::default())
    }
}

/// The hashes of the probe keys under `hasher`, in the order `FORMAT.md` lists them.
///
/// Keys of several types, none of which hashes a `usize`: a `usize` is hashed with the
/// platform's width by many hashers, which would refuse a snapshot moving between 32- and 64-bit
/// platforms even for filters whose items contain none.
pub(crate) fn probes<S: BuildHasher>(hasher: &S) -> [u64; PROBES] {
    [
        hasher.hash_one(0u64),
        hasher.hash_one(0x0123_4567_89AB_CDEFu64),
        hasher.hash_one("lockfree-cuckoo"),
        hasher.hash_one(0xFFFF_FFFFu32),
    ]
}

/// The table's words as one scan copied them, and the item count they make.
struct Scan {
    scanned: ScannedWords,
    items: u64,
}

impl Scan {
    fn of(scanned: ScannedWords) -> Self {
        let items = scanned.words().map(occupied_lanes).sum();
        Self { scanned, items }
    }

    fn info(&self) -> SnapshotInfo {
        let buckets = self.scanned.len() as u64;
        SnapshotInfo {
            bytes: (HEADER_LEN + CHECKSUM_LEN) as u64 + buckets * WORD_LEN as u64,
            buckets,
            items: self.items,
            captured_by_writers: self.scanned.captured_by_writers,
        }
    }
}

/// Lanes of `word` that hold a fingerprint.
fn occupied_lanes(word: u64) -> u64 {
    (0..LANES).filter(|&k| bucket::lane(word, k) != 0).count() as u64
}

/// Reads and checks one snapshot; `len` is the exact input length when the caller knows it.
fn decode<S: BuildHasher>(
    mut r: impl Read,
    len: Option<usize>,
    hasher: S,
) -> Result<CuckooFilter<S>, LoadError> {
    let mut header = [0u8; HEADER_LEN];
    let got = read_full(&mut r, &mut header)?;
    let magic_part = got.min(MAGIC.len());
    if header[..magic_part] != MAGIC[..magic_part] {
        return Err(LoadError::BadMagic { found: header[..magic_part].to_vec() });
    }
    if got >= AT_FINGERPRINT_BITS {
        let version = u16::from_le_bytes([header[AT_VERSION], header[AT_VERSION + 1]]);
        if version != FORMAT_VERSION {
            return Err(LoadError::UnsupportedVersion {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
    }
    if got < HEADER_LEN {
        return Err(LoadError::Truncated { expected: HEADER_LEN as u64, found: got as u64 });
    }

    let buckets = read_u64(&header, AT_BUCKETS);
    if buckets > MAX_BUCKETS {
        return Err(LoadError::InconsistentHeader {
            field: "bucket count",
            expected: format!("at most {MAX_BUCKETS} on this platform"),
            found: buckets,
        });
    }
    // Cannot overflow: MAX_BUCKETS keeps the total within u64 and `buckets` within usize / 8.
    let total = (HEADER_LEN + CHECKSUM_LEN) as u64 + buckets * WORD_LEN as u64;
    let buckets = buckets as usize;
    if let Some(len) = len {
        if (len as u64) < total {
            return Err(LoadError::Truncated { expected: total, found: len as u64 });
        }
        if len as u64 > total {
            return Err(LoadError::TrailingBytes { expected: total, found: len as u64 });
        }
    }

    let mut crc = Crc64::new();
    crc.update(&header);
    let words = read_words(&mut r, buckets, len.is_some(), &mut crc, total)?;
    let mut stored = [0u8; CHECKSUM_LEN];
    let got = read_full(&mut r, &mut stored)?;
    if got < CHECKSUM_LEN {
        let found = total - (CHECKSUM_LEN - got) as u64;
        return Err(LoadError::Truncated { expected: total, found });
    }
    let stored = u64::from_le_bytes(stored);
    let computed = crc.finish();
    if stored != computed {
        return Err(LoadError::ChecksumMismatch { expected: stored, found: computed });
    }

    check_header(&header, &words)?;
    check_words(&words)?;
    let recorded = (0..PROBES).map(|k| read_u64(&header, AT_PROBES + 8 * k));
    for (probe, (expected, found)) in recorded.zip(probes(&hasher)).enumerate() {
        if expected != found {
            return Err(LoadError::HasherMismatch { probe, expected, found });
        }
    }
    let items = read_u64(&header, AT_ITEMS) as usize; // at most 4 × buckets: checked
    let table = Table::from_words(words, DEFAULT_LOOKUP_RETRIES, items);
    Ok(CuckooFilter::from_parts(table, hasher, capacity_of(buckets)))
}

/// The header fields the checksum cannot vouch for: it proves the bytes are as written, not that
/// the writer was this crate.
fn check_header(header: &[u8; HEADER_LEN], words: &[u64]) -> Result<(), LoadError> {
    let (bits, lanes) = (header[AT_FINGERPRINT_BITS], header[AT_LANES]);
    if bits != FINGERPRINT_BITS || usize::from(lanes) != LANES {
        return Err(LoadError::UnsupportedLayout { fingerprint_bits: bits, lanes });
    }
    let flags = u32::from_le_bytes([
        header[AT_FLAGS],
        header[AT_FLAGS + 1],
        header[AT_FLAGS + 2],
        header[AT_FLAGS + 3],
    ]);
    if flags != 0 {
        return Err(LoadError::InconsistentHeader {
            field: "flags",
            expected: "0".into(),
            found: u64::from(flags),
        });
    }
    if words.is_empty() {
        return Err(LoadError::InconsistentHeader {
            field: "bucket count",
            expected: "at least 1".into(),
            found: 0,
        });
    }
    let items = read_u64(header, AT_ITEMS);
    let lanes = words.len() as u64 * LANES as u64;
    if items > lanes {
        return Err(LoadError::InconsistentHeader {
            field: "item count",
            expected: format!("at most {lanes} ({LANES} lanes in each of {} buckets)", words.len()),
            found: items,
        });
    }
    let occupied: u64 = words.iter().map(|&w| occupied_lanes(w)).sum();
    if items != occupied {
        return Err(LoadError::InconsistentHeader {
            field: "item count",
            expected: format!("{occupied}, the number of occupied lanes"),
            found: items,
        });
    }
    Ok(())
}

/// That no lane holds 0xFFFF: this crate never writes it, and the table relies on no bucket word
/// being `bucket::UNUSED_WORD`.
fn check_words(words: &[u64]) -> Result<(), LoadError> {
    for (bucket, &word) in words.iter().enumerate() {
        if let Some(lane) = bucket::reserved_lane(word) {
            return Err(LoadError::ReservedFingerprint { bucket: bucket as u64, lane: lane as u8 });
        }
    }
    Ok(())
}

/// Reads `buckets` little-endian words, feeding their bytes to `crc`. With `exact` the caller
/// has checked the input holds them all, so the vector is allocated at once; otherwise it grows
/// with the data that arrives, at most doubling, so a forged bucket count over a short stream
/// costs no more than about twice the bytes actually read.
fn read_words(
    r: &mut impl Read,
    buckets: usize,
    exact: bool,
    crc: &mut Crc64,
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
            let found = (HEADER_LEN + words.len() * WORD_LEN + got) as u64;
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

fn read_u64(header: &[u8; HEADER_LEN], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&header[at..at + 8]);
    u64::from_le_bytes(bytes)
}

/// CRC-64/XZ (also called CRC-64/GO-ECMA): the ECMA-182 polynomial, reflected, with initial
/// value and final XOR all ones. `check("123456789") = 0x995DC9BBDF1939FA`. It detects every
/// error burst of up to 64 bits, so every single-bit flip. Slicing-by-8 tables, built at compile
/// time.
pub(crate) struct Crc64(u64);

/// The reflected ECMA-182 polynomial.
const CRC64_POLY: u64 = 0xC96C_5795_D787_0F42;

static CRC64_TABLES: [[u64; 256]; 8] = crc64_tables();

const fn crc64_tables() -> [[u64; 256]; 8] {
    let mut tables = [[0u64; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ CRC64_POLY } else { crc >> 1 };
            bit += 1;
        }
        tables[0][i] = crc;
        i += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = tables[k - 1][i];
            tables[k][i] = (prev >> 8) ^ tables[0][(prev & 0xFF) as usize];
            i += 1;
        }
        k += 1;
    }
    tables
}

impl Crc64 {
    pub(crate) const fn new() -> Self {
        Self(!0)
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
        let t = &CRC64_TABLES;
        let mut crc = self.0;
        let mut blocks = bytes.chunks_exact(8);
        for block in &mut blocks {
            let mut eight = [0u8; 8];
            eight.copy_from_slice(block);
            let x = crc ^ u64::from_le_bytes(eight);
            crc = t[7][(x & 0xFF) as usize]
                ^ t[6][(x >> 8 & 0xFF) as usize]
                ^ t[5][(x >> 16 & 0xFF) as usize]
                ^ t[4][(x >> 24 & 0xFF) as usize]
                ^ t[3][(x >> 32 & 0xFF) as usize]
                ^ t[2][(x >> 40 & 0xFF) as usize]
                ^ t[1][(x >> 48 & 0xFF) as usize]
                ^ t[0][(x >> 56) as usize];
        }
        for &byte in blocks.remainder() {
            crc = t[0][((crc ^ u64::from(byte)) & 0xFF) as usize] ^ (crc >> 8);
        }
        self.0 = crc;
    }

    pub(crate) const fn finish(&self) -> u64 {
        !self.0
    }
}

impl fmt::Debug for Crc64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Crc64").field(&format_args!("{:#018x}", self.finish())).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

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
        let mut crc = Crc64::new();
        crc.update(bytes);
        crc.finish()
    }

    #[test]
    fn crc64_matches_the_published_check_values() {
        // The CRC catalogue's check value for CRC-64/XZ, and the empty input.
        assert_eq!(crc64(b"123456789"), 0x995D_C9BB_DF19_39FA);
        assert_eq!(crc64(b""), 0);
        assert_eq!(crc64_bitwise(b"123456789"), 0x995D_C9BB_DF19_39FA);
    }

    #[test]
    fn crc64_slicing_matches_bitwise_at_every_length_and_split() {
        let mut rng = StdRng::seed_from_u64(5);
        let data: Vec<u8> = (0..300).map(|_| rng.random()).collect();
        for len in 0..data.len() {
            let whole = crc64(&data[..len]);
            assert_eq!(whole, crc64_bitwise(&data[..len]), "len {len}");
            for split in [0, 1, 3, 7, 8, 9, len / 2, len] {
                let split = split.min(len);
                let mut crc = Crc64::new();
                crc.update(&data[..split]);
                crc.update(&data[split..len]);
                assert_eq!(crc.finish(), whole, "len {len} split {split}");
            }
        }
    }

    #[test]
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
    fn occupied_lanes_counts_non_zero_lanes() {
        assert_eq!(occupied_lanes(0), 0);
        assert_eq!(occupied_lanes(1), 1);
        assert_eq!(occupied_lanes(0x0001_0000_0000_0000), 1);
        assert_eq!(occupied_lanes(0xFFFF_0000_FFFF_0000), 2);
        assert_eq!(occupied_lanes(u64::MAX), 4);
    }

    #[test]
    fn max_buckets_keeps_the_length_in_range() {
        let total =
            (HEADER_LEN + CHECKSUM_LEN) as u128 + u128::from(MAX_BUCKETS) * WORD_LEN as u128;
        assert!(total <= u128::from(u64::MAX));
        assert!(MAX_BUCKETS as u128 * WORD_LEN as u128 <= isize::MAX as u128);
    }
}
