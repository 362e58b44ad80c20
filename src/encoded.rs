//! Where the encoding chosen at run time ([`Encoding`]) becomes the type the levels, tables and
//! bucket functions are compiled for: the public [`CuckooFilter`](crate::CuckooFilter) is one type
//! whatever its encoding, and holds [`EncodedLevels`]; each operation matches once on it, then
//! runs code compiled for that encoding alone. This file is the one list of the encodings' types.

use crate::bucket::plain::Plain;
use crate::bucket::semi_sorted::SemiSorted;
use crate::bucket::{BucketEncoding, Encoding};
use crate::levels::Levels;

/// A filter's levels, in the encoding it was built with.
pub(crate) enum EncodedLevels {
    Plain(Levels<Plain>),
    SemiSorted(Levels<SemiSorted>),
}

/// Evaluates `$body` with `$levels` bound to the [`Levels`] inside an [`EncodedLevels`] (by
/// reference when given a reference), compiled once for each encoding. The plain encoding's
/// body is inlined where the macro is; the semi-sorted one's is a function of its own
/// ([`out_of_line`]), so that its decoding neither makes the caller too large to inline nor
/// takes registers the plain path would then save on every call. (`$body` is a closure's
/// body there: no `?` or `return` in it.) A caller that wants the semi-sorted path inline
/// takes the filter's [`SemiSortedRef`](crate::SemiSortedRef), which holds the levels typed.
macro_rules! with_levels {
    ($encoded:expr, $levels:ident => $body:expr) => {
        match $encoded {
            $crate::encoded::EncodedLevels::Plain($levels) => $body,
            $crate::encoded::EncodedLevels::SemiSorted($levels) => {
                $crate::encoded::out_of_line(move || $body)
            }
        }
    };
}
pub(crate) use with_levels;

/// Runs `f` in a function that is never inlined: see [`with_levels`]. Cold, so that the
/// compiler keeps its caller's registers for the plain path and saves them around this call
/// alone (without it, a fat-LTO build's lookup loop reloads its table's fields on every plain
/// lookup).
#[cold]
#[inline(never)]
pub(crate) fn out_of_line<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Work generic over the encoding, to run for an encoding known at run time ([`run`]): what a
/// closure generic over a type would be.
pub(crate) trait ForEncoding {
    type Output;

    fn run<E: BucketEncoding>(self) -> Self::Output
    where
        Levels<E>: IntoEncoded;
}

/// Runs `work` compiled for `encoding`.
pub(crate) fn run<W: ForEncoding>(encoding: Encoding, work: W) -> W::Output {
    match encoding {
        Encoding::Plain => work.run::<Plain>(),
        Encoding::SemiSorted => work.run::<SemiSorted>(),
    }
}

/// Levels of either encoding, wrapped as the filter holds them.
pub(crate) trait IntoEncoded {
    fn into_encoded(self) -> EncodedLevels;
}

impl IntoEncoded for Levels<Plain> {
    fn into_encoded(self) -> EncodedLevels {
        EncodedLevels::Plain(self)
    }
}

impl IntoEncoded for Levels<SemiSorted> {
    fn into_encoded(self) -> EncodedLevels {
        EncodedLevels::SemiSorted(self)
    }
}

impl EncodedLevels {
    /// The encoding of the levels.
    pub(crate) fn encoding(&self) -> Encoding {
        with_levels!(self, levels => levels.encoding())
    }

    /// These levels, if semi-sorted.
    #[inline]
    pub(crate) fn semi_sorted(&self) -> Option<&Levels<SemiSorted>> {
        match self {
            Self::SemiSorted(levels) => Some(levels),
            Self::Plain(_) => None,
        }
    }

    /// These levels, if they are in the encoding of `like`.
    pub(crate) fn same_encoding_as<E: BucketEncoding>(
        &self,
        like: &Levels<E>,
    ) -> Option<&Levels<E>> {
        let _ = like;
        with_levels!(self, levels => (levels as &dyn core::any::Any).downcast_ref::<Levels<E>>())
    }

    /// These levels in a filter that takes `bytes` more around them.
    pub(crate) fn with_outside(self, bytes: usize) -> Self {
        with_levels!(self, levels => levels.with_outside(bytes).into_encoded())
    }
}

impl core::fmt::Debug for EncodedLevels {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        with_levels!(self, levels => levels.fmt(f))
    }
}
