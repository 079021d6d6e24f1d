//! Agreement of the reduced-precision weight formats (bf16, f16, int8) with upstream's
//! f32 run (`magpie_cached`, CFG + prior + LT), teacher-forced on the recorded codes
//! so every step sees the same history: per-step cosine of the decoder hidden state
//! and of the LT logits, and how many sampled codes (same torch RNG stream) and
//! EOS-stream argmax codes equal the recording's.

mod common;

use rill_kernels::{Pool, WeightFormat};
use rill_magpie::session::{StepTrace, CODEBOOKS};
use rill_magpie::{Model, Session};
use std::sync::Arc;

use common::{f32s, ints, params, token_ids};

struct Agreement {
    hidden_cos_min: f64,
    lt_cos_min: f64,
    sampled_equal: f64,
    argmax_equal: f64,
}

fn agreement(format: WeightFormat) -> Agreement {
    let z = common::npz("model_cached.npz");
    let p = params(&common::info(&z));
    let m = Arc::new(Model::with_format(common::oracle_weights(), format).unwrap());
    let pool = Pool::new(2);
    let mut s = Session::new(m.clone(), &token_ids(&z), 0, p, 0, &pool).unwrap();
    let (_, hidden) = f32s(&z, "dec_hidden");
    let (_, lt) = f32s(&z, "lt_logits");
    let (_, codes) = ints(&z, "lt_codes");
    let (_, amax) = ints(&z, "argmax_codes");
    let steps = codes.len() / CODEBOOKS;
    let (d, v, batch) = (m.config.dim, m.config.codebook_vocab, 2);
    let mut a = Agreement {
        hidden_cos_min: 1.0,
        lt_cos_min: 1.0,
        sampled_equal: 0.0,
        argmax_equal: 0.0,
    };
    for i in 0..steps {
        let rec: [u16; CODEBOOKS] = std::array::from_fn(|c| codes[i * CODEBOOKS + c] as u16);
        let mut tr = StepTrace::default();
        s.step_with(&pool, Some(&rec), Some(&mut tr)).unwrap();
        let hw = &hidden[i * batch * d..(i + 1) * batch * d];
        a.hidden_cos_min = a.hidden_cos_min.min(rill_testkit::cosine(&tr.hidden, hw));
        let n = CODEBOOKS * batch * v;
        let lw = &lt[i * n..(i + 1) * n];
        a.lt_cos_min = a.lt_cos_min.min(rill_testkit::cosine(&tr.lt_logits, lw));
        for c in 0..CODEBOOKS {
            a.sampled_equal += (tr.sampled[c] == rec[c]) as u8 as f64;
            a.argmax_equal += (tr.argmax_codes[c] as i64 == amax[i * CODEBOOKS + c]) as u8 as f64;
        }
    }
    let total = (steps * CODEBOOKS) as f64;
    a.sampled_equal /= total;
    a.argmax_equal /= total;
    eprintln!(
        "{}: decoder hidden cosine min 1-{:.2e}, LT logits cosine min 1-{:.2e}, sampled codes equal {:.1} %, EOS-stream argmax equal {:.1} % ({steps} teacher-forced steps)",
        format.name(),
        1.0 - a.hidden_cos_min,
        1.0 - a.lt_cos_min,
        100.0 * a.sampled_equal,
        100.0 * a.argmax_equal
    );
    a
}

/// Asserts `format`'s agreement against its bounds (see [`BF16`]).
fn check(format: WeightFormat, (hidden, lt, sampled): (f64, f64, f64)) {
    let a = agreement(format);
    let name = format.name();
    assert!(
        a.hidden_cos_min >= 1.0 - hidden,
        "{name} hidden cosine {}",
        a.hidden_cos_min
    );
    assert!(
        a.lt_cos_min >= 1.0 - lt,
        "{name} LT cosine {}",
        a.lt_cos_min
    );
    assert!(
        a.sampled_equal >= sampled,
        "{name} sampled codes {}",
        a.sampled_equal
    );
}

#[test]
fn bf16_agrees_with_upstream() {
    check(WeightFormat::Bf16, BF16);
}

#[test]
fn f16_agrees_with_upstream() {
    check(WeightFormat::F16, F16);
}

#[test]
fn int8_agrees_with_upstream() {
    check(WeightFormat::Int8, INT8);
}

/// (1 − hidden cosine, 1 − LT cosine, share of sampled codes equal), bounds just
/// outside what was measured (the same on the AVX-512, AVX2 and portable tiers):
/// bf16 1.20e-5, 6.85e-6, 98.8 % (253/256); f16 1.75e-7, 1.20e-7, 100 %;
/// int8 5.79e-5, 3.72e-5, 99.6 % (255/256).
const BF16: (f64, f64, f64) = (3e-5, 2e-5, 0.97);
const F16: (f64, f64, f64) = (3e-7, 2e-7, 0.99);
const INT8: (f64, f64, f64) = (1.5e-4, 1e-4, 0.98);
