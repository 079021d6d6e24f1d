//! `rill speak` (alias `tts`): English text → 22.05 kHz speech with Magpie TTS and NanoCodec.
//!
//! Text → `rill_text` (IPA G2P, tokens; long texts split into sentences) → per
//! utterance a `rill_magpie::Session` (one 8-code frame per 46.4 ms step) → each frame
//! straight into the streaming `rill_nanocodec` decoder → 16-bit mono WAV. Utterances
//! follow each other through one codec stream, as NeMo decodes the concatenated codes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use rill_kernels::WeightFormat;
use rill_magpie::{InferenceParams, Model, Session};
use rill_nanocodec::NanoCodec;
use rill_text::{EnglishFrontEnd, Language, TextVocabulary};

use crate::args::StagesArg;
use crate::output::WavOut;
use crate::progress;
use rill_stream::{StagePools, Stages};

use rill_nanocodec::{SAMPLES_PER_FRAME, SAMPLE_RATE};

#[derive(Debug, Args)]
pub struct TtsArgs {
    /// The text to speak (English).
    #[arg(
        long,
        conflicts_with = "text_file",
        required_unless_present = "text_file"
    )]
    pub text: Option<String>,

    /// Read the text from this UTF-8 file instead.
    #[arg(long, value_name = "PATH")]
    pub text_file: Option<PathBuf>,

    /// Language of the text; only English ("en") is supported so far.
    #[arg(long, default_value = "en")]
    pub language: String,

    /// Output WAV (16-bit mono, 22.05 kHz).
    #[arg(short = 'o', long, value_name = "PATH")]
    pub output: PathBuf,

    /// Magpie weights: NVIDIA's `.nemo` archive, the NeMo-Speech.cpp GGUF
    /// (`magpie_tts_multilingual_357m.v2602.f16.gguf`), or a safetensors file in
    /// NeMo's state-dict layout (as `rill synth-checkpoint --model magpie` writes).
    #[arg(long = "checkpoint", visible_alias = "magpie", value_name = "PATH")]
    pub magpie: Option<PathBuf>,

    /// NanoCodec weights: the `.nemo` archive, the NeMo-Speech.cpp decoder GGUF, or
    /// a safetensors state dict (as `rill synth-checkpoint --model nanocodec` writes).
    #[arg(long, value_name = "PATH")]
    pub codec: Option<PathBuf>,

    /// Smoke run on random weights synthesised in memory from SEED (default 0; the
    /// test oracle's recipe): speech-shaped noise, not words.
    #[arg(long, value_name = "SEED", num_args = 0..=1, default_missing_value = "0",
          conflicts_with_all = ["magpie", "codec"])]
    pub random_weights: Option<u64>,

    /// Baked speaker (v2602: 0 John, 1 Sofia, 2 Aria, 3 Jason, 4 Leo).
    #[arg(long, default_value_t = 0)]
    pub speaker: usize,

    /// Sampler seed (torch.manual_seed): the same seed gives NeMo's token stream.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,

    /// Sampling temperature of the local transformer (0 = argmax). Default: the
    /// checkpoint's config, else 0.6.
    #[arg(long)]
    pub temperature: Option<f32>,

    /// Top-k of the local transformer. Default: the checkpoint's config, else 80.
    #[arg(long)]
    pub top_k: Option<usize>,

    /// Classifier-free guidance scale. Default: the checkpoint's config, else 2.5.
    #[arg(long, visible_alias = "cfg")]
    pub cfg_scale: Option<f32>,

    /// Run without classifier-free guidance (about half the decoder work).
    #[arg(long)]
    pub no_cfg: bool,

    /// Run without the attention prior that walks the text.
    #[arg(long)]
    pub no_prior: bool,

    /// Frame cap per utterance (46.4 ms each; NeMo's max_decoder_steps).
    /// Default: the checkpoint's config, else 500.
    #[arg(long)]
    pub max_frames: Option<usize>,

    /// Weight format of Magpie's linear layers: f32 (NeMo's arithmetic, the default),
    /// bf16 (half the bytes per step) or int8 (a quarter; MLX-style groups of 64 with
    /// int16 activations). The codec always runs in f32.
    #[arg(long, value_enum, default_value = "f32")]
    pub precision: TtsPrecision,

    /// Worker threads (default: $RILL_THREADS or the number of cores).
    #[arg(long)]
    pub threads: Option<usize>,

    /// `two` decodes frame n in the codec while the decoder makes frame n+1, each on
    /// its own threads (the stage done first helps the other); `one` runs them one
    /// after the other on all threads. Same audio either way; two stages add one
    /// frame (46 ms) of latency. Default: two with 2 or more threads.
    #[arg(long, value_enum)]
    pub stages: Option<StagesArg>,

    /// Also write the utterance's intermediates to this .npz, in the Magpie oracle
    /// recordings' key names and shapes (text_tokens, text_encoder_out, dec_hidden,
    /// final_logits_raw, lt_logits, lt_codes, codec_latents, audio, …), for a
    /// key-by-key comparison with NeMo. The text must be one sentence.
    #[arg(long, value_name = "F.npz")]
    pub dump: Option<PathBuf>,

    /// Teacher-force these codes: an [F, 8] int32 .npy of NanoCodec codes (e.g. a
    /// recording's lt_codes). Frame i is decoded from row i whatever the model
    /// samples (the sampler's random stream advances as usual); F frames are made.
    /// The text must be one sentence.
    #[arg(long, value_name = "F.npy")]
    pub force_codes: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum TtsPrecision {
    F32,
    Bf16,
    Int8,
}

impl TtsPrecision {
    fn format(self) -> WeightFormat {
        match self {
            TtsPrecision::F32 => WeightFormat::F32,
            TtsPrecision::Bf16 => WeightFormat::Bf16,
            TtsPrecision::Int8 => WeightFormat::Int8,
        }
    }
}

/// Where real weights come from (not loadable yet in their released formats).
fn weights_help() -> &'static str {
    "Magpie TTS weights are a separate download under the NVIDIA Open Model License:\n  \
     huggingface-cli download nvidia/magpie_tts_multilingual_357m\n  \
     huggingface-cli download nvidia/nemo-nano-codec-22khz-1.89kbps-21.5fps\n\
     then: rill speak --checkpoint magpie_tts_multilingual_357m.nemo --codec \
     nemo-nano-codec-22khz-1.89kbps-21.5fps.nemo --text \"Hello world.\" -o hello.wav \
     (NVIDIA's GGUF files work too). For a smoke run on random weights: rill speak \
     --random-weights --text \"Hello world.\" -o hello.wav"
}

pub fn run(args: TtsArgs) -> Result<()> {
    let language: Language = args.language.parse()?;
    if language != Language::English {
        bail!("only English is supported so far");
    }
    let text = match (&args.text, &args.text_file) {
        (Some(t), _) => t.clone(),
        (None, Some(p)) => std::fs::read_to_string(p)
            .with_context(|| format!("cannot read the text file {}", p.display()))?,
        (None, None) => bail!("give --text or --text-file"),
    };
    if args.output.is_dir() {
        bail!(
            "{} is a directory; give a file name like speech.wav",
            args.output.display()
        );
    }
    let threads = crate::args::thread_count(args.threads)?;
    let t0 = Instant::now();
    let mut lexicon = None;
    let (weights, file_params, codec) = if let Some(seed) = args.random_weights {
        eprintln!(
            "synthesising random Magpie and NanoCodec weights (the oracle's recipe, seed {seed})"
        );
        let w = rill_magpie::synth::build(&rill_magpie::Config::oracle(), seed)?;
        let codec = NanoCodec::new(&rill_nanocodec::Weights::synthetic(seed))?;
        (w, InferenceParams::default(), codec)
    } else {
        let (Some(mp), Some(cp)) = (&args.magpie, &args.codec) else {
            bail!("no weights given\n{}", weights_help());
        };
        for p in [mp, cp] {
            if !p.exists() {
                bail!("{} does not exist\n{}", p.display(), weights_help());
            }
        }
        let ext = |p: &std::path::Path| {
            p.extension()
                .and_then(|e| e.to_str())
                .unwrap_or("")
                .to_ascii_lowercase()
        };
        let (w, params) = match ext(mp).as_str() {
            "gguf" => {
                let m = rill_magpie::load::gguf::load(mp)?;
                (m.weights, m.params)
            }
            "nemo" => {
                let nemo = rill_magpie::load::nemo::MagpieNemo::open(mp)?;
                lexicon = Some(Arc::new(nemo.english_lexicon()?));
                let m = nemo.load()?;
                (m.weights, m.params)
            }
            _ => (
                rill_magpie::Weights::load(mp)
                    .with_context(|| format!("loading Magpie weights {}", mp.display()))?,
                InferenceParams::default(),
            ),
        };
        let cw = match ext(cp).as_str() {
            "gguf" => rill_nanocodec::load::load_gguf(cp)?,
            "nemo" => rill_nanocodec::load::load_nemo(cp)?,
            _ => {
                let codec = NanoCodec::load_safetensors(cp)
                    .with_context(|| format!("loading NanoCodec weights {}", cp.display()))?;
                return finish(args, text, threads, t0, w, params, codec, lexicon);
            }
        };
        (w, params, NanoCodec::new(&cw)?)
    };
    finish(
        args,
        text,
        threads,
        t0,
        weights,
        file_params,
        codec,
        lexicon,
    )
}

/// Applies the flags over the checkpoint's parameters, then speaks.
#[allow(clippy::too_many_arguments)]
fn finish(
    args: TtsArgs,
    text: String,
    threads: usize,
    t0: Instant,
    weights: rill_magpie::Weights,
    base: InferenceParams,
    codec: NanoCodec,
    lexicon: Option<Arc<rill_text::Lexicon>>,
) -> Result<()> {
    let forced = match &args.force_codes {
        Some(p) => Some(crate::tts_dump::read_forced_codes(p)?),
        None => None,
    };
    let max_frames = match (&forced, args.max_frames) {
        (Some(f), Some(m)) if m != f.len() => bail!(
            "--max-frames {m} disagrees with the {} frames of --force-codes; leave it out",
            f.len()
        ),
        (Some(f), _) => f.len(),
        (None, m) => m.unwrap_or(base.max_decoder_steps),
    };
    let params = InferenceParams {
        max_decoder_steps: max_frames,
        temperature: args.temperature.unwrap_or(base.temperature),
        topk: args.top_k.unwrap_or(base.topk),
        use_cfg: base.use_cfg && !args.no_cfg,
        cfg_scale: args.cfg_scale.unwrap_or(base.cfg_scale),
        apply_attention_prior: base.apply_attention_prior && !args.no_prior,
        ..base
    };
    let model = Model::with_format(weights, args.precision.format())?;
    let model = Arc::new(model);
    params.validate(&model.config)?;
    if args.speaker >= model.config.speakers {
        bail!(
            "--speaker {} is out of range: this checkpoint has speakers 0..{}",
            args.speaker,
            model.config.speakers - 1
        );
    }
    let vocab = TextVocabulary::from_embedding_rows(model.config.text_vocab, 0)?;
    let front = match lexicon {
        Some(l) => EnglishFrontEnd::with_lexicon(l, vocab),
        None => EnglishFrontEnd::new(vocab),
    };
    let utterances = front.encode_utterances(&text)?;
    if utterances.len() > 1 && (args.dump.is_some() || forced.is_some()) {
        bail!(
            "--dump and --force-codes work on one utterance; the text splits into {} sentences",
            utterances.len()
        );
    }
    let stages = match args.stages {
        Some(StagesArg::One) => Stages::Sequential,
        Some(StagesArg::Two) => Stages::TwoStage,
        None => Stages::auto(threads),
    };
    let pools = StagePools::new(stages, threads, None);
    // The text encoder and the prefill (many rows at once) use every thread.
    let setup_pool = rill_kernels::Pool::new(threads);
    eprintln!(
        "loaded in {:.1} s; {} utterance(s), {} text tokens; {} weights, {}, {} tier",
        t0.elapsed().as_secs_f64(),
        utterances.len(),
        utterances.iter().map(Vec::len).sum::<usize>(),
        args.precision.format().name(),
        pools.describe(),
        rill_kernels::isa::active()
    );

    let mut wav = WavOut::create_with(&args.output, 1, SAMPLE_RATE)?;
    let mut state = codec.new_state();
    let mut audio = [0f32; SAMPLES_PER_FRAME];
    let mut pcm = [0i16; SAMPLES_PER_FRAME];
    let cap = (params.max_decoder_steps * utterances.len()) as u64;
    let bar = progress::frames_bar(cap, "speaking");
    let (mut frames, mut step_time) = (0usize, 0f64);
    let mut first_audio: Option<f64> = None;
    let start = Instant::now();
    let mut dump = None;
    let mut trace = rill_magpie::StepTrace::default();
    for ids in &utterances {
        if args.dump.is_some() {
            dump = Some(crate::tts_dump::TtsDump::new(&model, ids, &setup_pool)?);
        }
        // The front end appends EOS; the session appends its own.
        let ids = &ids[..ids.len() - 1];
        let mut session = Session::new(
            model.clone(),
            ids,
            args.speaker,
            params.clone(),
            args.seed,
            &setup_pool,
        )?;
        // The frame made by the previous step, decoded during this one.
        let mut pending: Option<[u32; 8]> = None;
        loop {
            let t = Instant::now();
            let force = forced.as_ref().and_then(|f| f.get(session.frames()));
            // A trace only when dumping (it copies the step's logits).
            trace.hidden.clear();
            let tr = dump.is_some().then_some(&mut trace);
            // `decoded`: the codes the codec turned into `audio` during this step.
            let (next, decoded) = match stages {
                Stages::TwoStage => {
                    let prev = pending.take();
                    pools.overlap(
                        |lm| session.step_with(lm, force, tr),
                        |cp| match prev {
                            Some(c) => codec.step(&mut state, &c, &mut audio, cp).map(|_| prev),
                            None => Ok(None),
                        },
                    )
                }
                Stages::Sequential => {
                    let next = session.step_with(pools.lm(), force, tr);
                    let decoded = match &next {
                        Ok(Some(f)) => {
                            let c = f.map(u32::from);
                            codec
                                .step(&mut state, &c, &mut audio, pools.codec())
                                .map(|_| Some(c))
                        }
                        _ => Ok(None),
                    };
                    (next, decoded)
                }
            };
            step_time += t.elapsed().as_secs_f64();
            if let (Some(d), false) = (dump.as_mut(), trace.hidden.is_empty()) {
                d.step(&trace);
            }
            if let Some(c) = decoded? {
                if let Some(d) = dump.as_mut() {
                    d.frame(&c, &audio);
                }
                rill_nanocodec::frame_to_int16(&audio, &mut pcm);
                wav.write(&pcm)?;
                first_audio.get_or_insert(start.elapsed().as_secs_f64());
                frames += 1;
                bar.inc(1);
            }
            match next? {
                Some(f) if stages == Stages::TwoStage => pending = Some(f.map(u32::from)),
                Some(_) => {}
                None => break,
            }
        }
        // The last frame of a two-stage utterance is still to decode.
        if let Some(c) = pending.take() {
            codec.step(&mut state, &c, &mut audio, pools.codec())?;
            if let Some(d) = dump.as_mut() {
                d.frame(&c, &audio);
            }
            rill_nanocodec::frame_to_int16(&audio, &mut pcm);
            wav.write(&pcm)?;
            first_audio.get_or_insert(start.elapsed().as_secs_f64());
            frames += 1;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    wav.finish()?;
    if let (Some(d), Some(path)) = (dump, &args.dump) {
        d.write(path)?;
        eprintln!("wrote the intermediates to {}", path.display());
    }
    let seconds = frames as f64 * SAMPLES_PER_FRAME as f64 / SAMPLE_RATE as f64;
    let wall = start.elapsed().as_secs_f64();
    eprintln!(
        "wrote {} ({frames} frames, {seconds:.2} s of audio) in {wall:.1} s: first audio after \
         {:.2} s (text encoder, prefill, first frame), {:.1} ms per frame (decoder + codec), \
         real-time factor {:.2}",
        args.output.display(),
        first_audio.unwrap_or(wall),
        1e3 * step_time / frames.max(1) as f64,
        wall / seconds.max(1e-9)
    );
    Ok(())
}
