//! Blends against the gate recording: the recorded members' embeddings blended with
//! the recorded weights give the recorded blend, bit for bit.

use rill_musiccoca::blend::{blend, normalised_weights};

fn gate() -> rill_io::Npz {
    let p = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/musiccoca/gate_seed1.npz"
    );
    rill_io::Npz::read(p)
        .expect("testdata/musiccoca/gate_seed1.npz (see testdata/musiccoca/README.md)")
}

#[test]
fn blends_match_the_recording_bit_for_bit() {
    let npz = gate();
    let (_, members) = npz.i64("blend_members").unwrap();
    let (_, raw) = npz.f32("blend_weights_raw").unwrap();
    let (_, want_w) = npz.f32("blend_weights").unwrap();
    assert_eq!(normalised_weights(&raw).unwrap(), want_w);
    let (_, text) = npz.f32("text_embedding").unwrap();
    let (_, mapped) = npz.f32("mapper_embedding").unwrap(); // [P, 2 seeds, 768]
    let (_, audio) = npz.f32("audio_embedding").unwrap();
    for (key, seed0_mapped) in [("blend_embedding", false), ("blend_mapped_embedding", true)] {
        let list: Vec<(&[f32], f32)> = members
            .iter()
            .zip(&raw)
            .map(|(&m, &w)| {
                let e: &[f32] = if m < 0 {
                    &audio
                } else if seed0_mapped {
                    &mapped[m as usize * 2 * 768..][..768]
                } else {
                    &text[m as usize * 768..][..768]
                };
                (e, w)
            })
            .collect();
        let got = blend(&list).unwrap();
        let (_, want) = npz.f32(key).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "{key}");
    }
}
