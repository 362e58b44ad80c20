//! A list that threads add to by CAS while others read it, and that only `&mut` frees: a
//! growable filter's levels, and its overflow blocks of pending removals (`levels`). This file
//! holds the `unsafe` of both; the rest of the crate reads a list through a [`Head`].
//!
//! # Orderings
//!
//! ## Invariants
//!
//! - **Nodes are only added.** `newest` moves from the node a thread saw to a new node that
//!   lists it and every node below it (newest first), by one CAS; a node's value and list are
//!   built before it is published, and the list never changes. So every value `newest` takes
//!   lists every earlier value, and one load of `newest` gives every node without following a
//!   link. Nodes are freed only through `&mut` ([`Published::clear`], drop).
//!
//! ## Publication
//!
//! [`Published::push`] CASes `newest` from the node a thread saw to its new node, AcqRel: the
//! Release half publishes the node's value and list to the Acquire load in
//! [`Published::head`], so a thread never sees a node half built; the Acquire half (and the
//! failure's Acquire) lets the thread go on to read the node that won. A [`Head`] borrows the
//! list, so no node it reaches is freed while it lives.
//!
//! ## Progress
//!
//! A push's CAS fails only when another thread pushed a node meanwhile: lock-free. Reading is
//! one load and no link: wait-free.

use core::marker::PhantomData;
use core::ptr;

use crate::sync::{self, AtomicPtr, Ordering, UnsafeCell};

/// The most nodes a list holds: a filter's levels above level 0 (`sizing::MAX_LEVELS` less one),
/// and overflow blocks, which double in size each time, past any memory.
pub(crate) const MAX_NODES: usize = 31;

/// A list of values, newest first, published by CAS. See the module documentation.
pub(crate) struct Published<T> {
    /// The newest node, which lists the older ones; null while the list is empty.
    newest: AtomicPtr<Node<T>>,
}

struct Node<T> {
    value: T,
    /// The nodes below this one, newest first. Written when the node is built, before it is
    /// published, and never again; a cell so that loom sees the publication.
    older: UnsafeCell<Older<T>>,
}

/// The nodes below a node, newest first, listed once when the node is built.
struct Older<T> {
    nodes: [*const Node<T>; MAX_NODES - 1],
    len: usize,
}

impl<T> Clone for Older<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Older<T> {}

impl<T> Node<T> {
    fn older(&self) -> &Older<T> {
        // SAFETY: `older` is written only when the node is built, and every thread that reaches
        // a node did so through an Acquire load of the Release CAS that published it (or owns
        // the list through `&mut`, or built the node), so the write happens-before this read;
        // it is never written again, so the reference stays valid while the node lives.
        self.older.with(|older| unsafe { &*older })
    }
}

/// What [`Published::push`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// The value is the list's newest.
    Published,
    /// Another thread pushed first; the value was dropped.
    Lost,
    /// The list holds [`MAX_NODES`]; the value was dropped.
    Full,
}

/// The list as one load of its newest node found it. Using it follows no link, and it borrows
/// the list, so every node it reaches lives as long as it does.
pub(crate) struct Head<'a, T> {
    /// The newest node, null for an empty list: the pointer as loaded, not one made from a
    /// reference, so that the lists built from it keep the provenance that frees the node.
    newest: *const Node<T>,
    list: PhantomData<&'a Node<T>>,
}

impl<T> Clone for Head<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Head<'_, T> {}

impl<'a, T> Head<'a, T> {
    #[inline]
    fn node(self) -> Option<&'a Node<T>> {
        // SAFETY: a published node (or one built by this thread) lives until `&mut` frees the
        // list, which `'a` borrows.
        unsafe { self.newest.as_ref() }
    }

    /// The newest value; `None` for an empty list.
    #[inline]
    pub(crate) fn newest(self) -> Option<&'a T> {
        self.node().map(|node| &node.value)
    }

    #[inline]
    fn older_nodes(self) -> &'a [*const Node<T>] {
        self.node().map_or(&[], |node| {
            let older = node.older();
            &older.nodes[..older.len]
        })
    }

    /// The values below the newest, newest first.
    #[inline]
    pub(crate) fn older(
        self,
    ) -> impl DoubleEndedIterator<Item = &'a T> + ExactSizeIterator + Clone + 'a {
        self.older_nodes().iter().map(|&node| {
            // SAFETY: a listed node was published (or built by the thread that lists it) before
            // the node listing it, and lives until `&mut` frees the list, which `'a` borrows.
            unsafe { &(*node).value }
        })
    }

    /// Every value, newest first.
    #[inline]
    pub(crate) fn iter(self) -> impl DoubleEndedIterator<Item = &'a T> + Clone + 'a {
        self.newest().into_iter().chain(self.older())
    }

    /// How many values there are.
    #[inline]
    pub(crate) fn len(self) -> usize {
        self.node().map_or(0, |node| node.older().len + 1)
    }

    /// Value `index`, 0 the newest.
    #[inline]
    pub(crate) fn get(self, index: usize) -> Option<&'a T> {
        match index.checked_sub(1) {
            None => self.newest(),
            Some(below) => self.older().nth(below),
        }
    }

    /// The list as it was before its `n` newest values were pushed.
    ///
    /// # Panics
    ///
    /// If the list holds fewer than `n` values.
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fn without_newest(self, n: usize) -> Self {
        assert!(n <= self.len(), "a list of {} values has no {n} newest", self.len());
        let newest = match n.checked_sub(1) {
            None => self.newest,
            Some(below) => self.older_nodes().get(below).copied().unwrap_or(ptr::null()),
        };
        Self { newest, list: PhantomData }
    }

    /// Whether both heads are the same load's: the same newest node.
    #[inline]
    pub(crate) fn same_as(self, other: Self) -> bool {
        self.as_ptr() == other.as_ptr()
    }

    fn as_ptr(self) -> *mut Node<T> {
        self.newest.cast_mut()
    }
}

impl<T> Published<T> {
    /// An empty list.
    pub(crate) fn new() -> Self {
        Self { newest: AtomicPtr::new(ptr::null_mut()) }
    }

    /// The list as it is now.
    #[inline]
    pub(crate) fn head(&self) -> Head<'_, T> {
        // Acquire: pairs with the AcqRel CAS in `push`, so the node and its list are seen as
        // built.
        let newest = self.newest.load(Ordering::Acquire);
        Head { newest, list: PhantomData }
    }

    /// Whether `seen` is still the newest node, by a load that sees the latest value a CAS
    /// would (the same load outside the model checker).
    pub(crate) fn is_head(&self, seen: Head<'_, T>) -> bool {
        // Acquire: as in `head`.
        sync::load_ptr_for_update(&self.newest, Ordering::Acquire) == seen.as_ptr()
    }

    /// Publishes `value` as the newest, on top of `seen`, unless another thread pushed since
    /// `seen` was loaded or the list is full.
    pub(crate) fn push(&self, seen: Head<'_, T>, value: T) -> Pushed {
        let below = seen.len();
        if below == MAX_NODES {
            return Pushed::Full;
        }
        let mut older = Older { nodes: [ptr::null(); MAX_NODES - 1], len: below };
        if !seen.newest.is_null() {
            older.nodes[0] = seen.newest;
            older.nodes[1..below].copy_from_slice(seen.older_nodes());
        }
        let node = Box::into_raw(Box::new(Node { value, older: UnsafeCell::new(older) }));
        // AcqRel. Release: publishes the node's value and list to the Acquire loads in `head`.
        // Acquire (and on failure): this thread goes on to read the winner's node.
        match self.newest.compare_exchange(seen.as_ptr(), node, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Pushed::Published,
            Err(_) => {
                // SAFETY: `node` was leaked above and the CAS that would have published it
                // failed, so no other thread has seen it.
                drop(unsafe { Box::from_raw(node) });
                Pushed::Lost
            }
        }
    }

    /// Bytes a node takes beside its value.
    pub(crate) const NODE_BYTES: usize =
        core::mem::size_of::<Node<T>>() - core::mem::size_of::<T>();

    /// Frees every node.
    pub(crate) fn clear(&mut self) {
        // Relaxed: `&mut self` means no other thread can reach the nodes.
        let newest = self.newest.swap(ptr::null_mut(), Ordering::Relaxed);
        if newest.is_null() {
            return;
        }
        // SAFETY: every node of the list was leaked by `push` and is owned by this list alone;
        // `&mut self` means no other thread can reach it. The newest node lists every other
        // one once, and the list is copied out before the box is dropped.
        let newest = unsafe { Box::from_raw(newest) };
        let older = *newest.older();
        drop(newest);
        for &node in &older.nodes[..older.len] {
            // SAFETY: as above; each node of the list is dropped once.
            drop(unsafe { Box::from_raw(node.cast_mut()) });
        }
    }
}

impl<T> Drop for Published<T> {
    fn drop(&mut self) {
        // A loom model that fails drops its filter while unwinding, before it joined the
        // threads that pushed nodes: loom would report the unordered read of their lists as a
        // second panic and abort the whole suite. Leak them there instead.
        if sync::MODEL_CHECKING && std::thread::panicking() {
            return;
        }
        self.clear();
    }
}

// SAFETY: the list owns its values (like a `Box<T>` each) and hands out only `&T`, so it may
// move to another thread when `T` may, and be shared when `T` may be shared and sent (a node
// pushed on one thread is dropped on whichever frees the list).
unsafe impl<T: Send> Send for Published<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Published<T> {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_head_lists_every_value_pushed_before_it_newest_first() {
        let mut list = Published::new();
        assert_eq!(list.head().len(), 0);
        for value in 0..MAX_NODES {
            assert_eq!(list.push(list.head(), value), Pushed::Published);
        }
        let head = list.head();
        assert_eq!(
            head.iter().copied().collect::<Vec<_>>(),
            (0..MAX_NODES).rev().collect::<Vec<_>>()
        );
        assert_eq!(head.get(3), Some(&(MAX_NODES - 4)));
        assert_eq!(head.without_newest(2).newest(), Some(&(MAX_NODES - 3)));
        assert_eq!(head.without_newest(MAX_NODES).len(), 0);
        assert_eq!(list.push(head, 99), Pushed::Full);
        list.clear();
        assert_eq!(list.head().len(), 0);
    }

    #[test]
    fn a_push_on_a_stale_head_is_lost_and_dropped() {
        let list = Published::new();
        let stale = list.head();
        assert_eq!(list.push(stale, String::from("first")), Pushed::Published);
        assert!(!list.is_head(stale));
        assert_eq!(list.push(stale, String::from("second")), Pushed::Lost);
        assert_eq!(list.head().iter().collect::<Vec<_>>(), ["first"]);
        assert!(list.is_head(list.head()));
    }
}
