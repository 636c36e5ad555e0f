//! How Redis failures become [`LockError`]s.
//!
//! | Redis says | [`LockError`] | retryable |
//! | --- | --- | --- |
//! | `WRONGTYPE` (a non-hash value at the lock key) | [`LockError::WrongType`] with the lock key | no |
//! | `BADTOKEN` (a script found a fencing-token counter that is not an integer, before writing anything) | [`LockError::WrongType`] with the counter's key | no |
//! | I/O error, connection refused / reset / closed | [`LockError::Unavailable`] | yes |
//! | no reply within the command timeout | [`LockError::Unavailable`] with `timed_out` ([`LockError::is_timeout`]) | yes |
//! | `TRYAGAIN`, `CLUSTERDOWN`, `LOADING`, `MASTERDOWN`, `BUSY`, `READONLY`, `NOSCRIPT` after a reload | [`LockError::Unavailable`] | yes |
//! | no connection within the command timeout, or none could be made | [`LockError::Unavailable`] | yes |
//! | `UPGRADE` (a read-write lock's write acquisition by an owner holding its read side; nothing written) | [`LockError::UpgradeRefused`] with the lock key (the kind puts the lock's name in) | no |
//! | `OOM` (at `maxmemory` with `noeviction`: a script's first refused write; the scripts refuse before writing anything) | [`LockError::OutOfMemory`] | no (see its docs) |
//! | wrong password / user (`WRONGPASS`, `NOAUTH`, `NOPERM`), invalid URL | [`LockError::InvalidArgument`] | no |
//! | a reply of an unexpected shape, any other error reply | [`LockError::Protocol`] | no |
//! | the backend was closed | [`LockError::Closed`] | no |
//!
//! The backend never retries (only a `NOSCRIPT` reply is answered by loading
//! the script and running it once more): the engine retries retryable errors
//! itself, with the same request id, so a retry after an unknown outcome
//! cannot count a hold twice.

use std::sync::Arc;
use std::time::Duration;

use lock_core::LockError;
use redis::{ErrorKind, RedisError};

/// Maps a Redis error of a call whose first key is `first_key` (the lock key
/// for every lock script) to a [`LockError`]; see the module docs.
pub fn from_redis(err: &RedisError, first_key: &str) -> LockError {
    let source = || Some(Arc::new(err.clone()) as lock_core::error::ErrorSource);
    match err.code() {
        Some("WRONGTYPE") => {
            return LockError::WrongType {
                key: first_key.to_owned(),
            };
        }
        Some(BAD_TOKEN) => {
            return LockError::WrongType {
                key: bad_token_counter(err).unwrap_or(first_key).to_owned(),
            };
        }
        Some(
            code @ ("BUSY" | "TRYAGAIN" | "CLUSTERDOWN" | "LOADING" | "MASTERDOWN" | "READONLY"
            | "NOSCRIPT"),
        ) => {
            return LockError::unavailable(format!("redis is not ready ({code}): {err}"), source());
        }
        Some("UPGRADE") => {
            return LockError::UpgradeRefused {
                name: first_key.to_owned(),
            };
        }
        Some("OOM") => {
            return LockError::OutOfMemory {
                message: format!("redis is at maxmemory and refused a write: {err}"),
            };
        }
        Some("WRONGPASS" | "NOAUTH" | "NOPERM") => {
            return LockError::invalid(format!(
                "redis rejected the credentials or permissions: {err}"
            ));
        }
        _ => {}
    }
    match err.kind() {
        ErrorKind::AuthenticationFailed => LockError::invalid(format!(
            "redis rejected the credentials or permissions: {err}"
        )),
        ErrorKind::InvalidClientConfig => {
            LockError::invalid(format!("invalid redis configuration: {err}"))
        }
        ErrorKind::Parse | ErrorKind::UnexpectedReturnType => {
            LockError::protocol(format!("unexpected reply from redis: {err}"))
        }
        ErrorKind::Server(_) | ErrorKind::Extension => {
            LockError::protocol(format!("redis answered with an error: {err}"))
        }
        _ if err.is_timeout() => LockError::Unavailable {
            message: format!("redis timed out: {err}"),
            timed_out: true,
            source: source(),
        },
        // I/O errors, refused or dropped connections, and client-side
        // failures (a closed multiplexed connection) are all transient.
        _ => LockError::unavailable(format!("redis connection failed: {err}"), source()),
    }
}

/// The error code of a fencing-token counter that does not hold an integer
/// (see `scripts/common.lua`).
const BAD_TOKEN: &str = "BADTOKEN";
/// What follows the counter's key in a [`BAD_TOKEN`] error. Redis appends
/// the script's name after it, and a key may hold spaces: the key is what
/// comes before the last occurrence.
const BAD_TOKEN_TAIL: &str = " does not hold an integer fencing token counter";

fn bad_token_counter(err: &RedisError) -> Option<&str> {
    let detail = err.detail()?;
    detail.rfind(BAD_TOKEN_TAIL).map(|end| &detail[..end])
}

/// The error of a call that got no reply within `limit`.
pub fn timed_out(what: &str, limit: Duration) -> LockError {
    LockError::timeout(format!("{what}: no reply from redis within {limit:?}"))
}

/// The error of a reply whose shape the script does not produce.
pub fn bad_reply(script: &str, reply: &redis::Value) -> LockError {
    LockError::protocol(format!(
        "unexpected reply to the {script} script: {reply:?}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    fn server_err(code: &str) -> RedisError {
        redis::make_extension_error(code.to_owned(), Some("detail".to_owned()))
    }

    #[test]
    fn upgrade_is_refused_naming_the_lock_key() {
        let e = from_redis(&server_err("UPGRADE"), "orders");
        assert!(matches!(e, LockError::UpgradeRefused { ref name } if name == "orders"));
        assert!(!e.is_retryable());
    }

    #[test]
    fn wrongtype_names_the_key() {
        let e = from_redis(&server_err("WRONGTYPE"), "orders");
        assert!(matches!(e, LockError::WrongType { ref key } if key == "orders"));
        assert!(!e.is_retryable());
    }

    #[test]
    fn transient_server_states_are_retryable() {
        for code in [
            "BUSY",
            "TRYAGAIN",
            "CLUSTERDOWN",
            "LOADING",
            "MASTERDOWN",
            "READONLY",
        ] {
            let e = from_redis(&server_err(code), "k");
            assert!(e.is_retryable(), "{code}: {e}");
            assert!(!e.is_timeout(), "{code}: {e}");
        }
    }

    #[test]
    fn io_errors_are_retryable_and_timeouts_say_so() {
        let refused = RedisError::from(io::Error::from(io::ErrorKind::ConnectionRefused));
        assert!(from_redis(&refused, "k").is_retryable());
        assert!(!from_redis(&refused, "k").is_timeout());
        let reset = RedisError::from(io::Error::from(io::ErrorKind::ConnectionReset));
        assert!(from_redis(&reset, "k").is_retryable());
        let timeout = RedisError::from(io::Error::from(io::ErrorKind::TimedOut));
        assert!(from_redis(&timeout, "k").is_timeout());
    }

    #[test]
    fn bad_token_names_the_counter_even_with_spaces() {
        let e = from_redis(&server_err("BADTOKEN"), "lock");
        // No detail: the first key is the best guess.
        assert!(matches!(e, LockError::WrongType { ref key } if key == "lock"));
        let err = redis::make_extension_error(
            "BADTOKEN".to_owned(),
            Some(format!(
                "redisson_lock_token:{{a b}}{BAD_TOKEN_TAIL} script: 0123, on @user_script:19."
            )),
        );
        let e = from_redis(&err, "lock");
        assert!(
            matches!(e, LockError::WrongType { ref key } if key == "redisson_lock_token:{a b}"),
            "{e:?}"
        );
    }

    #[test]
    fn unknown_error_replies_are_protocol_errors() {
        let e = from_redis(&server_err("WHATEVER"), "k");
        assert!(matches!(e, LockError::Protocol { .. }));
    }

    #[test]
    fn oom_is_typed_and_not_retryable() {
        let e = from_redis(&server_err("OOM"), "k");
        assert!(e.is_out_of_memory(), "{e:?}");
        assert!(!e.is_retryable());
    }

    #[test]
    fn credentials_are_invalid_arguments() {
        assert!(from_redis(&server_err("WRONGPASS"), "k").is_invalid_argument());
        assert!(from_redis(&server_err("NOAUTH"), "k").is_invalid_argument());
    }
}
