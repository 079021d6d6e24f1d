//! One utterance, frame by frame (spec §4.2-§4.6, §4.10). The session owns every
//! piece of state — decoder KV cache, cross-attention memory, attention prior, LT
//! cache, RNG — and calls the model's pure step functions.
//!
//! `new` runs the per-utterance setup: encoder, cross-attention memory, and the
//! prefill of the 110 baked-context rows plus the BOS frame (step 0's decoder call).
//! Each `step` then samples one frame from the newest decoder hidden state and, from
//! the second frame on, first runs the decoder on the previous frame. Everything a
//! step needs is allocated in `new` (cache capacity for `max_decoder_steps`).

use std::sync::Arc;

use rill_kernels::Pool;

use crate::config::InferenceParams;
use crate::error::{MagpieError, Result};
use crate::layers::{KvPast, LayerScratch, SeqIo};
use crate::model::{CrossMemory, DecoderCache, DecoderOut, Model, PriorUse, MAX_BATCH};
use crate::prior::AttentionPrior;
use crate::rng::Mt19937;
use crate::sampler::{argmax, mask_forbidden, pick, softmax_temperature, top_k};
use rill_kernels::matmul::MatmulScratch;

/// Codebooks per frame of the v2602 model.
pub const CODEBOOKS: usize = 8;
/// Temperature and top-k of the EOS stream (`sample_codes_from_logits(temperature=0.01, topk=1)`).
const EOS_TEMPERATURE: f32 = 0.01;

/// Intermediate values of one step, for parity tests (allocates; not for the hot path).
#[derive(Debug, Clone, Default)]
pub struct StepTrace {
    /// Decoder hidden after `norm_out` that produced this frame, `batch × D`.
    pub hidden: Vec<f32>,
    /// Raw LT head outputs, `8 × batch × 2024` (before CFG, masks, top-k).
    pub lt_logits: Vec<f32>,
    /// Raw `final_proj` outputs, `batch × 8·2024`.
    pub final_logits: Vec<f32>,
    /// Cross-attention probabilities of the conditional row, `layers × T`.
    pub probs: Vec<f32>,
    /// Text position the prior attended after this frame's decoder call.
    pub attended: Option<usize>,
    /// The EOS stream's codes (argmax of the mixed `final_proj` logits).
    pub argmax_codes: [u16; CODEBOOKS],
    /// The LT's sampled codes (before any forcing).
    pub sampled: [u16; CODEBOOKS],
}

/// One utterance being synthesised.
pub struct Session {
    model: Arc<Model>,
    params: InferenceParams,
    batch: usize,
    text_len: usize,
    mem: CrossMemory,
    cache: DecoderCache,
    out: DecoderOut,
    scratch: LayerScratch,
    x: Vec<f32>,
    hidden: Vec<f32>,
    probs: Vec<f32>,
    prior: Option<AttentionPrior>,
    attended: Option<usize>,
    lt_k: Vec<f32>,
    lt_v: Vec<f32>,
    lt_x: Vec<f32>,
    lt_scratch: LayerScratch,
    /// The products outside the layers (LT input and heads, `final_proj`).
    products: MatmulScratch,
    logits: Vec<f32>,
    final_logits: Vec<f32>,
    mixed: Vec<f32>,
    work: Vec<f32>,
    topk_scratch: Vec<f32>,
    noise: Vec<f32>,
    rng: Mt19937,
    prev: [u16; CODEBOOKS],
    step: usize,
    finished: bool,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("step", &self.step)
            .field("finished", &self.finished)
            .finish()
    }
}

impl Session {
    /// Sets up an utterance: `token_ids` are the text front end's ids *without* EOS
    /// (the session appends it; no BOS, trap T8), `speaker` a baked context index,
    /// `seed` the sampler seed (`torch.manual_seed`).
    pub fn new(
        model: Arc<Model>,
        token_ids: &[u32],
        speaker: usize,
        params: InferenceParams,
        seed: u64,
        pool: &Pool,
    ) -> Result<Session> {
        let c = model.config.clone();
        params.validate(&c)?;
        if c.codebooks != CODEBOOKS {
            return Err(MagpieError::invalid(
                "codebooks",
                c.codebooks,
                "8 (the v2602 model; frame stacking is not supported)",
            ));
        }
        if let Some(&t) = token_ids.iter().find(|&&t| t >= c.text_eos() - 1) {
            return Err(MagpieError::invalid(
                "text token id",
                t,
                format!(
                    "below {} (the text BOS/EOS ids are added by the session)",
                    c.text_eos() - 1
                ),
            ));
        }
        let mut tokens = token_ids.to_vec();
        tokens.push(c.text_eos());
        model.check_tokens(&tokens)?;
        let (ctx, ctx_len) = model.context(speaker)?;
        if ctx_len != c.context_frames {
            return Err(MagpieError::invalid(
                "baked_context_embedding_len",
                ctx_len,
                format!(
                    "{} (shorter contexts need a context mask, not implemented)",
                    c.context_frames
                ),
            ));
        }
        let (d, t) = (c.dim, tokens.len());
        let batch = if params.use_cfg { 2 } else { 1 };
        let mut enc = vec![0f32; t * d];
        model.encode(&tokens, &mut enc, pool)?;
        let mem = model.cross_memory(&enc, pool);

        // Prefill: [context ; BOS frame] for the conditional row; the CFG row's
        // [zeros ; BOS] prefill is the model's shared constant.
        let rows = c.context_frames + 1;
        let capacity = rows + params.max_decoder_steps;
        let mut cache = DecoderCache::new(&c, batch, capacity);
        let mut x = vec![0f32; rows * d];
        model.prefill_input(Some(ctx), &mut x);
        let mut pre = DecoderOut::new(&c, 1, rows, t);
        let mut pre_scratch = LayerScratch::new(rows, d, c.ffn, 1, rows, c.xattn_dim, t);
        let empty = DecoderCache::new(&c, 1, 0);
        model.decoder_forward(
            rows,
            &mut x,
            &empty,
            Some(&mem),
            None,
            &mut pre,
            &mut pre_scratch,
            pool,
        );
        let mut hidden = pre.hidden.clone();
        if params.use_cfg {
            let uncond = model.unconditional_prefill(pool);
            cache.append_parts(&[&pre, uncond])?;
            hidden.extend_from_slice(&uncond.hidden);
        } else {
            cache.append(&pre)?;
        }

        let prior = params.apply_attention_prior.then(|| {
            AttentionPrior::new(
                t,
                params.attention_prior_epsilon,
                params.attention_prior_lookahead_window,
            )
        });
        let (v, ld) = (c.codebook_vocab, c.lt_dim);
        let mut s = Session {
            model: model.clone(),
            batch,
            text_len: t,
            mem,
            cache,
            out: DecoderOut::new(&c, batch, 1, t),
            scratch: LayerScratch::new(batch, d, c.ffn, 1, capacity, c.xattn_dim, t),
            x: vec![0.0; batch * d],
            hidden,
            probs: pre.probs.clone(),
            prior,
            attended: None,
            lt_k: vec![0.0; batch * c.lt_positions * ld],
            lt_v: vec![0.0; batch * c.lt_positions * ld],
            lt_x: vec![0.0; batch * ld],
            lt_scratch: LayerScratch::new(batch, ld, c.lt_ffn, 1, c.lt_positions, 1, 1),
            products: MatmulScratch::new(),
            logits: vec![0.0; batch * v],
            final_logits: vec![0.0; batch * CODEBOOKS * v],
            mixed: vec![0.0; CODEBOOKS * v],
            work: vec![0.0; v],
            topk_scratch: vec![0.0; v],
            noise: vec![0.0; batch * v],
            rng: Mt19937::new(seed),
            prev: [c.audio_bos(); CODEBOOKS],
            step: 0,
            finished: false,
            params,
        };
        s.update_prior(0);
        Ok(s)
    }

    /// Frames produced so far.
    pub fn frames(&self) -> usize {
        self.step
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Text length including EOS.
    pub fn text_len(&self) -> usize {
        self.text_len
    }

    /// The next frame (8 codes), or `None` once EOS was sampled (that frame is dropped,
    /// trap T13) or `max_decoder_steps` frames were produced.
    pub fn step(&mut self, pool: &Pool) -> Result<Option<[u16; CODEBOOKS]>> {
        self.step_with(pool, None, None)
    }

    /// [`Session::step`] with optional teacher forcing (`forced` replaces the sampled
    /// frame, the RNG is consumed as usual) and an optional trace of the intermediates.
    pub fn step_with(
        &mut self,
        pool: &Pool,
        forced: Option<&[u16; CODEBOOKS]>,
        mut trace: Option<&mut StepTrace>,
    ) -> Result<Option<[u16; CODEBOOKS]>> {
        if self.finished {
            return Ok(None);
        }
        if self.step > 0 {
            self.decode_previous(pool)?;
        }
        if let Some(tr) = trace.as_deref_mut() {
            tr.hidden = self.hidden.clone();
            tr.probs = self.probs.clone();
            tr.attended = self.attended;
        }
        let frame = self.sample_frame(pool, forced, trace.as_deref_mut());
        let eos_codes = self.eos_stream(pool, trace);
        let eos = self.model.config.audio_eos();
        let frame = match forced {
            Some(f) => *f,
            None => frame,
        };
        if frame.contains(&eos) || eos_codes.contains(&eos) {
            self.finished = true;
            return Ok(None);
        }
        self.prev = frame;
        self.step += 1;
        if self.step >= self.params.max_decoder_steps {
            self.finished = true;
        }
        Ok(Some(frame))
    }

    /// The decoder call on the previous frame at position `context + step`.
    fn decode_previous(&mut self, pool: &Pool) -> Result<()> {
        let m = self.model.clone();
        let d = m.config.dim;
        let pos = m.config.context_frames + self.step;
        for b in 0..self.batch {
            let row = &mut self.x[b * d..(b + 1) * d];
            m.embed_frame(&self.prev, row);
            m.add_decoder_position(row, pos);
        }
        let prior = self
            .prior
            .as_ref()
            .and_then(|p| p.row())
            .map(|row| PriorUse {
                row,
                layers: self.params.apply_prior_to_layers.as_deref(),
            });
        m.decoder_forward(
            1,
            &mut self.x,
            &self.cache,
            Some(&self.mem),
            prior,
            &mut self.out,
            &mut self.scratch,
            pool,
        );
        self.cache.append(&self.out)?;
        self.hidden.copy_from_slice(&self.out.hidden);
        self.probs.copy_from_slice(&self.out.probs);
        self.update_prior(self.step);
        Ok(())
    }

    /// Attention-prior update from the newest decoder call's probabilities.
    fn update_prior(&mut self, step: usize) {
        let start = self.params.start_prior_after_n_audio_steps;
        let Some(prior) = self.prior.as_mut() else {
            return;
        };
        if step < start {
            return;
        }
        let t = self.text_len;
        let layers = self.model.config.decoder_layers;
        let probs = &self.probs;
        match &self.params.estimate_alignment_from_layers {
            Some(ls) => prior.alignment(ls.iter().map(|&l| &probs[l * t..(l + 1) * t])),
            None => prior.alignment((0..layers).map(|l| &probs[l * t..(l + 1) * t])),
        };
        self.attended = Some(prior.update());
    }

    /// The local transformer's 8 codes from the newest hidden states (spec §4.5).
    fn sample_frame(
        &mut self,
        pool: &Pool,
        forced: Option<&[u16; CODEBOOKS]>,
        mut trace: Option<&mut StepTrace>,
    ) -> [u16; CODEBOOKS] {
        let m = self.model.clone();
        let c = &m.config;
        let (ld, v) = (c.lt_dim, c.codebook_vocab);
        let cap = c.lt_positions;
        let s = self.params.cfg_scale;
        let batch = self.batch;
        m.lt_input(&self.hidden, 0, &mut self.lt_x, &mut self.products, pool);
        if let Some(tr) = trace.as_deref_mut() {
            tr.lt_logits = vec![0.0; CODEBOOKS * batch * v];
        }
        let mut frame = [0u16; CODEBOOKS];
        for cb in 0..CODEBOOKS {
            // One LT position for both rows; its K/V go to slot `cb` of each row's cache.
            let mut ks = self.lt_k.chunks_mut(cap * ld);
            let mut vs = self.lt_v.chunks_mut(cap * ld);
            let mut io: [SeqIo<'_>; MAX_BATCH] = std::array::from_fn(|b| {
                if b >= batch {
                    return SeqIo::unused();
                }
                let (k, v) = (ks.next().unwrap_or_default(), vs.next().unwrap_or_default());
                let (past_k, new_k) = k.split_at_mut(cb * ld);
                let (past_v, new_v) = v.split_at_mut(cb * ld);
                SeqIo {
                    past: KvPast {
                        k: past_k,
                        v: past_v,
                        rows: cb,
                    },
                    new_k: &mut new_k[..ld],
                    new_v: &mut new_v[..ld],
                    cross: None,
                    probs: None,
                }
            });
            m.lt_forward(&mut self.lt_x, &mut io[..batch], &mut self.lt_scratch, pool);
            m.lt_logits(cb, &self.lt_x, &mut self.logits, &mut self.products, pool);
            if let Some(tr) = trace.as_deref_mut() {
                let o = cb * self.batch * v;
                tr.lt_logits[o..o + self.batch * v].copy_from_slice(&self.logits);
            }
            let (cond, uncond) = self.logits.split_at_mut(v);
            if self.batch == 2 {
                for (l0, &l1) in cond.iter_mut().zip(uncond.iter()) {
                    *l0 = s * *l0 + (1.0 - s) * l1;
                }
            }
            let forbid_eos = self.step < self.params.min_generated_frames;
            mask_forbidden(cond, c, forbid_eos);
            let code = if self.params.temperature <= 0.0 {
                argmax(cond)
            } else {
                top_k(cond, self.params.topk, &mut self.topk_scratch);
                softmax_temperature(cond, self.params.temperature);
                // Every row is sampled (trap T9); the unconditional row's pick is
                // overwritten by the conditional one, so only its noise matters.
                self.rng.fill_exponential(&mut self.noise[..self.batch * v]);
                pick(cond, &self.noise[..v])
            } as u16;
            frame[cb] = code;
            let next = forced.map_or(code, |f| f[cb]);
            if cb + 1 < CODEBOOKS {
                m.lt_code_input(cb, next, cb + 1, &mut self.lt_x, &mut self.products, pool);
            }
        }
        if let Some(tr) = trace {
            tr.sampled = frame;
        }
        frame
    }

    /// The EOS stream (spec §4.6): per codebook the argmax of the CFG-mixed
    /// `final_proj` logits, drawn as torch does (2024 noise values each, trap T10).
    fn eos_stream(&mut self, pool: &Pool, trace: Option<&mut StepTrace>) -> [u16; CODEBOOKS] {
        let m = self.model.clone();
        let c = &m.config;
        let v = c.codebook_vocab;
        let w = CODEBOOKS * v;
        m.final_logits(
            &self.hidden,
            &mut self.final_logits,
            &mut self.products,
            pool,
        );
        let s = self.params.cfg_scale;
        if self.batch == 2 {
            let (cond, uncond) = self.final_logits.split_at(w);
            for ((o, &lc), &lu) in self.mixed.iter_mut().zip(cond).zip(uncond) {
                *o = (1.0 - s) * lu + s * lc;
            }
        } else {
            self.mixed.copy_from_slice(&self.final_logits[..w]);
        }
        let forbid_eos = self.step < self.params.min_generated_frames;
        let mut codes = [0u16; CODEBOOKS];
        for (cb, code) in codes.iter_mut().enumerate() {
            self.work.copy_from_slice(&self.mixed[cb * v..(cb + 1) * v]);
            mask_forbidden(&mut self.work, c, forbid_eos);
            top_k(&mut self.work, 1, &mut self.topk_scratch);
            softmax_temperature(&mut self.work, EOS_TEMPERATURE);
            self.rng.fill_exponential(&mut self.noise[..v]);
            *code = pick(&self.work, &self.noise[..v]) as u16;
        }
        if let Some(tr) = trace {
            tr.final_logits = self.final_logits.clone();
            tr.argmax_codes = codes;
        }
        codes
    }
}
