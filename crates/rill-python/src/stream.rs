//! Frame-by-frame generation: one 40 ms frame of audio per call, controls
//! changeable between frames.

use std::sync::Arc;

use rill_mrt2::LEVELS;
use rill_stream::{FramePipeline, Stages};

use crate::controls::Controls;
use crate::error::{Error, Result};
use crate::model::Model;
use crate::state::State;

/// One decoded frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// 1920 stereo samples, interleaved, int16 / 32768.
    pub samples: Vec<f32>,
    pub tokens: [u32; LEVELS],
}

/// A generation stream over a shared [`Model`]. In two-stage mode (2 or more
/// threads) the language model runs one frame ahead of the audio, so a control
/// change is heard from the second frame after it.
pub struct Stream {
    model: Arc<Model>,
    pipe: FramePipeline,
    controls: Controls,
    /// Frames still to return (`None` = endless).
    remaining: Option<usize>,
    /// Set when a frame failed half-way; the stream then refuses to go on.
    broken: bool,
}

impl Stream {
    pub fn new(
        model: Arc<Model>,
        controls: Controls,
        seed: u64,
        state: Option<&State>,
        frames: Option<usize>,
    ) -> Result<Stream> {
        let pipe = {
            let pools = model.pools();
            model.pipeline(&controls, seed, state, true, &pools)?
        };
        Ok(Stream {
            model,
            pipe,
            controls,
            remaining: frames,
            broken: false,
        })
    }

    pub fn controls(&self) -> &Controls {
        &self.controls
    }

    /// New controls from the next language-model step on; an invalid value is an
    /// error and changes nothing.
    pub fn update(&mut self, controls: Controls) -> Result<()> {
        let (cond, sampling) = controls.resolve()?;
        let pools = self.model.pools();
        let s = self.pipe.session_mut();
        s.set_sampling(sampling)?;
        s.set_conditioning(&cond, pools.lm())?;
        self.controls = controls;
        Ok(())
    }

    /// The next frame, `None` after the requested number of frames.
    pub fn next_frame(&mut self) -> Result<Option<Frame>> {
        if self.broken {
            return Err(Error::Runtime(
                "this stream failed earlier and cannot continue; start a new one (from a \
                 state saved before the failure, if any)"
                    .into(),
            ));
        }
        if self.remaining == Some(0) {
            return Ok(None);
        }
        // Marked broken until the frame is complete: a panic unwinding through here
        // (caught by the Python layer) leaves the pipeline half-stepped.
        self.broken = true;
        let pools = self.model.pools();
        let decoded = if pools.stages() == Stages::Sequential && self.pipe.pending().is_some() {
            // A frame in flight from a two-stage state: decode it on its own.
            self.pipe.flush(&pools).is_some()
        } else {
            loop {
                let r = self.pipe.step(None, &pools);
                if r.decoded {
                    break true;
                }
            }
        };
        drop(pools);
        self.broken = false;
        debug_assert!(decoded);
        if let Some(r) = self.remaining.as_mut() {
            *r -= 1;
        }
        Ok(Some(Frame {
            samples: self
                .pipe
                .pcm()
                .iter()
                .map(|&s| f32::from(s) / 32768.0)
                .collect(),
            tokens: self.pipe.decoded_tokens(),
        }))
    }

    /// The state after the last returned frame (with the frame in flight, if any).
    pub fn state(&self) -> State {
        State::capture(&self.pipe, true, None, self.model.codec())
    }
}
