//! How two pipeline stages share the cores: [`Pool::join`] runs two closures at
//! once on one pool, [`Pool::assist`] lends a thread to another pool's jobs.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Instant;

use super::{run_claimed, Pool, ASSIST_NAP, SPIN};

impl Pool {
    /// Runs `a` and `b` concurrently when a helper is free (else one after the
    /// other on the caller) and returns both results. This is how two pipeline
    /// stages share the cores: each closure owns its stage's state. `a` always
    /// runs on the calling thread; `b` on a helper unless the caller finishes `a`
    /// before any helper took `b`.
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        let a = OnceCell::new(a);
        let b = OnceCell::new(b);
        let (ra, rb) = (OnceCell::<RA>::empty(), OnceCell::<RB>::empty());
        self.dispatch(
            2,
            &|i| {
                // SAFETY: `dispatch` calls each index exactly once, so task 0 alone touches
                // `a`/`ra` and task 1 alone touches `b`/`rb`.
                unsafe {
                    if i == 0 {
                        ra.put(a.take()());
                    } else {
                        rb.put(b.take()());
                    }
                }
            },
            true,
        );
        // SAFETY: `dispatch` returned, so both tasks finished and no other
        // thread holds a reference.
        unsafe { (ra.take(), rb.take()) }
    }

    /// Takes tasks of this pool's current and later jobs on the calling thread
    /// (which must not be one of this pool's) until `done` is set. Only pools made
    /// with [`Pool::open`] publish single-threaded jobs; results are unchanged,
    /// since task boundaries never depend on who runs them.
    pub fn assist(&self, done: &AtomicBool) {
        let s = &*self.shared;
        let mut idle_since = Instant::now();
        let mut spins = 0u32;
        while !done.load(Ordering::Acquire) {
            let gen = s.counter.load(Ordering::Acquire) >> 32;
            if run_claimed(s, gen, s.tasks.load(Ordering::Acquire)) {
                idle_since = Instant::now();
            }
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(64) && idle_since.elapsed() > SPIN {
                // A long serial stretch (or a loaded machine): give the core
                // back for a moment instead of spinning.
                thread::sleep(ASSIST_NAP);
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

/// A slot written or taken by exactly one task (see [`Pool::join`]).
struct OnceCell<T>(UnsafeCell<Option<T>>);

// SAFETY: access is serialised by the task protocol of `Pool::join`: each cell
// is touched by one task, then by the caller after `dispatch` returns.
unsafe impl<T: Send> Sync for OnceCell<T> {}

impl<T> OnceCell<T> {
    fn new(v: T) -> Self {
        OnceCell(UnsafeCell::new(Some(v)))
    }
    fn empty() -> Self {
        OnceCell(UnsafeCell::new(None))
    }
    /// # Safety
    /// No other thread accesses the cell concurrently.
    unsafe fn take(&self) -> T {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe { (*self.0.get()).take().expect("pool task ran once") }
    }
    /// # Safety
    /// As [`OnceCell::take`].
    unsafe fn put(&self, v: T) {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            *self.0.get() = Some(v);
        }
    }
}
