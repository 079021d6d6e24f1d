//! The plugin's parameters (automatable, saved with the project) and its saved
//! state: the checkpoint and MusicCoCa paths.

use std::sync::RwLock;

use nice_plug::prelude::*;
use rill_mrt2::conditioning::CfgScales;

use crate::bridge::{Settings, SettingsSource};
use crate::style::StyleChoice;

/// Drums as MRT2's drums control takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
pub enum Drums {
    /// Unconditioned (upstream's default).
    Masked,
    Off,
    On,
}

/// One of the 12 MusicCoCa style codes (as `rill style "…"` prints them).
#[derive(Params)]
pub struct StyleCode {
    #[id = "style_code"]
    pub code: IntParam,
}

impl StyleCode {
    /// Code `n` of 12 (named so in the host's list).
    fn numbered(n: usize) -> StyleCode {
        StyleCode {
            code: IntParam::new(
                format!("Style code {n}"),
                0,
                IntRange::Linear { min: 0, max: 1023 },
            ),
        }
    }
}

#[derive(Params)]
pub struct RillParams {
    /// The MRT2 checkpoint; empty: found like `rill` finds it (`$RILL_CHECKPOINT`,
    /// then upstream's download locations).
    #[persist = "checkpoint"]
    pub checkpoint: RwLock<String>,
    /// MusicCoCa's folder, for the text presets; empty: found like `rill` finds it
    /// (`$RILL_MUSICCOCA`, beside the checkpoint, upstream's download location).
    #[persist = "musiccoca"]
    pub musiccoca: RwLock<String>,
    #[id = "temperature"]
    pub temperature: FloatParam,
    #[id = "top_k"]
    pub top_k: IntParam,
    #[id = "cfg_style"]
    pub cfg_style: FloatParam,
    #[id = "cfg_notes"]
    pub cfg_notes: FloatParam,
    #[id = "cfg_drums"]
    pub cfg_drums: FloatParam,
    #[id = "drums"]
    pub drums: EnumParam<Drums>,
    /// Off (masked, upstream's default), the 12 style codes below, or a preset.
    #[id = "style"]
    pub style: EnumParam<StyleChoice>,
    #[nested(array, group = "Style code")]
    pub style_codes: [StyleCode; 12],
    #[id = "seed"]
    pub seed: IntParam,
    /// Wait for the model in every block, for hosts that do not say when they
    /// bounce (a host's offline render always waits).
    #[id = "offline_render"]
    pub offline_render: BoolParam,
    /// When the host's transport starts, start the stream again from its beginning
    /// (the same stream each time for a fixed seed); off: it continues.
    #[id = "restart_on_play"]
    pub restart_on_play: BoolParam,
}

/// A CFG scale: upstream bins −1..7 in whole steps.
fn cfg(name: &str, default: f64) -> FloatParam {
    FloatParam::new(
        name,
        default as f32,
        FloatRange::Linear {
            min: -1.0,
            max: 7.0,
        },
    )
    .with_step_size(1.0)
}

impl Default for RillParams {
    /// `rill generate`'s defaults.
    fn default() -> Self {
        let d = Settings::default();
        let c = CfgScales::default();
        RillParams {
            checkpoint: RwLock::new(String::new()),
            musiccoca: RwLock::new(String::new()),
            temperature: FloatParam::new(
                "Temperature",
                d.temperature,
                FloatRange::Linear { min: 0.0, max: 4.0 },
            )
            .with_step_size(0.01),
            top_k: IntParam::new(
                "Top-k",
                d.top_k as i32,
                IntRange::Linear { min: 1, max: 1024 },
            ),
            cfg_style: cfg("CFG style", c.musiccoca),
            cfg_notes: cfg("CFG notes", c.notes),
            cfg_drums: cfg("CFG drums", c.drums),
            drums: EnumParam::new("Drums", Drums::Masked),
            style: EnumParam::new("Style", StyleChoice::OFF),
            style_codes: std::array::from_fn(|i| StyleCode::numbered(i + 1)),
            seed: IntParam::new(
                "Seed",
                d.seed as i32,
                IntRange::Linear {
                    min: 0,
                    max: i32::MAX,
                },
            ),
            offline_render: BoolParam::new("Offline render", false),
            restart_on_play: BoolParam::new("Restart on play", true),
        }
    }
}

impl RillParams {
    /// The checkpoint path saved in the project (`None` when empty).
    pub fn checkpoint_path(&self) -> Option<std::path::PathBuf> {
        saved_path(&self.checkpoint)
    }

    /// MusicCoCa's folder saved in the project (`None` when empty).
    pub fn musiccoca_path(&self) -> Option<std::path::PathBuf> {
        saved_path(&self.musiccoca)
    }
}

impl SettingsSource for RillParams {
    fn settings(&self) -> Settings {
        Settings {
            temperature: self.temperature.value(),
            top_k: self.top_k.value().max(1) as usize,
            cfg: CfgScales {
                musiccoca: f64::from(self.cfg_style.value()),
                notes: f64::from(self.cfg_notes.value()),
                drums: f64::from(self.cfg_drums.value()),
            },
            drums: match self.drums.value() {
                Drums::Masked => None,
                Drums::Off => Some(false),
                Drums::On => Some(true),
            },
            seed: self.seed.value().max(0) as u64,
            style: self.style.value().style(
                self.style_codes
                    .each_ref()
                    .map(|c| c.code.value().clamp(0, 1023) as u16),
            ),
        }
    }
}

/// A path field of the saved state (`None` when blank).
fn saved_path(field: &RwLock<String>) -> Option<std::path::PathBuf> {
    let p = field
        .read()
        .map(|p| p.clone())
        .unwrap_or_else(|e| e.into_inner().clone());
    (!p.trim().is_empty()).then(|| p.trim().into())
}
