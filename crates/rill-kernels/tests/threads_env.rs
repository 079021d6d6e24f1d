//! `Pool::from_env` and `pool::thread_count` refuse a `RILL_THREADS` that is not a
//! thread count instead of silently using the core count. (Its own test binary:
//! it sets the variable.)

use rill_kernels::pool::{env_threads, thread_count, ThreadsError, MAX_THREADS};
use rill_kernels::Pool;

#[test]
fn rill_threads_is_validated() {
    for bad in ["0", "two", "-1", "257", "99999999999999999999"] {
        std::env::set_var("RILL_THREADS", bad);
        let e = Pool::from_env().expect_err(bad);
        assert!(e.to_string().contains(bad), "{e}");
        assert_eq!(env_threads(), Err(ThreadsError::Env(bad.into())));
        assert_eq!(thread_count(None), Err(ThreadsError::Env(bad.into())));
        // An explicit count wins over the variable.
        assert_eq!(thread_count(Some(2)), Ok(2));
    }
    std::env::set_var("RILL_THREADS", " 3 ");
    assert_eq!(Pool::from_env().unwrap().threads(), 3);
    assert_eq!(thread_count(None), Ok(3));
    std::env::remove_var("RILL_THREADS");
    assert_eq!(env_threads(), Ok(None));
    assert!(Pool::from_env().unwrap().threads() >= 1);
    for bad in [0, MAX_THREADS + 1] {
        let e = thread_count(Some(bad)).expect_err("out of range");
        assert!(e.to_string().contains("1..=256"), "{e}");
    }
}
