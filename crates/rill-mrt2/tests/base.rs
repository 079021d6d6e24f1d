//! mrt2_base (2.4 B parameters) against upstream's fp32 recording DB (3 frames):
//! the 20-layer, 3072-wide temporal stack with its 25-frame windows, the 6-layer
//! depth stack and the √3072 embedding scale. Runs in its own test binary because
//! the f32 model takes ~10 GB of memory (the synthetic checkpoint is 9.8 GB on disk).

mod common;

use std::sync::Arc;

use common::Recording;
use rill_checkpoint::{Checkpoint, ModelKind};
use rill_mrt2::sampler::LEVEL;
use rill_mrt2::{FrameTrace, Mrt2, Precision, Session, LEVELS};
use rill_testkit::cosine;

#[test]
fn base_f32_matches_reference() {
    let Some(rec) = Recording::load("DB") else {
        return;
    };
    let path = rill_testkit::synthetic_checkpoint(ModelKind::Base, rec.weights_seed());
    let ckpt = Checkpoint::open(&path).unwrap();
    let m = Arc::new(Mrt2::load(&ckpt, Precision::F32).unwrap());
    drop(ckpt);
    assert_eq!(m.config.kind, ModelKind::Base);
    let pool = common::pool();
    let cond = rec.conditioning();
    let p = rec.sampling();

    // Teacher-forced: every intermediate.
    let mut s = Session::new(m.clone(), rec.sampler_seed(), &pool);
    s.set_conditioning(&cond, &pool).unwrap();
    s.set_sampling(p).unwrap();
    let (enc, tin, tout, logits) = (
        rec.f32("encoder_out"),
        rec.f32("temporal_in"),
        rec.f32("temporal_out"),
        rec.f32("logits_level"),
    );
    let (e, d) = (m.config.dims.enc_dim, m.config.dims.temporal.dim);
    assert_eq!((e, d), (1024, 3072));
    let mut trace = FrameTrace::default();
    let mut worst = 1f64;
    for n in 0..rec.frames {
        s.step_forced(&rec.tokens[n], &pool, Some(&mut trace))
            .unwrap();
        assert!(cosine(&trace.encoder_out, &enc[n * e..(n + 1) * e]) >= 0.999_999);
        assert!(cosine(&trace.temporal_in, &tin[n * d..(n + 1) * d]) >= 0.999_999);
        let c = cosine(&trace.temporal_out, &tout[n * d..(n + 1) * d]);
        assert!(c >= 0.999_999, "frame {n}: temporal_out cosine {c}");
        for k in 0..LEVELS {
            let r = (n * LEVELS + k) * LEVEL..(n * LEVELS + k + 1) * LEVEL;
            let c = cosine(&trace.logits[k * LEVEL..(k + 1) * LEVEL], &logits[r]);
            assert!(c >= 0.999_99, "frame {n} step {k}: logits cosine {c}");
            worst = worst.min(c);
        }
    }
    eprintln!(
        "DB (mrt2_base) teacher-forced: min logits cosine 1-{:.1e}",
        1.0 - worst
    );

    // Free-running: the reference's margins are all ≥ 0.037, so every token must match.
    let mut s = Session::new(m, rec.sampler_seed(), &pool);
    s.set_conditioning(&cond, &pool).unwrap();
    s.set_sampling(p).unwrap();
    for n in 0..rec.frames {
        assert_eq!(s.step(&pool, None), rec.tokens[n], "frame {n}");
    }
}
