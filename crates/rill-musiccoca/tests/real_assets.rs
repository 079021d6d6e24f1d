//! Upstream's golden tokens for its REAL assets (`tests/test_musiccoca.py` of
//! magenta-realtime v2.0.3, four prompts with and without the seed-0 mapper).
//!
//! The real files are a user download, never in CI, so this test is ignored by
//! default and is not counted as run. With the assets (see docs/musiccoca.md):
//!
//! ```sh
//! RILL_MUSICCOCA=~/Documents/Magenta/magenta-rt-v2/resources/musiccoca \
//!     cargo test --release -p rill-musiccoca --test real_assets -- --ignored
//! ```
//!
//! Run explicitly without the assets, it fails (it never passes without checking).

use rill_kernels::{isa, Pool};
use rill_musiccoca::{Mapper, StyleModel};

#[test]
#[ignore = "needs upstream's real MusicCoCa assets: RILL_MUSICCOCA=DIR ... -- --ignored"]
fn real_assets_give_upstreams_golden_tokens() {
    let dir = std::env::var_os("RILL_MUSICCOCA")
        .map(std::path::PathBuf::from)
        .or_else(|| rill_musiccoca::locate::find(None))
        .expect("set RILL_MUSICCOCA to the folder of spm.model and the five .tflite files");
    let m = StyleModel::load(&dir, isa::active()).unwrap_or_else(|e| panic!("{e}"));
    let pool = Pool::new(2);
    let path = rill_testkit::repo_root().join("testdata/musiccoca/upstream_golden_tokens.json");
    let golden: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut failures = Vec::new();
    for (key, mapper) in [
        ("text_tokens", Mapper::Off),
        ("text_tokens_with_mapper_seed0", Mapper::Seed(0)),
    ] {
        for (prompt, want) in golden[key].as_object().unwrap() {
            let want: Vec<u16> = serde_json::from_value(want.clone()).unwrap();
            let e = m.embed_text(prompt, mapper, &pool).unwrap();
            let got = m.tokenize(&e, &pool).unwrap();
            eprintln!(
                "{key} {prompt:?}: {:?} (margins {:?})",
                got.tokens, got.margins
            );
            if got.tokens[..] != want[..] {
                failures.push(format!(
                    "{key} {prompt:?}: got {:?}, upstream {want:?}",
                    got.tokens
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
