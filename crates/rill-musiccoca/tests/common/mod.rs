//! Shared by the tests: the synthetic assets of a weights seed, cached.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use rill_musiccoca::assets::ASSET_FILES;
use rill_musiccoca::synth;
use sha2::{Digest, Sha256};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A stamp of the code that writes the synthetic files: a cached copy made by other
/// code is rewritten.
pub fn writer_stamp(seed: u64) -> String {
    let mut h = Sha256::new();
    for src in [
        include_str!("../../src/synth.rs"),
        include_str!("../../src/synth/files.rs"),
        include_str!("../../src/tflite/write.rs"),
        synth::MANIFEST_JSON,
    ] {
        h.update(src.as_bytes());
    }
    format!("seed {seed} writer {}", hex(&h.finalize()))
}

static CACHE: Mutex<()> = Mutex::new(());

/// The seed's synthetic assets: the random-weight folder rill itself makes
/// (`musiccoca_random_seed{seed}/` in [`rill_testkit::rill_cache`], shared with the
/// server and CLI tests, so each seed is on disk once), rewritten when the code that
/// writes it changed (a stamp of that code beside it).
pub fn synthetic_dir(seed: u64) -> PathBuf {
    let _guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = rill_testkit::rill_cache();
    let dir = cache.join(format!("musiccoca_random_seed{seed}"));
    let stamp_path = cache.join(format!("musiccoca_random_seed{seed}.stamp"));
    let stamp = writer_stamp(seed);
    let fresh = std::fs::read_to_string(&stamp_path).ok().as_deref() == Some(stamp.as_str())
        && ASSET_FILES.iter().all(|f| dir.join(f).exists());
    if !fresh {
        let _ = std::fs::remove_file(&stamp_path);
        let _ = std::fs::remove_dir_all(&dir);
        let t = Instant::now();
        synth::random_assets_dir(&cache, seed).unwrap_or_else(|e| panic!("{e}"));
        eprintln!(
            "synthesised the seed-{seed} assets in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        std::fs::write(&stamp_path, &stamp).unwrap();
    }
    dir
}

/// [`synthetic_dir`], checked to hold the oracle's tiny SentencePiece model as
/// `spm.model` (which rill's random-weight folder carries): a complete assets
/// directory.
#[allow(dead_code)]
pub fn synthetic_assets_with_spm(seed: u64) -> PathBuf {
    let dir = synthetic_dir(seed);
    let spm = rill_testkit::repo_root().join("testdata/musiccoca/spm.model");
    let bytes = std::fs::read(&spm).expect("testdata/musiccoca/spm.model (part of the repository)");
    assert_eq!(
        std::fs::read(dir.join("spm.model")).ok().as_deref(),
        Some(&bytes[..]),
        "the random-weight folder's spm.model is the oracle's tiny model"
    );
    dir
}
