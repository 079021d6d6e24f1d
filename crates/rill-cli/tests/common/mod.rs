//! Running the `rill` binary from the integration tests: a clean environment
//! (no inherited checkpoint, ISA or thread settings), a per-test scratch
//! directory and the synthetic checkpoints.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use rill_mrt2::ModelKind;

/// Runs `rill args` with `home` as `HOME`, the tests' shared user cache
/// ([`rill_testkit::user_cache_home`]) as `XDG_CACHE_HOME`, and nothing inherited
/// that picks a checkpoint, an ISA or a thread count.
pub fn rill(args: &[&str], home: &Path) -> Output {
    rill_env(args, home, &[])
}

/// As [`rill`] with the extra environment variables `env`.
pub fn rill_env(args: &[&str], home: &Path, env: &[(&str, &str)]) -> Output {
    rill_command(args, home, env)
        .output()
        .expect("running rill")
}

/// The [`rill_env`] command, not started (for a process the test drives).
pub fn rill_command(args: &[&str], home: &Path, env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rill"));
    c.args(args)
        .env("HOME", home)
        .env_remove("RILL_CHECKPOINT")
        .env_remove("MAGENTA_HOME")
        .env_remove("RILL_ISA")
        .env_remove("RILL_THREADS")
        .env("XDG_CACHE_HOME", user_cache_home())
        .envs(env.iter().copied());
    c
}

/// The tests' shared user cache, its random-weight seed-0 checkpoint (what
/// `--random-weights` would synthesise) linked to the test cache's copy of the same
/// bytes, so the 1.1 GB file is on disk once.
fn user_cache_home() -> PathBuf {
    static HOME: OnceLock<PathBuf> = OnceLock::new();
    HOME.get_or_init(|| {
        let link = rill_testkit::rill_cache().join("mrt2_small_random_seed0.safetensors");
        if std::fs::symlink_metadata(&link).is_err() {
            // Another test process may link it first: either link is the same.
            let _ = std::os::unix::fs::symlink(ckpt(0), &link);
        }
        rill_testkit::user_cache_home()
    })
    .clone()
}

/// A fresh scratch directory for the test `name` (in the test cache).
pub fn tmp(name: &str) -> PathBuf {
    let d = rill_testkit::cache_dir().join(format!("cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The path of the small synthetic MRT2 checkpoint made from `seed`.
pub fn ckpt(seed: u64) -> String {
    rill_testkit::synthetic_checkpoint(ModelKind::Small.synth_file(seed))
        .to_string_lossy()
        .into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
