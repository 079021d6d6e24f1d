//! The text-to-audio mapper (`mapper.tflite`, DBraun's `Mapper`): a one-step DiT that
//! moves a text embedding toward the audio embeddings' region. A noise vector becomes
//! 12 tokens of 256; 8 layers of RMSNorm + adaptive LayerNorm conditioned on
//! `[c, c, text]`, RoPE attention with one learned key/value sink per head (the sink's
//! logit uses the unscaled query: an export quirk kept), logits capped at
//! `30·tanh(x/30)`, tanh GELU; then back to 768 floats. Callers L2-normalise the
//! result ([`crate::MusicCoCa`] does).

use rill_kernels::matmul::MatmulScratch;

use crate::tower::{softmax, Ctx, Linear, DIM};
use crate::{Error, Weights};

const LAYERS: usize = 8;
const TOKENS: usize = 12;
const WIDTH: usize = 256;
const HEADS: usize = 8;
const HEAD_DIM: usize = 64;
const FFN: usize = 1024;
const CONTEXT: usize = 1024;
const PREFIX: usize = 128;
const CAP: f32 = 30.0;
const RMS_EPS: f64 = 1e-6;

struct Layer {
    norm1: Vec<f32>,
    cond1: Linear,
    qkv: Linear,
    k_sink: Vec<f32>,
    v_sink: Vec<f32>,
    post: Linear,
    norm2: Vec<f32>,
    cond2: Linear,
    ffn1: Linear,
    ffn2: Linear,
}

/// The mapper's weights.
pub struct Mapper {
    context: Vec<f32>,
    input_proj: Linear,
    output_proj: Linear,
    layers: Vec<Layer>,
    /// RoPE's `[cos; sin]` per position and frequency.
    rope: Vec<(f32, f32)>,
}

fn part(t: &[f32], i: usize) -> Vec<f32> {
    let n = t.len() / LAYERS;
    t[i * n..(i + 1) * n].to_vec()
}

impl Mapper {
    /// Takes `mapper.*` from `w`.
    pub fn take(w: &mut Weights) -> Result<Mapper, Error> {
        let l = LAYERS;
        let mut t = |name: &str, shape: &[usize]| -> Result<Vec<f32>, Error> {
            w.take(
                &format!("mapper.layers.{name}"),
                &[&[l][..], shape].concat(),
            )
        };
        let c1k = t("cond1.kernel", &[CONTEXT, 2, WIDTH])?;
        let c1b = t("cond1.bias", &[2, WIDTH])?;
        let c2k = t("cond2.kernel", &[CONTEXT, 2, WIDTH])?;
        let c2b = t("cond2.bias", &[2, WIDTH])?;
        let n1 = t("norm1.scale", &[WIDTH])?;
        let n2 = t("norm2.scale", &[WIDTH])?;
        let qkv = t("qkv.kernel", &[WIDTH, 3, HEADS, HEAD_DIM])?;
        let ks = t("k_sink", &[1, HEADS, HEAD_DIM])?;
        let vs = t("v_sink", &[1, HEADS, HEAD_DIM])?;
        let post = t("post.kernel", &[WIDTH, HEADS, HEAD_DIM])?;
        let f1k = t("ffn1.kernel", &[WIDTH, FFN])?;
        let f1b = t("ffn1.bias", &[FFN])?;
        let f2k = t("ffn2.kernel", &[FFN, WIDTH])?;
        let f2b = t("ffn2.bias", &[WIDTH])?;
        let layers = (0..l)
            .map(|i| Layer {
                norm1: part(&n1, i),
                cond1: Linear::in_major(2 * WIDTH, CONTEXT, &part(&c1k, i), Some(part(&c1b, i))),
                qkv: Linear::in_major(3 * HEADS * HEAD_DIM, WIDTH, &part(&qkv, i), None),
                k_sink: part(&ks, i),
                v_sink: part(&vs, i),
                post: Linear::out_major(WIDTH, HEADS * HEAD_DIM, part(&post, i), None),
                norm2: part(&n2, i),
                cond2: Linear::in_major(2 * WIDTH, CONTEXT, &part(&c2k, i), Some(part(&c2b, i))),
                ffn1: Linear::in_major(FFN, WIDTH, &part(&f1k, i), Some(part(&f1b, i))),
                ffn2: Linear::in_major(WIDTH, FFN, &part(&f2k, i), Some(part(&f2b, i))),
            })
            .collect();
        let half = HEAD_DIM / 2;
        let mut rope = Vec::with_capacity(TOKENS * half);
        for pos in 0..TOKENS {
            for i in 0..half {
                // f32 throughout, as upstream: 10000^(−i/half), then position × it.
                let inv = 10_000f32.powf(-(i as f32) / half as f32);
                let angle = pos as f32 * inv;
                rope.push((angle.cos(), angle.sin()));
            }
        }
        Ok(Mapper {
            context: w.take("mapper.context", &[PREFIX])?,
            input_proj: Linear::in_major(
                TOKENS * WIDTH,
                DIM,
                &w.take("mapper.input_proj.kernel", &[DIM, TOKENS * WIDTH])?,
                Some(w.take("mapper.input_proj.bias", &[TOKENS * WIDTH])?),
            ),
            output_proj: Linear::in_major(
                DIM,
                TOKENS * WIDTH,
                &w.take("mapper.output_proj.kernel", &[TOKENS * WIDTH, DIM])?,
                Some(w.take("mapper.output_proj.bias", &[DIM])?),
            ),
            layers,
            rope,
        })
    }

    /// The tokens after `input_proj` (`[12][256]`).
    pub fn first_tokens(&self, ctx: Ctx, noise: &[f32], s: &mut MatmulScratch) -> Vec<f32> {
        self.input_proj.apply(ctx, noise, s)
    }

    /// The mapped embedding of `text` (768) driven by `noise` (768), not normalised;
    /// with `layers_run` < 8, the tokens after that many layers instead (tests).
    pub fn run(
        &self,
        ctx: Ctx,
        text: &[f32],
        noise: &[f32],
        layers_run: usize,
        s: &mut MatmulScratch,
    ) -> Vec<f32> {
        let mut cond_in = Vec::with_capacity(CONTEXT);
        cond_in.extend_from_slice(&self.context);
        cond_in.extend_from_slice(&self.context);
        cond_in.extend_from_slice(text);
        let mut x = self.first_tokens(ctx, noise, s);
        for layer in &self.layers[..layers_run.min(LAYERS)] {
            self.layer(ctx, layer, &cond_in, &mut x, s);
        }
        if layers_run < LAYERS {
            return x;
        }
        self.output_proj.apply(ctx, &x, s)
    }

    fn layer(&self, ctx: Ctx, l: &Layer, cond_in: &[f32], x: &mut [f32], s: &mut MatmulScratch) {
        let qkv_w = HEADS * HEAD_DIM;
        let cond1 = l.cond1.apply(ctx, cond_in, s);
        let h = ada_norm(x, &l.norm1, &cond1);
        let mut qkv = l.qkv.apply(ctx, &h, s);
        for t in 0..TOKENS {
            for j in 0..2 {
                for n in 0..HEADS {
                    let o = t * 3 * qkv_w + j * qkv_w + n * HEAD_DIM;
                    self.rotate(t, &mut qkv[o..o + HEAD_DIM]);
                }
            }
        }
        let mut att = vec![0.0f32; TOKENS * qkv_w];
        let mut logits = [0.0f32; TOKENS + 1];
        for t in 0..TOKENS {
            for n in 0..HEADS {
                let q = &qkv[t * 3 * qkv_w + n * HEAD_DIM..][..HEAD_DIM];
                let ks = &l.k_sink[n * HEAD_DIM..][..HEAD_DIM];
                logits[0] = dot(q, ks);
                for u in 0..TOKENS {
                    let k = &qkv[u * 3 * qkv_w + qkv_w + n * HEAD_DIM..][..HEAD_DIM];
                    let mut acc = 0.0f32;
                    for (a, b) in q.iter().zip(k) {
                        acc += (a / 8.0) * b;
                    }
                    logits[u + 1] = acc;
                }
                for v in logits.iter_mut() {
                    *v = CAP * (*v / CAP).tanh();
                }
                softmax(&mut logits);
                let out = &mut att[t * qkv_w + n * HEAD_DIM..][..HEAD_DIM];
                let vs = &l.v_sink[n * HEAD_DIM..][..HEAD_DIM];
                for (o, v) in out.iter_mut().zip(vs) {
                    *o = logits[0] * v;
                }
                for u in 0..TOKENS {
                    let v = &qkv[u * 3 * qkv_w + 2 * qkv_w + n * HEAD_DIM..][..HEAD_DIM];
                    for (o, vv) in out.iter_mut().zip(v) {
                        *o += logits[u + 1] * vv;
                    }
                }
            }
        }
        let o = l.post.apply(ctx, &att, s);
        add(x, &o);
        let cond2 = l.cond2.apply(ctx, cond_in, s);
        let h = ada_norm(x, &l.norm2, &cond2);
        let mut f = l.ffn1.apply(ctx, &h, s);
        for v in f.iter_mut() {
            *v = gelu_tanh(*v);
        }
        let o = l.ffn2.apply(ctx, &f, s);
        add(x, &o);
    }

    /// Half-split RoPE of one head's 64 values at position `t`.
    fn rotate(&self, t: usize, x: &mut [f32]) {
        let half = HEAD_DIM / 2;
        for i in 0..half {
            let (c, s) = self.rope[t * half + i];
            let (a, b) = (x[i], x[i + half]);
            x[i] = a * c - b * s;
            x[i + half] = b * c + a * s;
        }
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

/// RMSNorm (ε 1e-6) with `scale`, then `h·(1 + cond_scale) + cond_shift` per token.
fn ada_norm(x: &[f32], scale: &[f32], cond: &[f32]) -> Vec<f32> {
    let (cs, csh) = cond.split_at(WIDTH);
    let mut h = vec![0.0f32; x.len()];
    for (xr, hr) in x.chunks_exact(WIDTH).zip(h.chunks_exact_mut(WIDTH)) {
        let ms = xr.iter().map(|&v| v as f64 * v as f64).sum::<f64>() / WIDTH as f64;
        let r = (1.0 / (ms + RMS_EPS).sqrt()) as f32;
        for i in 0..WIDTH {
            hr[i] = (xr[i] * r * scale[i]) * (cs[i] + 1.0) + csh[i];
        }
    }
    h
}

/// GELU, tanh form, in f64.
fn gelu_tanh(x: f32) -> f32 {
    let a = x as f64;
    let inner = (2.0 / std::f64::consts::PI).sqrt() * (a + 0.044715 * a * a * a);
    (0.5 * a * (1.0 + inner.tanh())) as f32
}
