//! rill's MRT2 instrument as a CLAP and VST3 plugin (nice-plug): MIDI notes in,
//! stereo out at the host's rate (48 kHz native, others resampled). The model loads and runs on its own threads
//! ([`bridge`]); the audio callback only queues notes and reads a lock-free ring.
//! Bundles: `scripts/bundle-plugin` (docs/plugin.md).

use std::sync::Arc;

use nice_plug::prelude::*;

mod audio_side;
pub mod bridge;
pub mod load;
mod output;
pub mod params;
pub mod style;

use bridge::{AudioSide, ModelConfig, ModelThread, Note, Timeline};
pub use params::RillParams;

/// The instrument.
pub struct RillInstrument {
    params: Arc<RillParams>,
    audio: Option<AudioSide>,
    model: Option<ModelThread>,
    /// The host renders offline (a bounce): wait for the model.
    offline: bool,
    /// The host's rate is one rill can play at (else silence).
    rate_ok: bool,
    /// The host's transport was playing in the last block.
    was_playing: bool,
}

impl Default for RillInstrument {
    fn default() -> Self {
        RillInstrument {
            params: Arc::new(RillParams::default()),
            audio: None,
            model: None,
            offline: false,
            rate_ok: false,
            was_playing: false,
        }
    }
}

impl Plugin for RillInstrument {
    const NAME: &'static str = "rill MRT2";
    const VENDOR: &'static str = "rill";
    const URL: &'static str = "https://example.invalid/rill";
    const EMAIL: &'static str = "";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const AUDIO_IO_LAYOUTS: &'static [AudioIOLayout] = &[AudioIOLayout {
        main_input_channels: None,
        main_output_channels: NonZeroU32::new(2),
        ..AudioIOLayout::const_default()
    }];
    const MIDI_INPUT: MidiConfig = MidiConfig::Basic;
    type SysExMessage = ();
    type BackgroundTask = ();
    type Editor = ();

    fn params(&self) -> Arc<dyn Params> {
        self.params.clone()
    }

    fn activate(
        &mut self,
        _layout: &AudioIOLayout,
        config: &BufferConfig,
        context: &mut impl ActivateContext<Self>,
    ) -> bool {
        // A failed activation is not an option: hosts may still call process.
        let timeline = match Timeline::at(config.sample_rate.round() as u32) {
            Ok(t) => t,
            Err(e) => {
                nice_error!("rill plays silence: {e}");
                self.rate_ok = false;
                return true;
            }
        };
        self.rate_ok = true;
        self.offline = config.process_mode == ProcessMode::Offline;
        context.set_latency_samples(timeline.latency as u32);
        if self.model.as_ref().map(|m| m.timeline()) != Some(timeline) {
            // Loading starts here, after the host restored the state (never in a
            // plugin scan, which does not activate), on the model thread; a new
            // sample rate starts a new one.
            self.audio = None;
            self.model = None;
            let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
            let config = ModelConfig {
                timeline,
                threads,
                musiccoca: self.params.musiccoca_path(),
                slow_frame: None,
            };
            let settings: Arc<dyn bridge::SettingsSource> = self.params.clone();
            match bridge::start(
                load::loader(self.params.checkpoint_path()),
                settings,
                config,
            ) {
                Ok((audio, model)) => {
                    self.audio = Some(audio);
                    self.model = Some(model);
                }
                Err(e) => {
                    // Silence, as without a model.
                    nice_error!("rill: cannot start the model thread: {e}");
                }
            }
        }
        true
    }

    /// The host resets the plugin (after activation, or when it asks): the stream
    /// starts again from its beginning.
    fn reset(&mut self) {
        if let Some(audio) = self.audio.as_mut() {
            audio.restart();
        }
    }

    fn process(
        &mut self,
        buffer: &mut Buffer,
        _aux: &mut AuxiliaryBuffers,
        context: &mut impl ProcessContext<Self>,
    ) -> ProcessStatus {
        let wait = self.offline || self.params.offline_render.value();
        let slices = buffer.as_slice();
        let audio = self.audio.as_mut().filter(|_| self.rate_ok);
        let Some(audio) = audio else {
            for ch in slices.iter_mut() {
                ch.fill(0.0);
            }
            return ProcessStatus::KeepAlive;
        };
        let playing = context.transport().playing;
        if playing && !self.was_playing && self.params.restart_on_play.value() {
            audio.restart();
        }
        self.was_playing = playing;
        while let Some(event) = context.next_event() {
            match event {
                NoteEvent::NoteOn { timing, key, .. } => {
                    if let Some(k) = key.number() {
                        audio.note(timing, Note::On(k));
                    }
                }
                NoteEvent::NoteOff { timing, key, .. } => {
                    audio.note(timing, key.number().map_or(Note::AllOff, Note::Off))
                }
                _ => {}
            }
        }
        if let [left, right, ..] = slices {
            audio.render(left, right, wait);
        }
        ProcessStatus::KeepAlive
    }
}

impl ClapPlugin for RillInstrument {
    const CLAP_ID: &'static str = "org.rill.mrt2";
    const CLAP_DESCRIPTION: Option<&'static str> =
        Some("Magenta RealTime 2 on the CPU: MIDI notes in, endless 48 kHz stereo out");
    const CLAP_MANUAL_URL: Option<&'static str> = None;
    const CLAP_SUPPORT_URL: Option<&'static str> = None;
    const CLAP_FEATURES: &'static [ClapFeature] = &[
        ClapFeature::Instrument,
        ClapFeature::Synthesizer,
        ClapFeature::Stereo,
    ];
}

impl Vst3Plugin for RillInstrument {
    const VST3_CLASS_ID: [u8; 16] = *b"rill-mrt2-instr1";
    const VST3_SUBCATEGORIES: &'static [Vst3SubCategory] =
        &[Vst3SubCategory::Instrument, Vst3SubCategory::Synth];
}

nice_export_clap!(RillInstrument);
nice_export_vst3!(RillInstrument);
