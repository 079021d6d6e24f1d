//! The synthetic checkpoint files are byte-identical to the oracle's
//! `synth_checkpoint.py` output (sha256 of the whole file, seeds 0, 1, 2).

use std::io::Read;

use rill_checkpoint::ModelKind;
use sha2::{Digest, Sha256};

#[test]
fn synthetic_files_match_oracle_sha256() {
    let want: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(rill_testkit::testdata("synth_file_sha256.json")).unwrap(),
    )
    .unwrap();
    for seed in [0u64, 1, 2] {
        let path = rill_testkit::synthetic_checkpoint(ModelKind::Small, seed);
        let mut f = std::fs::File::open(&path).unwrap();
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 1 << 22];
        loop {
            let n = f.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
        }
        let got: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(got, want[seed.to_string()].as_str().unwrap(), "seed {seed}");
    }
}
