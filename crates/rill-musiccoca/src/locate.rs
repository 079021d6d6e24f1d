//! Where MusicCoCa's assets are looked for, as upstream lays out its download: the
//! checkpoint in `ROOT/checkpoints/`, the style model in `ROOT/resources/musiccoca/`.

use std::path::{Path, PathBuf};

/// The files rill reads from the assets directory.
pub const FILES: [&str; 6] = [
    "spm.model",
    "text_encoder.tflite",
    "mapper.tflite",
    "pretrained_vector_quantizer.tflite",
    "audio_preprocessor.tflite",
    "music_encoder.tflite",
];

/// The assets' folder under a download root.
const SUBDIR: &str = "resources/musiccoca";

/// Candidate directories, in search order: `$RILL_MUSICCOCA`, beside `checkpoint`
/// (`ROOT/resources/musiccoca` for `ROOT/checkpoints/FILE`, and `DIR/resources/musiccoca`
/// for a checkpoint in `DIR`), `$MAGENTA_HOME/resources/musiccoca`,
/// `$MAGENTA_HOME/magenta-rt-v2/resources/musiccoca` and upstream's default
/// `~/Documents/Magenta/magenta-rt-v2/resources/musiccoca`.
pub fn candidates(checkpoint: Option<&Path>) -> Vec<PathBuf> {
    let mut c = Vec::new();
    if let Some(p) = std::env::var_os("RILL_MUSICCOCA") {
        c.push(PathBuf::from(p));
    }
    if let Some(dir) = checkpoint.and_then(Path::parent) {
        if let Some(root) = dir.parent() {
            c.push(root.join(SUBDIR));
        }
        c.push(dir.join(SUBDIR));
    }
    if let Some(h) = std::env::var_os("MAGENTA_HOME") {
        let h = PathBuf::from(h);
        c.push(h.join(SUBDIR));
        c.push(h.join("magenta-rt-v2").join(SUBDIR));
    }
    if let Some(home) = std::env::var_os("HOME") {
        c.push(
            PathBuf::from(home)
                .join("Documents/Magenta/magenta-rt-v2")
                .join(SUBDIR),
        );
    }
    c
}

/// The first candidate that holds the text encoder.
pub fn find(checkpoint: Option<&Path>) -> Option<PathBuf> {
    candidates(checkpoint)
        .into_iter()
        .find(|d| d.join("text_encoder.tflite").is_file())
}

/// How to download the assets (several lines, no trailing newline).
pub fn download_instructions() -> String {
    "\
Get MusicCoCa (Google's Magenta RealTime 2 style model) from Hugging Face:
    pip install -U huggingface_hub
    huggingface-cli download google/magenta-realtime-2 --include 'resources/musiccoca/*' \\
        --local-dir ~/Documents/Magenta/magenta-rt-v2
  then rill finds it there, or pass --musiccoca DIR (the folder holding spm.model and the .tflite files).
  For a random-weight smoke run: rill synth-checkpoint --model musiccoca --seed 0 -o DIR"
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beside_the_checkpoint_as_upstream_downloads() {
        let c = candidates(Some(Path::new("/m/checkpoints/mrt2_small.safetensors")));
        assert!(c.contains(&PathBuf::from("/m/resources/musiccoca")));
        assert!(c.contains(&PathBuf::from("/m/checkpoints/resources/musiccoca")));
    }

    #[test]
    fn instructions_name_the_repository_and_folder() {
        let t = download_instructions();
        assert!(t.contains("google/magenta-realtime-2"));
        assert!(t.contains("resources/musiccoca"));
    }
}
