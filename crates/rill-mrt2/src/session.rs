//! The host side of streaming generation: a [`Session`] owns every cache, ring
//! position, mask (as a valid-slot count) and the RNG key, and drives the model's
//! pure step functions one 40 ms frame at a time (spec §3.3).
//!
//! Per frame: temporal input from the previous frame's tokens → 12 temporal layers
//! (self-attention over a 41-slot ring, cross-attention over the last 41 encoder
//! frames) → 12 depth steps with a fresh 12-slot cache, each sampled with MLX's
//! Gumbel noise → 12 tokens. The per-frame path allocates nothing.

mod prefill;
mod together;

use std::sync::Arc;

use rill_kernels::Pool;

use crate::attention::KvView;
use crate::conditioning::{Conditioning, CHANNELS};
use crate::encoder::EncoderScratch;
use crate::error::{InvalidValue, ModelError};
use crate::layers::{LayerIo, StackScratch};
use crate::model::{Mrt2, LEVELS};
use crate::sampler::{self, Key, SamplingParams, LEVEL, RESERVED};

pub use prefill::{code_ids, prefill_conditioning, prefill_inputs};

/// Default sampler seed: upstream's hard-coded `key(42)`.
pub const DEFAULT_SEED: u64 = 42;

/// Everything that must persist between frames (and in a session file).
#[derive(Debug, Clone, PartialEq)]
pub struct LmState {
    /// Frames processed so far (the ring write position is `frame mod window`).
    pub frame: u64,
    /// Previous frame's tokens (SOS = all 0 before the first frame).
    pub prev: [u32; LEVELS],
    /// Sampler key, advanced 12× per frame.
    pub key: Key,
    /// Temporal self-attention keys/values: `[layers][window][H·Dh]`.
    pub self_k: Vec<f32>,
    pub self_v: Vec<f32>,
    /// Temporal cross-attention keys/values of the last `window` encoder frames.
    pub cross_k: Vec<f32>,
    pub cross_v: Vec<f32>,
}

/// Optional per-frame recording of intermediates (for `--dump` and parity tests).
#[derive(Debug, Clone, Default)]
pub struct FrameTrace {
    pub encoder_out: Vec<f32>,
    pub temporal_in: Vec<f32>,
    pub temporal_out: Vec<f32>,
    /// Soft-capped logits of each depth step's level: `[12][1024]`.
    pub logits: Vec<f32>,
    /// Gumbel noise at the same ids: `[12][1024]`.
    pub gumbel: Vec<f32>,
    /// Key used by each depth step: `[12]`.
    pub keys: Vec<Key>,
}

struct Scratch {
    x: Vec<f32>,
    row: Vec<f32>,
    temporal: StackScratch,
    new_self: Vec<f32>,
    /// This frame's cross-attention key/value per layer. Depends only on the
    /// encoder output, so it is recomputed only when the conditioning changes.
    cross_kv: Vec<f32>,
    cross_kv_valid: bool,
    encoder: EncoderScratch,
    depth_in: Vec<f32>,
    z: Vec<f32>,
    normed: Vec<f32>,
    depth: StackScratch,
    depth_k: Vec<f32>,
    depth_v: Vec<f32>,
    new_depth: Vec<f32>,
    logits: Vec<f32>,
    gumbel: Vec<f32>,
    select: Vec<f32>,
}

/// A streaming generation session over shared model weights.
pub struct Session {
    model: Arc<Mrt2>,
    sampling: SamplingParams,
    conditioning: Conditioning,
    cond_tokens: [i32; CHANNELS],
    /// Encoder output for `cond_tokens` (the encoder is frame-wise, so it is
    /// recomputed only when the conditioning changes).
    src: Vec<f32>,
    state: LmState,
    scratch: Scratch,
}

impl Session {
    /// A fresh session: SOS previous frame, empty caches, key = `key(seed)`.
    pub fn new(model: Arc<Mrt2>, seed: u64, pool: &Pool) -> Session {
        let cfg = model.config;
        let (t, dp) = (cfg.dims.temporal, cfg.dims.depth);
        let (ti, di) = (cfg.temporal_inner(), cfg.depth_inner());
        let w = cfg.dims.window;
        let ring = t.layers * w * ti;
        let state = LmState {
            frame: 0,
            prev: [0; LEVELS],
            key: sampler::key(seed),
            self_k: vec![0.0; ring],
            self_v: vec![0.0; ring],
            cross_k: vec![0.0; ring],
            cross_v: vec![0.0; ring],
        };
        let scratch = Scratch {
            x: vec![0.0; t.dim],
            row: vec![0.0; t.dim],
            temporal: StackScratch::new(t.dim, ti, t.ffn, w),
            new_self: vec![0.0; t.layers * 2 * ti],
            cross_kv: vec![0.0; t.layers * 2 * ti],
            cross_kv_valid: false,
            encoder: model.encoder().scratch(),
            depth_in: vec![0.0; t.dim],
            z: vec![0.0; dp.dim],
            normed: vec![0.0; dp.dim],
            depth: StackScratch::new(dp.dim, di, dp.ffn, LEVELS),
            depth_k: vec![0.0; dp.layers * LEVELS * di],
            depth_v: vec![0.0; dp.layers * LEVELS * di],
            new_depth: vec![0.0; 2 * di],
            logits: vec![0.0; LEVEL],
            gumbel: vec![0.0; LEVEL],
            select: vec![0.0; LEVEL],
        };
        let mut s = Session {
            src: vec![0.0; cfg.dims.enc_dim],
            model,
            sampling: SamplingParams::default(),
            conditioning: Conditioning::default(),
            cond_tokens: [0; CHANNELS],
            state,
            scratch,
        };
        s.set_conditioning(&Conditioning::default(), pool)
            .expect("the default conditioning is valid");
        s
    }

    pub fn model(&self) -> &Arc<Mrt2> {
        &self.model
    }

    pub fn state(&self) -> &LmState {
        &self.state
    }

    pub fn sampling(&self) -> SamplingParams {
        self.sampling
    }

    /// Sets the sampling from the next step on; rejects invalid values.
    pub fn set_sampling(&mut self, p: SamplingParams) -> Result<(), InvalidValue> {
        p.validate()?;
        self.sampling = p;
        Ok(())
    }

    pub fn conditioning(&self) -> &Conditioning {
        &self.conditioning
    }

    pub fn conditioning_tokens(&self) -> &[i32; CHANNELS] {
        &self.cond_tokens
    }

    /// Encoder output of the current conditioning.
    pub fn encoder_out(&self) -> &[f32] {
        &self.src
    }

    /// Sets the controls used from the next frame on; rejects invalid values
    /// (and then keeps the previous controls).
    pub fn set_conditioning(&mut self, c: &Conditioning, pool: &Pool) -> Result<(), InvalidValue> {
        c.validate()?;
        self.conditioning = c.clone();
        let tokens = c.tokens();
        if tokens == self.cond_tokens && self.scratch.cross_kv_valid {
            return Ok(());
        }
        self.cond_tokens = tokens;
        self.scratch.cross_kv_valid = false;
        self.model.encoder().encode(
            &self.cond_tokens,
            &mut self.src,
            &mut self.scratch.encoder,
            pool,
        );
        Ok(())
    }

    /// Replaces the sampler key (e.g. a new seed mid-stream).
    pub fn set_key(&mut self, key: Key) {
        self.state.key = key;
    }

    /// Restarts from a fresh state (SOS, empty caches) with `key(seed)`; keeps the controls.
    pub fn reset(&mut self, seed: u64) {
        let s = &mut self.state;
        s.frame = 0;
        s.prev = [0; LEVELS];
        s.key = sampler::key(seed);
        for v in [&mut s.self_k, &mut s.self_v, &mut s.cross_k, &mut s.cross_v] {
            v.fill(0.0);
        }
    }

    /// Generates one frame: 12 sampled token ids.
    pub fn step(&mut self, pool: &Pool, trace: Option<&mut FrameTrace>) -> [u32; LEVELS] {
        self.run_frame(None, pool, trace)
    }

    /// Runs one frame teacher-forced on `tokens` (still computing every depth
    /// step's logits along that path; the key advances as in free running).
    pub fn step_forced(
        &mut self,
        tokens: &[u32; LEVELS],
        pool: &Pool,
        trace: Option<&mut FrameTrace>,
    ) -> Result<[u32; LEVELS], ModelError> {
        prefill::check_ids(tokens)?;
        Ok(self.run_frame(Some(tokens), pool, trace))
    }

    /// The temporal step of one frame: embeds `prev`, runs the temporal layers and
    /// appends this frame's keys/values to the caches (the output stays in
    /// `scratch.x`). Neither `prev`, `frame` nor the key changes.
    fn temporal_step(&mut self, pool: &Pool, mut trace: Option<&mut FrameTrace>) {
        self.temporal_begin(pool, trace.as_deref_mut());
        for l in 0..self.model.temporal_layers() {
            self.temporal_layer(l, pool);
        }
        self.temporal_end(trace);
    }

    /// Before the temporal layers: this frame's input (from `prev`) and, when the
    /// conditioning changed, the cross-attention keys/values of its source.
    fn temporal_begin(&mut self, pool: &Pool, trace: Option<&mut FrameTrace>) {
        let model = &*self.model;
        let ti = model.config.temporal_inner();
        let sc = &mut self.scratch;
        model.frame_embedding(&self.state.prev, &mut sc.x, &mut sc.row);
        if let Some(t) = trace {
            t.encoder_out.clone_from(&self.src);
            t.temporal_in.clone_from(&sc.x);
            t.logits.resize(LEVELS * LEVEL, 0.0);
            t.gumbel.resize(LEVELS * LEVEL, 0.0);
            t.keys.clear();
        }
        if !sc.cross_kv_valid {
            for l in 0..model.temporal_layers() {
                model.cross_source_kv(
                    l,
                    &self.src,
                    &mut sc.cross_kv[l * 2 * ti..(l + 1) * 2 * ti],
                    &mut sc.temporal.gemv,
                    pool,
                );
            }
            sc.cross_kv_valid = true;
        }
    }

    /// Temporal layer `l` on `scratch.x`, reading the caches; its new keys/values
    /// wait in `scratch.new_self` for [`Session::temporal_end`].
    fn temporal_layer(&mut self, l: usize, pool: &Pool) {
        let model = &*self.model;
        let mut io = temporal_io(model, &self.state, &mut self.scratch, l);
        model.temporal_layer_each(l, std::slice::from_mut(&mut io), pool);
    }

    /// After every temporal layer has read its cache (trap T11): the host-owned
    /// append. Self-attention writes slot `frame mod W`; the cross-attention window
    /// keeps the last W source frames, which is the same ring discipline.
    fn temporal_end(&mut self, trace: Option<&mut FrameTrace>) {
        let model = &*self.model;
        let cfg = model.config;
        let (w, ti) = (cfg.dims.window, cfg.temporal_inner());
        let ring = w * ti;
        let (st, sc) = (&mut self.state, &self.scratch);
        let slot = (st.frame % w as u64) as usize;
        for l in 0..model.temporal_layers() {
            let dst = l * ring + slot * ti;
            let ns = &sc.new_self[l * 2 * ti..(l + 1) * 2 * ti];
            let nc = &sc.cross_kv[l * 2 * ti..(l + 1) * 2 * ti];
            st.self_k[dst..dst + ti].copy_from_slice(&ns[..ti]);
            st.self_v[dst..dst + ti].copy_from_slice(&ns[ti..]);
            st.cross_k[dst..dst + ti].copy_from_slice(&nc[..ti]);
            st.cross_v[dst..dst + ti].copy_from_slice(&nc[ti..]);
        }
        if let Some(t) = trace {
            t.temporal_out.clone_from(&sc.x);
        }
    }

    fn run_frame(
        &mut self,
        forced: Option<&[u32; LEVELS]>,
        pool: &Pool,
        mut trace: Option<&mut FrameTrace>,
    ) -> [u32; LEVELS] {
        self.temporal_step(pool, trace.as_deref_mut());
        self.depth_from_temporal();
        let mut tokens = [0u32; LEVELS];
        for (k, token) in tokens.iter_mut().enumerate() {
            self.depth_begin(pool);
            for j in 0..self.model.depth_layers() {
                self.depth_layer(k, j, pool);
            }
            *token = self.depth_end(k, forced, pool, trace.as_deref_mut());
        }
        self.frame_end(tokens)
    }

    /// The first depth step's input is the temporal output (each frame's depth
    /// steps start a fresh 12-slot cache).
    fn depth_from_temporal(&mut self) {
        self.scratch.depth_in.copy_from_slice(&self.scratch.x);
    }

    /// Depth step k's input (from the temporal output, then the last token).
    fn depth_begin(&mut self, pool: &Pool) {
        let sc = &mut self.scratch;
        self.model
            .depth_input(&sc.depth_in, &mut sc.z, &mut sc.depth.gemv, pool);
    }

    /// Depth layer `j` of depth step `k`; its key/value goes to slot `k`.
    fn depth_layer(&mut self, k: usize, j: usize, pool: &Pool) {
        let model = &*self.model;
        let mut io = depth_io(model, &mut self.scratch, k, j);
        model.depth_layer_each(j, std::slice::from_mut(&mut io), pool);
        self.depth_keep(k, j);
    }

    /// Depth layer `j`'s key/value of depth step `k` into slot `k` of its cache.
    fn depth_keep(&mut self, k: usize, j: usize) {
        let di = self.model.config.depth_inner();
        let dring = LEVELS * di;
        let sc = &mut self.scratch;
        let dst = j * dring + k * di;
        sc.depth_k[dst..dst + di].copy_from_slice(&sc.new_depth[..di]);
        sc.depth_v[dst..dst + di].copy_from_slice(&sc.new_depth[di..]);
    }

    /// Depth step k's logits and token (sampled, or `forced[k]`); advances the key
    /// and embeds the token as the next step's input.
    fn depth_end(
        &mut self,
        k: usize,
        forced: Option<&[u32; LEVELS]>,
        pool: &Pool,
        trace: Option<&mut FrameTrace>,
    ) -> u32 {
        let model = &*self.model;
        let (st, sc) = (&mut self.state, &mut self.scratch);
        model.level_logits(
            k,
            &sc.z,
            &mut sc.normed,
            &mut sc.logits,
            &mut sc.depth.gemv,
            pool,
        );
        let lo = RESERVED + LEVEL * k;
        let need_noise = self.sampling.temperature != 0.0 || trace.is_some();
        if need_noise {
            sampler::gumbel_slice(st.key, lo, &mut sc.gumbel);
        }
        let id = match forced {
            Some(f) => f[k],
            None => {
                let i =
                    sampler::sample_level(&sc.logits, &sc.gumbel, self.sampling, &mut sc.select);
                (lo + i) as u32
            }
        };
        if let Some(t) = trace {
            t.logits[k * LEVEL..(k + 1) * LEVEL].copy_from_slice(&sc.logits);
            t.gumbel[k * LEVEL..(k + 1) * LEVEL].copy_from_slice(&sc.gumbel);
            t.keys.push(st.key);
        }
        st.key = sampler::split_keep_second(st.key);
        model.embed_token(id, &mut sc.depth_in);
        id
    }

    /// The frame's tokens become the next frame's `prev`.
    fn frame_end(&mut self, tokens: [u32; LEVELS]) -> [u32; LEVELS] {
        self.state.prev = tokens;
        self.state.frame += 1;
        tokens
    }

    /// Replaces the whole state (used by session files and snapshots).
    pub fn restore_state(&mut self, state: LmState) -> Result<(), ModelError> {
        let want = self.state.self_k.len();
        for (name, v) in [
            ("self_k", &state.self_k),
            ("self_v", &state.self_v),
            ("cross_k", &state.cross_k),
            ("cross_v", &state.cross_v),
        ] {
            if v.len() != want {
                return Err(ModelError::SessionFile {
                    path: Default::default(),
                    reason: format!("{name} has {} values, this model needs {want}", v.len()),
                });
            }
        }
        self.state = state;
        Ok(())
    }
}

/// Temporal layer `l`'s view of a session: the residual stream `scratch.x`, the
/// layer's caches (the slots filled so far) and this frame's cross-attention
/// keys/values, its new keys/values going to `scratch.new_self`.
fn temporal_io<'a>(model: &Mrt2, st: &'a LmState, sc: &'a mut Scratch, l: usize) -> LayerIo<'a> {
    let cfg = model.config;
    let (w, ti) = (cfg.dims.window, cfg.temporal_inner());
    let slots = (st.frame as usize).min(w);
    let ring = w * ti;
    let layer = l * ring..(l + 1) * ring;
    let kv = l * 2 * ti..(l + 1) * 2 * ti;
    LayerIo {
        x: &mut sc.x,
        past_self: KvView {
            k: &st.self_k[layer.clone()],
            v: &st.self_v[layer.clone()],
            slots,
        },
        new_kv: &mut sc.new_self[kv.clone()],
        cross: Some((
            &sc.cross_kv[kv],
            KvView {
                k: &st.cross_k[layer.clone()],
                v: &st.cross_v[layer],
                slots,
            },
        )),
        s: &mut sc.temporal,
    }
}

/// Depth layer `j`'s view of a session at depth step `k`: the input `scratch.z`,
/// the layer's `k` keys/values so far, its new ones going to `scratch.new_depth`.
fn depth_io<'a>(model: &Mrt2, sc: &'a mut Scratch, k: usize, j: usize) -> LayerIo<'a> {
    let dring = LEVELS * model.config.depth_inner();
    LayerIo {
        x: &mut sc.z,
        past_self: KvView {
            k: &sc.depth_k[j * dring..(j + 1) * dring],
            v: &sc.depth_v[j * dring..(j + 1) * dring],
            slots: k,
        },
        new_kv: &mut sc.new_depth,
        cross: None,
        s: &mut sc.depth,
    }
}
