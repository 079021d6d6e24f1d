//! Speech: Magpie TTS through NanoCodec (text → 22.05 kHz mono), the pure-Rust core
//! of `rill_mrt.Speech`. The same library calls as `rill speak` (`Voice::load`,
//! `Voice::plan`, `Voice::speak`), so the audio is the command's, bit for bit.
//!
//! Synthesis runs on its own thread and hands frames (1024 samples, 46.4 ms) over a
//! bounded channel ([`SpeechStream`]); dropping the stream stops the synthesis at
//! its next frame. A whole-utterance call is the same stream collected.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rill_magpie::{MagpieError, Precision};
use rill_stream::tts::{SpeakOptions, SpeakPlan, SpeakSink, TtsError, Voice, VoiceSource};
use rill_stream::{StagePools, Stages};
use rill_text::{Language, TextFrontEnd, TextVocabulary};

use crate::error::{Error, Result};

/// Speech sample rate (Hz).
pub const SPEECH_SAMPLE_RATE: u32 = rill_nanocodec::SAMPLE_RATE;
/// Mono samples per Magpie frame (46.4 ms).
pub const SPEECH_FRAME_SAMPLES: usize = rill_nanocodec::SAMPLES_PER_FRAME;
/// NanoCodec codes per frame.
pub const SPEECH_CODEBOOKS: usize = 8;
/// Frames the synthesis thread may run ahead of a slow reader.
const CHANNEL_FRAMES: usize = 32;

/// How to load a [`Speech`] model.
#[derive(Debug, Clone, Default)]
pub struct SpeechLoad {
    /// Magpie weights: `.nemo`, NVIDIA's GGUF or a safetensors state dict.
    pub checkpoint: Option<PathBuf>,
    /// NanoCodec weights: `.nemo`, GGUF or safetensors.
    pub codec: Option<PathBuf>,
    /// Random weights from this seed instead of files (speech-shaped noise).
    pub random_weights: Option<u64>,
    /// With random weights: `Some(true)` loads only v2602's full text table (every
    /// language), `Some(false)` only the oracle's English table, `None` (default)
    /// the English table, and the full one too the first time another language is
    /// asked for, exactly as `rill speak --random-weights` picks per language.
    pub all_languages: Option<bool>,
    /// Weight format of Magpie's linear layers (`f32`, `f16`, `bf16`, `int8`).
    pub precision: Option<String>,
    /// Worker threads; `None` = `$RILL_THREADS` or the number of cores.
    pub threads: Option<usize>,
}

/// A voice argument: a speaker index or name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VoiceArg {
    Index(usize),
    Name(String),
}

/// One request; `None` keeps the checkpoint's value.
#[derive(Debug, Clone)]
pub struct SpeechRequest {
    pub text: String,
    pub voice: VoiceArg,
    /// Code or name (`"en"`, `"fr"`, `"French"`, …).
    pub language: String,
    pub seed: u64,
    pub temperature: Option<f32>,
    pub top_k: Option<usize>,
    pub cfg_scale: Option<f32>,
    /// Frame cap per sentence.
    pub max_frames: Option<usize>,
    /// Read numbers, money, dates, … aloud first (NeMo's `apply_TN=True`);
    /// `false` tokenises the text as written (NeMo's default).
    pub normalize: bool,
}

impl SpeechRequest {
    /// A request with the defaults: voice 0, English, seed 0, normalised.
    pub fn new(text: impl Into<String>) -> SpeechRequest {
        SpeechRequest {
            text: text.into(),
            voice: VoiceArg::Index(0),
            language: "en".into(),
            seed: 0,
            temperature: None,
            top_k: None,
            cfg_scale: None,
            max_frames: None,
            normalize: true,
        }
    }
}

/// A planned request: the voice that speaks it and its plan.
pub struct Planned {
    voice: Arc<Voice>,
    plan: SpeakPlan,
}

impl Planned {
    /// Characters the front end could not encode (each once); the host reports them.
    pub fn dropped(&self) -> &[char] {
        &self.plan.dropped
    }

    /// The dropped characters for a message (`'😀' (U+1F600), …`).
    pub fn describe_dropped(&self) -> String {
        rill_text::describe_dropped(&self.plan.dropped)
    }

    pub fn language(&self) -> Language {
        self.plan.language
    }
}

/// The full-table random voice, made on first use: seed, format and the voice.
type LazyVoice = (u64, rill_kernels::WeightFormat, Mutex<Option<Arc<Voice>>>);

/// A loaded Magpie voice (one or, for random weights in every language, two).
pub struct Speech {
    primary: Arc<Voice>,
    /// Random weights, English table first: the seed and format of the full-table
    /// voice made on the first other language, and that voice once made.
    lazy_all: Option<LazyVoice>,
    languages: Vec<Language>,
    precision: Precision,
    threads: usize,
}

impl Speech {
    /// Loads the weights (files, or random from a seed).
    pub fn load(o: &SpeechLoad) -> Result<Speech> {
        let precision = match o.precision.as_deref() {
            None => Precision::F32,
            Some(p) => Precision::from_name(&p.to_ascii_lowercase()).ok_or_else(|| {
                Error::invalid(format!(
                    "unknown precision {p:?}: use one of {}",
                    Precision::ALL.map(Precision::name).join(", ")
                ))
            })?,
        };
        let threads = crate::model::thread_count(o.threads)?;
        let format = precision.format();
        let (source, lazy) = match (o.random_weights, &o.checkpoint, &o.codec) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                return Err(Error::invalid(
                    "give either random_weights or checkpoint/codec files, not both",
                ))
            }
            (Some(seed), ..) => match o.all_languages {
                Some(true) => (VoiceSource::RandomAllLanguages(seed), None),
                Some(false) => (VoiceSource::Random(seed), None),
                None => (VoiceSource::Random(seed), Some(seed)),
            },
            (None, magpie, codec) => {
                if o.all_languages.is_some() {
                    return Err(Error::invalid(
                        "all_languages is for random weights; a checkpoint's text table says \
                         which languages it holds",
                    ));
                }
                (
                    VoiceSource::Files {
                        magpie: magpie.as_deref(),
                        codec: codec.as_deref(),
                    },
                    None,
                )
            }
        };
        let primary = Arc::new(Voice::load(source, format).map_err(tts_error)?);
        let languages = match lazy {
            // What the full table will speak (English from the loaded voice).
            Some(_) => TextFrontEnd::new(TextVocabulary::v2602())
                .with_installed_japanese()
                .languages(),
            None => primary.front.languages(),
        };
        Ok(Speech {
            primary,
            lazy_all: lazy.map(|seed| (seed, format, Mutex::new(None))),
            languages,
            precision,
            threads,
        })
    }

    /// Baked speakers by index: their names where the file names them, else the
    /// index as text (`"0"`, `"1"`, …).
    pub fn voices(&self) -> Vec<String> {
        let v = &self.primary;
        (0..v.model.config.speakers)
            .map(|i| {
                v.speaker_names
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| i.to_string())
            })
            .collect()
    }

    /// Codes of the languages this model speaks, in table order.
    pub fn languages(&self) -> Vec<&'static str> {
        self.languages.iter().map(|l| l.code()).collect()
    }

    pub fn precision(&self) -> &'static str {
        self.precision.name()
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The speaker index of a voice argument; unknown → the valid ones.
    pub fn speaker(&self, voice: &VoiceArg) -> Result<usize> {
        let names = &self.primary.speaker_names;
        let n = self.primary.model.config.speakers;
        let valid = || {
            if names.is_empty() {
                format!(
                    "this model's voices are unnamed: give an index 0..{}",
                    n - 1
                )
            } else {
                format!(
                    "this model's voices are {} (or their indices 0..{})",
                    names.join(", "),
                    n - 1
                )
            }
        };
        match voice {
            VoiceArg::Index(i) if *i < n => Ok(*i),
            VoiceArg::Index(i) => Err(Error::invalid(format!(
                "voice {i} is out of range: {}",
                valid()
            ))),
            VoiceArg::Name(s) => {
                let key = s.trim();
                if let Some(i) = names.iter().position(|m| m.eq_ignore_ascii_case(key)) {
                    return Ok(i);
                }
                match key.parse::<usize>() {
                    Ok(i) => self.speaker(&VoiceArg::Index(i)),
                    Err(_) => Err(Error::invalid(format!("unknown voice {s:?}: {}", valid()))),
                }
            }
        }
    }

    /// Checks a request and splits its text into sentences (loading the full-table
    /// random voice first if the language needs it); nothing is spoken yet.
    pub fn plan(&self, r: &SpeechRequest) -> Result<Planned> {
        let language: Language = r
            .language
            .parse()
            .map_err(|e: rill_text::TextError| Error::invalid(e.to_string()))?;
        language
            .check_built()
            .map_err(|e| Error::invalid(e.to_string()))?;
        if !self.languages.contains(&language) {
            return Err(Error::invalid(format!(
                "this model cannot speak {} ({}): it speaks {}",
                language.name(),
                language.code(),
                self.languages().join(", ")
            )));
        }
        if r.text.trim().is_empty() {
            return Err(Error::invalid(
                "the text is empty: give some words to speak",
            ));
        }
        for (what, v) in [("temperature", r.temperature), ("cfg_scale", r.cfg_scale)] {
            if v.is_some_and(|v| !v.is_finite()) {
                return Err(Error::invalid(format!("{what} must be a finite number")));
            }
        }
        if r.max_frames == Some(0) {
            return Err(Error::invalid("max_frames must be at least 1"));
        }
        let speaker = self.speaker(&r.voice)?;
        let voice = self.voice_for(language)?;
        let options = SpeakOptions {
            language,
            speaker,
            seed: r.seed,
            temperature: r.temperature,
            top_k: r.top_k,
            cfg_scale: r.cfg_scale,
            max_frames: r.max_frames,
            normalize: r.normalize,
            ..SpeakOptions::default()
        };
        let plan = voice.plan(&r.text, &options).map_err(tts_error)?;
        Ok(Planned { voice, plan })
    }

    /// The voice that speaks `language`.
    fn voice_for(&self, language: Language) -> Result<Arc<Voice>> {
        let Some((seed, format, cell)) = &self.lazy_all else {
            return Ok(self.primary.clone());
        };
        if language == Language::English {
            return Ok(self.primary.clone());
        }
        // A poisoned lock only means an earlier load panicked: the cell is still
        // either empty or a complete voice.
        let mut slot = cell.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = slot.as_ref() {
            return Ok(v.clone());
        }
        let v = Arc::new(
            Voice::load(VoiceSource::RandomAllLanguages(*seed), *format).map_err(tts_error)?,
        );
        *slot = Some(v.clone());
        Ok(v)
    }

    /// Starts speaking a plan on a new thread; frames arrive through the stream.
    pub fn start(&self, planned: Planned) -> Result<SpeechStream> {
        let (tx, rx) = mpsc::sync_channel(CHANNEL_FRAMES);
        let threads = self.threads;
        let handle = std::thread::Builder::new()
            .name("rill-speak".into())
            .spawn(move || run(planned, threads, tx))
            .map_err(|e| Error::Runtime(format!("cannot start the synthesis thread: {e}")))?;
        Ok(SpeechStream {
            rx: Some(rx),
            handle: Some(handle),
        })
    }

    /// Speaks a request whole: `(samples, codes)` of every frame, in order.
    pub fn speak(&self, r: &SpeechRequest) -> Result<(Vec<f32>, Vec<[u32; SPEECH_CODEBOOKS]>)> {
        let mut stream = self.start(self.plan(r)?)?;
        let (mut samples, mut codes) = (Vec::new(), Vec::new());
        while let Some(f) = stream.next_frame()? {
            samples.extend_from_slice(&f.samples);
            codes.push(f.codes);
        }
        Ok((samples, codes))
    }
}

/// One spoken frame.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeechFrame {
    /// 1024 mono samples: the model's 16-bit PCM / 32768 (as `rill speak` writes it).
    pub samples: Vec<f32>,
    /// The NanoCodec codes it was decoded from.
    pub codes: [u32; SPEECH_CODEBOOKS],
}

enum Message {
    Frame(SpeechFrame),
    End(Result<()>),
}

/// What [`SpeechStream::poll`] found.
#[derive(Debug)]
pub enum Poll {
    Frame(SpeechFrame),
    /// Nothing yet (the timeout passed).
    Pending,
    /// The speech is over.
    End,
}

/// Frames of a synthesis running on its own thread. Dropping it stops the synthesis
/// at its next frame.
pub struct SpeechStream {
    rx: Option<Receiver<Message>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl SpeechStream {
    /// The next frame, waiting at most `timeout`.
    pub fn poll(&mut self, timeout: Duration) -> Result<Poll> {
        let Some(rx) = self.rx.as_ref() else {
            return Ok(Poll::End);
        };
        let msg = match rx.recv_timeout(timeout) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => return Ok(Poll::Pending),
            Err(RecvTimeoutError::Disconnected) => Message::End(Err(Error::Runtime(
                "the synthesis thread ended without a result".into(),
            ))),
        };
        match msg {
            Message::Frame(f) => Ok(Poll::Frame(f)),
            Message::End(r) => {
                self.finish();
                r.map(|()| Poll::End)
            }
        }
    }

    /// The next frame, `None` at the end (blocking).
    pub fn next_frame(&mut self) -> Result<Option<SpeechFrame>> {
        loop {
            match self.poll(Duration::from_secs(3600))? {
                Poll::Frame(f) => return Ok(Some(f)),
                Poll::Pending => continue,
                Poll::End => return Ok(None),
            }
        }
    }

    /// Closes the channel (stopping the synthesis) and joins its thread.
    fn finish(&mut self) {
        self.rx = None;
        if let Some(h) = self.handle.take() {
            // The thread catches its own panics; a join error cannot carry news.
            let _ = h.join();
        }
    }
}

impl Drop for SpeechStream {
    fn drop(&mut self) {
        // Not joined: a Python caller must not wait for a frame in progress; the
        // thread ends on its own at the next frame it cannot hand over.
        self.rx = None;
        self.handle = None;
    }
}

/// The synthesis thread: speaks the plan into the channel, then its result.
fn run(planned: Planned, threads: usize, tx: SyncSender<Message>) {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let pools = StagePools::new(Stages::auto(threads), threads, None);
        let setup = rill_kernels::Pool::new(threads);
        let mut sink = ChannelSink { tx: tx.clone() };
        planned
            .voice
            .speak(&planned.plan, &pools, &setup, &mut sink)
            .map(|_| ())
    }));
    let end = match r {
        Ok(Ok(())) => Ok(()),
        // The reader went away: nobody to tell.
        Ok(Err(TtsError::Stopped(_))) => return,
        Ok(Err(e)) => Err(tts_error(e)),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(Error::Runtime(format!(
                "internal error in rill (please report it): {msg}"
            )))
        }
    };
    let _ = tx.send(Message::End(end));
}

struct ChannelSink {
    tx: SyncSender<Message>,
}

impl SpeakSink for ChannelSink {
    fn frame(
        &mut self,
        codes: &[u32; SPEECH_CODEBOOKS],
        _audio: &[f32; SPEECH_FRAME_SAMPLES],
        pcm: &[i16; SPEECH_FRAME_SAMPLES],
    ) -> std::result::Result<(), TtsError> {
        let f = SpeechFrame {
            samples: pcm.iter().map(|&s| f32::from(s) / 32768.0).collect(),
            codes: *codes,
        };
        self.tx
            .send(Message::Frame(f))
            .map_err(|_| TtsError::Stopped("the stream was closed".into()))
    }
}

/// The Python error of a TTS error: bad arguments and files → `ValueError`, missing
/// weights → `FileNotFoundError`, I/O → `OSError`, the rest → `RuntimeError`.
fn tts_error(e: TtsError) -> Error {
    match e {
        TtsError::Invalid(m) | TtsError::Weights(m) => Error::Invalid(m),
        TtsError::MissingWeights(m) => Error::NotFound(m),
        TtsError::Text(t) => Error::Invalid(t.to_string()),
        TtsError::Model(MagpieError::Checkpoint(c)) => c.into(),
        TtsError::Model(m) => Error::Invalid(m.to_string()),
        TtsError::Codec(rill_nanocodec::CodecError::Checkpoint(c)) => c.into(),
        e @ TtsError::Codec(rill_nanocodec::CodecError::Invalid { .. }) => {
            Error::Invalid(e.to_string())
        }
        e => Error::Runtime(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random() -> Speech {
        Speech::load(&SpeechLoad {
            random_weights: Some(0),
            threads: Some(2),
            ..SpeechLoad::default()
        })
        .unwrap()
    }

    #[test]
    fn speaks_capped_frames_and_checks_arguments() {
        let s = random();
        assert_eq!(s.voices(), ["0", "1", "2", "3", "4"]);
        assert!(s.languages().contains(&"fr"));
        let mut r = SpeechRequest::new("Hello world.");
        r.max_frames = Some(3);
        let (samples, codes) = s.speak(&r).unwrap();
        assert_eq!(codes.len(), 3);
        assert_eq!(samples.len(), 3 * SPEECH_FRAME_SAMPLES);
        r.language = "xx".into();
        let e = s.plan(&r).err().unwrap().to_string();
        assert!(e.contains("en") && e.contains("fr"), "{e}");
        r.language = "en".into();
        r.voice = VoiceArg::Name("Sofia".into());
        let e = s.plan(&r).err().unwrap().to_string();
        assert!(e.contains("0..4"), "{e}");
    }

    #[test]
    fn dropping_a_stream_stops_it() {
        let s = random();
        let mut r = SpeechRequest::new("Hello world.");
        r.max_frames = Some(50);
        let mut st = s.start(s.plan(&r).unwrap()).unwrap();
        assert!(st.next_frame().unwrap().is_some());
        drop(st);
    }
}
