//! Shared test support: where the reference recordings live, synthetic
//! checkpoints cached between test runs, and parity metrics.

#![deny(unsafe_op_in_unsafe_fn)]

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rill_checkpoint::synth::{self, SynthFile, SynthTensor};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A file under `testdata/mrt2/` (reference recordings made with the oracle).
pub fn testdata(name: &str) -> PathBuf {
    repo_root().join("testdata/mrt2").join(name)
}

/// The path of a reference file under `testdata/mrt2/` that a test needs: a missing
/// file fails the test (never a silent skip), saying how to get it back.
pub fn require(name: &str) -> PathBuf {
    let path = testdata(name);
    if !path.exists() {
        panic!(
            "reference file testdata/mrt2/{name} is missing ({}). It is part of the \
             repository: restore it with `git checkout -- testdata/mrt2/{name}`, or \
             re-record it with the oracle as testdata/mrt2/README.md describes.",
            path.display()
        );
    }
    path
}

/// The path of a Magpie/NanoCodec reference file under `testdata/magpie/` (which
/// must exist: a missing file fails the test, saying how to get it back).
pub fn require_magpie(name: &str) -> PathBuf {
    let path = repo_root().join("testdata/magpie").join(name);
    if !path.exists() {
        panic!(
            "reference file testdata/magpie/{name} is missing ({}). It is part of the \
             repository: restore it with `git checkout -- testdata/magpie/{name}`, or \
             re-derive it from the oracle's recordings with the scripts in testdata/magpie/.",
            path.display()
        );
    }
    path
}

/// The path of a container-loader fixture under `testdata/magpie/loaders/` (made
/// with the real tools by `testdata/magpie/make_loader_fixtures.py`), which must exist.
pub fn require_loader(name: &str) -> PathBuf {
    let path = repo_root().join("testdata/magpie/loaders").join(name);
    assert!(
        path.exists(),
        "fixture testdata/magpie/loaders/{name} is missing: restore it with git, or rerun \
         testdata/magpie/make_loader_fixtures.py"
    );
    path
}

/// The loader fixtures' `expected.json` (see [`require_loader`]).
pub fn loader_expected() -> serde_json::Value {
    let text = std::fs::read_to_string(require_loader("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Reads a reference recording (which must exist, see [`require`]).
pub fn fixture(name: &str) -> rill_io::Npz {
    rill_io::Npz::read(require(name)).unwrap_or_else(|e| panic!("{e}"))
}

/// Parses a JSON file under `testdata/mrt2/` (which must exist, see [`require`]).
pub fn json(name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(require(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Parses a JSON file under `testdata/magpie/` (which must exist, see [`require_magpie`]).
pub fn magpie_json(name: &str) -> serde_json::Value {
    let text =
        std::fs::read_to_string(require_magpie(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Directory for generated test inputs: `$RILL_TEST_CACHE` or `target/rill-test-cache`.
pub fn cache_dir() -> PathBuf {
    let dir = std::env::var_os("RILL_TEST_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/rill-test-cache"));
    std::fs::create_dir_all(&dir).expect("creating the test cache directory");
    dir
}

/// The `XDG_CACHE_HOME` of the `rill` processes the tests start (`xdg-cache/` in
/// [`cache_dir`]), one for every test: the random-weight assets `rill` makes on first
/// use (an mrt2_small checkpoint, MusicCoCa folders of about 0.9 GB a seed) are
/// written once per test run, not once per test home. rill writes them atomically,
/// so tests that ask at once never read a half-written file.
pub fn user_cache_home() -> PathBuf {
    let dir = cache_dir().join("xdg-cache");
    std::fs::create_dir_all(&dir).expect("creating the tests' user cache directory");
    dir
}

/// rill's own cache inside [`user_cache_home`] (`xdg-cache/rill/`, what
/// `rill_stream::source::cache_dir` names for those processes), for in-process
/// tests that want the same random-weight assets.
pub fn rill_cache() -> PathBuf {
    let dir = user_cache_home().join("rill");
    std::fs::create_dir_all(&dir).expect("creating the tests' rill cache directory");
    dir
}

static SYNTH_LOCK: Mutex<()> = Mutex::new(());

/// The tensors of the oracle's checkpoint of the model named `model`, from its
/// manifest (`testdata/mrt2/manifest_{model}.json`: names in file order, shapes,
/// and the exact f64 bits of each tensor's mean and std).
pub fn manifest_tensors(model: &str) -> Vec<SynthTensor> {
    let file = format!("manifest_{model}.json");
    manifest_tensor_list(&json(&file), &file)
}

/// The tensors of a portable-init manifest (`file` names it in messages).
pub fn manifest_tensor_list(manifest: &serde_json::Value, file: &str) -> Vec<SynthTensor> {
    let bits = manifest_bits;
    let tensors = manifest["tensors"].as_array();
    tensors
        .unwrap_or_else(|| panic!("{file} has no tensor list"))
        .iter()
        .map(|t| SynthTensor {
            name: t["name"].as_str().unwrap().to_string(),
            shape: t["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap() as usize)
                .collect(),
            mean: f64::from_bits(bits(&t["mean_f64_bits"])),
            std: f64::from_bits(bits(&t["std_f64_bits"])),
        })
        .collect()
}

/// A manifest's `"0x…"` hex string of f64 bits.
pub fn manifest_bits(v: &serde_json::Value) -> u64 {
    let hex = v
        .as_str()
        .unwrap_or_else(|| panic!("manifest bits: {v} is no string"));
    u64::from_str_radix(hex.trim_start_matches("0x"), 16)
        .unwrap_or_else(|e| panic!("manifest bits {hex}: {e}"))
}

/// Asserts that a layout's tensor spec is the manifest's entry: name, shape, init
/// kind, and the mean and std to the bit.
pub fn assert_spec_is_manifest_entry(
    spec: &rill_checkpoint::layout::TensorSpec,
    entry: &serde_json::Value,
) {
    assert_eq!(spec.name, entry["name"].as_str().unwrap());
    let shape: Vec<usize> = entry["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(spec.shape, shape, "{} shape", spec.name);
    assert_eq!(
        spec.init.kind(),
        entry["init"].as_str().unwrap(),
        "{} init",
        spec.name
    );
    let (mean, std) = spec.init.mean_std();
    let want = (
        manifest_bits(&entry["mean_f64_bits"]),
        manifest_bits(&entry["std_f64_bits"]),
    );
    assert_eq!(
        (mean.to_bits(), std.to_bits()),
        want,
        "{} mean, std",
        spec.name
    );
}

/// Path of the portable random-weight checkpoint `file` (model name, weights seed,
/// the oracle's sha256 if it made the file: the model crate supplies them, e.g.
/// `rill_mrt2::ModelKind::synth_file`), synthesised on first use (about 10 s for
/// mrt2_small; a file that does not hash to the oracle's sha256 fails the test) and
/// reused afterwards. The tensors come from the oracle's manifest, not from rill's
/// layout, so a test checkpoint never depends on the code under test (the layout
/// tests compare the two).
pub fn synthetic_checkpoint(file: SynthFile) -> PathBuf {
    let _guard = SYNTH_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let path = cache_dir().join(format!("{}_seed{}.safetensors", file.model, file.seed));
    let tensors = manifest_tensors(file.model);
    let want = synth::file_len(&file, &tensors);
    if std::fs::metadata(&path).map(|m| m.len()).ok() != Some(want) {
        synth::write_checkpoint(&file, &tensors, &path, &mut |_, _| {})
            .unwrap_or_else(|e| panic!("synthesising {}: {e}", path.display()));
    }
    path
}

/// Path of a portable random-weight file made from an explicit tensor list (a
/// manifest outside `testdata/mrt2/`, or a subset of one), cached as
/// `{file.model}_seed{file.seed}.safetensors` like [`synthetic_checkpoint`]; with
/// `file.oracle_sha256` the bytes must hash to the oracle's file.
pub fn synthetic_file(file: SynthFile, tensors: &[SynthTensor]) -> PathBuf {
    let _guard = SYNTH_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let path = cache_dir().join(format!("{}_seed{}.safetensors", file.model, file.seed));
    let want = synth::file_len(&file, tensors);
    if std::fs::metadata(&path).map(|m| m.len()).ok() != Some(want) {
        synth::write_checkpoint(&file, tensors, &path, &mut |_, _| {})
            .unwrap_or_else(|e| panic!("synthesising {}: {e}", path.display()));
    }
    path
}

/// The sha256 the oracle recorded for its synthetic file of weights seed `seed` in
/// the list `testdata/mrt2/{list}` (`synth_file_sha256.json`: seed → sha256), for
/// tests below the model crate that owns the checksums (which the model crate's
/// tests check against the same lists).
pub fn recorded_sha256(list: &str, seed: u64) -> Option<String> {
    json(list)[seed.to_string()].as_str().map(str::to_string)
}

/// A directory of this test process for files it makes (`tag` keeps test binaries
/// apart).
pub fn scratch_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rill-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A safetensors file `name` holding `tensors` in [`scratch_dir`]`(tag)`; for the
/// tests of malformed files.
pub fn write_safetensors(
    tag: &str,
    name: &str,
    tensors: Vec<(String, rill_checkpoint::writer::Tensor<'static>)>,
) -> PathBuf {
    let path = scratch_dir(tag).join(name);
    rill_checkpoint::writer::write(&path, &tensors, Default::default()).unwrap();
    path
}

pub use rill_kernels::metrics::{cosine, max_abs_diff, snr_db};

/// A global allocator that counts allocations, to prove a code path allocates
/// nothing. Install it in a test binary with
/// `#[global_allocator] static A: rill_testkit::CountingAlloc = rill_testkit::CountingAlloc;`
/// and compare [`allocations`] before and after (keep such tests alone in their
/// binary: other threads' allocations count too).
pub struct CountingAlloc;

static ALLOCATIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Allocations (including reallocations) made so far through [`CountingAlloc`].
pub fn allocations() -> usize {
    ALLOCATIONS.load(std::sync::atomic::Ordering::SeqCst)
}

// SAFETY: forwards every call to the system allocator; only counts them.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    /// # Safety
    /// As [`GlobalAlloc::alloc`].
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            ALLOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            std::alloc::System.alloc(l)
        }
    }
    /// # Safety
    /// As [`GlobalAlloc::dealloc`].
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe { std::alloc::System.dealloc(p, l) }
    }
    /// # Safety
    /// As [`GlobalAlloc::realloc`].
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, n: usize) -> *mut u8 {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            ALLOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            std::alloc::System.realloc(p, l, n)
        }
    }
}

/// CPU time of the calling thread in ms (Linux; 0 elsewhere).
#[cfg(target_os = "linux")]
pub fn thread_cpu_ms() -> f64 {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    if unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0.0;
    }
    ts.sec as f64 * 1e3 + ts.nsec as f64 * 1e-6
}

/// CPU time of the calling thread in ms (Linux; 0 elsewhere).
#[cfg(not(target_os = "linux"))]
pub fn thread_cpu_ms() -> f64 {
    0.0
}
