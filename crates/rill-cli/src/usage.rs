//! Exit statuses: 1 when the work fails, 2 for a usage error (clap's own status
//! for the errors it finds), and the one-line error message.

use std::fmt;

/// The exit status of a usage error.
pub const USAGE: i32 = 2;
/// The exit status of an error while working.
pub const FAILURE: i32 = 1;

/// `rill --help`'s closing paragraph.
pub const AFTER_HELP: &str = "Exit status: 0 on success; 1 when the work fails (a file that \
cannot be read or written, a bad checkpoint, an error while generating); 2 for a usage error, \
found before any work starts (an unknown or missing flag, a value out of range, an empty text, \
an unknown speaker, a bad RILL_ISA).\n\nA path of `-` is standard input for --text-file and \
standard output for -o (the WAV; messages and progress stay on standard error).";

/// An error in how rill was invoked rather than in the work (exit status 2).
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// `return Err(usage(format!(…)))`: `bail!` for usage errors.
macro_rules! usage_bail {
    ($($t:tt)*) => {
        return Err($crate::usage::usage(format!($($t)*)))
    };
}
pub(crate) use usage_bail;

/// A usage error with this message.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    UsageError(message.into()).into()
}

/// [`USAGE`] if any error in the chain is a [`UsageError`], else [`FAILURE`].
pub fn exit_code(e: &anyhow::Error) -> i32 {
    if e.chain().any(|c| c.is::<UsageError>()) {
        USAGE
    } else {
        FAILURE
    }
}

/// The error and its causes on one line, each cause once: an error whose text
/// already quotes its source (`cannot open X: No such device`) does not get the
/// source appended again.
pub fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn causes_quoted_by_their_error_are_not_repeated() {
        let io = std::io::Error::other("No such device");
        let e = anyhow::Error::new(io).context("cannot open checkpoint x: No such device");
        assert_eq!(message(&e), "cannot open checkpoint x: No such device");
        let e = anyhow::Error::new(std::io::Error::other("denied")).context("cannot write y");
        assert_eq!(message(&e), "cannot write y: denied");
        assert_eq!(exit_code(&e), FAILURE);
        let e = Err::<(), _>(usage("the text is empty"))
            .context("rill speak")
            .unwrap_err();
        assert_eq!(exit_code(&e), USAGE);
    }
}
