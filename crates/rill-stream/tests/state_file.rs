//! State files of whole streams: `Snapshot::to_bytes` → `from_bytes` → restore
//! continues bit-identically (a live generator with undecoded tokens and onset
//! notes; a frame pipeline saved after its flush, as `rill generate --save-state`
//! does), and hostile files are refused with the field named, never a panic.

use std::collections::HashMap;

use rill_checkpoint::writer::{self, Tensor};
use rill_checkpoint::Checkpoint;
use rill_mrt2::conditioning::StyleLevels;
use rill_mrt2::{Session, LEVELS};
use rill_stream::{
    Control, FramePipeline, Generator, NoteTracker, Snapshot, StagePools, Stages, FRAME_PCM,
};

mod common;
use common::weights;

const STYLE: [u16; 12] = [660, 1016, 295, 206, 857, 841, 391, 857, 619, 70, 401, 22];

fn run_generator(g: &mut Generator, pools: &StagePools, frames: usize) -> Vec<(u32, Vec<i16>)> {
    (0..frames)
        .map(|_| {
            let mut pcm = vec![0i16; FRAME_PCM];
            let r = g.step(pools, &mut pcm);
            (r.tokens[0], pcm)
        })
        .collect()
}

#[test]
fn a_generator_continues_bit_identically_from_bytes() {
    let (lm, codec) = weights();
    let pools = StagePools::new(Stages::TwoStage, 2, None);
    let mut a = Generator::new(lm.clone(), codec.clone(), 42, &pools);
    for c in [
        Control::Style(Some(STYLE)),
        Control::StyleLevels(StyleLevels::Coarse6),
        Control::Drums(Some(false)),
        Control::CfgNotes(2.0),
        Control::Temperature(1.1),
        Control::TopK(100),
        Control::HeldNotes(vec![48, 60]),
    ] {
        a.apply(c).unwrap();
    }
    a.notes_mut().onset_mode = 1;
    a.notes_mut().unmask_width = 2;
    // 43 frames: past the 41-slot ring wrap.
    run_generator(&mut a, &pools, 43);
    // Mid-stream: one note sustained, one onset, one released during its onset.
    a.apply(Control::NoteOn(67)).unwrap();
    a.apply(Control::NoteOn(72)).unwrap();
    a.apply(Control::NoteOff(72)).unwrap();
    let snap = a.snapshot();
    assert!(
        snap.pending.is_some(),
        "two stages leave one frame undecoded"
    );
    let bytes = snap.to_bytes(&lm);
    let back = Snapshot::from_bytes(&bytes, &lm, &codec).unwrap();
    assert_eq!(back, snap);
    assert_eq!(back.style_levels, StyleLevels::Coarse6);
    assert!(back.conditioning().tokens()[6..12].iter().all(|&t| t == 6));
    assert_eq!(back.to_bytes(&lm).len(), bytes.len());

    let cont_a = run_generator(&mut a, &pools, 6);
    let mut b = Generator::new(lm.clone(), codec.clone(), 7, &pools);
    b.restore(&back).unwrap();
    assert_eq!(run_generator(&mut b, &pools, 6), cont_a);
}

/// A generate-style run: `frames` steps then a flush, with the decoded frames.
fn run_pipeline(p: &mut FramePipeline, pools: &StagePools, frames: usize) -> Vec<i16> {
    let mut pcm = Vec::new();
    for _ in 0..frames {
        if p.step(None, pools).decoded {
            pcm.extend_from_slice(p.pcm());
        }
    }
    if p.flush(pools).is_some() {
        pcm.extend_from_slice(p.pcm());
    }
    pcm
}

#[test]
fn a_pipeline_saved_after_its_flush_resumes_in_either_arrangement() {
    let (lm, codec) = weights();
    let mut notes = NoteTracker::default();
    notes.set_held(&[60, 64, 67]).unwrap();
    let cond = rill_mrt2::conditioning::Conditioning {
        style: Some(STYLE),
        ..Default::default()
    }
    .with_held_notes(&[60, 64, 67])
    .unwrap();
    let new = |pools: &StagePools| {
        let mut p = FramePipeline::new(lm.clone(), Some(codec.clone()), 42, pools);
        p.session_mut().set_conditioning(&cond, pools.lm()).unwrap();
        p
    };
    let one = StagePools::new(Stages::Sequential, 2, None);
    let two = StagePools::new(Stages::TwoStage, 2, None);
    let whole = run_pipeline(&mut new(&one), &one, 7);
    for (save_pools, resume_pools) in [(&two, &one), (&one, &two)] {
        let mut p = new(save_pools);
        let mut pcm = run_pipeline(&mut p, save_pools, 3);
        let snap = p.snapshot(&notes).unwrap();
        assert_eq!(snap.pending, None, "the flush decoded every frame");
        assert_eq!(snap.conditioning(), cond);
        let back = Snapshot::from_bytes(&snap.to_bytes(&lm), &lm, &codec).unwrap();
        let mut q = FramePipeline::new(lm.clone(), Some(codec.clone()), 1, resume_pools);
        q.restore(&back).unwrap();
        q.session_mut()
            .set_conditioning(&back.conditioning(), resume_pools.lm())
            .unwrap();
        pcm.extend(run_pipeline(&mut q, resume_pools, 4));
        assert_eq!(pcm, whole);
    }
    assert!(FramePipeline::new(lm.clone(), None, 42, &one)
        .snapshot(&notes)
        .is_none());
}

/// A valid state file's tensors and metadata, edited, written back as bytes.
fn edit(
    bytes: &[u8],
    f: impl FnOnce(&mut Vec<(String, Tensor<'static>)>, &mut HashMap<String, String>),
) -> Vec<u8> {
    let c = Checkpoint::from_bytes("state", bytes.to_vec()).unwrap();
    let (mut tensors, mut meta) = c.to_parts();
    f(&mut tensors, &mut meta);
    writer::serialize(&tensors, meta).unwrap()
}

#[test]
fn hostile_state_files_are_refused_with_the_field_named() {
    let (lm, codec) = weights();
    let pools = StagePools::new(Stages::TwoStage, 2, None);
    let mut g = Generator::new(lm.clone(), codec.clone(), 42, &pools);
    g.apply(Control::HeldNotes(vec![60])).unwrap();
    run_generator(&mut g, &pools, 2);
    let snap = g.snapshot();
    let good = snap.to_bytes(&lm);
    let refused = |name: &str, bytes: &[u8], words: &[&str]| {
        let e = Snapshot::from_bytes(bytes, &lm, &codec)
            .expect_err(name)
            .to_string();
        eprintln!("{name}: {e}");
        for w in words {
            assert!(e.contains(w), "{name}: {e:?} does not mention {w:?}");
        }
    };
    for cut in [0, 7, 8, 100, good.len() / 2, good.len() - 1] {
        refused(&format!("truncated{cut}"), &good[..cut], &[]);
    }
    let mut s = snap.clone();
    s.lm.cross_v[5] = f32::NAN;
    refused("nan_cache", &s.to_bytes(&lm), &["lm/cross_v[5]", "finite"]);
    let mut s = snap.clone();
    s.pending = Some([5; LEVELS]);
    refused(
        "pending",
        &s.to_bytes(&lm),
        &["stream.pending[0]", "level 0"],
    );
    let mut s = snap.clone();
    s.lm.prev[4] = 3;
    refused("prev", &s.to_bytes(&lm), &["lm/prev[4]"]);
    let mut s = snap.clone();
    s.notes.onset_mode = 2;
    refused("onset_mode", &s.to_bytes(&lm), &["stream.onset_mode"]);

    let tail = "codec/inverse_stft/overlap_add_tail";
    let nan_codec = edit(&good, |t, _| {
        let (_, x) = t.iter_mut().find(|(n, _)| n == tail).unwrap();
        x.bytes.to_mut()[..4].copy_from_slice(&f32::NAN.to_le_bytes());
    });
    refused(
        "nan_codec",
        &nan_codec,
        &["codec state", "overlap_add_tail"],
    );
    let no_codec = edit(&good, |t, _| t.retain(|(n, _)| n != tail));
    refused("no_codec", &no_codec, &["codec state", "overlap_add_tail"]);
    let stray = edit(&good, |t, _| {
        t.push(("other/x".into(), Tensor::f32(vec![1], &[0.0])));
    });
    refused("stray", &stray, &["unknown tensor other/x"]);
    let set_meta = |k: &str, v: &str| {
        edit(&good, |_, m| {
            m.insert(k.to_string(), v.to_string());
        })
    };
    let stream = |f: &dyn Fn(&mut serde_json::Value)| {
        let c = Checkpoint::from_bytes("s", good.clone()).unwrap();
        let mut j: serde_json::Value = serde_json::from_str(&c.metadata()["stream"]).unwrap();
        f(&mut j);
        set_meta("stream", &j.to_string())
    };
    // Pitch 61 sustained, but the stored conditioning masks it.
    let b = stream(&|j| j["notes"][61] = 2.into());
    refused(
        "notes_mismatch",
        &b,
        &["conditioning.notes[61]", "note tracker"],
    );
    let b = stream(&|j| j["notes"][3] = 9.into());
    refused("note_code", &b, &["stream.notes", "pitch 3"]);
    let b = stream(&|j| {
        j.as_object_mut().unwrap().remove("unmask_width");
    });
    refused("no_width", &b, &["unmask_width"]);
    refused("stream_json", &set_meta("stream", "[1"), &["stream"]);
    refused("extra_meta", &set_meta("volume", "11"), &["volume"]);
    refused(
        "weights",
        &set_meta("weights", "0000000000000000"),
        &["weights"],
    );
    refused(
        "precision",
        &set_meta("precision", "f32"),
        &["--precision f32"],
    );

    // A language-model session file is not a stream state.
    let p = rill_testkit::cache_dir().join(format!("lm-only-{}.state", std::process::id()));
    let session = Session::new(lm.clone(), 42, pools.lm());
    session.save(&p, &[]).unwrap();
    let e = Snapshot::load(&p, &lm, &codec).unwrap_err().to_string();
    assert!(e.contains("no stream part"), "{e}");
    // save/load round trip through a file.
    snap.save(&p, &lm).unwrap();
    assert_eq!(Snapshot::load(&p, &lm, &codec).unwrap(), snap);
    std::fs::remove_file(&p).unwrap();
    let e = Snapshot::load(&p, &lm, &codec).unwrap_err().to_string();
    assert!(e.contains(&p.display().to_string()), "{e}");
}
