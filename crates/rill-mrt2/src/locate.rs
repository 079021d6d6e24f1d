//! Where MRT2 checkpoints are looked for when none is named, and how to get one.
//! Shared by the `rill` command and the Python package, so both search the same
//! places and print the same download instructions.

use std::path::PathBuf;

/// The default file name of a model size (`mrt2_small` → `mrt2_small.safetensors`).
pub fn file_name(size: &str) -> String {
    format!("{size}.safetensors")
}

/// Default locations of the checkpoint of `size`, in search order:
/// `$RILL_CHECKPOINT`, `$MAGENTA_HOME/checkpoints/FILE`,
/// `$MAGENTA_HOME/magenta-rt-v2/checkpoints/FILE` (upstream's layout under
/// `MAGENTA_HOME`) and `~/Documents/Magenta/magenta-rt-v2/checkpoints/FILE`
/// (upstream's default).
pub fn default_candidates(size: &str) -> Vec<PathBuf> {
    let file = file_name(size);
    let mut c = Vec::new();
    if let Some(p) = std::env::var_os("RILL_CHECKPOINT") {
        c.push(PathBuf::from(p));
    }
    if let Some(h) = std::env::var_os("MAGENTA_HOME") {
        let h = PathBuf::from(h);
        c.push(h.join("checkpoints").join(&file));
        c.push(h.join("magenta-rt-v2/checkpoints").join(&file));
    }
    if let Some(home) = std::env::var_os("HOME") {
        c.push(
            PathBuf::from(home)
                .join("Documents/Magenta/magenta-rt-v2/checkpoints")
                .join(&file),
        );
    }
    c
}

/// The first default location that exists.
pub fn find_default(size: &str) -> Option<PathBuf> {
    default_candidates(size).into_iter().find(|p| p.exists())
}

/// How to download the real weights of `size` (several lines, no trailing newline).
pub fn download_instructions(size: &str) -> String {
    let file = file_name(size);
    format!(
        "\
Get the real weights (Google's Magenta RealTime 2, CC-BY 4.0) from Hugging Face:
    pip install -U huggingface_hub
    huggingface-cli download google/magenta-realtime-2 checkpoints/{file} \\
        --local-dir ~/Documents/Magenta/magenta-rt-v2
  (or: curl -L -o {file} \\
        https://huggingface.co/google/magenta-realtime-2/resolve/main/checkpoints/{file})"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_name_the_file() {
        let t = download_instructions("mrt2_base");
        assert!(t.contains("checkpoints/mrt2_base.safetensors"));
        assert!(t.contains("huggingface-cli download google/magenta-realtime-2"));
        assert!(!t.contains("mrt2_small"));
    }

    #[test]
    fn candidates_end_in_the_file_name() {
        for c in default_candidates("mrt2_small") {
            if std::env::var_os("RILL_CHECKPOINT").map(PathBuf::from) != Some(c.clone()) {
                assert!(c.ends_with("mrt2_small.safetensors"), "{}", c.display());
            }
        }
    }
}
