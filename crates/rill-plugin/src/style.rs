//! The plugin's style: off (masked), the 12 codes of the *Style code* parameters,
//! or a preset. A preset is either a set of codes upstream ships (its C++ engine's
//! default "piano", the web instrument's export example) or a text prompt that
//! MusicCoCa turns into codes, as `rill generate --prompt TEXT` does (mapper seed 0).
//!
//! MusicCoCa (0.95 GB) loads only when a text preset is first chosen, on a thread
//! of its own below the model's priority ([`PresetCodes`]), and stays loaded while
//! the plugin runs; the codes of each text are worked out once and kept. In real time the music keeps its style until the
//! new codes are ready (a fraction of a second after the first load); in a bounce
//! the model waits for them, so the preset reaches the exact frame its change
//! reached and the bounce equals `rill generate --prompt TEXT`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use nice_plug::prelude::Enum;
use rill_kernels::{isa, Pool};
use rill_musiccoca::{Mapper, Prompt, StyleModel, LEVELS};

/// Where a preset's codes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Codes upstream ships.
    Codes([u16; LEVELS]),
    /// A text prompt for MusicCoCa (mapper seed 0, `rill generate --prompt`'s default).
    Text(&'static str),
}

/// One preset: its name in the host's list, a stable id for saved projects, and its
/// codes' source.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    pub name: &'static str,
    pub id: &'static str,
    pub source: Source,
}

const fn text(name: &'static str, id: &'static str, prompt: &'static str) -> Preset {
    Preset {
        name,
        id,
        source: Source::Text(prompt),
    }
}

/// The presets, in the host's order after "Off" and "Codes".
pub const PRESETS: [Preset; 18] = [
    Preset {
        name: "Piano (upstream's default codes)",
        id: "piano",
        // Upstream's C++ engine's default style tokens (`mlx_engine.h:87-88`).
        source: Source::Codes([325, 98, 979, 657, 802, 453, 475, 622, 729, 934, 567, 782]),
    },
    Preset {
        name: "Export example (upstream's codes)",
        id: "export_example",
        source: Source::Codes([660, 1016, 295, 206, 857, 841, 391, 857, 619, 70, 401, 22]),
    },
    text("Text: disco funk", "disco_funk", "disco funk"),
    text("Text: ambient synth pads", "ambient", "ambient synth pads"),
    text("Text: lo-fi hip hop", "lofi_hip_hop", "lo-fi hip hop"),
    text("Text: techno", "techno", "techno"),
    text(
        "Text: jazz piano trio",
        "jazz_piano_trio",
        "jazz piano trio",
    ),
    text("Text: bossa nova guitar", "bossa_nova", "bossa nova guitar"),
    text(
        "Text: orchestral strings",
        "orchestral_strings",
        "orchestral strings",
    ),
    text(
        "Text: acoustic folk guitar",
        "acoustic_folk",
        "acoustic folk guitar",
    ),
    text("Text: synthwave", "synthwave", "synthwave"),
    text("Text: drum and bass", "drum_and_bass", "drum and bass"),
    text(
        "Text: heavy metal guitar",
        "heavy_metal",
        "heavy metal guitar",
    ),
    text("Text: reggae", "reggae", "reggae"),
    text("Text: blues guitar", "blues", "blues guitar"),
    text(
        "Text: classical piano",
        "classical_piano",
        "classical piano",
    ),
    text("Text: 8-bit chiptune", "chiptune", "8-bit chiptune"),
    text("Text: flamenco guitar", "flamenco", "flamenco guitar"),
];

/// Choices before the presets.
const FIXED: usize = 2;
const CHOICES: usize = FIXED + PRESETS.len();

/// The choices' names (`ids` false) or stable ids (true): the fixed two, then the
/// presets in order.
const fn choices(ids: bool) -> [&'static str; CHOICES] {
    let mut n = [""; CHOICES];
    n[0] = if ids { "off" } else { "Off (masked)" };
    n[1] = if ids {
        "codes"
    } else {
        "Codes (Style code 1-12)"
    };
    let mut i = 0;
    while i < PRESETS.len() {
        n[FIXED + i] = if ids { PRESETS[i].id } else { PRESETS[i].name };
        i += 1;
    }
    n
}

const NAMES: [&str; CHOICES] = choices(false);
const IDS: [&str; CHOICES] = choices(true);

/// The *Style* parameter's value: off, the codes, or preset `i` of [`PRESETS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StyleChoice(usize);

impl StyleChoice {
    pub const OFF: StyleChoice = StyleChoice(0);
    pub const CODES: StyleChoice = StyleChoice(1);

    /// Preset `i` of [`PRESETS`] (`None` past the end).
    pub fn preset(i: usize) -> Option<StyleChoice> {
        (i < PRESETS.len()).then_some(StyleChoice(FIXED + i))
    }

    /// What the model is to play, given the *Style code* parameters' `codes`.
    pub fn style(self, codes: [u16; LEVELS]) -> Style {
        match self.0 {
            0 => Style::Masked,
            1 => Style::Codes(codes),
            i => Style::Preset(i - FIXED),
        }
    }
}

impl Enum for StyleChoice {
    fn variants() -> &'static [&'static str] {
        &NAMES
    }

    fn ids() -> Option<&'static [&'static str]> {
        Some(&IDS)
    }

    fn to_index(self) -> usize {
        self.0
    }

    fn from_index(index: usize) -> Self {
        StyleChoice(if index < CHOICES { index } else { 0 })
    }
}

/// The style the model is asked to play.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Unconditioned (upstream's default).
    Masked,
    Codes([u16; LEVELS]),
    /// Preset `i` of [`PRESETS`].
    Preset(usize),
}

/// A preset's codes as far as they are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The codes (`None`: masked).
    Ready(Option<[u16; LEVELS]>),
    /// MusicCoCa is still working on it (real time: keep the current style).
    Pending,
    /// It cannot be had (MusicCoCa missing or failing; the reason is in the
    /// error slot given to [`PresetCodes::new`]).
    Failed,
}

/// A text preset's codes once MusicCoCa is done (`None`: it failed).
type Cell = OnceLock<Option<[u16; LEVELS]>>;

/// Where the text presets' codes come from: MusicCoCa on a thread of its own
/// (started with the model thread, idle until asked; the model loads at the first
/// text preset and stays loaded while the plugin runs). Owned by the model thread;
/// dropping it stops and joins the thread (after a load under way: seconds).
pub struct PresetCodes {
    cells: Arc<[Cell; PRESETS.len()]>,
    asked: [bool; PRESETS.len()],
    requests: Option<SyncSender<usize>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PresetCodes {
    /// Starts MusicCoCa's thread: `musiccoca` its folder (`None`: found beside
    /// `checkpoint` as `rill` finds it); `error` receives the reason of the first
    /// preset that cannot be had.
    pub fn new(
        musiccoca: Option<PathBuf>,
        checkpoint: Option<PathBuf>,
        error: Arc<Mutex<String>>,
    ) -> PresetCodes {
        let cells: Arc<[Cell; PRESETS.len()]> = Arc::new(std::array::from_fn(|_| OnceLock::new()));
        let stop = Arc::new(AtomicBool::new(false));
        // Every preset is asked for at most once: the channel holds them all.
        let (tx, rx) = sync_channel(PRESETS.len());
        let (c, e, st) = (Arc::clone(&cells), Arc::clone(&error), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("rill-plugin-style".into())
            .spawn(move || encode_presets(musiccoca, checkpoint, &c, &e, &rx, &st));
        let (requests, thread) = match thread {
            Ok(t) => (Some(tx), Some(t)),
            Err(e) => {
                report(
                    &error,
                    format!("the text presets cannot start MusicCoCa's thread: {e}"),
                );
                (None, None)
            }
        };
        PresetCodes {
            cells,
            asked: [false; PRESETS.len()],
            requests,
            stop,
            thread,
        }
    }

    /// The codes of `style`; a text preset not yet worked out is asked for (once).
    /// Allocates nothing and takes no lock (the model thread calls it every frame).
    pub fn lookup(&mut self, style: Style) -> Lookup {
        let i = match style {
            Style::Masked => return Lookup::Ready(None),
            Style::Codes(c) => return Lookup::Ready(Some(c)),
            Style::Preset(i) => i,
        };
        let Some(preset) = PRESETS.get(i) else {
            return Lookup::Failed;
        };
        if let Source::Codes(c) = preset.source {
            return Lookup::Ready(Some(c));
        }
        if let Some(r) = self.cells[i].get() {
            return r.map_or(Lookup::Failed, |c| Lookup::Ready(Some(c)));
        }
        if !self.asked[i] {
            self.asked[i] = true;
            let sent = self
                .requests
                .as_ref()
                .is_some_and(|tx| tx.try_send(i).is_ok());
            if !sent {
                // The thread could not start or has stopped (its reason is in the
                // error slot already).
                let _ = self.cells[i].set(None);
                return Lookup::Failed;
            }
        }
        Lookup::Pending
    }

    /// Like [`PresetCodes::lookup`], but waits while MusicCoCa works (a bounce);
    /// `None` if `stop` was raised meanwhile. A thread that stops marks what it
    /// had not done as failed, so this never waits for nothing.
    pub fn wait(&mut self, style: Style, stop: &AtomicBool) -> Option<Lookup> {
        loop {
            match self.lookup(style) {
                Lookup::Pending if !stop.load(Ordering::Acquire) => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Lookup::Pending => return None,
                done => return Some(done),
            }
        }
    }
}

impl Drop for PresetCodes {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.requests = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Marks every preset not yet encoded as failed when MusicCoCa's thread ends, however
/// it ends (a panic included), so a bounce waiting for one goes on.
struct FailTheRest<'a> {
    cells: &'a [Cell; PRESETS.len()],
    error: &'a Mutex<String>,
}

impl Drop for FailTheRest<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            report(self.error, "MusicCoCa's thread stopped on an error".into());
        }
        for c in self.cells {
            let _ = c.set(None);
        }
    }
}

/// MusicCoCa's thread: loads the model at the first request, then encodes each
/// requested preset's text into its cell.
fn encode_presets(
    dir: Option<PathBuf>,
    checkpoint: Option<PathBuf>,
    cells: &[Cell; PRESETS.len()],
    error: &Mutex<String>,
    requests: &Receiver<usize>,
    stop: &AtomicBool,
) {
    let _rest = FailTheRest { cells, error };
    // Below the model: the music comes first.
    rill_kernels::pool::idle_thread_priority();
    let mut loaded: Option<Result<(StyleModel, Pool), String>> = None;
    while let Ok(i) = requests.recv() {
        if stop.load(Ordering::Acquire) {
            return;
        }
        let model = loaded.get_or_insert_with(|| {
            let m =
                StyleModel::locate_and_load(dir.as_deref(), checkpoint.as_deref(), isa::active())
                    .map_err(|e| format!("the text presets need MusicCoCa: {e}"));
            if let Err(e) = &m {
                report(error, e.clone());
            }
            m.map(|m| (m, Pool::new(1)))
        });
        let codes = match (&*model, PRESETS.get(i).map(|p| p.source)) {
            (Err(_), _) => None, // Reported once, at the load.
            (Ok((m, pool)), Some(Source::Text(t))) => {
                match m.tokenize_prompts(&[(Prompt::Text(t), 1.0)], Mapper::Seed(0), pool) {
                    Ok(q) => {
                        log(&format!(
                            "style preset {:?}: codes {:?}",
                            PRESETS[i].name, q.tokens
                        ));
                        Some(q.tokens)
                    }
                    Err(e) => {
                        report(error, format!("MusicCoCa could not read {t:?}: {e}"));
                        None
                    }
                }
            }
            (Ok(_), _) => continue,
        };
        let _ = cells[i].set(codes);
    }
}

/// A line on the host's standard error (never a panic when it is closed).
fn log(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "rill: {line}");
}

/// Keeps the first failure's reason and logs each.
fn report(slot: &Mutex<String>, why: String) {
    log(&why);
    let mut m = slot.lock().unwrap_or_else(|e| e.into_inner());
    if m.is_empty() {
        *m = why;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choices_are_off_codes_then_every_preset_with_unique_ids() {
        assert_eq!(StyleChoice::variants().len(), 2 + PRESETS.len());
        assert_eq!(StyleChoice::variants()[3], PRESETS[1].name);
        let mut ids = IDS.to_vec();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), CHOICES, "ids must be unique");
        assert_eq!(StyleChoice::from_index(CHOICES), StyleChoice::OFF);
        let codes = [7; LEVELS];
        assert_eq!(StyleChoice::OFF.style(codes), Style::Masked);
        assert_eq!(StyleChoice::CODES.style(codes), Style::Codes(codes));
        assert_eq!(
            StyleChoice::preset(2).map(|c| c.style(codes)),
            Some(Style::Preset(2))
        );
        assert_eq!(StyleChoice::preset(PRESETS.len()), None);
    }

    #[test]
    fn preset_codes_need_no_musiccoca_and_a_missing_one_fails_with_the_reason() {
        let missing = std::env::temp_dir().join("rill-no-musiccoca-here");
        let error = Arc::new(Mutex::new(String::new()));
        let mut p = PresetCodes::new(Some(missing), None, Arc::clone(&error));
        let Source::Codes(piano) = PRESETS[0].source else {
            panic!("the first preset is upstream's codes")
        };
        assert_eq!(p.lookup(Style::Preset(0)), Lookup::Ready(Some(piano)));
        assert_eq!(p.lookup(Style::Masked), Lookup::Ready(None));
        let stop = AtomicBool::new(false);
        assert_eq!(p.wait(Style::Preset(2), &stop), Some(Lookup::Failed));
        let e = error.lock().unwrap().clone();
        assert!(e.contains("MusicCoCa"), "{e}");
        assert_eq!(p.lookup(Style::Preset(99)), Lookup::Failed);
    }
}
