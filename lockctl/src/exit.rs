//! Exit codes, and [`Failure`]: an error on its way to being one line on
//! stderr and an exit code.
//!
//! The codes follow `sysexits.h` where one fits, so scripts and service
//! managers that know those codes read them right; 126 and 127 are the
//! shell's, because `lockctl run` stands in front of a command the way a
//! shell does.

use std::error::Error as _;
use std::fmt;
use std::process::ExitStatus;

use lock_redis::LockError;

/// Bad arguments: unknown flag, bad duration, bad URL, bad lock name, or
/// arguments the store contradicts (`run --permits N` on a semaphore of
/// another size) (`EX_USAGE`).
pub(crate) const USAGE: u8 = 64;
/// The key holds something that is not a lock, or not what an option
/// needs (a permit id that is not taken) (`EX_DATAERR`).
pub(crate) const DATA: u8 = 65;
/// Redis could not be reached, did not answer, or is out of memory
/// (`EX_UNAVAILABLE`).
pub(crate) const UNAVAILABLE: u8 = 69;
/// A bug or an answer lockctl does not understand (`EX_SOFTWARE`).
pub(crate) const SOFTWARE: u8 = 70;
/// `run`: the lock was not acquired within `--wait` (`EX_TEMPFAIL`: try
/// again later).
pub(crate) const NOT_ACQUIRED: u8 = 75;
/// `run`: the lock was lost while the command ran (`EX_PROTOCOL`: the
/// promise of exclusion was broken).
pub(crate) const LOST: u8 = 76;
/// Redis refused the credentials or a permission the operation needs (ACL),
/// or a TLS certificate was refused, the server's by us or ours by the
/// server (`EX_NOPERM`).
pub(crate) const NO_PERMISSION: u8 = 77;
/// The server lacks a command lockctl needs: disabled or renamed
/// (`EX_CONFIG`: the server's configuration has to change).
pub(crate) const CONFIG: u8 = 78;
/// `run`: the command exists but could not be executed (as a shell).
pub(crate) const CANNOT_EXECUTE: u8 = 126;
/// `run`: the command was not found (as a shell).
pub(crate) const NOT_FOUND: u8 = 127;

/// The codes lockctl gives a meaning other than "not acquired" below 126
/// (from 126 on, every code is the shell's).
pub(crate) const OTHER_MEANINGS: [u8; 7] = [
    USAGE,
    DATA,
    UNAVAILABLE,
    SOFTWARE,
    LOST,
    NO_PERMISSION,
    CONFIG,
];

/// Whether `code` may stand for "not acquired" (`run -E`): 1 to 125 and
/// none of [`OTHER_MEANINGS`]. Not 0 (success), and not from 126 on: those
/// say the command could not run or died by a signal.
pub(crate) fn is_free_for_conflicts(code: u8) -> bool {
    (1..CANNOT_EXECUTE).contains(&code) && !OTHER_MEANINGS.contains(&code)
}

/// The exit code that reports `status` as a shell would: the code, or
/// 128 + the signal that killed the process.
pub(crate) fn of_status(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(code), _) => of_code(code),
        (None, Some(signal)) => of_signal(signal),
        (None, None) => SOFTWARE,
    }
}

/// A process's exit code as lockctl's.
pub(crate) fn of_code(code: i32) -> u8 {
    // Exit codes are 0..=255 on Unix; the fallback is unreachable.
    u8::try_from(code).unwrap_or(SOFTWARE)
}

/// 128 + `signal`, as a shell reports death by a signal.
pub(crate) fn of_signal(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(SOFTWARE)
}

/// Something that ends lockctl: printed as `lockctl: <message>` on stderr,
/// then lockctl exits with `code`.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// A library error, with `context` in front (e.g. which server).
    pub(crate) fn lock(context: &str, err: &LockError) -> Self {
        let message = one_line(err);
        let message = if context.is_empty() {
            message
        } else {
            format!("{context}: {message}")
        };
        Self::new(code_of(err), message)
    }
}

impl From<LockError> for Failure {
    fn from(err: LockError) -> Self {
        Self::lock("", &err)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The exit code for a library error, by what it means.
fn code_of(err: &LockError) -> u8 {
    match err {
        LockError::InvalidArgument { .. } => USAGE,
        LockError::WrongType { .. } => DATA,
        // Redis at maxmemory refused the write: it cannot serve locks now.
        LockError::Unavailable { .. } | LockError::OutOfMemory { .. } => UNAVAILABLE,
        // Taken and given back for want of replicas: nothing is held, and
        // trying later may work, which is what "not acquired" says.
        LockError::NotReplicated { .. } => NOT_ACQUIRED,
        LockError::LockLost { .. } => LOST,
        LockError::Unauthorized { .. } | LockError::Tls { .. } => NO_PERMISSION,
        LockError::Unsupported { .. } => CONFIG,
        _ => SOFTWARE,
    }
}

/// The error and its sources on one line. The Redis errors already quote
/// their source in their message, so a source whose text is already there
/// is not repeated.
fn one_line(err: &LockError) -> String {
    let mut line = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_sysexits() {
        assert_eq!(Failure::from(LockError::invalid("x")).code, USAGE);
        assert_eq!(
            Failure::from(LockError::unavailable("refused", None)).code,
            UNAVAILABLE
        );
        assert_eq!(Failure::from(LockError::timeout("slow")).code, UNAVAILABLE);
        assert_eq!(
            Failure::from(LockError::OutOfMemory {
                message: "OOM".into()
            })
            .code,
            UNAVAILABLE
        );
        assert_eq!(
            Failure::from(LockError::WrongType { key: "k".into() }).code,
            DATA
        );
        assert_eq!(
            Failure::from(LockError::Unauthorized {
                message: "WRONGPASS".into()
            })
            .code,
            NO_PERMISSION
        );
        assert_eq!(
            Failure::from(LockError::Tls {
                message: "invalid peer certificate".into()
            })
            .code,
            NO_PERMISSION
        );
        assert_eq!(
            Failure::from(LockError::Unsupported {
                message: "EVALSHA".into()
            })
            .code,
            CONFIG
        );
        assert_eq!(Failure::from(LockError::protocol("?")).code, SOFTWARE);
        assert_eq!(Failure::from(LockError::Closed).code, SOFTWARE);
    }

    #[test]
    fn sources_are_not_repeated() {
        let io = std::io::Error::other("connection refused");
        let err = LockError::unavailable(
            "redis connection failed: connection refused",
            Some(std::sync::Arc::new(io)),
        );
        let failure = Failure::lock("cannot reach Redis at 127.0.0.1:1", &err);
        assert_eq!(
            failure.message,
            "cannot reach Redis at 127.0.0.1:1: lock backend unavailable: \
             redis connection failed: connection refused"
        );
        let io = std::io::Error::other("reset by peer");
        let err = LockError::unavailable("dropped", Some(std::sync::Arc::new(io)));
        assert_eq!(
            Failure::from(err).message,
            "lock backend unavailable: dropped: reset by peer"
        );
    }

    #[test]
    fn conflict_codes_mean_nothing_else() {
        assert!(is_free_for_conflicts(NOT_ACQUIRED));
        for free in [1, 2, 63, 66, 68, 71, 74, 79, 125] {
            assert!(is_free_for_conflicts(free), "{free}");
        }
        for taken in [0, 64, 65, 69, 70, 76, 77, 78, 126, 127, 128, 143, 255] {
            assert!(!is_free_for_conflicts(taken), "{taken}");
        }
    }

    #[test]
    fn signals_are_128_plus() {
        assert_eq!(of_signal(15), 143);
        assert_eq!(of_signal(9), 137);
    }
}
