//! Causal multi-head self-attention: the per-head arithmetic, on the calling thread
//! for a step's row, spread over the pool for a prefill or the encoder.

use rill_kernels::{ops, DisjointOut, Matrix, Ops, Pool};

use super::{linear, project_residual, LayerScratch, SeqIo};
use crate::error::Result;
use crate::weights::Weights;

/// Causal multi-head self-attention (`tr.py:188-252`): fused `qkv_net` with Q, K, V
/// row blocks, scores `Q·Kᵀ·Dh^-½`, softmax, `o_net`.
#[derive(Debug, Clone)]
pub struct SelfAttention {
    pub qkv_net: Matrix,
    pub o_net: Matrix,
    pub heads: usize,
    pub head_dim: usize,
}

impl SelfAttention {
    pub(super) fn load(w: &mut Weights, p: &str, heads: usize) -> Result<Self> {
        let qkv_net = linear(w, &format!("{p}.qkv_net.weight"))?;
        let o_net = linear(w, &format!("{p}.o_net.weight"))?;
        let head_dim = o_net.cols() / heads;
        Ok(SelfAttention {
            qkv_net,
            o_net,
            heads,
            head_dim,
        })
    }

    /// `x[r] += o_net(attn(h[r]))` for the `n` rows of each sequence; writes their K/V.
    pub(super) fn forward(
        &self,
        ops: Ops,
        n: usize,
        x: &mut [f32],
        seqs: &mut [SeqIo<'_>],
        s: &mut LayerScratch,
        pool: &Pool,
    ) {
        let (hn, dh) = (self.heads, self.head_dim);
        let hd = hn * dh;
        let d = self.o_net.rows();
        let bn = seqs.len() * n;
        ops.matmul(
            &self.qkv_net,
            &s.h[..bn * d],
            &mut s.qkv[..bn * 3 * hd],
            &mut s.products,
            pool,
        );
        for (b, io) in seqs.iter_mut().enumerate() {
            for r in 0..n {
                let row = &s.qkv[(b * n + r) * 3 * hd..(b * n + r + 1) * 3 * hd];
                io.new_k[r * hd..(r + 1) * hd].copy_from_slice(&row[hd..2 * hd]);
                io.new_v[r * hd..(r + 1) * hd].copy_from_slice(&row[2 * hd..]);
            }
        }
        let heads = Heads {
            ops,
            qkv: &s.qkv,
            n,
            heads: hn,
            head_dim: dh,
        };
        if n >= PARALLEL_ROWS {
            // A prefill or the encoder: (sequence, head) pairs as pool tasks, each
            // writing its head's columns of the context rows; the same arithmetic
            // per head as one at a time.
            let seqs = &*seqs;
            let ctx = DisjointOut::new(&mut s.ctx[..bn * hd]);
            pool.run(seqs.len() * hn, &|task| {
                let (b, h) = (task / hn, task % hn);
                let mut scores = vec![0f32; seqs[b].past.rows + n];
                for r in 0..n {
                    let co = (b * n + r) * hd + h * dh;
                    // SAFETY: the head's `dh` context values of row r of sequence b
                    // are inside `s.ctx[..bn·hd]` and written by this task only.
                    let out = unsafe { std::slice::from_raw_parts_mut(ctx.at(co), dh) };
                    heads.attend(&seqs[b], b, r, h, &mut scores, out);
                }
            });
        } else {
            for (b, io) in seqs.iter().enumerate() {
                for r in 0..n {
                    for h in 0..hn {
                        let co = (b * n + r) * hd + h * dh;
                        heads.attend(io, b, r, h, &mut s.scores, &mut s.ctx[co..co + dh]);
                    }
                }
            }
        }
        project_residual(
            ops,
            &self.o_net,
            &s.ctx[..bn * hd],
            &mut x[..bn * d],
            &mut s.out[..bn * d],
            &mut s.products,
            pool,
        );
    }
}

/// Rows per sequence from which [`SelfAttention::forward`] spreads its heads over
/// the pool (a prefill, the encoder); a decoder step's one row stays on its thread.
const PARALLEL_ROWS: usize = 16;

/// What every head of one [`SelfAttention::forward`] call reads.
#[derive(Clone, Copy)]
struct Heads<'a> {
    ops: Ops,
    /// `[sequence·n + row][Q | K | V]` of this call's rows.
    qkv: &'a [f32],
    n: usize,
    heads: usize,
    head_dim: usize,
}

impl Heads<'_> {
    /// Head `h` of row `r` of sequence `b` (`io`): `out = softmax(q·Kᵀ·Dh^-½)·V` over
    /// the past keys and this call's rows up to `r`; `scores` holds at least
    /// `io.past.rows + r + 1` values.
    fn attend(
        &self,
        io: &SeqIo<'_>,
        b: usize,
        r: usize,
        h: usize,
        scores: &mut [f32],
        out: &mut [f32],
    ) {
        let (ops, dh) = (self.ops, self.head_dim);
        let hd = self.heads * dh;
        let past = io.past;
        let keys = past.rows + r + 1;
        let qo = (b * self.n + r) * 3 * hd;
        let q = &self.qkv[qo + h * dh..qo + (h + 1) * dh];
        // Keys 0..past.rows are past rows, the rest this call's new rows.
        let sc = &mut scores[..keys];
        let (sp, sn) = sc.split_at_mut(past.rows);
        ops.dots(q, past.k, hd, h * dh, sp);
        ops.dots(q, io.new_k, hd, h * dh, sn);
        let scale = 1.0 / (dh as f32).sqrt();
        for o in sc.iter_mut() {
            *o *= scale;
        }
        ops::softmax(sc);
        out.fill(0.0);
        let (pp, pn) = sc.split_at(past.rows);
        ops.axpys(pp, past.v, hd, h * dh, out);
        ops.axpys(pn, io.new_v, hd, h * dh, out);
    }
}
