//! A persistent worker pool for splitting one kernel call over the cores.
//!
//! Why not rayon or a barrier pool: a frame runs ~200 small kernels, so dispatch
//! must cost well under a microsecond, and on a shared 2-core machine a helper
//! thread may be descheduled at any time. Here the caller participates, tasks are
//! handed out one at a time from an atomic counter (a stalled helper delays at most
//! the one task it holds), helpers spin briefly between calls and then park.
//! Dispatch takes no lock and makes no syscall unless a helper is parked.
//!
//! Results never depend on the thread count: callers split work into tasks whose
//! boundaries depend only on the problem size.
//!
//! Panics: a task that panics (on any thread) closes its job, so no further task
//! of it starts; the dispatcher waits until every task already started has
//! finished (they borrow the caller's closure), resets the pool and re-raises
//! the first panic on the calling thread, as rayon does. The pool stays usable.

use std::any::Any;
use std::cell::UnsafeCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

type Job = *const (dyn Fn(usize) + Sync);

/// How long an idle helper spins before parking.
const SPIN: Duration = Duration::from_micros(200);

/// How long an idle assistant ([`Pool::assist`]) sleeps between looks.
const ASSIST_NAP: Duration = Duration::from_micros(50);

struct Shared {
    /// (generation << 32) | next task index. Taking a task is a CAS that also
    /// proves the job of that generation is still running.
    counter: AtomicU64,
    /// Task count of the current job.
    tasks: AtomicUsize,
    /// Tasks not yet finished in the current job.
    remaining: AtomicUsize,
    /// The current job; written only while no task of any job is outstanding.
    job: UnsafeCell<Option<Job>>,
    shutdown: AtomicBool,
    sleeping: Vec<AtomicBool>,
    /// Set when a task of the current job panicked; the payload waits in `panic`
    /// (locked only on that path, never per task).
    panicked: AtomicBool,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

// SAFETY: `job` is written by the dispatching thread only between jobs (when
// `remaining == 0` and no counter index is claimable) and read by helpers only
// after they claimed a task of the current generation, which keeps the job alive.
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

/// Most threads [`Pool::from_env`] accepts (more would only oversubscribe any real CPU).
pub const MAX_THREADS: usize = 256;

/// `RILL_THREADS` holds something other than a thread count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadsError(pub String);

impl std::fmt::Display for ThreadsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "RILL_THREADS={:?} is not a thread count (1..={MAX_THREADS})",
            self.0
        )
    }
}

impl std::error::Error for ThreadsError {}

/// A fixed set of helper threads plus the calling thread.
pub struct Pool {
    shared: Arc<Shared>,
    threads: Vec<(JoinHandle<()>, Thread)>,
    /// Serialises dispatch if the pool is shared between threads.
    busy: AtomicBool,
    /// Publish every job, even without helpers, so threads outside the pool can
    /// take tasks ([`Pool::assist`]).
    open: bool,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pool({} threads)", self.threads())
    }
}

impl Pool {
    /// A pool that runs everything on the calling thread.
    pub fn single() -> Pool {
        Pool::new(1)
    }

    /// A pool of `threads` threads in total (the caller counts as one).
    pub fn new(threads: usize) -> Pool {
        let helpers = threads.max(1) - 1;
        let shared = Arc::new(Shared {
            counter: AtomicU64::new(0),
            tasks: AtomicUsize::new(0),
            remaining: AtomicUsize::new(0),
            job: UnsafeCell::new(None),
            shutdown: AtomicBool::new(false),
            sleeping: (0..helpers).map(|_| AtomicBool::new(false)).collect(),
            panicked: AtomicBool::new(false),
            panic: Mutex::new(None),
        });
        let threads = (0..helpers)
            .map(|w| {
                let s = Arc::clone(&shared);
                let h = thread::Builder::new()
                    .name(format!("rill-worker-{w}"))
                    .spawn(move || worker(&s, w))
                    .expect("spawning a worker thread");
                let t = h.thread().clone();
                (h, t)
            })
            .collect();
        Pool {
            shared,
            threads,
            busy: AtomicBool::new(false),
            open: false,
        }
    }

    /// A pool of `threads` threads whose jobs other threads may help with
    /// ([`Pool::assist`]); one pipeline stage's pool, helped by the other stage's
    /// thread once that stage is done.
    pub fn open(threads: usize) -> Pool {
        let mut p = Pool::new(threads);
        p.open = true;
        p
    }

    /// A pool sized from `RILL_THREADS` (1..=[`MAX_THREADS`]), else the number
    /// of cores. A value that is set but not a thread count is an error, never
    /// silently replaced.
    pub fn from_env() -> Result<Pool, ThreadsError> {
        let n = match std::env::var("RILL_THREADS") {
            Ok(v) if !v.trim().is_empty() => v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_THREADS).contains(n))
                .ok_or(ThreadsError(v))?,
            _ => thread::available_parallelism().map_or(1, |n| n.get()),
        };
        Ok(Pool::new(n))
    }

    /// Total threads including the caller.
    pub fn threads(&self) -> usize {
        self.threads.len() + 1
    }

    /// Runs `f(i)` for every `i in 0..n`, spread over the pool; returns when all are done.
    pub fn run(&self, n: usize, f: &(dyn Fn(usize) + Sync)) {
        self.dispatch(n, f, false)
    }

    /// As [`Pool::run`]; with `caller_first` the calling thread always runs task 0
    /// itself (helpers start at task 1), so a stage keeps to one thread and its
    /// per-thread state.
    fn dispatch(&self, n: usize, f: &(dyn Fn(usize) + Sync), caller_first: bool) {
        if n == 0 {
            return;
        }
        if n == 1
            || (self.threads.is_empty() && !self.open)
            || self.busy.swap(true, Ordering::Acquire)
        {
            // Single task, no helpers, or re-entrant/concurrent use: run inline.
            (0..n).for_each(f);
            return;
        }
        let s = &*self.shared;
        // SAFETY: no job is outstanding (remaining == 0, all indices of the last
        // generation are taken), so no helper reads `job` now; the pointer stays
        // valid until `remaining` drops to 0 below, before `f` goes out of scope.
        unsafe {
            let erased: Job = std::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), Job>(f);
            *s.job.get() = Some(erased);
        }
        s.tasks.store(n, Ordering::Relaxed);
        s.remaining.store(n, Ordering::Relaxed);
        let gen = (s.counter.load(Ordering::Relaxed) >> 32).wrapping_add(1) & 0xffff_ffff;
        let first = u64::from(caller_first);
        s.counter.store((gen << 32) | first, Ordering::Release);
        for (w, (_, t)) in self.threads.iter().enumerate() {
            if s.sleeping[w].swap(false, Ordering::AcqRel) {
                t.unpark();
            }
        }
        if caller_first {
            run_task(s, gen, n, f, 0);
        }
        while let Some(i) = claim(s, gen, n) {
            run_task(s, gen, n, f, i);
        }
        // Every task still running borrows `f`: wait for them even when one
        // panicked (a closed job's unclaimed tasks were already subtracted).
        while s.remaining.load(Ordering::Acquire) != 0 {
            std::hint::spin_loop();
        }
        // Close the generation: a helper that saw it late must not claim an index
        // against the next job's task count.
        s.counter
            .store((gen << 32) | 0xffff_ffff, Ordering::Release);
        let payload = if s.panicked.load(Ordering::Acquire) {
            s.panicked.store(false, Ordering::Relaxed);
            s.panic
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
        } else {
            None
        };
        self.busy.store(false, Ordering::Release);
        if let Some(p) = payload {
            panic::resume_unwind(p);
        }
    }
}

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
        (*self.0.get()).take().expect("pool task ran once")
    }
    /// # Safety
    /// As [`OnceCell::take`].
    unsafe fn put(&self, v: T) {
        *self.0.get() = Some(v);
    }
}

/// Claims the next task index of generation `gen`, if any is left.
fn claim(s: &Shared, gen: u64, n: usize) -> Option<usize> {
    let mut cur = s.counter.load(Ordering::Acquire);
    loop {
        let idx = (cur & 0xffff_ffff) as usize;
        if cur >> 32 != gen || idx >= n {
            return None;
        }
        match s
            .counter
            .compare_exchange_weak(cur, cur + 1, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => return Some(idx),
            Err(now) => cur = now,
        }
    }
}

fn worker(s: &Shared, w: usize) {
    let mut seen_gen = 0u64;
    loop {
        // Wait for a new generation: spin, then park.
        let start = Instant::now();
        let mut spins = 0u32;
        let gen = loop {
            if s.shutdown.load(Ordering::Acquire) {
                return;
            }
            let g = s.counter.load(Ordering::Acquire) >> 32;
            if g != seen_gen {
                break g;
            }
            spins += 1;
            if spins.is_multiple_of(64) && start.elapsed() > SPIN {
                s.sleeping[w].store(true, Ordering::SeqCst);
                // Re-check after announcing sleep so a dispatch cannot be missed.
                let g = s.counter.load(Ordering::SeqCst) >> 32;
                if g != seen_gen || s.shutdown.load(Ordering::SeqCst) {
                    s.sleeping[w].store(false, Ordering::SeqCst);
                    continue;
                }
                thread::park();
                s.sleeping[w].store(false, Ordering::SeqCst);
            } else {
                std::hint::spin_loop();
            }
        };
        seen_gen = gen;
        run_claimed(s, gen, s.tasks.load(Ordering::Acquire));
    }
}

/// Claims and runs tasks of generation `gen` (of `n`) until none is left;
/// returns whether it ran any. For threads other than the dispatcher.
fn run_claimed(s: &Shared, gen: u64, n: usize) -> bool {
    let mut ran = false;
    while let Some(i) = claim(s, gen, n) {
        // SAFETY: we hold an unfinished task of generation `gen`, so its
        // dispatcher is still inside `dispatch` (waiting for `remaining`) and
        // the job pointer it stored before publishing the generation is valid.
        let job = unsafe { &*(*s.job.get()).expect("job set before generation") };
        run_task(s, gen, n, job, i);
        ran = true;
    }
    ran
}

/// Runs task `i` of generation `gen` and marks it finished. A panic is caught:
/// the first payload is kept for the dispatcher and the job is closed.
fn run_task(s: &Shared, gen: u64, n: usize, f: &(dyn Fn(usize) + Sync), i: usize) {
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| f(i))) {
        let mut slot = s.panic.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(payload);
        }
        drop(slot);
        s.panicked.store(true, Ordering::Release);
        close_job(s, gen, n);
    }
    s.remaining.fetch_sub(1, Ordering::Release);
}

/// Stops generation `gen` from handing out more tasks and counts the ones it
/// will never hand out as finished. Idempotent: a second close finds none left.
fn close_job(s: &Shared, gen: u64, n: usize) {
    let mut cur = s.counter.load(Ordering::Acquire);
    loop {
        if cur >> 32 != gen {
            return;
        }
        let claimed = ((cur & 0xffff_ffff) as usize).min(n);
        match s.counter.compare_exchange_weak(
            cur,
            (gen << 32) | 0xffff_ffff,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                s.remaining.fetch_sub(n - claimed, Ordering::AcqRel);
                return;
            }
            Err(now) => cur = now,
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        for (_, t) in &self.threads {
            t.unpark();
        }
        for (h, _) in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_every_task_once() {
        for threads in 1..4 {
            let pool = Pool::new(threads);
            for n in [0usize, 1, 2, 7, 64, 1000] {
                let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
                pool.run(n, &|i| {
                    hits[i].fetch_add(1, Ordering::Relaxed);
                });
                assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
            }
        }
    }

    #[test]
    fn join_runs_both_closures_once_and_returns_both_results() {
        for threads in 1..4 {
            let pool = Pool::new(threads);
            let mut left = [0u32; 3];
            let mut right = String::from("x");
            let me = thread::current().id();
            for round in 0..50u32 {
                let (a, b) = pool.join(
                    || {
                        assert_eq!(thread::current().id(), me, "a runs on the caller");
                        left[0] += round;
                        left.len()
                    },
                    || {
                        right.push('y');
                        round * 2
                    },
                );
                assert_eq!((a, b), (3, round * 2));
            }
            assert_eq!(left[0], (0..50).sum::<u32>());
            assert_eq!(right.len(), 51);
        }
    }

    #[test]
    fn an_assistant_takes_tasks_and_every_task_runs_once() {
        for threads in 1..3 {
            let pool = Pool::open(threads);
            let done = AtomicBool::new(false);
            thread::scope(|sc| {
                let h = sc.spawn(|| {
                    let pool = &pool;
                    for _ in 0..200 {
                        let hits: Vec<AtomicUsize> = (0..64).map(|_| AtomicUsize::new(0)).collect();
                        pool.run(64, &|i| {
                            hits[i].fetch_add(1, Ordering::Relaxed);
                            std::hint::black_box((0..200).sum::<u64>());
                        });
                        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
                    }
                    done.store(true, Ordering::Release);
                });
                pool.assist(&done);
                h.join().unwrap();
            });
            // (Whether the assistant got a task depends on scheduling; that it
            // returned and every task ran once does not.)
        }
    }

    /// The panic message of a caught `run`/`join`.
    fn message(p: Box<dyn Any + Send>) -> String {
        p.downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default()
    }

    /// After a panicking job the pool is reset and every later job runs fully.
    fn still_works(pool: &Pool) {
        assert!(
            !pool.busy.load(Ordering::Acquire),
            "busy reset after a panic"
        );
        let hits: Vec<AtomicUsize> = (0..256).map(|_| AtomicUsize::new(0)).collect();
        pool.run(256, &|i| {
            hits[i].fetch_add(1, Ordering::Relaxed);
        });
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
    }

    #[test]
    fn a_panic_on_the_caller_waits_for_running_tasks_and_reaches_the_caller() {
        for threads in 1..4 {
            let pool = Pool::new(threads);
            let running = AtomicUsize::new(0);
            let started = AtomicUsize::new(0);
            let me = thread::current().id();
            let r = panic::catch_unwind(AssertUnwindSafe(|| {
                pool.run(64, &|_| {
                    running.fetch_add(1, Ordering::SeqCst);
                    started.fetch_add(1, Ordering::SeqCst);
                    if thread::current().id() == me {
                        running.fetch_sub(1, Ordering::SeqCst);
                        panic!("caller task failed");
                    }
                    // A helper's task outlives the caller's panic.
                    thread::sleep(Duration::from_millis(5));
                    running.fetch_sub(1, Ordering::SeqCst);
                });
            }));
            let p = r.expect_err("the panic reaches the caller");
            assert_eq!(message(p), "caller task failed");
            assert_eq!(running.load(Ordering::SeqCst), 0, "no task outlives run");
            assert!(started.load(Ordering::SeqCst) < 64, "the job was closed");
            still_works(&pool);
        }
    }

    #[test]
    fn a_panic_on_a_helper_reaches_the_caller_instead_of_hanging() {
        let pool = Pool::new(2);
        let me = thread::current().id();
        let helper_took_one = AtomicBool::new(false);
        let r = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.run(8, &|_| {
                if thread::current().id() == me {
                    // Hold the caller until the helper has a task (bounded wait).
                    let t = Instant::now();
                    while !helper_took_one.load(Ordering::Acquire)
                        && t.elapsed() < Duration::from_secs(10)
                    {
                        thread::yield_now();
                    }
                } else {
                    helper_took_one.store(true, Ordering::Release);
                    panic!("helper task failed");
                }
            });
        }));
        assert!(
            helper_took_one.load(Ordering::Acquire),
            "the helper ran a task"
        );
        assert_eq!(message(r.expect_err("re-raised")), "helper task failed");
        still_works(&pool);
    }

    #[test]
    fn a_panic_in_either_half_of_join_reaches_the_caller() {
        for threads in 1..3 {
            let pool = Pool::new(threads);
            let r = panic::catch_unwind(AssertUnwindSafe(|| {
                pool.join(|| 1, || -> u32 { panic!("b failed") })
            }));
            assert_eq!(message(r.expect_err("b's panic")), "b failed");
            let r = panic::catch_unwind(AssertUnwindSafe(|| {
                pool.join(|| -> u32 { panic!("a failed") }, || 2)
            }));
            assert_eq!(message(r.expect_err("a's panic")), "a failed");
            still_works(&pool);
            assert_eq!(pool.join(|| 3, || 4), (3, 4));
        }
    }

    #[test]
    fn an_assistant_survives_a_panicking_task_and_the_dispatcher_gets_it() {
        let pool = Pool::open(1);
        let done = AtomicBool::new(false);
        let me = thread::current().id();
        thread::scope(|sc| {
            let h = sc.spawn(|| {
                let dispatcher = thread::current().id();
                let r = panic::catch_unwind(AssertUnwindSafe(|| {
                    pool.run(64, &|_| {
                        if thread::current().id() == me {
                            panic!("assistant task failed");
                        }
                        if thread::current().id() == dispatcher {
                            thread::sleep(Duration::from_millis(1));
                        }
                    });
                }));
                let outcome = r.map_err(message);
                still_works(&pool);
                done.store(true, Ordering::Release);
                outcome
            });
            pool.assist(&done);
            // Whether the assistant got a task depends on scheduling; if it did,
            // its panic must be the dispatcher's.
            match h.join().expect("dispatcher thread") {
                Ok(()) => {}
                Err(m) => assert_eq!(m, "assistant task failed"),
            }
        });
    }

    #[test]
    fn survives_idle_periods() {
        let pool = Pool::new(2);
        let total = AtomicUsize::new(0);
        for round in 0..5 {
            if round % 2 == 1 {
                thread::sleep(Duration::from_millis(2)); // helpers park
            }
            pool.run(16, &|_| {
                total.fetch_add(1, Ordering::Relaxed);
            });
        }
        assert_eq!(total.load(Ordering::Relaxed), 80);
    }
}
