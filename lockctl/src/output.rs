//! Writing to stdout and stderr without panicking.
//!
//! `println!` panics when stdout is a closed pipe (`lockctl status x | true`)
//! and a panic would print a backtrace hint; these write through the locked
//! handles and treat a closed pipe as "nobody is listening".

use std::io::{self, Write as _};

/// Writes `text` (which should end in a newline) to stdout.
pub(crate) fn stdout(text: &str) {
    let mut out = io::stdout().lock();
    // A reader that went away is not an error worth reporting: the answer
    // was computed and nobody wants it.
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// Writes `lockctl: <message>` to stderr as one line: any line breaks in
/// `message` (from error sources) become spaces, so scripts can rely on one
/// line per failure.
pub(crate) fn error(message: &str) {
    let flat: Vec<&str> = message.split_whitespace().collect();
    let _ = writeln!(io::stderr().lock(), "lockctl: {}", flat.join(" "));
}
