//! Unit tests of the transformer pieces against direct formulas.

use super::*;

fn lcg(seed: &mut u64) -> f32 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
}

fn rand(n: usize, seed: &mut u64) -> Vec<f32> {
    (0..n).map(|_| lcg(seed)).collect()
}

fn matrix(rows: usize, cols: usize, seed: &mut u64) -> (Matrix, Vec<f32>) {
    let v = rand(rows * cols, seed);
    (
        Matrix::from_f32(rows, cols, v.clone(), WeightFormat::F32),
        v,
    )
}

/// The kernel-3 causal conv FFN against the direct formula
/// `y[t] = Σ_j W2_j·gelu(Σ_j' W1_j'·h[t−2+j'])[t−2+j]` with zero padding.
#[test]
fn causal_conv_ffn_matches_direct_formula() {
    let (d, f, k, n) = (8, 16, 3, 5);
    let mut seed = 11;
    let (proj, w1) = matrix(f, d * k, &mut seed);
    let (o_net, w2) = matrix(d, f * k, &mut seed);
    let ff = PositionwiseConvFF {
        proj,
        o_net,
        kernel: k,
    };
    let mut s = LayerScratch::new(n, d, f, k, n, 1, 1);
    let h = rand(n * d, &mut seed);
    s.h[..n * d].copy_from_slice(&h);
    let mut x = vec![0f32; n * d];
    let pool = Pool::new(1);
    ff.forward(Ops::active(), 1, n, &mut x, &mut s, &pool);
    let gelu = |v: f64| {
        0.5 * v * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v * v * v)).tanh())
    };
    let mut hid = vec![0f64; n * f];
    for t in 0..n {
        for o in 0..f {
            let mut acc = 0f64;
            for j in 0..k {
                let Some(src) = (t + j).checked_sub(k - 1) else {
                    continue;
                };
                for i in 0..d {
                    acc += w1[o * d * k + i * k + j] as f64 * h[src * d + i] as f64;
                }
            }
            hid[t * f + o] = gelu(acc);
        }
    }
    for t in 0..n {
        for o in 0..d {
            let mut acc = 0f64;
            for j in 0..k {
                let Some(src) = (t + j).checked_sub(k - 1) else {
                    continue;
                };
                for i in 0..f {
                    acc += w2[o * f * k + i * k + j] as f64 * hid[src * f + i];
                }
            }
            assert!((x[t * d + o] as f64 - acc).abs() < 1e-5, "t {t} o {o}");
        }
    }
}

fn random_layer(
    d: usize,
    heads: usize,
    f: usize,
    xd: usize,
    seed_io: &mut u64,
) -> TransformerLayer {
    let mut seed = *seed_io;
    let norm = |seed: &mut u64| LayerNorm {
        weight: rand(d, seed).iter().map(|v| 1.0 + v).collect(),
    };
    let layer = TransformerLayer {
        norm_self: norm(&mut seed),
        self_attention: SelfAttention {
            qkv_net: matrix(3 * d, d, &mut seed).0,
            o_net: matrix(d, d, &mut seed).0,
            heads,
            head_dim: d / heads,
        },
        cross: Some(CrossBlock {
            norm_xattn_query: norm(&mut seed),
            cross_attention: CrossAttention {
                q_net: matrix(xd, d, &mut seed).0,
                kv_net: matrix(2 * xd, d, &mut seed).0,
                o_net: matrix(d, xd, &mut seed).0,
            },
            norm_xattn_memory: norm(&mut seed),
        }),
        norm_pos_ff: norm(&mut seed),
        pos_ff: PositionwiseConvFF {
            proj: matrix(f, d, &mut seed).0,
            o_net: matrix(d, f, &mut seed).0,
            kernel: 1,
        },
    };
    *seed_io = seed;
    layer
}

/// Two sequences in one call (the second without memory, as the CFG row) equal
/// two separate calls; the memory-less row gets no cross-attention at all.
#[test]
fn sequences_in_one_call_are_independent() {
    let (d, heads, f, xd, t, n) = (64, 2, 32, 8, 4, 3);
    let mut seed = 21;
    let layer = random_layer(d, heads, f, xd, &mut seed);
    let (mk, mv) = (rand(t * xd, &mut seed), rand(t * xd, &mut seed));
    let mem = CrossInput {
        k: &mk,
        v: &mv,
        prior: None,
    };
    let x0 = rand(2 * n * d, &mut seed);
    let pool = Pool::new(2);
    let mut both = x0.clone();
    let mut kv = vec![vec![0f32; n * d]; 4];
    let mut s = LayerScratch::new(2 * n, d, f, 1, n, xd, t);
    {
        let [k0, v0, k1, v1] = &mut kv[..] else {
            unreachable!()
        };
        let mut io = [
            SeqIo {
                past: KvPast::EMPTY,
                new_k: k0,
                new_v: v0,
                cross: Some(mem),
                probs: None,
            },
            SeqIo {
                past: KvPast::EMPTY,
                new_k: k1,
                new_v: v1,
                cross: None,
                probs: None,
            },
        ];
        layer.forward(Ops::active(), n, &mut both, &mut io, &mut s, &pool);
    }
    for (b, cross) in [(0, Some(mem)), (1, None)] {
        let mut one = x0[b * n * d..(b + 1) * n * d].to_vec();
        let (mut k, mut v) = (vec![0f32; n * d], vec![0f32; n * d]);
        let mut io = [SeqIo {
            past: KvPast::EMPTY,
            new_k: &mut k,
            new_v: &mut v,
            cross,
            probs: None,
        }];
        layer.forward(Ops::active(), n, &mut one, &mut io, &mut s, &pool);
        assert_eq!(one, both[b * n * d..(b + 1) * n * d], "sequence {b}");
        assert_eq!(k, kv[2 * b]);
    }
    // Without memory the layer is self-attention + FFN only.
    let mut plain = layer.clone();
    plain.cross = None;
    let mut one = x0[n * d..].to_vec();
    let (mut k, mut v) = (vec![0f32; n * d], vec![0f32; n * d]);
    let mut io = [SeqIo::fresh(&mut k, &mut v)];
    plain.forward(Ops::active(), n, &mut one, &mut io, &mut s, &pool);
    assert_eq!(one, both[n * d..]);
}

/// A layer over n rows at once equals n one-row calls on a host-appended cache.
#[test]
fn rows_at_once_equal_cached_steps() {
    let (d, heads, f, n, xd, t) = (128, 2, 64, 6, 16, 5);
    let mut seed = 5;
    let layer = random_layer(d, heads, f, xd, &mut seed);
    let (mk, mv) = (rand(t * xd, &mut seed), rand(t * xd, &mut seed));
    let prior: Vec<f32> = (0..t).map(|i| if i == 2 { 1.0 } else { 0.1 }).collect();
    let mem = CrossInput {
        k: &mk,
        v: &mv,
        prior: Some(&prior),
    };
    let x0 = rand(n * d, &mut seed);
    let pool = Pool::new(2);
    let mut all = x0.clone();
    let (mut k, mut v) = (vec![0f32; n * d], vec![0f32; n * d]);
    let mut s = LayerScratch::new(n, d, f, 1, n, xd, t);
    let mut p_all = vec![0f32; t];
    let mut io = [SeqIo {
        past: KvPast::EMPTY,
        new_k: &mut k,
        new_v: &mut v,
        cross: Some(mem),
        probs: Some(&mut p_all),
    }];
    layer.forward(Ops::active(), n, &mut all, &mut io, &mut s, &pool);
    let (mut ck, mut cv) = (vec![0f32; n * d], vec![0f32; n * d]);
    let mut s1 = LayerScratch::new(1, d, f, 1, n, xd, t);
    let mut p_one = vec![0f32; t];
    let mut worst = 0f32;
    for r in 0..n {
        let mut row = x0[r * d..(r + 1) * d].to_vec();
        let (past_k, new_k) = ck.split_at_mut(r * d);
        let (past_v, new_v) = cv.split_at_mut(r * d);
        let past = KvPast {
            k: past_k,
            v: past_v,
            rows: r,
        };
        let mut io = [SeqIo {
            past,
            new_k: &mut new_k[..d],
            new_v: &mut new_v[..d],
            cross: Some(mem),
            probs: Some(&mut p_one),
        }];
        layer.forward(Ops::active(), 1, &mut row, &mut io, &mut s1, &pool);
        // Rows at once run the GEMM (one FMA chain per output), one row the GEMV
        // (lane-parallel sums): the same products summed in another order.
        let want = &all[r * d..(r + 1) * d];
        let scale = want.iter().fold(1f32, |m, v| m.max(v.abs()));
        for (a, b) in row.iter().zip(want) {
            let rel = (a - b).abs() / scale;
            worst = worst.max(rel);
            assert!(rel < 2e-6, "row {r}: {a} vs {b} (row scale {scale})");
        }
    }
    eprintln!("rows at once vs cached steps: max |diff| / row scale {worst:e}");
    // The keys: one product of the layer's input, in either summation order.
    let scale = k.iter().fold(1f32, |m, v| m.max(v.abs()));
    let kerr = ck
        .iter()
        .zip(&k)
        .fold(0f32, |m, (a, b)| m.max((a - b).abs()))
        / scale;
    eprintln!("keys: max |diff| / scale {kerr:e}");
    assert!(kerr < 6e-7, "keys differ by {kerr} of their scale");
    for (a, b) in p_one.iter().zip(&p_all) {
        assert!((a - b).abs() < 1e-7);
    }
    // The prior renormalises: probabilities sum to 1 and favour position 2.
    assert!((p_all.iter().sum::<f32>() - 1.0).abs() < 1e-6);
}

#[test]
fn layer_norm_is_bias_free_torch() {
    let ln = LayerNorm {
        weight: vec![2.0; 4],
    };
    let mut o = [0f32; 4];
    ln.apply(&[1.0, 2.0, 3.0, 4.0], &mut o);
    let sd = (1.25f32 + LN_EPS).sqrt();
    for (a, x) in o.iter().zip([1.0f32, 2.0, 3.0, 4.0]) {
        assert!((a - 2.0 * (x - 2.5) / sd).abs() < 1e-6);
    }
    // LN(0) = 0: the CFG row's zero memory has zero keys and values.
    ln.apply(&[0.0; 4], &mut o);
    assert_eq!(o, [0.0; 4]);
}
