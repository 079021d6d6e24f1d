//! Progress bars on stderr (hidden automatically when stderr is not a terminal).

use indicatif::{ProgressBar, ProgressStyle};

/// A bar counting 40 ms frames, with the real-time factor so far.
pub fn frames_bar(frames: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(frames);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{what} {{bar:40}} {{pos}}/{{len}} frames  {{msg}}  eta {{eta}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// A bar counting bytes written.
pub fn bytes_bar(what: &str) -> ProgressBar {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{what} {{bar:40}} {{bytes}}/{{total_bytes}}  eta {{eta}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}
