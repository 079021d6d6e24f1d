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

/// A bar counting the rows of `rill batch`, the current row in its message.
pub fn rows_bar(rows: u64) -> ProgressBar {
    let bar = ProgressBar::new(rows);
    bar.set_style(
        ProgressStyle::with_template("batch {bar:40} {pos}/{len} rows  {msg}  eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}
