//! Finding and loading the model, on the model thread (never during a host's
//! plugin scan): the checkpoint saved in the project, else `$RILL_CHECKPOINT`, else
//! upstream's download locations; the live precision (`rill play`'s: the cached
//! int8 copy of a full-precision checkpoint; a pre-quantised file as it is).

use std::path::PathBuf;

use rill_mrt2::ModelKind;
use rill_stream::source::{self, Hints};

use crate::bridge::{Loaded, Loader};

const HINTS: Hints = Hints {
    pass_checkpoint: "its path in the plugin's state (the checkpoint field)",
    try_random: "To try without a download: any `rill … --random-weights` run writes a \
                 random-weight checkpoint into rill's cache (~/.cache/rill/mrt2_small_random_seed0.safetensors); \
                 name that file (noise, not music).",
};

/// Loads the checkpoint at `explicit` (else the default ones) when called.
pub fn loader(explicit: Option<PathBuf>) -> Loader {
    Box::new(move || {
        let env = std::env::var_os("RILL_CHECKPOINT").map(PathBuf::from);
        let path = source::resolve_checkpoint(
            explicit.as_deref().or(env.as_deref()),
            ModelKind::Small,
            &HINTS,
        )
        .map_err(|e| e.to_string())?;
        let (ckpt, _) = source::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        // As `rill play`: a full-precision checkpoint's int8 copy from the cache
        // (made once), else quantised at load.
        let (ckpt, precision, _) =
            rill_stream::live::live_weights(ckpt, None, &mut |_| {}).map_err(|e| e.to_string())?;
        let lm = source::load_lm(&ckpt, precision).map_err(|e| e.to_string())?;
        let codec = source::load_codec(&ckpt, source::codec_precision(None, precision, true))
            .map_err(|e| e.to_string())?;
        Ok(Loaded {
            lm,
            codec,
            checkpoint: Some(path),
        })
    })
}
