//! `rill doctor`: its embedded reference frames are upstream's recording, and on
//! this machine it passes its parity check on every tier the CPU has.

use std::path::{Path, PathBuf};
use std::process::Command;

use rill_io::{Array, Data, Npz};
use rill_mrt2::ModelKind;

/// Frames embedded (`REFERENCE_FRAMES` in src/doctor.rs).
const FRAMES: usize = 8;

fn reference_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/doctor/d1_head.npz")
}

/// The first `FRAMES` frames of `testdata/mrt2/D1.npz`, as doctor embeds them.
fn d1_head() -> (Vec<i64>, Vec<i64>) {
    let d1 = rill_testkit::fixture("D1.npz");
    let (shape, tokens) = d1.i64("tokens").unwrap();
    assert_eq!(shape[1], 12);
    let (shape, audio) = d1.i64("audio_int16").unwrap();
    assert_eq!(&shape[1..], [1920, 2]);
    (
        tokens[..FRAMES * 12].to_vec(),
        audio[..FRAMES * 1920 * 2].to_vec(),
    )
}

#[test]
fn embedded_reference_is_the_head_of_upstreams_recording_d1() {
    let (tokens, audio) = d1_head();
    if std::env::var_os("RILL_WRITE_DOCTOR_REFERENCE").is_some() {
        let t = Array::new(
            vec![FRAMES, 12],
            Data::I32(tokens.iter().map(|&v| v as i32).collect()),
        );
        let a = Array::new(
            vec![FRAMES, 1920, 2],
            Data::I16(audio.iter().map(|&v| v as i16).collect()),
        );
        rill_io::write_npz(reference_path(), [("tokens", &t), ("audio_int16", &a)]).unwrap();
    }
    let ours = Npz::read(reference_path()).unwrap_or_else(|e| {
        panic!(
            "{e}\nrewrite it from testdata/mrt2/D1.npz with \
             RILL_WRITE_DOCTOR_REFERENCE=1 cargo test --release -p rill-cli --test doctor"
        )
    });
    let (shape, t) = ours.i64("tokens").unwrap();
    assert_eq!(shape, [FRAMES, 12]);
    assert_eq!(t, tokens, "embedded tokens are not D1's");
    let (shape, a) = ours.i64("audio_int16").unwrap();
    assert_eq!(shape, [FRAMES, 1920, 2]);
    assert_eq!(a, audio, "embedded audio is not D1's");
}

#[test]
fn doctor_quick_passes_parity_on_every_tier_of_this_cpu() {
    let home = rill_testkit::cache_dir().join(format!("doctor-{}", std::process::id()));
    let cache = home.join("cache/rill");
    std::fs::create_dir_all(&cache).unwrap();
    // The random-weight checkpoint `--random-weights 0` would synthesise: the
    // test cache's copy of the same bytes.
    let ckpt = rill_testkit::synthetic_checkpoint(ModelKind::Small.synth_file(0));
    std::os::unix::fs::symlink(&ckpt, cache.join("mrt2_small_random_seed0.safetensors")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rill"))
        .args(["doctor", "--quick"])
        .env("HOME", &home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env_remove("RILL_ISA")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}{stderr}");
    assert!(
        out.status.success(),
        "rill doctor failed:\n{stdout}\n{stderr}"
    );
    for isa in rill_kernels::Isa::available() {
        let line = stdout
            .lines()
            .find(|l| l.split_whitespace().any(|w| w == isa.name()) && l.contains(" ok: "))
            .unwrap_or_else(|| panic!("no passing parity line for {}:\n{stdout}", isa.name()));
        assert!(
            line.contains("8/8 frames of tokens equal upstream's"),
            "{line}"
        );
    }
    assert!(stdout.contains("simd tiers"), "{stdout}");
    assert!(stdout.contains("read bandwidth"), "{stdout}");
    std::fs::remove_dir_all(&home).unwrap();
}
