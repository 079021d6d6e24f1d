//! Several streams' frames in one cycle: their language models stepped together
//! ([`Session::step_together`]: layer by layer across the streams, each weight matrix
//! read once for all of them) and their codecs one after another, the two stages
//! overlapping as in [`FramePipeline::step`]. Each stream's tokens, audio and state
//! are those of stepping it alone.

use std::time::{Duration, Instant};

use rill_kernels::Pool;
use rill_mrt2::{Session, LEVELS};
use smallvec::SmallVec;

use super::{CodecStage, FramePipeline, StagePools, StepReport};
use crate::staging::Staging;

/// The most streams one cycle steps together (the engine serves more in turns).
pub const MAX_TOGETHER: usize = 4;

/// One stream's codec side of a cycle.
type CodecSide<'a> = (&'a mut Option<CodecStage>, &'a mut Staging<[u32; LEVELS]>);

impl FramePipeline {
    /// One LM step (sampling) of every pipeline of `pipes` together, and their
    /// codecs: sequentially of the frames just made, with two stages of each
    /// stream's previous frame at the same time. `reports` gets one entry per
    /// pipeline; the times are the whole cycle's stages. Allocates nothing.
    ///
    /// # Panics
    /// With more than [`MAX_TOGETHER`] pipelines, or `reports` of another length.
    pub fn step_together(
        pipes: &mut [&mut FramePipeline],
        pools: &StagePools,
        reports: &mut [StepReport],
    ) {
        let k = pipes.len();
        assert!(k <= MAX_TOGETHER && reports.len() == k, "{k} pipelines");
        let stages = pools.stages();
        let mut sessions: SmallVec<[&mut Session; MAX_TOGETHER]> = SmallVec::new();
        let mut codecs: SmallVec<[CodecSide<'_>; MAX_TOGETHER]> = SmallVec::new();
        for p in pipes.iter_mut() {
            let FramePipeline {
                session,
                codec,
                staging,
            } = &mut **p;
            staging.begin(stages);
            sessions.push(session);
            codecs.push((codec, staging));
        }
        let mut tokens = [[0u32; LEVELS]; MAX_TOGETHER];
        let tokens = &mut tokens[..k];
        let decode_due = |codecs: &mut [CodecSide<'_>], pool: &Pool| {
            let mut took = Duration::ZERO;
            for (codec, staging) in codecs.iter_mut() {
                let (Ok(()), t) = staging.decode_due(*codec, pool);
                took += t;
            }
            took
        };
        let (lm_time, codec_time) = match stages {
            super::Stages::Sequential => {
                let t = Instant::now();
                Session::step_together(&mut sessions, pools.lm(), tokens);
                let lm_time = t.elapsed();
                for ((_, staging), t) in codecs.iter_mut().zip(tokens.iter()) {
                    staging.made_now(stages, std::slice::from_ref(t));
                }
                (lm_time, decode_due(&mut codecs, pools.codec()))
            }
            super::Stages::TwoStage => {
                let (lm_time, codec_time) = pools.overlap(
                    |lp| {
                        let t = Instant::now();
                        Session::step_together(&mut sessions, lp, tokens);
                        t.elapsed()
                    },
                    |cp| decode_due(&mut codecs, cp),
                );
                for ((_, staging), t) in codecs.iter_mut().zip(tokens.iter()) {
                    staging.made_now(stages, std::slice::from_ref(t));
                }
                (lm_time, codec_time)
            }
        };
        for (((codec, staging), t), r) in codecs.iter_mut().zip(tokens.iter()).zip(reports) {
            let decoded = codec.is_some() && !staging.decoded().is_empty();
            if codec.is_none() {
                // Tokens only: nothing waits for a codec.
                staging.clear();
            }
            *r = StepReport {
                tokens: *t,
                decoded,
                nonfinite: codec
                    .as_ref()
                    .filter(|_| decoded)
                    .map_or(0, |c| c.nonfinite),
                lm_time,
                codec_time: if decoded { codec_time } else { Duration::ZERO },
            };
        }
    }
}
