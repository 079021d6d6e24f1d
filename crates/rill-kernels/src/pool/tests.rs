//! The pool's contract: every task runs once, `join` and `assist` share work, a
//! panic anywhere reaches the caller and leaves the pool usable.

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

/// Before any job, nothing can be claimed, whatever task count (below the
/// closed index, as `dispatch` requires) an assistant
/// reads beside the generation (it may read the first job's count before that
/// job's generation is published).
#[test]
fn a_fresh_pool_has_no_claimable_task() {
    for threads in 1..3 {
        let pool = Pool::open(threads);
        let s = &*pool.shared;
        let gen = s.counter.load(Ordering::Acquire) >> 32;
        assert_eq!(claim(s, gen, CLOSED as usize), None);
        assert!(!run_claimed(s, gen, 64));
        still_works(&pool);
    }
}

/// An assistant already waiting when a fresh pool gets its first job (a
/// pipeline's first frame): every task runs once and the dispatch returns.
#[test]
fn an_assistant_waiting_on_a_fresh_pool_takes_its_first_job_once() {
    for _ in 0..300 {
        let pool = Pool::open(1);
        let (started, done) = (AtomicBool::new(false), AtomicBool::new(false));
        let hits: Vec<AtomicUsize> = (0..16).map(|_| AtomicUsize::new(0)).collect();
        thread::scope(|sc| {
            sc.spawn(|| {
                while !started.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
                pool.run(16, &|i| {
                    hits[i].fetch_add(1, Ordering::Relaxed);
                });
                done.store(true, Ordering::Release);
            });
            started.store(true, Ordering::Release);
            pool.assist(&done);
        });
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
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

#[test]
fn a_pool_runs_with_the_helpers_the_os_gave_it() {
    // The OS starts the first helper and refuses the rest.
    for (asked, granted) in [(4, 1), (2, 0)] {
        let mut started = 0;
        let pool = Pool::with_spawner(asked, |name, body| {
            if started == granted {
                return Err(std::io::Error::other("no more threads"));
            }
            started += 1;
            thread::Builder::new().name(name).spawn(body)
        });
        assert_eq!(pool.threads(), granted + 1);
        let hits: Vec<AtomicUsize> = (0..100).map(|_| AtomicUsize::new(0)).collect();
        pool.run(100, &|i| {
            hits[i].fetch_add(1, Ordering::Relaxed);
        });
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
        assert_eq!(pool.join(|| 1, || 2), (1, 2));
    }
}
