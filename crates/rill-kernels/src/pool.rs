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

/// A thread count that is not one: `RILL_THREADS` set to something else, or an
/// explicit count outside 1..=[`MAX_THREADS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThreadsError {
    /// `RILL_THREADS` holds this text, which is not a thread count.
    Env(String),
    /// An explicit count (a `--threads` flag, a `threads=` argument) out of range.
    OutOfRange(usize),
}

impl std::fmt::Display for ThreadsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ThreadsError::Env(v) => write!(
                f,
                "RILL_THREADS={v:?} is not a thread count (1..={MAX_THREADS})"
            ),
            ThreadsError::OutOfRange(n) => {
                write!(f, "the thread count must be 1..={MAX_THREADS}, got {n}")
            }
        }
    }
}

impl std::error::Error for ThreadsError {}

/// The thread count `RILL_THREADS` asks for: `None` when it is unset or blank,
/// an error when it is set to anything but 1..=[`MAX_THREADS`] (surrounding
/// spaces allowed). The one reader of the variable.
pub fn env_threads() -> Result<Option<usize>, ThreadsError> {
    match std::env::var("RILL_THREADS") {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_THREADS).contains(n))
            .map(Some)
            .ok_or(ThreadsError::Env(v)),
        _ => Ok(None),
    }
}

/// Worker threads in total: `explicit` (a `--threads` flag, a `threads=`
/// argument), else `RILL_THREADS` ([`env_threads`]), else the number of cores;
/// always 1..=[`MAX_THREADS`] or an error.
pub fn thread_count(explicit: Option<usize>) -> Result<usize, ThreadsError> {
    let n = match explicit {
        Some(n) => n,
        None => match env_threads()? {
            Some(n) => n,
            None => thread::available_parallelism().map_or(1, |n| n.get()),
        },
    };
    if !(1..=MAX_THREADS).contains(&n) {
        return Err(ThreadsError::OutOfRange(n));
    }
    Ok(n)
}

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

    /// A pool of `threads` threads in total (the caller counts as one), or fewer
    /// if the OS refuses to start some: [`Pool::threads`] says how many it has.
    pub fn new(threads: usize) -> Pool {
        Pool::with_spawner(threads, |name, body| {
            thread::Builder::new().name(name).spawn(body)
        })
    }

    /// [`Pool::new`] with the helper threads started by `spawn(name, body)`
    /// (tests stand in an OS that refuses threads).
    fn with_spawner(
        threads: usize,
        mut spawn: impl FnMut(String, Box<dyn FnOnce() + Send>) -> std::io::Result<JoinHandle<()>>,
    ) -> Pool {
        let helpers = threads.max(1) - 1;
        let shared = Arc::new(Shared {
            // Generation 0 starts closed: an assistant that reads it before the
            // first job is published must find nothing to claim (an open
            // generation 0 let it claim against the first job's task count, and
            // the task it ran was counted twice, so the dispatcher waited forever).
            counter: AtomicU64::new(CLOSED),
            tasks: AtomicUsize::new(0),
            remaining: AtomicUsize::new(0),
            job: UnsafeCell::new(None),
            shutdown: AtomicBool::new(false),
            sleeping: (0..helpers).map(|_| AtomicBool::new(false)).collect(),
            panicked: AtomicBool::new(false),
            panic: Mutex::new(None),
        });
        // A helper the OS refuses (thread or memory limits) is left out: the
        // pool runs with the helpers it got, and results do not depend on how
        // many that is (every kernel splits work by problem size).
        let threads = (0..helpers)
            .map_while(|w| {
                let s = Arc::clone(&shared);
                let h = spawn(format!("rill-worker-{w}"), Box::new(move || worker(&s, w))).ok()?;
                let t = h.thread().clone();
                Some((h, t))
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
    /// of cores ([`thread_count`]`(None)`). A value that is set but not a thread
    /// count is an error, never silently replaced.
    pub fn from_env() -> Result<Pool, ThreadsError> {
        Ok(Pool::new(thread_count(None)?))
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
    /// itself (helpers start at task 1): [`Pool::join`]'s first stage stays on the
    /// caller.
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
        assert!((n as u64) < CLOSED, "too many tasks for one dispatch");
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
        s.counter.store((gen << 32) | CLOSED, Ordering::Release);
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

/// Task index of a closed generation: no task of it can be claimed.
const CLOSED: u64 = 0xffff_ffff;

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
            (gen << 32) | CLOSED,
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

/// `Pool::join` and `Pool::assist`: two pipeline stages sharing the cores.
mod stages;

#[cfg(test)]
mod tests;

/// Puts the calling thread in Linux's idle scheduling class (`SCHED_IDLE`): it runs
/// only on CPU time no other thread wants, so background work beside the audio
/// (encoding a style prompt) cannot delay a frame even by the share a nice thread
/// still gets. Falls back to [`lower_thread_priority`] if the class is refused, and
/// to nothing elsewhere.
pub fn idle_thread_priority() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `param` is a valid sched_param that outlives the call; pid 0 names
        // the calling thread; lowering to SCHED_IDLE needs no privilege.
        let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
        if r != 0 {
            lower_thread_priority();
        }
    }
}

/// Lowers the calling thread's scheduling priority (nice +10) on Linux, so work
/// beside the audio (a server's async runtime, encoding a style prompt) yields the
/// CPU to the generation threads when both want it. Lowering needs no privilege;
/// failure is harmless (the thread keeps its priority). A no-op elsewhere.
pub fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority takes plain integers; `who = 0` with PRIO_PROCESS names
    // the calling thread on Linux, and the call has no memory effects.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 10);
    }
}
