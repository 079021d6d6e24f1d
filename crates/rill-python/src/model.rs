//! Loading a model (checkpoint resolution as the `rill` command's) and one
//! generation call over [`FramePipeline`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rill_mrt2::sampler::{LEVEL, RESERVED};
use rill_mrt2::{FrameTrace, ModelKind, Mrt2, Precision, LEVELS};
use rill_spectrostream::{Codec, CodecPrecision, Encoder};
use rill_stream::source::{self, Hints};
use rill_stream::{FramePipeline, StagePools, Stages};

use crate::continuation::{self, Continuation};
use crate::controls::Controls;
use crate::error::{Error, Result};
use crate::state::State;

/// How to find and load a model (the arguments of `MagentaRT2(...)`).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadOptions {
    /// Explicit checkpoint; `None` = `$RILL_CHECKPOINT`, then upstream's default
    /// locations for `size` ([`rill_mrt2::locate::default_candidates`]).
    pub checkpoint: Option<PathBuf>,
    /// `mrt2_small` or `mrt2_base`; the checkpoint must be of this size.
    pub size: String,
    /// A name [`Precision::from_name`] accepts; `None` = f32, or the precision a
    /// pre-quantised file was made for.
    pub precision: Option<String>,
    /// Codec weights: a [`CodecPrecision::name`]: `f32` (exact), `i16` or `f16`
    /// early layers, `fp16` throughout.
    pub codec: String,
    /// Worker threads; `None` = `$RILL_THREADS` or the number of cores.
    pub threads: Option<usize>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            checkpoint: None,
            size: "mrt2_small".into(),
            precision: None,
            codec: "f32".into(),
            threads: None,
        }
    }
}

/// How Python users get a model, for the errors that say what to do.
pub const HINTS: Hints = Hints {
    pass_checkpoint: "checkpoint=PATH",
    try_random:
        "To try rill without downloading anything, write a checkpoint with random weights in
the real layout (~1.1 GB, ~10 s): rill_mrt.synth_checkpoint(PATH); the output is not
music, but every stage runs exactly as with real weights.",
};

/// The checkpoint to load ([`source::resolve_checkpoint`] with the Python wording).
pub fn resolve_checkpoint(checkpoint: Option<&Path>, kind: ModelKind) -> Result<PathBuf> {
    Ok(source::resolve_checkpoint(checkpoint, kind, &HINTS)?)
}

/// The names `precision=` accepts.
pub fn precision_names() -> Vec<&'static str> {
    Precision::ALL.iter().map(|p| p.name()).collect()
}

pub fn parse_precision(name: &str) -> Result<Precision> {
    Precision::from_name(name).ok_or_else(|| {
        Error::invalid(format!(
            "precision {name:?} is not one of {}",
            precision_names().join(", ")
        ))
    })
}

pub fn parse_size(name: &str) -> Result<ModelKind> {
    ModelKind::from_name(name)
        .ok_or_else(|| Error::invalid(format!("size {name:?} is not one of mrt2_small, mrt2_base")))
}

/// The codec precision named `name` ([`CodecPrecision::name`]).
pub fn parse_codec(name: &str) -> Result<CodecPrecision> {
    CodecPrecision::from_name(name).ok_or_else(|| {
        Error::invalid(format!(
            "codec {name:?} is not one of {}",
            CodecPrecision::ALL.map(CodecPrecision::name).join(", ")
        ))
    })
}

/// Total worker threads: `threads`, else `$RILL_THREADS`, else the core count
/// ([`rill_kernels::pool::thread_count`]).
pub fn thread_count(threads: Option<usize>) -> Result<usize> {
    rill_kernels::pool::thread_count(threads).map_err(|e| Error::invalid(e.to_string()))
}

/// A loaded model: language model, codec and the worker threads.
pub struct Model {
    lm: Arc<Mrt2>,
    codec: Arc<Codec>,
    /// One generation (call or stream frame) at a time uses the pools.
    pools: Mutex<StagePools>,
    /// The SpectroStream encoder of continuations, loaded at the first one (with the
    /// explicit path it came from).
    encoder: Mutex<Option<(Option<PathBuf>, Arc<Encoder>)>>,
    path: PathBuf,
    kind: ModelKind,
    precision: Precision,
}

/// One generation call.
#[derive(Debug, Clone, PartialEq)]
pub struct Request<'a> {
    pub controls: Controls,
    /// Frames to return (≥ 1).
    pub frames: usize,
    /// Sampler seed of a fresh state (ignored when resuming a state).
    pub seed: u64,
    /// Teacher-forced token ids, one row per language-model step.
    pub forced: Option<&'a [[u32; LEVELS]]>,
    /// Decode audio (else tokens only).
    pub audio: bool,
    /// Record each step's soft-capped logits of its level.
    pub logits: bool,
    /// Continue from this audio (a fresh stream: no state, no forced tokens).
    pub continue_from: Option<&'a Continuation>,
}

/// What a generation call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// `[frames, 12]` token ids of the returned frames.
    pub tokens: Vec<i32>,
    /// `[frames·1920, 2]` samples, int16 / 32768 as upstream's `Waveform` (empty
    /// without audio).
    pub audio: Vec<f32>,
    /// `[steps, 12, 1024]` soft-capped logits of every language-model step run by
    /// this call (empty unless asked for).
    pub logits: Vec<f32>,
    /// The state after the call (always `Some` in a returned value).
    pub state: Option<State>,
}

impl Model {
    pub fn load(o: &LoadOptions) -> Result<Model> {
        let want = parse_size(&o.size)?;
        let precision = o.precision.as_deref().map(parse_precision).transpose()?;
        let codec_precision = parse_codec(&o.codec)?;
        let threads = thread_count(o.threads)?;
        let path = resolve_checkpoint(o.checkpoint.as_deref(), want)?;
        let (ckpt, kind) = source::open(&path)?;
        if kind != want {
            return Err(Error::invalid(format!(
                "{} is an {} checkpoint, but size={:?}; pass size={:?}",
                path.display(),
                kind.name(),
                o.size,
                kind.name()
            )));
        }
        let precision = source::precision(precision, &ckpt)?;
        let lm = source::load_lm(&ckpt, precision)?;
        let codec = source::load_codec(&ckpt, codec_precision)?;
        let pools = StagePools::new(Stages::auto(threads), threads, None);
        Ok(Model {
            lm,
            codec,
            pools: Mutex::new(pools),
            encoder: Mutex::new(None),
            path,
            kind,
            precision,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn kind(&self) -> ModelKind {
        self.kind
    }

    pub fn precision(&self) -> Precision {
        self.precision
    }

    pub fn lm(&self) -> &Arc<Mrt2> {
        &self.lm
    }

    pub fn codec(&self) -> &Arc<Codec> {
        &self.codec
    }

    /// The pools, for one generation at a time (a panic elsewhere does not poison
    /// them for good: a pool resets itself after re-raising a task's panic).
    pub(crate) fn pools(&self) -> MutexGuard<'_, StagePools> {
        self.pools.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The continuation encoder from `explicit` or beside the checkpoint, loaded once
    /// per path.
    fn encoder(&self, explicit: Option<&Path>) -> Result<Arc<Encoder>> {
        let mut slot = self.encoder.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((p, e)) = slot.as_ref() {
            if p.as_deref() == explicit {
                return Ok(e.clone());
            }
        }
        let e = continuation::load_encoder(explicit, &self.path)?;
        *slot = Some((explicit.map(Path::to_path_buf), e.clone()));
        Ok(e)
    }

    /// `(stage arrangement, LM threads, codec threads)`.
    pub fn describe_threads(&self) -> String {
        self.pools().describe()
    }

    /// A pipeline with `controls` set, continuing `state` or fresh with `seed`.
    pub(crate) fn pipeline(
        &self,
        controls: &Controls,
        seed: u64,
        state: Option<&State>,
        audio: bool,
        pools: &StagePools,
    ) -> Result<FramePipeline> {
        let (cond, sampling) = controls.resolve()?;
        let codec = audio.then(|| self.codec.clone());
        let mut pipe = FramePipeline::new(self.lm.clone(), codec, seed, pools);
        if let Some(s) = state {
            s.restore_into(&mut pipe, audio)?;
        }
        pipe.session_mut().set_conditioning(&cond, pools.lm())?;
        pipe.session_mut().set_sampling(sampling)?;
        Ok(pipe)
    }

    /// Runs one generation call. On an error nothing has changed (the input state
    /// is only read).
    pub fn generate(&self, r: &Request, state: Option<&State>) -> Result<Generated> {
        if r.frames == 0 {
            return Err(Error::invalid("frames must be at least 1"));
        }
        let clip = match r.continue_from {
            Some(c) => {
                if state.is_some() || r.forced.is_some() {
                    return Err(Error::invalid(
                        "continue_from starts a new stream from the clip; pass neither state nor forced_tokens with it",
                    ));
                }
                Some((
                    c.window()?,
                    self.encoder(c.encoder.as_deref())?,
                    c.keep_style,
                ))
            }
            None => None,
        };
        let pools = self.pools();
        let mut pipe = self.pipeline(&r.controls, r.seed, state, r.audio, &pools)?;
        if let Some((window, encoder, keep_style)) = &clip {
            continuation::prefill(&mut pipe, encoder, window, *keep_style, &pools)?;
        }
        let mut out = Generated {
            tokens: Vec::with_capacity(r.frames * LEVELS),
            audio: Vec::with_capacity(if r.audio {
                r.frames * 2 * crate::FRAME_SAMPLES
            } else {
                0
            }),
            logits: Vec::new(),
            state: None,
        };
        let emit = |pipe: &FramePipeline, out: &mut Generated| {
            out.tokens
                .extend(pipe.decoded_tokens().iter().map(|&t| t as i32));
            out.audio
                .extend(pipe.pcm().iter().map(|&s| f32::from(s) / 32768.0));
        };
        // A frame still in flight (a stream's state) is the first one returned.
        if pipe.flush(&pools).is_some() {
            emit(&pipe, &mut out);
        }
        let steps = r.frames - out.tokens.len() / LEVELS;
        if let Some(f) = r.forced {
            check_forced(f, steps)?;
        }
        if r.logits {
            out.logits.reserve(steps * LEVELS * LEVEL);
        }
        let mut trace = FrameTrace::default();
        for n in 0..steps {
            let tr = r.logits.then_some(&mut trace);
            let rep = match r.forced {
                Some(f) => pipe.step_forced(&f[n], tr, &pools)?,
                None => pipe.step(tr, &pools),
            };
            if r.logits {
                out.logits.extend_from_slice(&trace.logits);
            }
            if !r.audio {
                out.tokens.extend(rep.tokens.iter().map(|&t| t as i32));
            } else if rep.decoded {
                emit(&pipe, &mut out);
            }
        }
        if r.audio && pipe.flush(&pools).is_some() {
            emit(&pipe, &mut out);
        }
        debug_assert_eq!(out.tokens.len(), r.frames * LEVELS);
        out.state = Some(State::capture(&pipe, r.audio, state, &self.codec));
        Ok(out)
    }
}

/// At least `steps` rows, every id in its level's range (checked before any work).
pub fn check_forced(forced: &[[u32; LEVELS]], steps: usize) -> Result<()> {
    if forced.len() < steps {
        return Err(Error::invalid(format!(
            "forced_tokens has {} rows, but this call runs {steps} language-model steps",
            forced.len()
        )));
    }
    for (n, row) in forced[..steps].iter().enumerate() {
        for (k, &t) in row.iter().enumerate() {
            let lo = (RESERVED + LEVEL * k) as u32;
            if !(lo..lo + LEVEL as u32).contains(&t) {
                return Err(Error::invalid(format!(
                    "forced_tokens row {n}: token {t} at level {k} is outside that level's ids \
                     {lo}..{} (ids are unique: level k holds 6+1024k ..= 6+1024k+1023)",
                    lo + LEVEL as u32
                )));
            }
        }
    }
    Ok(())
}

/// Converts `[N, 12]` integer rows to token ids (range-checked by [`check_forced`]).
pub fn forced_rows(flat: &[i64]) -> Result<Vec<[u32; LEVELS]>> {
    if !flat.len().is_multiple_of(LEVELS) {
        return Err(Error::invalid(format!(
            "forced_tokens must have shape [N, 12], got {} values",
            flat.len()
        )));
    }
    flat.chunks(LEVELS)
        .enumerate()
        .map(|(n, c)| {
            let mut row = [0u32; LEVELS];
            for (k, (dst, &v)) in row.iter_mut().zip(c).enumerate() {
                *dst = u32::try_from(v).map_err(|_| {
                    Error::invalid(format!(
                        "forced_tokens row {n}: token {v} at level {k} is negative or too large"
                    ))
                })?;
            }
            Ok(row)
        })
        .collect()
}
