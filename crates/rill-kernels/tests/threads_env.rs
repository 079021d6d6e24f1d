//! `Pool::from_env` refuses a `RILL_THREADS` that is not a thread count instead
//! of silently using the core count. (Its own test binary: it sets the variable.)

use rill_kernels::Pool;

#[test]
fn rill_threads_is_validated() {
    for bad in ["0", "two", "-1", "257", "99999999999999999999"] {
        std::env::set_var("RILL_THREADS", bad);
        let e = Pool::from_env().expect_err(bad);
        assert!(e.to_string().contains(bad), "{e}");
    }
    std::env::set_var("RILL_THREADS", " 3 ");
    assert_eq!(Pool::from_env().unwrap().threads(), 3);
    std::env::remove_var("RILL_THREADS");
    assert!(Pool::from_env().unwrap().threads() >= 1);
}
