//! The save file: every filter with its name and settings, written by `SAVE` while clients keep
//! writing, and loaded at start.
//!
//! Layout (all integers little-endian):
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `LFCSRV\0\x01` (the last byte is the layout version) |
//! | 8 | number of filters |
//! | per filter | name length (8), name, capacity (8), max iterations (8), bucket size (8), expansion (8), deletes (8), snapshot length (8), the library's snapshot (`FORMAT.md`) |
//! | 8 | CRC-64/XZ of everything before it |
//!
//! Each filter's words come from [`CuckooFilter::write_to`], whose guarantee carries over: every
//! item whose `CF.ADD` was acknowledged before `SAVE` began, and that no `CF.DEL` removed before
//! `SAVE` ended, is in the file. The file is written beside its final name, flushed to disk and
//! renamed over it, so a crash leaves the old file or the new one, never a mix.

use std::fmt;
use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crc::{Crc, Digest, CRC_64_XZ};
use lockfree_cuckoo::{CuckooFilter, LoadError};

use lockfree_cuckoo_commands::{Entry, Filter, KeyError, Settings};

use crate::store::{Growth, Store};

/// The magic of layout version 1, the one this build writes and reads.
const MAGIC: [u8; 8] = *b"LFCSRV\0\x01";
const CRC: Crc<u64> = Crc::<u64>::new(&CRC_64_XZ);

/// Why a save file could not be loaded.
#[derive(Debug)]
#[non_exhaustive]
pub enum PersistError {
    /// Reading or writing the file failed.
    Io(io::Error),
    /// The file does not start with the save file's magic bytes.
    NotASaveFile,
    /// The file is a save file of a layout this build does not read (a later one).
    UnsupportedLayout(u8),
    /// The file ends early, or a length in it is impossible.
    Truncated,
    /// The checksum at the end does not match the contents.
    Checksum,
    /// A filter's snapshot was refused by the library.
    Filter {
        /// The filter's name, lossily as text.
        name: String,
        /// Why.
        source: LoadError,
    },
    /// A name appears twice.
    DuplicateName(String),
    /// A growable filter has no byte ceiling: the library would let its removes take memory
    /// that `--max-memory` could not bound (this server never builds such a filter).
    Unbounded {
        /// The filter's name, lossily as text.
        name: String,
    },
    /// The filters together exceed the configured memory maximum.
    OutOfMemory,
}

impl fmt::Display for PersistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "{e}"),
            Self::NotASaveFile => f.write_str("not a lockfree-cuckoo-server save file"),
            Self::UnsupportedLayout(found) => write!(
                f,
                "the save file has layout {found}, written by another version of this server; \
                 this one reads layout 1, and leaves the file as it is"
            ),
            Self::Truncated => {
                f.write_str("the save file is truncated or has an impossible length")
            }
            Self::Checksum => f.write_str("the save file's checksum does not match its contents"),
            Self::Filter { name, source } => write!(f, "filter {name:?}: {source}"),
            Self::DuplicateName(name) => write!(f, "filter {name:?} appears twice"),
            Self::Unbounded { name } => write!(
                f,
                "filter {name:?} is growable without a byte ceiling, which this server does not \
                 serve: --max-memory could not bound it"
            ),
            Self::OutOfMemory => f.write_str("the saved filters exceed --max-memory"),
        }
    }
}

impl std::error::Error for PersistError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            Self::Filter { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<io::Error> for PersistError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            Self::Truncated
        } else {
            Self::Io(e)
        }
    }
}

/// What a save wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Saved {
    /// Filters written.
    pub filters: usize,
    /// Items in them, as written.
    pub items: u64,
    /// Bytes of the file.
    pub bytes: u64,
}

/// Writes every filter of `store` to `path`, replacing the file only once the new one is
/// complete and on disk.
///
/// # Errors
///
/// An I/O error; the previous file, if any, is then untouched.
pub fn save(store: &Store, path: &Path) -> io::Result<Saved> {
    let entries = store.entries();
    let temp = temporary(path, std::process::id());
    let result = (|| {
        let file = File::create(&temp)?;
        let mut out = Checksummed { inner: BufWriter::new(file), digest: CRC.digest() };
        out.write_all(&MAGIC)?;
        out.write_all(&(entries.len() as u64).to_le_bytes())?;
        let mut items = 0;
        let mut snapshot = Vec::new();
        for (name, entry) in &entries {
            snapshot.clear();
            items += entry.filter.write_to(&mut snapshot)?.items;
            out.write_all(&(name.len() as u64).to_le_bytes())?;
            out.write_all(name)?;
            let settings = entry.settings;
            for field in [
                settings.capacity,
                u64::from(settings.max_iterations),
                u64::from(settings.bucket_size),
                u64::from(settings.expansion),
                entry.deletes(),
                snapshot.len() as u64,
            ] {
                out.write_all(&field.to_le_bytes())?;
            }
            out.write_all(&snapshot)?;
        }
        let crc = out.digest.finalize();
        let mut file = out.inner.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.write_all(&crc.to_le_bytes())?;
        file.sync_all()?;
        let bytes = file.metadata()?.len();
        fs::rename(&temp, path)?;
        // The rename itself is durable once the directory is.
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            File::open(dir)?.sync_all()?;
        }
        Ok(Saved { filters: entries.len(), items, bytes })
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// Where a save to `path` by process `pid` writes before it renames the file into place.
fn temporary(path: &Path, pid: u32) -> PathBuf {
    path.with_extension(format!("tmp-{pid}"))
}

/// Removes what saves to `path` by processes that no longer run left behind (a crash or
/// `kill -9` during a save leaves its temporary file); returns how many. Linux only, where
/// `/proc` says which processes run.
pub fn remove_stale_temporaries(path: &Path) -> usize {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if !cfg!(target_os = "linux") {
        return 0;
    }
    let Ok(entries) = fs::read_dir(dir) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        let pid =
            entry.path().extension().and_then(|e| e.to_str()?.strip_prefix("tmp-")?.parse().ok());
        let Some(pid) = pid else { continue };
        let ours = temporary(path, pid) == entry.path();
        if ours
            && !Path::new(&format!("/proc/{pid}")).exists()
            && fs::remove_file(entry.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// Loads the filters saved at `path` into `store`; a missing file is an empty store.
///
/// # Errors
///
/// A [`PersistError`] saying what is wrong with the file; `store` may then hold some of its
/// filters, and the caller should not serve it.
pub fn load(store: &Store, path: &Path) -> Result<usize, PersistError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    let length = file.metadata()?.len();
    if length < 24 {
        return Err(PersistError::Truncated);
    }
    // Everything but the trailing checksum goes through the digest.
    let mut input =
        Checksummed { inner: BufReader::new(file).take(length - 8), digest: CRC.digest() };
    let mut magic = [0; 8];
    input.read_exact(&mut magic)?;
    match magic {
        MAGIC => {}
        [b'L', b'F', b'C', b'S', b'R', b'V', 0, other] => {
            return Err(PersistError::UnsupportedLayout(other))
        }
        _ => return Err(PersistError::NotASaveFile),
    }
    let count = read_u64(&mut input)?;
    // Each filter takes at least 40 bytes of fields: a count the file cannot hold is refused
    // before anything is reserved for it.
    if count > length / 40 {
        return Err(PersistError::Truncated);
    }
    let mut loaded = Vec::new();
    for _ in 0..count {
        let name_len = read_u64(&mut input)?;
        if name_len > length {
            return Err(PersistError::Truncated);
        }
        let mut name = Vec::new();
        (&mut input).take(name_len).read_to_end(&mut name)?;
        if name.len() as u64 != name_len {
            return Err(PersistError::Truncated);
        }
        let capacity = read_u64(&mut input)?;
        // Out-of-range settings cannot have been written: the checksum then fails too.
        let max_iterations = read_u64(&mut input)?.try_into().unwrap_or(u16::MAX);
        let bucket_size = read_u64(&mut input)?;
        let expansion = read_u64(&mut input)?.try_into().unwrap_or(u16::MAX);
        let deletes = read_u64(&mut input)?;
        let snapshot_len = read_u64(&mut input)?;
        let mut snapshot = (&mut input).take(snapshot_len);
        let filter = Filter::read_from(CuckooFilter::builder(), &mut snapshot);
        let filter = filter.map_err(|source| match source {
            LoadError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => PersistError::Truncated,
            source => PersistError::Filter { name: String::from_utf8_lossy(&name).into(), source },
        })?;
        if snapshot.limit() != 0 {
            return Err(PersistError::Truncated);
        }
        let Some(growth) = Growth::of_filter(&filter) else {
            return Err(PersistError::Unbounded { name: String::from_utf8_lossy(&name).into() });
        };
        let settings = Settings {
            capacity,
            max_iterations,
            bucket_size: bucket_size.try_into().unwrap_or(u8::MAX),
            expansion,
            ..Settings::of_loaded(&filter)
        };
        loaded.push((name, Entry::with_filter(filter, settings, deletes), growth));
    }
    let mut rest = Vec::new();
    input.read_to_end(&mut rest)?;
    let digest = input.digest.finalize();
    let mut trailer = [0; 8];
    input.inner.into_inner().read_exact(&mut trailer)?;
    if !rest.is_empty() || u64::from_le_bytes(trailer) != digest {
        return Err(PersistError::Checksum);
    }
    for (name, entry, growth) in loaded {
        store.put(&name, entry, growth).map_err(|e| match e {
            KeyError::Exists => PersistError::DuplicateName(String::from_utf8_lossy(&name).into()),
            _ => PersistError::OutOfMemory,
        })?;
    }
    Ok(count as usize)
}

fn read_u64(input: &mut impl Read) -> io::Result<u64> {
    let mut bytes = [0; 8];
    input.read_exact(&mut bytes)?;
    Ok(u64::from_le_bytes(bytes))
}

/// A reader or writer that feeds every byte through the file's checksum.
struct Checksummed<T> {
    inner: T,
    digest: Digest<'static, u64>,
}

impl<W: Write> Write for Checksummed<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(bytes)?;
        self.digest.update(&bytes[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<R: Read> Read for Checksummed<R> {
    fn read(&mut self, bytes: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(bytes)?;
        self.digest.update(&bytes[..n]);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockfree_cuckoo::Encoding;

    const SETTINGS: Settings = Settings {
        capacity: 1000,
        max_iterations: 7,
        bucket_size: 3,
        expansion: 0,
        seed: None,
        encoding: Encoding::SemiSorted,
        expire: None,
    };

    fn store_with_two() -> Store {
        let store = Store::new(1 << 30, 1024);
        // One deleted item, counted as CF.DEL counts it.
        let a = Entry::with_filter(SETTINGS.build(1 << 30, true).unwrap(), SETTINGS, 1);
        let a = store.put(b"a", a, Growth::Fixed).unwrap();
        let b = Entry::new(SETTINGS, 1 << 30, true).unwrap();
        let b = store.put(b"b\0\xff", b, Growth::Fixed).unwrap();
        for i in 0..500u32 {
            a.filter.insert(&i).unwrap();
            b.filter.insert(&(i * 3)).unwrap();
        }
        assert!(a.filter.remove(&0u32));
        store
    }

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("save");
        let store = store_with_two();
        let saved = save(&store, &path).unwrap();
        assert_eq!(saved.filters, 2);
        assert_eq!(saved.items, 999);
        assert_eq!(saved.bytes, fs::metadata(&path).unwrap().len());
        let loaded = Store::new(1 << 30, 1024);
        assert_eq!(load(&loaded, &path).unwrap(), 2);
        loaded.with(b"a", |e| {
            let e = e.unwrap();
            assert_eq!(e.deletes(), 1);
            // The seed drawn for the saved filter is the loaded one's, asked for.
            assert_eq!(e.settings, Settings { seed: Some(e.filter.hasher().seed()), ..SETTINGS });
            assert!(e.settings.seed.is_some());
            assert!((1..500u32).all(|i| e.filter.contains(&i)));
        });
        loaded.with(b"b\0\xff", |e| {
            assert!((0..500u32).all(|i| e.unwrap().filter.contains(&(i * 3))))
        });
        assert_eq!(loaded.used_memory(), store.used_memory());
        // No temporary file is left behind.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_missing_file_is_an_empty_store() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(&Store::new(1 << 30, 1024), &dir.path().join("none")).unwrap(), 0);
    }

    #[test]
    fn every_damaged_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("save");
        save(&store_with_two(), &path).unwrap();
        let good = fs::read(&path).unwrap();
        let damaged = dir.path().join("damaged");
        // Every truncation, and a flipped bit in every 37th byte.
        let mut cases: Vec<Vec<u8>> = (0..good.len()).map(|n| good[..n].to_vec()).collect();
        cases.extend((0..good.len()).step_by(37).map(|i| {
            let mut bytes = good.clone();
            bytes[i] ^= 0x10;
            bytes
        }));
        let mut extended = good.clone();
        extended.push(0);
        cases.push(extended);
        for bytes in cases {
            fs::write(&damaged, &bytes).unwrap();
            let result = load(&Store::new(1 << 30, 1024), &damaged);
            assert!(result.is_err(), "{} bytes loaded", bytes.len());
        }
    }

    #[test]
    fn another_layout_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("save");
        save(&store_with_two(), &path).unwrap();
        let mut bytes = fs::read(&path).unwrap();
        bytes[7] = 2;
        fs::write(&path, &bytes).unwrap();
        let error = load(&Store::new(1 << 30, 1024), &path).unwrap_err();
        assert!(matches!(error, PersistError::UnsupportedLayout(2)), "{error}");
        assert!(error.to_string().contains("another version"));
    }

    #[test]
    fn growable_filters_keep_their_ceiling_and_need_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("save");
        let store = Store::new(1 << 30, 1024);
        let grows = Settings::with_capacity(100);
        store.put(b"g", Entry::new(grows, 1 << 24, true).unwrap(), Growth::UpTo(1 << 24)).unwrap();
        save(&store, &path).unwrap();
        let loaded = Store::new(1 << 30, 1024);
        load(&loaded, &path).unwrap();
        assert_eq!(loaded.used_memory(), store.used_memory());
        let growth = loaded.with(b"g", |e| Growth::of_filter(&e.unwrap().filter));
        assert_eq!(growth, Some(Growth::UpTo(1 << 24)));
        // A filter that no byte ceiling bounds, which only a damaged or forged file can hold.
        let unbounded = CuckooFilter::builder().capacity(100).growable().build();
        let entry = Entry::with_filter(unbounded.into(), grows, 0);
        store.put(b"u", entry, Growth::UpTo(1 << 24)).unwrap();
        save(&store, &path).unwrap();
        let error = load(&Store::new(1 << 30, 1024), &path).unwrap_err();
        assert!(matches!(&error, PersistError::Unbounded { name } if name == "u"), "{error}");
    }

    #[test]
    fn a_file_over_the_memory_limit_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("save");
        save(&store_with_two(), &path).unwrap();
        assert!(matches!(load(&Store::new(1000, 1024), &path), Err(PersistError::OutOfMemory)));
    }
}
