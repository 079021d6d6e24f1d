//! The `CausalHiFiGANDecoder` graph (spec §5.2) over channels-last rows:
//!
//! ```text
//! latents ─ pre_conv(k7) ─ 5 × [ HalfSnake ─ ConvTranspose(2r, r, groups=C_out) ─ ResLayer ] ─ HalfSnake ─ post_conv(k3) ─ clamp
//! ResLayer(x) = ((B3(x) + B7(x)) + B11(x)) / 3,   Bk = 3 sequential blocks, dilations 1, 3, 5
//! block(x)    = x + skip_conv_k,1( HalfSnake( input_conv_k,d( HalfSnake(x) ) ) )
//! ```
//!
//! [`Decoder::run_chunk`] decodes `t` frames into the buffers of a [`Buffers`]
//! whose history rows carry the causal context from the previous chunk, so a
//! stream of one-frame chunks and one many-frame chunk compute the same values.
//! The skip activation is fused into the input conv's epilogue and the residual
//! sum into the skip conv's; stages 1–3 run their residual convs as Winograd
//! F(4,4) ([`crate::kernels`]'s `winograd`, [`branches`]).

use rill_kernels::{AVec, Isa, Pool};

mod branches;

use crate::buffers::Rows;
use crate::config::{Config, CODEBOOKS, LATENT_DIM, SAMPLES_PER_FRAME};
use crate::fsq;
use crate::kernels::{
    gemm, half_snake_rows, Blocking, Epilogue, Job, Packed, RowMap, SnakeParams, WinogradConv,
    WinogradScratch,
};
use crate::weights::{ConvTranspose1d, HalfSnake, Weights};

/// The HalfSnake `hs` padded for the kernels' epilogue.
fn snake_params(hs: &HalfSnake) -> SnakeParams {
    SnakeParams::new(hs.channels, &hs.alpha, &hs.alpha_inv)
}

/// One residual block, packed.
struct Block {
    input_act: SnakeParams,
    input_conv: ResConv,
    skip_act: SnakeParams,
    skip_conv: ResConv,
}

/// A residual convolution: a direct implicit GEMM, or (on a stage with
/// [`WINOGRAD_ROWS`] rows per frame and [`WINOGRAD_CHANNELS`] channels or more)
/// Winograd F(4,4).
enum ResConv {
    Direct(Packed),
    Winograd(Box<WinogradConv>),
}

impl ResConv {
    fn history_rows(&self) -> usize {
        match self {
            ResConv::Direct(p) => p.history_rows(),
            ResConv::Winograd(w) => w.history_rows(),
        }
    }

    fn is_half(&self) -> bool {
        matches!(self, ResConv::Direct(p) if p.is_half())
    }
}

/// A grouped transposed conv re-laid as `[phase p][out channel j][4]`:
/// `(W[2j][p], W[2j+1][p], W[2j][p+r], W[2j+1][p+r])`.
struct UpConv {
    stride: usize,
    cin: usize,
    cout: usize,
    taps: Vec<[f32; 4]>,
    bias: Vec<f32>,
}

impl UpConv {
    fn new(u: &ConvTranspose1d) -> UpConv {
        let r = u.stride;
        let mut taps = Vec::with_capacity(r * u.cout);
        for p in 0..r {
            for j in 0..u.cout {
                let w = |c: usize, k: usize| u.weight[c * u.kernel + k];
                taps.push([
                    w(2 * j, p),
                    w(2 * j + 1, p),
                    w(2 * j, p + r),
                    w(2 * j + 1, p + r),
                ]);
            }
        }
        UpConv {
            stride: r,
            cin: u.cin,
            cout: u.cout,
            taps,
            bias: u.bias.clone(),
        }
    }

    /// `n_in` current input rows of `x` (one history row) → `n_in·r` output rows.
    fn run(&self, x: &Rows, n_in: usize, out: &mut [f32]) {
        let (r, ci, co) = (self.stride, self.cin, self.cout);
        for s in 0..n_in {
            let cur = &x.data[x.current(s)..x.current(s) + ci];
            let prev = &x.data[x.current(s) - ci..x.current(s)];
            for p in 0..r {
                let o = &mut out[(s * r + p) * co..(s * r + p + 1) * co];
                let taps = &self.taps[p * co..(p + 1) * co];
                for j in 0..co {
                    let w = taps[j];
                    let y = cur[2 * j] * w[0]
                        + cur[2 * j + 1] * w[1]
                        + prev[2 * j] * w[2]
                        + prev[2 * j + 1] * w[3];
                    o[j] = y + self.bias[j];
                }
            }
        }
    }
}

struct Stage {
    /// The activation in front of the transposed conv.
    act: SnakeParams,
    up: UpConv,
    /// `[kernel j][dilation m]`.
    res: Vec<Vec<Block>>,
    channels: usize,
    /// Rows per frame after this stage's up-sampling.
    rows_per_frame: usize,
}

/// The packed decoder (immutable).
pub(crate) struct Decoder {
    cfg: Config,
    pre_conv: Packed,
    stages: Vec<Stage>,
    post_act: SnakeParams,
    /// `[tap][channel]` and the bias of the 1-channel output conv.
    post_w: Vec<f32>,
    post_b: f32,
}

/// Streaming state (history rows) plus scratch for chunks of up to `max_frames`.
#[derive(Clone)]
pub(crate) struct Buffers {
    pub max_frames: usize,
    pub latents: Rows,
    /// The activated input of each stage's transposed conv (1 history row).
    pub up_in: Vec<Rows>,
    /// `[stage][kernel][dilation]`: the activated input of the input conv and of the skip conv.
    pub input_act: Vec<Vec<Vec<Rows>>>,
    pub skip_act: Vec<Vec<Vec<Rows>>>,
    pub post_in: Rows,
    /// Scratch: stage output (`x`), one buffer per residual branch (the first
    /// ends up holding their mean), pre-clamp audio.
    x: AVec,
    branch: Vec<AVec>,
    /// Winograd scratch, and each branch's input-conv output before its HalfSnake.
    wino: WinogradScratch,
    wino_y: Vec<AVec>,
    pub(crate) audio: AVec,
}

impl Buffers {
    /// Every state buffer with its name, in a stable order.
    pub(crate) fn named_state(&self) -> Vec<(String, &Rows)> {
        let mut v = vec![("pre_conv/input".to_string(), &self.latents)];
        for (i, up) in self.up_in.iter().enumerate() {
            v.push((format!("stage{i}/up_sample_conv/input"), up));
            for (j, chain) in self.input_act[i].iter().enumerate() {
                for (m, rows) in chain.iter().enumerate() {
                    v.push((format!("stage{i}/res{j}.{m}/input_conv/input"), rows));
                    v.push((
                        format!("stage{i}/res{j}.{m}/skip_conv/input"),
                        &self.skip_act[i][j][m],
                    ));
                }
            }
        }
        v.push(("post_conv/input".to_string(), &self.post_in));
        v
    }

    /// As [`Buffers::named_state`], mutable, same order.
    pub(crate) fn state_mut(&mut self) -> Vec<&mut Rows> {
        let mut v = vec![&mut self.latents];
        for ((up, ia), sa) in self
            .up_in
            .iter_mut()
            .zip(&mut self.input_act)
            .zip(&mut self.skip_act)
        {
            v.push(up);
            for (ca, cs) in ia.iter_mut().zip(sa.iter_mut()) {
                for (a, s) in ca.iter_mut().zip(cs.iter_mut()) {
                    v.push(a);
                    v.push(s);
                }
            }
        }
        v.push(&mut self.post_in);
        v
    }
}

/// Receives `(stage name, channels, rows × channels)` of every recorded stage.
pub(crate) type Probe<'a> = &'a mut dyn FnMut(&str, usize, &[f32]);

impl Decoder {
    /// Packs the weights; with `half_panels` (a tier that reads them) the
    /// residual convs of the bandwidth-bound stages are kept as IEEE half when
    /// that is exact ([`Packed::store_as_half`]: bit-identical results).
    pub(crate) fn new(w: &Weights, half_panels: bool) -> Decoder {
        let cfg = w.config.clone();
        let mut rows_per_frame = 1;
        let stages = w
            .stages
            .iter()
            .map(|s| {
                rows_per_frame *= s.up.stride;
                let half = half_panels && rows_per_frame <= HALF_PANEL_ROWS;
                let pack = |c: &crate::weights::Conv1d| {
                    if rows_per_frame >= WINOGRAD_ROWS && c.cout >= WINOGRAD_CHANNELS {
                        return ResConv::Winograd(Box::new(WinogradConv::new(
                            &c.weight, &c.bias, c.cout, c.cin, c.kernel, c.dilation,
                        )));
                    }
                    let mut p = pack(c);
                    if half {
                        p.store_as_half();
                    }
                    ResConv::Direct(p)
                };
                let res = s
                    .res
                    .iter()
                    .map(|chain| {
                        chain
                            .iter()
                            .map(|b| Block {
                                input_act: snake_params(&b.input_activation),
                                input_conv: pack(&b.input_conv),
                                skip_act: snake_params(&b.skip_activation),
                                skip_conv: pack(&b.skip_conv),
                            })
                            .collect()
                    })
                    .collect();
                Stage {
                    act: snake_params(&s.activation),
                    up: UpConv::new(&s.up),
                    res,
                    channels: s.up.cout,
                    rows_per_frame,
                }
            })
            .collect();
        let pc = &w.post_conv;
        let mut post_w = vec![0f32; pc.kernel * pc.cin];
        for c in 0..pc.cin {
            for j in 0..pc.kernel {
                post_w[j * pc.cin + c] = pc.weight[c * pc.kernel + j];
            }
        }
        Decoder {
            cfg,
            pre_conv: pack(&w.pre_conv),
            stages,
            post_act: snake_params(&w.post_activation),
            post_w,
            post_b: pc.bias[0],
        }
    }

    /// Residual convolutions whose weights are streamed as IEEE half.
    pub(crate) fn half_convs(&self) -> usize {
        let blocks = self.stages.iter().flat_map(|s| s.res.iter().flatten());
        blocks
            .map(|b| usize::from(b.input_conv.is_half()) + usize::from(b.skip_conv.is_half()))
            .sum()
    }

    pub(crate) fn buffers(&self, max_frames: usize) -> Buffers {
        let f = max_frames.max(1);
        let mut up_in = Vec::new();
        let (mut input_act, mut skip_act) = (Vec::new(), Vec::new());
        let mut scratch = 0;
        let (mut wino_v, mut wino_m) = (0, 0);
        let mut in_rows = f;
        for s in &self.stages {
            up_in.push(Rows::new(1, in_rows, s.act.channels));
            let n = f * s.rows_per_frame;
            scratch = scratch.max(n * s.channels);
            for b in s.res.iter().flatten() {
                for conv in [&b.input_conv, &b.skip_conv] {
                    if let ResConv::Winograd(w) = conv {
                        let (v, m) = w.scratch_len(s.rows_per_frame);
                        (wino_v, wino_m) = (wino_v.max(v), wino_m.max(m));
                    }
                }
            }
            let mk = |pick: fn(&Block) -> &ResConv| -> Vec<Vec<Rows>> {
                s.res
                    .iter()
                    .map(|chain| {
                        chain
                            .iter()
                            .map(|b| Rows::new(pick(b).history_rows(), n, s.channels))
                            .collect()
                    })
                    .collect()
            };
            input_act.push(mk(|b| &b.input_conv));
            skip_act.push(mk(|b| &b.skip_conv));
            in_rows = n;
        }
        let cf = self.post_act.channels;
        Buffers {
            max_frames: f,
            latents: Rows::new(self.pre_conv.history_rows(), f, LATENT_DIM),
            up_in,
            input_act,
            skip_act,
            post_in: Rows::new(self.post_w.len() / cf - 1, f * SAMPLES_PER_FRAME, cf),
            x: AVec::zeros(scratch.max(f * self.cfg.base_channels)),
            branch: (0..self.cfg.resblock_kernels.len())
                .map(|_| AVec::zeros(scratch))
                .collect(),
            wino: WinogradScratch::new((wino_v, wino_m)),
            wino_y: (0..self.cfg.resblock_kernels.len())
                .map(|_| AVec::zeros(if wino_v > 0 { scratch } else { 0 }))
                .collect(),
            audio: AVec::zeros(f * SAMPLES_PER_FRAME),
        }
    }

    /// Decodes `frames` (checked codes, at most `b.max_frames`) into `b.audio`
    /// (pre-clamp, `1024·frames` samples) and advances the history.
    pub(crate) fn run_chunk(
        &self,
        isa: Isa,
        frames: &[[u32; CODEBOOKS]],
        b: &mut Buffers,
        pool: &Pool,
        probe: Probe<'_>,
    ) {
        let t = frames.len();
        assert!(t <= b.max_frames, "chunk larger than its buffers");
        // FSQ → pre_conv → HalfSnake of stage 0.
        for (f, codes) in frames.iter().enumerate() {
            let o = b.latents.current(f);
            let row: &mut [f32; LATENT_DIM] = (&mut b.latents.data[o..o + LATENT_DIM])
                .try_into()
                .expect("32 latents");
            fsq::dequantize(codes, row);
        }
        let c0 = self.cfg.base_channels;
        let job = Job {
            w: &self.pre_conv,
            input: &b.latents.data,
            rows: RowMap::strided(t, 0, LATENT_DIM, 0, c0),
            epi: Epilogue::Store,
        };
        gemm(isa, Blocking::Causal, &[job], &mut b.x, pool);
        probe("pre_conv", c0, &b.x[..t * c0]);
        let o = b.up_in[0].current(0);
        half_snake_rows(
            isa,
            &self.stages[0].act,
            &b.x,
            c0,
            &mut b.up_in[0].data[o..],
            c0,
            t,
            pool,
        );

        let mut n_in = t;
        for (i, s) in self.stages.iter().enumerate() {
            let c = s.channels;
            let n = n_in * s.up.stride;
            s.up.run(&b.up_in[i], n_in, &mut b.x[..n * c]);
            probe(STAGE_UP[i], c, &b.x[..n * c]);
            // The branches (kernels 3, 7, 11) are independent: their m-th blocks
            // run side by side, one pool dispatch per conv.
            let nb = s.res.len();
            for br in &mut b.branch {
                br[..n * c].copy_from_slice(&b.x[..n * c]);
            }
            for m in 0..s.res[0].len() {
                for j in 0..nb {
                    let a = &mut b.input_act[i][j][m];
                    let ao = a.current(0);
                    half_snake_rows(
                        isa,
                        &s.res[j][m].input_act,
                        &b.branch[j],
                        c,
                        &mut a.data[ao..],
                        c,
                        n,
                        pool,
                    );
                }
                self.block_convs(isa, i, m, t, b, pool);
                if i == 4 && m <= 1 {
                    probe(
                        if m == 0 { "rb_in" } else { "rb_out" },
                        c,
                        &b.branch[0][..n * c],
                    );
                    if m == 1 {
                        let (a, sk) = (&b.input_act[i][0][m], &b.skip_act[i][0][m]);
                        let (ao, so) = (a.current(0), sk.current(0));
                        probe("rb_after_input_act", c, &a.data[ao..ao + n * c]);
                        probe("rb_after_skip_act", c, &sk.data[so..so + n * c]);
                    }
                }
            }
            // ((B3 + B7) + B11) / 3, as Python's sum() and true division.
            let (first, rest) = b.branch.split_at_mut(1);
            let acc = &mut first[0][..n * c];
            for br in rest.iter() {
                for (x, y) in acc.iter_mut().zip(&br[..n * c]) {
                    *x += *y;
                }
            }
            let k = nb as f32;
            for x in acc.iter_mut() {
                *x /= k;
            }
            probe(STAGE_RES[i], c, &b.branch[0][..n * c]);
            let (next_act, next) = match self.stages.get(i + 1) {
                Some(ns) => (&ns.act, &mut b.up_in[i + 1]),
                None => (&self.post_act, &mut b.post_in),
            };
            let o = next.current(0);
            half_snake_rows(
                isa,
                next_act,
                &b.branch[0],
                c,
                &mut next.data[o..],
                c,
                n,
                pool,
            );
            n_in = n;
        }

        // post_conv (27 → 1, k3) on the activated rows, then clamp(-1, 1).
        let p = &b.post_in;
        let cf = p.c;
        let taps = self.post_w.len() / cf;
        for (r, out) in b.audio[..n_in].iter_mut().enumerate() {
            let mut y = 0f32;
            for j in 0..taps {
                let x = &p.data[(r + j) * cf..(r + j + 1) * cf];
                let w = &self.post_w[j * cf..(j + 1) * cf];
                for (a, b) in x.iter().zip(w) {
                    y += a * b;
                }
            }
            *out = y + self.post_b;
        }
        probe("post_conv", 1, &b.audio[..n_in]);
        for v in &mut b.audio[..n_in] {
            // NaN stays NaN (torch.clamp propagates it).
            *v = v.clamp(-1.0, 1.0);
        }

        // The last rows of every input buffer become its history.
        b.latents.shift_history(t);
        let mut rows = t;
        for (i, s) in self.stages.iter().enumerate() {
            b.up_in[i].shift_history(rows);
            rows *= s.up.stride;
            for (ca, cs) in b.input_act[i].iter_mut().zip(b.skip_act[i].iter_mut()) {
                for (a, s) in ca.iter_mut().zip(cs.iter_mut()) {
                    a.shift_history(rows);
                    s.shift_history(rows);
                }
            }
        }
        b.post_in.shift_history(rows);
    }
}

const STAGE_UP: [&str; 5] = ["up0", "up1", "up2", "up3", "up4"];
const STAGE_RES: [&str; 5] = ["res0", "res1", "res2", "res3", "res4"];

/// Stages with at least this many rows per frame and channels run their residual
/// convs as Winograd F(4,4): stages 1–3 (216, 108, 54 channels). Stage 0 (8 rows
/// per frame) is bound by weight bandwidth, and F(4,4) reads ≈ 2× the weights; at
/// stage 4's 27 channels the point GEMMs (`k = G·27`) are too short and the
/// transforms cost what they save (measured slower on AVX2).
const WINOGRAD_ROWS: usize = 64;
const WINOGRAD_CHANNELS: usize = 48;

/// Stages with at most this many rows per frame (stage 0: 8) read each weight for
/// only that many products, so they are bound by weight bandwidth.
const HALF_PANEL_ROWS: usize = 8;

fn pack(c: &crate::weights::Conv1d) -> Packed {
    Packed::conv(&c.weight, &c.bias, c.cout, c.cin, c.kernel, c.dilation)
}
