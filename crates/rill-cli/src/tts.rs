//! `rill speak` (alias `tts`): text → 22.05 kHz speech with Magpie TTS and NanoCodec, in
//! any language whose front end rill has (`--list-languages`).
//!
//! Loads the weights, turns the flags into a `rill_stream::tts::SpeakPlan` and runs
//! it (`Voice::speak`: text → sentences → Magpie frames → streaming NanoCodec),
//! writing each frame to a 16-bit mono WAV as it is made; `--dump` / `--force-codes`
//! are in `tts_dump`.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::builder::TypedValueParser as _;
use clap::Args;
use rill_kernels::WeightFormat;
use rill_magpie::Model;
use rill_stream::tts::{SpeakOptions, SpeakSink, TtsError, Voice, VoiceSource};
use rill_stream::{StagePools, Stages};
use rill_text::japanese::JapaneseFrontEnd;
use rill_text::{Language, TextFrontEnd, TextVocabulary};

use crate::args::{names_parser, StagesArg};
use crate::output::{is_std_stream, WavOut};
use crate::progress;
use crate::usage::usage;

use rill_nanocodec::{SAMPLES_PER_FRAME, SAMPLE_RATE};

#[derive(Debug, Args)]
pub struct TtsArgs {
    /// The text to speak (in --language).
    #[arg(
        long,
        conflicts_with = "text_file",
        required_unless_present_any = ["text_file", "list_languages", "list_voices"]
    )]
    pub text: Option<String>,

    /// Read the text from this UTF-8 file instead (`-`: standard input).
    #[arg(long, value_name = "PATH")]
    pub text_file: Option<PathBuf>,

    /// Language of the text: en, es, de, zh, ja, fr, it, vi or hi (see
    /// --list-languages). Other languages than English need v2602's full text table
    /// (the released checkpoint; --random-weights makes one); German needs the
    /// checkpoint's dictionary (a .nemo, or --lexicon), Japanese OpenJTalk's
    /// (--japanese-dictionary).
    #[arg(long, default_value = "en")]
    pub language: String,

    /// Pronunciation dictionary of --language es or de, as NeMo's IpaG2p reads it:
    /// German needs the checkpoint's de_nv230119.dict, which rill reads from a .nemo
    /// archive but cannot ship (with a GGUF or random weights, unpack it from the
    /// .nemo: `tar -xf magpie_tts_multilingual_357m.nemo --wildcards
    /// '*de_nv230119.dict'`); Spanish's is built in. The file must give the
    /// checkpoint's phoneme table. Replaces the checkpoint's own.
    #[arg(long, value_name = "FILE")]
    pub lexicon: Option<PathBuf>,

    /// OpenJTalk's dictionary folder for --language ja (sys.dic, unk.dic,
    /// matrix.bin, char.bin), the one NeMo's pyopenjtalk reads: Debian and Ubuntu's
    /// package open-jtalk-mecab-naist-jdic, or pyopenjtalk's
    /// open_jtalk_dic_utf_8-1.11. Default: $OPEN_JTALK_DICT_DIR, else the Debian
    /// package's folder.
    #[arg(long, value_name = "DIR")]
    pub japanese_dictionary: Option<PathBuf>,

    /// Tokenise the text as written (NeMo's default, apply_TN=False) instead of
    /// reading numbers, money, dates, times and measures aloud first ("$3.50" →
    /// "three dollars fifty cents", as NeMo's apply_TN=True). Every language rill
    /// speaks has a normaliser.
    #[arg(long)]
    pub no_normalize: bool,

    /// Print the language table (code, tokenizer, offset, size, whether rill has
    /// its front end; with weights, which ones the checkpoint holds) and exit.
    #[arg(long)]
    pub list_languages: bool,

    /// Load the weights, print the checkpoint's baked speakers (index and name
    /// where the file names them) and exit.
    #[arg(long)]
    pub list_voices: bool,

    /// Output WAV (16-bit mono, 22.05 kHz; `-`: standard output, written when
    /// the speech ends).
    #[arg(short = 'o', long, value_name = "PATH",
          required_unless_present_any = ["list_languages", "list_voices"])]
    pub output: Option<PathBuf>,

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

    /// Weight format of Magpie's linear layers: f32 (NeMo's arithmetic, the default;
    /// weights that are halves already, as in NVIDIA's F16 GGUF, are then kept as
    /// f16, which computes the same bits with half the bytes), f16 (half the bytes
    /// per step), bf16 (the same bytes, 3 fewer mantissa bits) or int8 (a quarter;
    /// MLX-style groups of 64 with int16 activations). The codec always runs in f32.
    #[arg(long, default_value = "f32",
          value_parser = names_parser(&rill_magpie::Precision::ALL, rill_magpie::Precision::name))]
    pub precision: rill_magpie::Precision,

    /// Worker threads (default: $RILL_THREADS or the number of cores).
    #[arg(long)]
    pub threads: Option<usize>,

    /// `two` decodes one group of frames in the codec while the decoder makes the
    /// next, each on its own threads (the stage done first helps the other); `one`
    /// runs them one after the other on all threads. Same audio either way; two
    /// stages add one group of latency. Default: two with 2 or more threads.
    #[arg(long, value_enum)]
    pub stages: Option<StagesArg>,

    /// Frames per NanoCodec call after the first (1 to 4): 2 makes the codec about
    /// 10 % cheaper per frame than 1 (stage 0 reads its weights once per call) for
    /// one frame (46 ms) more latency; a request's first 4 frames go one per call
    /// (the first decoded at once), so a listener needs little buffer.
    /// Same audio for every value.
    #[arg(long, default_value_t = rill_stream::tts::DEFAULT_CODEC_FRAMES,
          value_parser = clap::value_parser!(u64).range(1..=rill_stream::tts::MAX_CODEC_FRAMES as u64).map(|v| v as usize))]
    pub codec_frames: usize,

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

/// What to run once the weights are downloaded (after the library's download
/// instructions).
fn weights_hint() -> &'static str {
    "then: rill speak --checkpoint magpie_tts_multilingual_357m.nemo --codec \
     nemo-nano-codec-22khz-1.89kbps-21.5fps.nemo --text \"Hello world.\" -o hello.wav \
     (NVIDIA's GGUF files work too). For a smoke run on random weights: rill speak \
     --random-weights --text \"Hello world.\" -o hello.wav"
}

pub fn run(args: TtsArgs) -> Result<()> {
    // Every check that needs no weights comes first, so a mistake costs no load.
    let language: Language = args.language.parse().map_err(|e| usage(format!("{e}")))?;
    if args.list_languages || args.list_voices {
        return list(&args);
    }
    language.check_built().map_err(|e| usage(e.to_string()))?;
    let text = read_text(&args)?;
    if text.trim().is_empty() {
        return Err(usage("the text is empty: give some words to speak"));
    }
    // Text that is too long or has nothing this language's front end can encode is
    // refused before any weights load (v2602's table holds every language).
    let dictionaries = Dictionaries::read(&args, language)?;
    let front =
        dictionaries.apply(TextFrontEnd::new(TextVocabulary::v2602()).with_installed_japanese());
    // A dictionary the .nemo brings is only known once it is read.
    let from_nemo = dictionaries.lexicon.is_none()
        && language.info().front_end.dictionary().is_some()
        && args.magpie.as_deref().is_some_and(|p| {
            p.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("nemo"))
        });
    if !from_nemo {
        front
            .encode_utterances(&text, language)
            .map_err(|e| usage(e.to_string()))?;
    }
    let Some(output) = args.output.clone() else {
        return Err(usage("give the output WAV with -o"));
    };
    if args.random_weights.is_some() {
        // The random voice has the oracle's speakers (a checkpoint's own count is
        // checked once it is loaded).
        let speakers = rill_magpie::Config::oracle().speakers;
        if args.speaker >= speakers {
            return Err(usage(format!(
                "speaker {} is out of range: the random-weight voice has speakers 0..{}",
                args.speaker,
                speakers - 1
            )));
        }
    }
    for (flag, value) in [
        ("--temperature", args.temperature),
        ("--cfg-scale", args.cfg_scale),
    ] {
        if value.is_some_and(|v| !v.is_finite()) {
            return Err(usage(format!("{flag} must be a finite number")));
        }
    }
    if output.is_dir() {
        return Err(usage(format!(
            "{} is a directory; give a file name like speech.wav",
            output.display()
        )));
    }
    let threads = crate::args::thread_count(args.threads)?;
    let forced = match &args.force_codes {
        Some(p) => Some(crate::tts_dump::read_forced_codes(p)?),
        None => None,
    };
    // Reserved now, so an output that cannot be written fails before the load.
    let wav = WavOut::create_with(&output, 1, SAMPLE_RATE)?;
    let t0 = Instant::now();
    let mut voice = load_voice(
        args.magpie.as_deref(),
        args.codec.as_deref(),
        args.random_weights,
        args.precision.format(),
        language,
    )?;
    voice.front = dictionaries.apply(voice.front.clone());
    let options = SpeakOptions {
        language,
        speaker: args.speaker,
        seed: args.seed,
        temperature: args.temperature,
        top_k: args.top_k,
        cfg_scale: args.cfg_scale,
        no_cfg: args.no_cfg,
        no_prior: args.no_prior,
        max_frames: args.max_frames,
        forced,
        codec_frames: Some(args.codec_frames),
        normalize: !args.no_normalize,
    };
    // Options the voice refuses (an out-of-range speaker or sampler value) are
    // usage errors too.
    let plan = voice.plan(&text, &options).map_err(|e| match e {
        TtsError::Invalid(m) => usage(m),
        e @ TtsError::Model(rill_magpie::MagpieError::InvalidValue { .. }) => usage(e.to_string()),
        e => e.into(),
    })?;
    if !plan.dropped.is_empty() {
        eprintln!(
            "warning: the {} front end cannot encode {} character(s) of the text; they are \
             left out: {}",
            language.name(),
            plan.dropped.len(),
            rill_text::describe_dropped(&plan.dropped)
        );
    }
    if plan.utterances.len() > 1 && args.dump.is_some() {
        return Err(usage(format!(
            "--dump records one sentence; the text splits into {}",
            plan.utterances.len()
        )));
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
        "loaded in {:.1} s; {} ({}): {} utterance(s), {} text tokens; {} weights, {}, {} tier",
        t0.elapsed().as_secs_f64(),
        language.name(),
        language.code(),
        plan.utterances.len(),
        plan.utterances.iter().map(Vec::len).sum::<usize>(),
        args.precision.format().name(),
        pools.describe(),
        rill_kernels::isa::active()
    );
    let mut sink = CliSink {
        wav,
        bar: progress::frames_bar(plan.max_frames() as u64, "speaking"),
        dump: None,
        dump_path: args.dump.clone(),
        model: voice.model.clone(),
        pool: &setup_pool,
        error: None,
    };
    let stats = voice.speak(&plan, &pools, &setup_pool, &mut sink);
    if let Some(e) = sink.error.take() {
        return Err(e);
    }
    let stats = stats?;
    sink.bar.finish_and_clear();
    sink.wav.finish()?;
    if let (Some(d), Some(path)) = (sink.dump, &args.dump) {
        d.write(path)?;
        eprintln!("wrote the intermediates to {}", path.display());
    }
    let frames = stats.frames;
    let seconds = frames as f64 * SAMPLES_PER_FRAME as f64 / SAMPLE_RATE as f64;
    let wall = stats.wall_seconds;
    eprintln!(
        "wrote {} ({frames} frames, {seconds:.2} s of audio) in {wall:.2} s: first audio after \
         {:.2} s (text encoder, prefill, first frame), {:.1} ms per frame (decoder + codec), \
         real-time factor {:.2}",
        output.display(),
        stats.first_audio.unwrap_or(wall),
        1e3 * stats.step_seconds / frames.max(1) as f64,
        wall / seconds.max(1e-9)
    );
    Ok(())
}

/// The text of `--text`, `--text-file` or standard input; a file that is not UTF-8
/// is refused with where the first bad byte is.
fn read_text(args: &TtsArgs) -> Result<String> {
    let (bytes, what) = match (&args.text, &args.text_file) {
        (Some(t), _) => return Ok(t.clone()),
        (None, Some(p)) if is_std_stream(p) => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .context("cannot read the text from standard input")?;
            (bytes, "standard input".to_string())
        }
        (None, Some(p)) => (
            std::fs::read(p)
                .with_context(|| format!("cannot read the text file {}", p.display()))?,
            p.display().to_string(),
        ),
        (None, None) => return Err(usage("give --text or --text-file")),
    };
    String::from_utf8(bytes).map_err(|e| {
        usage(format!(
            "{what} is not UTF-8 text (invalid bytes at offset {}): save it as UTF-8",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// `--list-languages`' status of Japanese without OpenJTalk's dictionary.
const JAPANESE_NEEDS: &str =
    "needs OpenJTalk's dictionary: --japanese-dictionary DIR (apt install open-jtalk-mecab-naist-jdic)";

/// The dictionaries given on the command line, read before any weights load.
struct Dictionaries {
    language: Language,
    /// `--lexicon FILE`: the Spanish or German front end with that dictionary
    /// (German with the embedded heteronym list).
    lexicon: Option<rill_text::IpaFrontEnd>,
    /// `--japanese-dictionary DIR`: the Japanese front end on that folder.
    japanese: Option<JapaneseFrontEnd>,
}

impl Dictionaries {
    /// Reads them; each is refused for a language that reads none, and one that
    /// cannot be read is a usage error.
    fn read(args: &TtsArgs, language: Language) -> Result<Dictionaries> {
        use rill_text::{FrontEnd, IpaFrontEnd};
        let lexicon = match &args.lexicon {
            None => None,
            Some(path) => Some(
                match language.info().front_end {
                    FrontEnd::GermanIpa => IpaFrontEnd::german_from_files(Some(path), None),
                    FrontEnd::SpanishIpa => IpaFrontEnd::spanish_from_file(path),
                    _ => {
                        return Err(usage(format!(
                            "--lexicon gives the Spanish or German pronunciation dictionary; \
                             {} reads none (drop --lexicon, or pass --language es or de)",
                            language.name()
                        )))
                    }
                }
                .map_err(|e| usage(e.to_string()))?,
            ),
        };
        let japanese = match &args.japanese_dictionary {
            None => None,
            Some(_) if language != Language::Japanese => {
                return Err(usage(format!(
                    "--japanese-dictionary gives OpenJTalk's dictionary for Japanese; {} \
                     reads none (drop it, or pass --language ja)",
                    language.name()
                )))
            }
            Some(dir) => Some(
                JapaneseFrontEnd::open(dir)
                    .map_err(|e| usage(format!("--japanese-dictionary: {e}")))?,
            ),
        };
        Ok(Dictionaries {
            language,
            lexicon,
            japanese,
        })
    }

    /// `front` with them, replacing the checkpoint's or the machine's own.
    fn apply(&self, mut front: TextFrontEnd) -> TextFrontEnd {
        if let Some(ipa) = &self.lexicon {
            front = front.with_ipa(self.language, Ok::<_, rill_text::TextError>(ipa.clone()));
        }
        if let Some(ja) = &self.japanese {
            front = front.with_japanese(Ok::<_, rill_text::TextError>(ja.clone()));
        }
        front
    }
}

/// `--list-languages` / `--list-voices`.
fn list(args: &TtsArgs) -> Result<()> {
    let have_weights = args.random_weights.is_some() || args.magpie.is_some();
    let language: Language = args.language.parse().map_err(|e| usage(format!("{e}")))?;
    let dictionaries = Dictionaries::read(args, language)?;
    let voice = if args.list_voices || have_weights {
        let mut v = load_voice(
            args.magpie.as_deref(),
            args.codec.as_deref(),
            args.random_weights,
            args.precision.format(),
            language,
        )?;
        v.front = dictionaries.apply(v.front);
        Some(v)
    } else {
        None
    };
    if args.list_languages {
        let held = voice.as_ref().map(|v| v.front.vocabulary().languages());
        println!("code  language    tokenizer              offset  size  status");
        for l in rill_text::LANGUAGES {
            let status = match (l.front_end.missing(), &voice) {
                (Some(why), _) => format!("not yet: {why}"),
                (None, Some(v)) if !held.as_ref().is_some_and(|h| h.contains(&l.language)) => {
                    "not in this checkpoint".into()
                }
                (None, Some(v)) => match v.front.check(l.language) {
                    Ok(_) => "ready".into(),
                    Err(_) if l.front_end == rill_text::FrontEnd::GermanIpa => {
                        "needs de_nv230119.dict: a .nemo checkpoint or --lexicon".into()
                    }
                    Err(_) if l.front_end == rill_text::FrontEnd::JapaneseKatakana => {
                        JAPANESE_NEEDS.into()
                    }
                    Err(e) => format!("unavailable: {e}"),
                },
                (None, None) => match l.front_end {
                    rill_text::FrontEnd::GermanIpa => {
                        "ready with a .nemo checkpoint or --lexicon de_nv230119.dict".into()
                    }
                    rill_text::FrontEnd::JapaneseKatakana => {
                        let front = dictionaries.apply(
                            TextFrontEnd::new(TextVocabulary::v2602()).with_installed_japanese(),
                        );
                        match front.check(l.language) {
                            Ok(_) => "ready".into(),
                            Err(_) => JAPANESE_NEEDS.into(),
                        }
                    }
                    _ => "ready".into(),
                },
            };
            println!(
                "{:<5} {:<11} {:<22} {:>6} {:>5}  {status}",
                l.code, l.name, l.tokenizer, l.offset, l.size
            );
        }
        let t = rill_text::TEXT_CE;
        println!(
            "{:<5} {:<11} {:<22} {:>6} {:>5}  context text only",
            "-", "-", t.name, t.offset, t.size
        );
        println!(
            "BOS {}, EOS {} (v2602: 2362 text rows)",
            rill_text::V2602_BOS,
            rill_text::V2602_EOS
        );
    }
    if let (true, Some(v)) = (args.list_voices, &voice) {
        for i in 0..v.model.config.speakers {
            match v.speaker_names.get(i) {
                Some(name) => println!("{i}  {name}"),
                None => println!("{i}  (unnamed: this file has no speaker names)"),
            }
        }
    }
    Ok(())
}

/// Loads a voice ([`Voice::load`]) from the weight files or, with
/// `random_weights`, synthesised, saying so (with v2602's full text table for a
/// language other than English); a missing file's error ends with the command to
/// run. Shared by `rill speak` and `rill serve --tts-…`.
pub fn load_voice(
    magpie: Option<&Path>,
    codec: Option<&Path>,
    random_weights: Option<u64>,
    format: WeightFormat,
    language: Language,
) -> Result<Voice> {
    let source = match random_weights {
        Some(seed) if language != Language::English => {
            eprintln!(
                "synthesising random Magpie and NanoCodec weights (the oracle's recipe, seed \
                 {seed}) with v2602's full text table (2362 rows) for {}",
                language.name()
            );
            VoiceSource::RandomAllLanguages(seed)
        }
        Some(seed) => {
            eprintln!(
                "synthesising random Magpie and NanoCodec weights (the oracle's recipe, seed {seed})"
            );
            VoiceSource::Random(seed)
        }
        None => VoiceSource::Files { magpie, codec },
    };
    Voice::load(source, format).map_err(|e| match e {
        TtsError::MissingWeights(msg) => anyhow::anyhow!("{msg}\n{}", weights_hint()),
        e => e.into(),
    })
}

/// Writes `rill speak`'s frames: the WAV, the progress bar and `--dump`.
struct CliSink<'a> {
    wav: WavOut,
    bar: indicatif::ProgressBar,
    dump: Option<crate::tts_dump::TtsDump>,
    dump_path: Option<PathBuf>,
    model: Arc<Model>,
    pool: &'a rill_kernels::Pool,
    /// The first I/O error (the library's error type carries no `anyhow` context).
    error: Option<anyhow::Error>,
}

impl SpeakSink for CliSink<'_> {
    fn utterance(&mut self, tokens: &[u32]) -> Result<(), TtsError> {
        if self.dump_path.is_some() {
            let d = crate::tts_dump::TtsDump::new(&self.model, tokens, self.pool)
                .map_err(|e| self.stop(e))?;
            self.dump = Some(d);
        }
        Ok(())
    }

    fn wants_trace(&self) -> bool {
        self.dump_path.is_some()
    }

    fn step(&mut self, trace: &rill_magpie::StepTrace) {
        if let Some(d) = self.dump.as_mut() {
            d.step(trace);
        }
    }

    fn frame(
        &mut self,
        codes: &[u32; 8],
        audio: &[f32; SAMPLES_PER_FRAME],
        pcm: &[i16; SAMPLES_PER_FRAME],
    ) -> Result<(), TtsError> {
        if let Some(d) = self.dump.as_mut() {
            d.frame(codes, audio);
        }
        self.wav.write(pcm).map_err(|e| self.stop(e))?;
        self.bar.inc(1);
        Ok(())
    }
}

impl CliSink<'_> {
    /// Keeps `e` for the caller and tells the library to stop.
    fn stop(&mut self, e: anyhow::Error) -> TtsError {
        let msg = format!("{e:#}");
        self.error.get_or_insert(e);
        TtsError::Stopped(msg)
    }
}
