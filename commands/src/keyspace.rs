//! What a host (the server's map of names, a module's keyspace) lends the commands.

use lockfree_cuckoo::InsertError;

use crate::entry::Entry;
use crate::reply::Reply;
use crate::settings::{Defaults, Settings};
use crate::transfers::Transfers;

/// Why a key could not be used as a command asked.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyError {
    /// The key holds something other than a cuckoo filter.
    WrongType,
    /// The key exists and the command creates it.
    Exists,
    /// The filter would take the host's memory over its limit, or could not be allocated.
    OutOfMemory,
    /// The filter would take an engine's `used_memory` past its `maxmemory`: refused before
    /// anything is allocated, with the engine's own error.
    OverMaxMemory,
    /// The key's name is longer than the host keeps.
    NameTooLong {
        /// The longest name, in bytes.
        limit: usize,
    },
}

impl KeyError {
    /// The reply RedisBloom gives for it.
    pub fn reply(&self) -> Reply {
        match self {
            Self::WrongType => {
                Reply::error("WRONGTYPE Operation against a key holding the wrong kind of value")
            }
            Self::Exists => Reply::error("ERR item exists"),
            Self::OutOfMemory => Reply::error("ERR Insufficient memory to create filter"),
            Self::OverMaxMemory => {
                Reply::error("OOM command not allowed when used memory > 'maxmemory'.")
            }
            Self::NameTooLong { limit } => {
                Reply::error_owned(format!("ERR key name longer than {limit} bytes"))
            }
        }
    }
}

/// The keys of one database, as the commands need them. Every method runs its callback while
/// the entry stays valid; none of them holds a lock the callback could need.
pub trait Keyspace {
    /// Runs `f` on the entry at `key`, or on `None` if there is none.
    ///
    /// # Errors
    ///
    /// [`KeyError::WrongType`] when the key holds something else.
    fn read<R>(&self, key: &[u8], f: impl FnOnce(Option<&Entry>) -> R) -> Result<R, KeyError>;

    /// Runs `f` on the entry at `key`, first creating it with `settings` if there is none.
    ///
    /// # Errors
    ///
    /// [`KeyError::WrongType`], or [`KeyError::OutOfMemory`] when it had to be created and
    /// could not be.
    fn read_or_create<R>(
        &self,
        key: &[u8],
        settings: &Settings,
        f: impl FnOnce(&Entry) -> R,
    ) -> Result<R, KeyError>;

    /// Creates an empty filter with `settings` at `key`, keyed with their
    /// [`seed`](Settings::seed) (through [`Entry::new`] or [`Settings::build`]).
    ///
    /// # Errors
    ///
    /// [`KeyError::Exists`] (or [`KeyError::WrongType`]) when the key is taken,
    /// [`KeyError::OutOfMemory`] or [`KeyError::OverMaxMemory`] when the filter does not fit.
    fn create(&self, key: &[u8], settings: &Settings) -> Result<(), KeyError>;

    /// Puts `entry`, a filter loaded whole, at `key`.
    ///
    /// # Errors
    ///
    /// As [`create`](Self::create).
    fn adopt(&self, key: &[u8], entry: Entry) -> Result<(), KeyError>;

    /// The `CF.LOADCHUNK` transfers under way in this keyspace.
    fn transfers(&self) -> &Transfers;

    /// Inserts `item` into `entry`, the filter at `key` that a callback was lent. Every insert
    /// of the commands comes here, since an insert is where a growable filter grows: a host
    /// that bounds the memory of all its filters together wraps the library's insert.
    ///
    /// # Errors
    ///
    /// [`InsertError::Full`] when the filter has no room (or the host refuses it the memory
    /// to grow).
    fn insert(&self, key: &[u8], entry: &Entry, item: &[u8]) -> Result<(), InsertError> {
        let _ = key;
        entry.filter.insert(item)
    }

    /// Whether the command comes from the host's primary or from the log it loads at start:
    /// only then may `CF.TICK` start a filter's epochs (a client that could would expire
    /// items before their window ends).
    fn follows_primary(&self) -> bool {
        false
    }

    /// What the host fills in for options a command leaves out (RedisBloom's `cf-initial-size`
    /// and the other `cf-*` configuration).
    fn defaults(&self) -> Defaults {
        Defaults::REDISBLOOM
    }
}
