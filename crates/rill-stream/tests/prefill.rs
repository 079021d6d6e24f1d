//! Continuation prefill (spec §3.7): forcing codes through the language model
//! advances only the temporal caches, never the sampler key; a prefill then K
//! steps is deterministic and equals the same through the session's lower-level
//! calls; bad inputs are errors that change nothing.

mod common;

use rill_mrt2::conditioning::{Conditioning, StyleLevels};
use rill_mrt2::sampler;
use rill_mrt2::session::{code_ids, prefill_conditioning, prefill_inputs};
use rill_mrt2::{ModelError, Session, LEVELS};
use rill_stream::{FramePipeline, StagePools, Stages};

const SEED: u64 = 11;
const N: usize = 6;
const K: usize = 3;

fn codes() -> Vec<[u16; LEVELS]> {
    (0..N)
        .map(|f| std::array::from_fn(|k| ((f * 131 + k * 977 + 5) % 1024) as u16))
        .collect()
}

fn conditioning() -> Conditioning {
    Conditioning {
        style: Some([325, 98, 979, 657, 802, 453, 475, 622, 729, 934, 567, 782]),
        drums: Some(true),
        ..Default::default()
    }
    .with_held_notes(&[60, 64, 67])
    .unwrap()
}

/// Prefill then `K` steps on a fresh sequential pipeline: (tokens, pcm per frame, pipeline).
fn run(keep_style: bool, pools: &StagePools) -> (Vec<[u32; LEVELS]>, Vec<Vec<i16>>, FramePipeline) {
    let (lm, codec) = common::weights();
    let mut p = FramePipeline::new(lm, Some(codec), SEED, pools);
    p.session_mut()
        .set_conditioning(&conditioning(), pools.lm())
        .unwrap();
    p.prefill(&codes(), keep_style, pools).unwrap();
    let (mut tokens, mut audio) = (Vec::new(), Vec::new());
    for _ in 0..K {
        let r = p.step(None, pools);
        tokens.push(r.tokens);
        audio.push(p.pcm().to_vec());
    }
    (tokens, audio, p)
}

#[test]
fn prefill_leaves_the_key_and_sets_prev() {
    let pools = StagePools::new(Stages::Sequential, 2, None);
    let (lm, codec) = common::weights();
    let mut p = FramePipeline::new(lm, Some(codec), SEED, &pools);
    p.session_mut()
        .set_conditioning(&conditioning(), pools.lm())
        .unwrap();
    p.prefill(&codes(), false, &pools).unwrap();
    let st = p.session().state();
    assert_eq!(st.key, sampler::key(SEED), "the prefill draws nothing");
    assert_eq!(st.frame, (N - 1) as u64);
    assert_eq!(st.prev, code_ids(&codes()[N - 1]).unwrap());
    assert_eq!(
        p.session().conditioning(),
        &conditioning(),
        "the generation's conditioning is set again"
    );
    assert_eq!(prefill_inputs(N).len(), N - 1);
}

#[test]
fn prefill_then_steps_is_deterministic_and_equals_the_session_calls() {
    let pools = StagePools::new(Stages::Sequential, 2, None);
    let (a_tokens, a_audio, _) = run(false, &pools);
    let (b_tokens, b_audio, _) = run(false, &pools);
    assert_eq!(a_tokens, b_tokens);
    assert_eq!(a_audio, b_audio);

    // The same through the lower-level session calls, written as upstream's engine
    // loop is (`mlx_engine.cpp`, `prefill_with_token_array`): for s in 0..N−1 seed
    // previous_frame = ids[s] and call with forced = ids[s]; then seed ids[N−1].
    let (lm, _) = common::weights();
    let mut s = Session::new(lm, SEED, pools.lm());
    let ids: Vec<_> = codes().iter().map(|c| code_ids(c).unwrap()).collect();
    s.set_conditioning(&prefill_conditioning(&conditioning(), false), pools.lm())
        .unwrap();
    for id in &ids[..N - 1] {
        s.set_prev(id).unwrap();
        s.prefill_frame(id, pools.lm()).unwrap();
    }
    s.set_prev(&ids[N - 1]).unwrap();
    s.set_conditioning(&conditioning(), pools.lm()).unwrap();
    let low: Vec<_> = (0..K).map(|_| s.step(pools.lm(), None)).collect();
    assert_eq!(low, a_tokens);

    // Keeping the style during the prefill fills the caches differently.
    let (_, _, masked) = run(false, &pools);
    let (_, _, kept) = run(true, &pools);
    assert_ne!(
        masked.session().state().cross_k,
        kept.session().state().cross_k
    );
}

/// `--keep-style-during-prefill` as upstream's engine (`prefill_with_token_array`
/// with `mask_musiccoca_during_prefill = false`): the block holds style levels 0–5
/// (`prefill_cond[i] = musiccoca_tokens_[i] + 7` for `i < kept_mc_levels = 6`), the
/// mask id everywhere else (levels 6–11, every pitch; drums "on" → masked) and the
/// CFG bins; not the generation's 12 levels.
#[test]
fn keeping_the_style_feeds_levels_0_to_5_as_upstream() {
    let pools = StagePools::new(Stages::Sequential, 2, None);
    let (kept_tokens, _, kept) = run(true, &pools);
    let style = conditioning().style.unwrap();
    let mut upstream = [6i32; 141];
    for i in 0..6 {
        upstream[i] = style[i] as i32 + 7;
    }
    let (lm, _) = common::weights();
    let prefill_with = |c: &Conditioning| {
        let mut s = Session::new(lm.clone(), SEED, pools.lm());
        s.set_conditioning(c, pools.lm()).unwrap();
        s.prefill(&codes(), pools.lm()).unwrap();
        s.set_conditioning(&conditioning(), pools.lm()).unwrap();
        s
    };
    let six = Conditioning {
        style: Some(style),
        style_levels: StyleLevels::Coarse6,
        cfg: conditioning().cfg,
        ..Default::default()
    };
    assert_eq!(&six.tokens()[..141], &upstream[..]);
    assert_eq!(&six.tokens()[141..], &conditioning().tokens()[141..]);
    let mut s = prefill_with(&six);
    let low: Vec<_> = (0..K).map(|_| s.step(pools.lm(), None)).collect();
    assert_eq!(low, kept_tokens);
    assert_eq!(s.state(), kept.session().state());

    // Feeding all 12 levels during the prefill would fill the caches differently.
    let twelve = Conditioning {
        style_levels: StyleLevels::All12,
        ..six
    };
    let s12 = prefill_with(&twelve);
    assert_ne!(s12.state().cross_k, prefill_with(&six).state().cross_k);
}

#[test]
fn bad_prefills_are_errors_that_change_nothing() {
    let pools = StagePools::new(Stages::Sequential, 2, None);
    let (lm, codec) = common::weights();
    let mut p = FramePipeline::new(lm, Some(codec), SEED, &pools);
    let fresh = p.session().state().clone();
    assert!(matches!(
        p.prefill(&[], false, &pools),
        Err(ModelError::Prefill(_))
    ));
    let mut bad = codes();
    bad[3][7] = 1024;
    let e = p.prefill(&bad, false, &pools).unwrap_err();
    assert!(e.to_string().contains("1024"), "{e}");
    assert_eq!(p.session().state(), &fresh);
    assert_eq!(p.session().conditioning(), &Conditioning::default());
    let mut s = p.session().state().prev;
    s[0] = 5;
    assert!(p.session_mut().set_prev(&s).is_err());
    assert!(p.session_mut().prefill_frame(&s, pools.lm()).is_err());
    assert_eq!(p.session().state(), &fresh);
}

#[test]
fn two_stage_prefill_equals_sequential() {
    let seq = StagePools::new(Stages::Sequential, 2, None);
    let two = StagePools::new(Stages::TwoStage, 2, None);
    let (a, _, pa) = run(false, &seq);
    let (b, _, pb) = run(false, &two);
    assert_eq!(a, b);
    assert_eq!(pa.session().state(), pb.session().state());
}
