//! Parity with upstream NeMo on the oracle's random weights (spec §9): encoder,
//! prefill, every decoder step, LT logits and the token stream of the recorded runs.

mod common;

use rill_kernels::Pool;
use rill_magpie::layers::LayerScratch;
use rill_magpie::model::{DecoderCache, DecoderOut};
use rill_magpie::session::{StepTrace, CODEBOOKS};
use rill_magpie::Session;

use common::{f32s, ints, max_abs, params, token_ids};

#[test]
fn encoder_matches_upstream() {
    let z = common::npz("model_cached.npz");
    let m = common::oracle_model();
    let pool = Pool::new(2);
    let (_, t) = ints(&z, "text_tokens");
    let tokens: Vec<u32> = t.iter().map(|&v| v as u32).collect();
    let (_, want) = f32s(&z, "text_encoder_out");
    let mut enc = vec![0f32; want.len()];
    m.encode(&tokens, &mut enc, &pool).unwrap();
    let err = max_abs(&enc, &want);
    eprintln!("encoder output max |diff| {err:e}");
    // Measured 6.9e-6 (spec gate 1e-4).
    assert!(err < 1e-5, "encoder output max |diff| {err}");
}

/// Prefill (step 0) of every row, both CFG rows.
#[test]
fn prefill_matches_upstream() {
    let z = common::npz("model_cached.npz");
    let m = common::oracle_model();
    let c = &m.config;
    let pool = Pool::new(2);
    let (_, t) = ints(&z, "text_tokens");
    let tokens: Vec<u32> = t.iter().map(|&v| v as u32).collect();
    let (d, tl) = (c.dim, tokens.len());
    let mut enc = vec![0f32; tl * d];
    m.encode(&tokens, &mut enc, &pool).unwrap();
    let mem = m.cross_memory(&enc, &pool);
    let rows = c.context_frames + 1;
    let mut x = vec![0f32; 2 * rows * d];
    let (ctx, _) = m.context(0).unwrap();
    for b in 0..2 {
        let xb = &mut x[b * rows * d..(b + 1) * rows * d];
        if b == 0 {
            xb[..c.context_frames * d].copy_from_slice(ctx);
        }
        m.embed_frame(&[2016; 8], &mut xb[c.context_frames * d..]);
        for (p, row) in xb.chunks_exact_mut(d).enumerate() {
            m.add_decoder_position(row, p);
        }
    }
    let cache = DecoderCache::new(c, 2, rows);
    let mut out = DecoderOut::new(c, 2, rows, tl);
    let mut s = LayerScratch::new(2 * rows, d, c.ffn, 1, rows, c.xattn_dim, tl);
    m.decoder_forward(
        rows,
        &mut x,
        &cache,
        Some(&mem),
        None,
        &mut out,
        &mut s,
        &pool,
    );
    let mut got = vec![0f32; x.len()];
    m.norm_out_rows(&x, &mut got);
    let (_, want) = f32s(&z, "dec_out_step0");
    let err = max_abs(&got, &want);
    eprintln!("prefill output (2 x 111 rows) max |diff| {err:e}");
    // Measured 6.4e-6 (spec gate 1e-4).
    assert!(err < 8e-6, "prefill max |diff| {err}");
    let (_, probs) = f32s(&z, "xattn_probs_last");
    // [S, B, 12, 1, T]: step 0, row 0
    let want_p = &probs[..12 * tl];
    let perr = max_abs(&out.probs, want_p);
    eprintln!("prefill cross-attention probabilities max |diff| {perr:e}");
    // Measured 3.9e-7.
    assert!(perr < 1e-6);

    // The model's shared CFG prefill, computed alone, is the batched row 1 bit for bit.
    let u = m.unconditional_prefill(&pool);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let n = rows * d;
    for l in 0..c.decoder_layers {
        let batched = (2 * l + 1) * n..(2 * l + 2) * n;
        let alone = l * n..(l + 1) * n;
        assert_eq!(
            bits(&out.k[batched.clone()]),
            bits(&u.k[alone.clone()]),
            "layer {l} K"
        );
        assert_eq!(bits(&out.v[batched]), bits(&u.v[alone]), "layer {l} V");
    }
    assert_eq!(bits(&out.hidden[d..]), bits(&u.hidden), "CFG hidden");
}

struct Run {
    hidden: f32,
    lt: f32,
    final_logits: f32,
    probs: f32,
    attended_ok: usize,
    free_frames: usize,
    frames: usize,
}

/// Runs a recorded scenario. `forced`: teacher forcing with the recorded codes (every
/// step's logits compared); otherwise free-running, counting the frames equal to the
/// recording before the first difference.
fn run(name: &str, forced: bool) -> Run {
    let z = common::npz(name);
    let info = common::info(&z);
    let p = params(&info);
    let m = common::oracle_model();
    let pool = Pool::new(2);
    let batch = if p.use_cfg { 2 } else { 1 };
    let mut s = Session::new(m.clone(), &token_ids(&z), 0, p, 0, &pool).unwrap();
    let (_, hidden) = f32s(&z, "dec_hidden");
    let (lt_shape, lt) = f32s(&z, "lt_logits");
    let lt_steps: Vec<usize> = match z.i64("lt_logits_steps") {
        Ok((_, v)) => v.iter().map(|&x| x as usize).collect(),
        Err(_) => (0..lt_shape[0]).collect(),
    };
    let (_, fin) = z.f32("final_logits_raw").unwrap_or_default();
    let fin_steps: Vec<usize> = z
        .i64("final_logits_raw_steps")
        .map(|(_, v)| v.iter().map(|&x| x as usize).collect())
        .unwrap_or_default();
    let (_, codes) = ints(&z, "lt_codes");
    let (_, amax) = ints(&z, "argmax_codes");
    let steps = codes.len() / CODEBOOKS;
    let (d, v) = (m.config.dim, m.config.codebook_vocab);
    let mut r = Run {
        hidden: 0.0,
        lt: 0.0,
        final_logits: 0.0,
        probs: 0.0,
        attended_ok: 0,
        free_frames: 0,
        frames: 0,
    };
    let (_, probs) = z.f32("xattn_probs_last").unwrap_or_default();
    let (_, attended) = z.i64("attended_timestep").unwrap_or_default();
    let layers = m.config.decoder_layers;
    let tl = s.text_len();
    let mut diverged = false;
    for i in 0..steps {
        let rec: [u16; CODEBOOKS] = std::array::from_fn(|c| codes[i * CODEBOOKS + c] as u16);
        let mut tr = StepTrace::default();
        let f = s
            .step_with(&pool, forced.then_some(&rec), Some(&mut tr))
            .unwrap();
        let hw = &hidden[i * batch * d..(i + 1) * batch * d];
        r.hidden = r.hidden.max(max_abs(&tr.hidden, hw));
        if let Some(k) = lt_steps.iter().position(|&x| x == i) {
            let n = CODEBOOKS * batch * v;
            r.lt = r.lt.max(max_abs(&tr.lt_logits, &lt[k * n..(k + 1) * n]));
        }
        if let Some(k) = fin_steps.iter().position(|&x| x == i) {
            let n = batch * CODEBOOKS * v;
            r.final_logits = r
                .final_logits
                .max(max_abs(&tr.final_logits, &fin[k * n..(k + 1) * n]));
        }
        if !probs.is_empty() {
            let n = batch * layers * tl;
            r.probs = r
                .probs
                .max(max_abs(&tr.probs, &probs[i * n..i * n + layers * tl]));
        }
        if !attended.is_empty() && tr.attended == Some(attended[i] as usize) {
            r.attended_ok += 1;
        }
        let want_amax: [u16; CODEBOOKS] = std::array::from_fn(|c| amax[i * CODEBOOKS + c] as u16);
        if forced {
            assert_eq!(
                tr.argmax_codes, want_amax,
                "{name} step {i}: EOS-stream argmax codes"
            );
        }
        if !diverged && tr.sampled == rec && tr.argmax_codes == want_amax {
            r.free_frames += 1;
        } else {
            diverged = true;
        }
        match f {
            Some(_) => r.frames += 1,
            None => break,
        }
        if !forced && diverged {
            break;
        }
    }
    eprintln!(
        "{name} ({}): hidden max |diff| {:e}, LT logits {:e}, final_proj {:e}, cross-attention probabilities {:e}, attended positions equal {}, {} frames equal before any difference, {} frames",
        if forced { "teacher-forced" } else { "free-running" },
        r.hidden, r.lt, r.final_logits, r.probs, r.attended_ok, r.free_frames, r.frames
    );
    r
}

// Measured (2-vCPU Xeon, AVX-512 tier): hidden ≤ 5.9e-6, LT logits ≤ 1.2e-5,
// final_proj ≤ 1.1e-5, cross-attention probabilities ≤ 1.6e-6; every frame of every
// recording is reproduced exactly (32/32). RILL_ISA=avx2 / portable (cached run):
// hidden 5.1e-6 / 6.1e-6, LT logits 1.23e-5 / 1.31e-5, same 32 frames. Bounds sit just
// outside (the spec's gates are 1e-4 and 1e-3).
const HIDDEN_TOL: f32 = 1e-5;
const LOGIT_TOL: f32 = 2e-5;
const PROB_TOL: f32 = 2e-6;

#[test]
fn plain_run_matches_upstream() {
    let r = run("model_plain.npz", false);
    assert_eq!(r.free_frames, 32);
    assert!(r.hidden < HIDDEN_TOL && r.lt < LOGIT_TOL && r.final_logits < LOGIT_TOL);
}

#[test]
fn cached_run_free_running_matches_upstream() {
    let r = run("model_cached.npz", false);
    assert_eq!(r.free_frames, 32);
    assert_eq!(r.attended_ok, 32, "attention prior positions");
    assert!(r.hidden < HIDDEN_TOL && r.lt < LOGIT_TOL && r.final_logits < LOGIT_TOL);
    assert!(r.probs < PROB_TOL);
}

#[test]
fn cached_run_teacher_forced_matches_upstream() {
    let r = run("model_cached.npz", true);
    assert_eq!(r.frames, 32);
    assert!(r.hidden < HIDDEN_TOL && r.lt < LOGIT_TOL && r.final_logits < LOGIT_TOL);
}

/// The host-owned cached step against NeMo's *uncached* `do_tts` (the whole sequence
/// recomputed every step), with the attention prior off: NeMo's own two modes agree
/// to fp32 rounding there (hidden 2.4e-6), so rill's step must reproduce the full
/// recompute over all 32 steps.
#[test]
fn host_owned_step_equals_nemos_uncached_recompute() {
    let r = run("model_noprior_uncached.npz", false);
    assert_eq!(r.free_frames, 32);
    assert!(r.hidden < HIDDEN_TOL && r.lt < LOGIT_TOL && r.final_logits < LOGIT_TOL);
}

#[test]
fn layer_lists_run_matches_upstream() {
    let r = run("model_layers.npz", false);
    assert_eq!(r.free_frames, 32);
    assert_eq!(r.attended_ok, 32, "attention prior positions");
    assert!(r.hidden < HIDDEN_TOL && r.lt < LOGIT_TOL && r.probs < PROB_TOL);
}

#[test]
fn eos_run_stops_where_upstream_stops() {
    // The recording's weight patch: local_transformer_out_projections.5.bias[2017] += 4.5.
    let z = common::npz("model_eos.npz");
    let info = common::info(&z);
    let patch = &info["weight_patch"];
    let mut w = common::oracle_weights();
    let b = w.f32_mut(patch["name"].as_str().unwrap()).unwrap();
    let i = patch["index"].as_u64().unwrap() as usize;
    b[i] = (b[i] as f64 + patch["add"].as_f64().unwrap()) as f32;
    let m = std::sync::Arc::new(rill_magpie::Model::new(w).unwrap());
    let pool = Pool::new(2);
    let p = params(&info);
    let mut s = Session::new(m.clone(), &token_ids(&z), 0, p, 0, &pool).unwrap();
    let (_, hidden) = f32s(&z, "dec_hidden");
    let (_, kept) = ints(&z, "predicted_codes"); // [8, 13]
    let (_, lt) = f32s(&z, "lt_logits");
    let (_, lt_steps) = ints(&z, "lt_logits_steps");
    let n_kept = kept.len() / CODEBOOKS;
    let (d, v) = (m.config.dim, m.config.codebook_vocab);
    let (mut herr, mut lerr) = (0f32, 0f32);
    let mut frames = Vec::new();
    for i in 0..32 {
        let mut tr = StepTrace::default();
        let f = s.step_with(&pool, None, Some(&mut tr)).unwrap();
        herr = herr.max(max_abs(&tr.hidden, &hidden[i * 2 * d..(i + 1) * 2 * d]));
        if let Some(k) = lt_steps.iter().position(|&x| x as usize == i) {
            let n = CODEBOOKS * 2 * v;
            lerr = lerr.max(max_abs(&tr.lt_logits, &lt[k * n..(k + 1) * n]));
        }
        match f {
            Some(f) => frames.push(f),
            None => break,
        }
    }
    eprintln!(
        "eos run: {} frames kept, hidden max |diff| {herr:e}, LT logits {lerr:e}",
        frames.len()
    );
    assert_eq!(frames.len(), n_kept, "frames kept before EOS");
    for (i, f) in frames.iter().enumerate() {
        for c in 0..CODEBOOKS {
            assert_eq!(f[c] as i64, kept[c * n_kept + i], "frame {i} codebook {c}");
        }
    }
    assert!(s.is_finished() && s.step(&pool).unwrap().is_none());
    assert!(herr < HIDDEN_TOL && lerr < LOGIT_TOL);
}
