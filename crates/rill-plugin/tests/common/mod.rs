//! Set-up shared by the plugin's tests: the weights the plugin runs (the small
//! synthetic checkpoint at its live precisions: int8 language model, int16-weight
//! codec) and the stream a bounce must equal (the generator run directly with a
//! chord held from the first frame, as `rill generate --notes 60,64,67`).

use std::sync::{Arc, OnceLock};

use rill_checkpoint::Checkpoint;
use rill_mrt2::{ModelKind, Mrt2, Precision};
use rill_plugin::bridge::{Loaded, Settings};
use rill_plugin::style::Style;
use rill_spectrostream::Codec;
use rill_stream::{Control, Generator, StagePools, Stages, FRAME_PCM};

pub const CHORD: [u8; 3] = [60, 64, 67];

/// The weights, loaded once per test binary.
pub fn weights() -> (Arc<Mrt2>, Arc<Codec>) {
    static W: OnceLock<(Arc<Mrt2>, Arc<Codec>)> = OnceLock::new();
    W.get_or_init(|| {
        let path = rill_testkit::synthetic_checkpoint(ModelKind::Small.synth_file(0));
        let ck = Checkpoint::open(path).unwrap();
        let precision = rill_stream::source::codec_precision(None, Precision::Int8, true);
        (
            rill_stream::source::load_lm(&ck, Precision::Int8).unwrap(),
            rill_stream::source::load_codec(&ck, precision).unwrap(),
        )
    })
    .clone()
}

/// What the plugin's loader gives the model thread: these weights.
pub fn loaded() -> Loaded {
    let (lm, codec) = weights();
    Loaded {
        lm,
        codec,
        checkpoint: None,
    }
}

/// The codes of a style given as codes (`None`: masked).
pub fn codes(style: Style) -> Option<[u16; 12]> {
    match style {
        Style::Masked => None,
        Style::Codes(c) => Some(c),
        Style::Preset(i) => panic!("preset {i}: give the reference its codes"),
    }
}

/// A generator with the chord held and `s` applied before its first frame.
pub fn chord_generator(s: &Settings) -> (Generator, StagePools) {
    let (lm, codec) = weights();
    let pools = StagePools::new(Stages::Sequential, 2, None);
    let mut g = Generator::new(lm, codec, s.seed, &pools);
    for p in CHORD {
        g.apply(Control::NoteOn(p)).unwrap();
    }
    for c in [
        Control::Style(codes(s.style)),
        Control::Temperature(s.temperature),
        Control::TopK(s.top_k),
        Control::CfgMusiccoca(s.cfg.musiccoca),
        Control::Drums(s.drums),
    ] {
        g.apply(c).unwrap();
    }
    (g, pools)
}

/// The generator's next frame, interleaved floats appended to `out`.
pub fn next_frame(g: &mut Generator, pools: &StagePools, out: &mut Vec<f32>) {
    let mut pcm = vec![0i16; FRAME_PCM];
    g.step(pools, &mut pcm);
    out.extend(pcm.iter().map(|&s| f32::from(s) / 32768.0));
}

/// `frames` frames of the chord with `s`.
pub fn reference_with(frames: usize, s: &Settings) -> Vec<f32> {
    let (mut g, pools) = chord_generator(s);
    let mut out = Vec::new();
    for _ in 0..frames {
        next_frame(&mut g, &pools, &mut out);
    }
    out
}
