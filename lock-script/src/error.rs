//! How Redis failures become [`LockError`]s.
//!
//! | Redis says | [`LockError`] | retryable |
//! | --- | --- | --- |
//! | `WRONGTYPE` (a non-hash value at the lock key) | [`LockError::WrongType`] with the lock key | no |
//! | `BADTOKEN` (a script found a fencing-token counter that is not an integer, before writing anything) | [`LockError::WrongType`] with the counter's key | no |
//! | I/O error, connection refused / reset / closed | [`LockError::Unavailable`] | yes |
//! | no reply within the command timeout | [`LockError::Unavailable`] with `timed_out` ([`LockError::is_timeout`]) | yes |
//! | `TRYAGAIN`, `CLUSTERDOWN`, `LOADING`, `MASTERDOWN`, `BUSY`, `READONLY`, `NOSCRIPT` after a reload | [`LockError::Unavailable`] | yes |
//! | a master refusing writes: `NOREPLICAS` (fewer good replicas than `min-replicas-to-write`), `MISCONF` (a failed RDB save with `stop-writes-on-bgsave-error`), also from inside a script | [`LockError::Unavailable`] | yes |
//! | `ERR max number of clients reached` (the server turning a new connection away) | [`LockError::Unavailable`] | yes |
//! | no connection within the command timeout, or none could be made | [`LockError::Unavailable`] | yes |
//! | `STALEREQUEST <ms>` (a request that reached a script after its deadline; nothing written, and it never runs) | [`LockError::StaleRequest`] with the store's time | yes, as a new request |
//! | `UPGRADE` (a read-write lock's write acquisition by an owner holding its read side; nothing written) | [`LockError::UpgradeRefused`] with the lock key (the kind puts the lock's name in) | no |
//! | `NON_REENTRANT_REACQUIRE` (a non-reentrant lock asked for by its holder; nothing written) | [`LockError::ReentryRefused`] with the lock key (the kind puts the lock's name in) | no |
//! | `OOM` (at `maxmemory` with `noeviction`: a script's first refused write; the scripts refuse before writing anything) | [`LockError::OutOfMemory`] | no (see its docs) |
//! | wrong password / user (`WRONGPASS`, `NOAUTH`), a user lacking a permission (`NOPERM`, also from inside a script, in Redis's and Valkey's words) | [`LockError::Unauthorized`] | no |
//! | a TLS handshake failing over a certificate (server's not trusted, ours refused or missing; feature `tls`) | [`LockError::Tls`] | no |
//! | invalid URL or client configuration; a database index (`/<db>`) past the server's `databases` (`ERR DB index is out of range`) | [`LockError::InvalidArgument`] | no |
//! | a reply of an unexpected shape, any other error reply | [`LockError::Protocol`] | no |
//! | the backend was closed | [`LockError::Closed`] | no |
//!
//! The rule: a refusal that proves the request did not run is transient.
//! Redis refuses `NOREPLICAS` and `MISCONF` before a script's (or a
//! command's) first write, and the lock scripts write nothing before their
//! first write can be refused, so the request did nothing and running it
//! again is safe; the refusal ends when the replica or the disk is back.
//! Mapped to a non-retryable error, a release refused this way would be
//! lost for good (a plain semaphore permit has no lease to end it) and a
//! waiter would stop waiting. The refusals that stay non-retryable are
//! those the caller has to act on: a wrong type, an ACL rule, `OOM` (see
//! [`LockError::OutOfMemory`]: releases are never refused by it). A
//! credentials failure while *re*connecting an established client is the
//! transports' to classify (`lock_redis::ConnectionSet`): there it is a
//! connection that could not be made, [`LockError::Unavailable`].
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
        // Refused before anything was written: the request did not run.
        Some(code @ ("NOREPLICAS" | "MISCONF")) => {
            return LockError::unavailable(
                format!("redis refuses writes for now ({code}): {err}"),
                source(),
            );
        }
        Some("ERR") if too_many_clients(err) => {
            return LockError::unavailable(
                format!("redis turned the connection away: {err}"),
                source(),
            );
        }
        Some(STALE_REQUEST) => {
            if let Some(store_time_ms) = stale_request_time(err) {
                return LockError::StaleRequest { store_time_ms };
            }
        }
        Some("NON_REENTRANT_REACQUIRE") => {
            return LockError::ReentryRefused {
                name: first_key.to_owned(),
            };
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
        Some("WRONGPASS" | "NOAUTH" | "NOPERM") => return unauthorized(err),
        // The URL's `/<db>` past the server's `databases` setting: `SELECT`
        // on connect refuses it, for good. A configuration to fix, not a
        // bug to report.
        Some("ERR") if err.detail().is_some_and(|d| d.contains(DB_OUT_OF_RANGE)) => {
            return LockError::invalid(format!(
                "the database index in the URL (`redis://host:port/<db>`) is out of range for \
                 this server (its `databases` setting, 16 by default): {err}"
            ));
        }
        _ => {}
    }
    if let Some(message) = tls::certificate_failure(err) {
        return LockError::Tls { message };
    }
    if script_lacks_permission(err) {
        return unauthorized(err);
    }
    match err.kind() {
        ErrorKind::AuthenticationFailed => unauthorized(err),
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

fn unauthorized(err: &RedisError) -> LockError {
    LockError::Unauthorized {
        message: err.to_string(),
    }
}

/// Redis's answer to a connection past `maxclients`, sent before it reads
/// any command (so nothing ran), then it closes the connection.
const TOO_MANY_CLIENTS: &str = "max number of clients reached";

fn too_many_clients(err: &RedisError) -> bool {
    err.detail()
        .is_some_and(|detail| detail.starts_with(TOO_MANY_CLIENTS))
}

/// How a script's `redis.call` refused by the ACL (a command, key or
/// channel the user may not use) is reported: the reply's code is the
/// script's `ERR`, and the refusal is only in its text, which differs by
/// server: Redis 7.0 says "The user executing the script can't …", Redis
/// 7.2 and later and Valkey (8, 9) "ACL failure in script: …" followed by
/// the `NOPERM` text without its code.
const SCRIPT_NOPERM: [&str; 3] = [
    "user executing the script",
    "ACL failure in script",
    "NOPERM",
];

fn script_lacks_permission(err: &RedisError) -> bool {
    err.code() == Some("ERR")
        && err
            .detail()
            .is_some_and(|detail| SCRIPT_NOPERM.iter().any(|text| detail.contains(text)))
}

/// What Redis and Valkey say of a `SELECT` past their `databases`.
const DB_OUT_OF_RANGE: &str = "DB index is out of range";

/// The error code of a fencing-token counter that does not hold an integer
/// (see `scripts/common.lua`).
const BAD_TOKEN: &str = "BADTOKEN";
/// A script refused a request past its deadline (common.lua's
/// `recorded()`), writing nothing: `STALEREQUEST <store-time-ms> ...`.
const STALE_REQUEST: &str = "STALEREQUEST";

fn stale_request_time(err: &RedisError) -> Option<u64> {
    err.detail()?.split_whitespace().next()?.parse().ok()
}
/// What follows the counter's key in a [`BAD_TOKEN`] error. Redis appends
/// the script's name after it, and a key may hold spaces: the key is what
/// comes before the last occurrence.
const BAD_TOKEN_TAIL: &str = " does not hold an integer fencing token counter";

fn bad_token_counter(err: &RedisError) -> Option<&str> {
    let detail = err.detail()?;
    detail.rfind(BAD_TOKEN_TAIL).map(|end| &detail[..end])
}

#[cfg(feature = "tls")]
mod tls {
    //! A rustls error inside redis-rs's I/O error. redis-rs keeps the
    //! `io::Error` of a failed handshake (or of the alert a server sends
    //! after it, refusing our certificate) behind an `Arc` in its source
    //! chain; the rustls error is that `io::Error`'s payload.

    use std::error::Error;
    use std::io;
    use std::sync::Arc;

    use rustls::AlertDescription as Alert;

    /// The rustls error's text when `err` is a TLS failure over a
    /// certificate, either side's; `None` for anything else (a connection
    /// refused, or TLS spoken to a plain server, stay retryable).
    pub(super) fn certificate_failure(err: &redis::RedisError) -> Option<String> {
        let tls = rustls_error(err)?;
        let about_certificates = match tls {
            rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented => true,
            rustls::Error::AlertReceived(alert) => matches!(
                alert,
                Alert::BadCertificate
                    | Alert::UnsupportedCertificate
                    | Alert::CertificateRevoked
                    | Alert::CertificateExpired
                    | Alert::CertificateUnknown
                    | Alert::UnknownCA
                    | Alert::CertificateRequired
                    | Alert::AccessDenied
                    // OpenSSL's answer to a client certificate whose
                    // signature does not verify against its CA.
                    | Alert::DecryptError
            ),
            _ => false,
        };
        about_certificates.then(|| match tls {
            rustls::Error::AlertReceived(_) => {
                format!("the server refused the TLS client certificate ({tls})")
            }
            _ => format!("the server's TLS certificate is not trusted ({tls})"),
        })
    }

    fn rustls_error(err: &redis::RedisError) -> Option<&rustls::Error> {
        let mut next: Option<&(dyn Error + 'static)> = err.source();
        while let Some(e) = next {
            let io = e.downcast_ref::<io::Error>().or_else(|| {
                e.downcast_ref::<Arc<dyn Error + Send + Sync>>()
                    .and_then(|inner| inner.downcast_ref::<io::Error>())
            });
            if let Some(found) = io
                .and_then(io::Error::get_ref)
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            {
                return Some(found);
            }
            if let Some(found) = e.downcast_ref::<rustls::Error>() {
                return Some(found);
            }
            next = e.source();
        }
        None
    }
}

#[cfg(not(feature = "tls"))]
mod tls {
    /// Without TLS there are no certificate failures.
    pub(super) fn certificate_failure(_err: &redis::RedisError) -> Option<String> {
        None
    }
}

/// The error of a call that got no reply within `limit`.
pub fn timed_out(what: &str, limit: Duration) -> LockError {
    LockError::timeout(format!(
        "{what}: timed out: no reply from redis within {limit:?}"
    ))
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

    /// A master refusing writes (`min-replicas-to-write` unmet, a failed
    /// RDB save) refused before anything ran: a release or a wait meeting
    /// it must be retried, not end with `Protocol` (issue 37, item 1).
    #[test]
    fn write_refusals_are_retryable() {
        for (code, detail) in [
            ("NOREPLICAS", "Not enough good replicas to write."),
            (
                "MISCONF",
                "Redis is configured to save RDB snapshots, but it's currently unable to \
                 persist to disk. Commands that may modify the data set are disabled.",
            ),
            // As it comes from inside a script.
            (
                "NOREPLICAS",
                "Not enough good replicas to write. script: 0123, on @user_script:12.",
            ),
        ] {
            let err = redis::make_extension_error(code.to_owned(), Some(detail.to_owned()));
            let e = from_redis(&err, "k");
            assert!(e.is_unavailable() && e.is_retryable(), "{code}: {e:?}");
            assert!(!e.is_timeout(), "{code}: {e:?}");
            assert!(e.to_string().contains(code), "{e}");
        }
    }

    /// `maxclients` reached: the server says so before it reads a command.
    #[test]
    fn a_server_full_of_clients_is_retryable() {
        let err = RedisError::from((
            ErrorKind::Server(redis::ServerErrorKind::ResponseError),
            "An error was signalled by the server",
            "max number of clients reached".to_owned(),
        ));
        let e = from_redis(&err, "");
        assert!(e.is_retryable(), "{err:?} -> {e:?}");
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
    fn a_stale_request_carries_the_store_time() {
        let err = redis::make_extension_error(
            "STALEREQUEST".to_owned(),
            Some(
                "1764172800123 the request reached the store after its deadline; \
                 it did not run and never will script: 0123, on @user_script:30."
                    .to_owned(),
            ),
        );
        let e = from_redis(&err, "lock");
        assert!(
            matches!(
                e,
                LockError::StaleRequest {
                    store_time_ms: 1_764_172_800_123
                }
            ),
            "{e:?}"
        );
        assert!(e.is_retryable() && e.is_stale_request());
    }

    #[test]
    fn a_database_index_out_of_range_is_an_invalid_argument() {
        let select = redis::make_extension_error(
            "ERR".to_owned(),
            Some("DB index is out of range".to_owned()),
        );
        let e = from_redis(&select, "k");
        assert!(e.is_invalid_argument() && !e.is_retryable(), "{e:?}");
        assert!(e.to_string().contains("databases"), "{e}");
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
    fn credentials_and_permissions_are_auth_errors() {
        for code in ["WRONGPASS", "NOAUTH", "NOPERM"] {
            let e = from_redis(&server_err(code), "k");
            assert!(e.is_unauthorized(), "{code}: {e:?}");
            assert!(!e.is_retryable() && !e.is_invalid_argument(), "{code}");
        }
        let auth = RedisError::from((ErrorKind::AuthenticationFailed, "bad password"));
        assert!(from_redis(&auth, "k").is_unauthorized());
        // A script's redis.call refused by the ACL: reported as the
        // script's ERR, in each server's words (exact texts, taken from
        // Redis 7.0.15 and Valkey 9.1.2; Redis 7.2 words it as Valkey).
        for text in [
            "The user executing the script can't run this command or subcommand script: \
             abc, on @user_script:3.",
            "The user executing the script can't publish to the channel mentioned in the \
             command script: b216ddc9d12a5e5d36036a9a6e6a6aea36550192, on @user_script:1.",
            "ACL failure in script: No permissions to access a channel script: on \
             @user_script:224.",
            "ACL failure in script: No permissions to access a key script: on @user_script:1.",
            "ACL failure in script: User mute has no permissions to run the 'hset' command \
             script: on @user_script:1.",
        ] {
            let in_script = redis::make_extension_error("ERR".to_owned(), Some(text.to_owned()));
            let e = from_redis(&in_script, "k");
            assert!(e.is_unauthorized() && !e.is_retryable(), "{text}: {e:?}");
        }
        let other = redis::make_extension_error("ERR".to_owned(), Some("boom".to_owned()));
        assert!(!from_redis(&other, "k").is_unauthorized());
    }

    #[test]
    fn a_bad_client_configuration_is_an_invalid_argument() {
        let e = RedisError::from((ErrorKind::InvalidClientConfig, "nope"));
        assert!(from_redis(&e, "k").is_invalid_argument());
    }

    #[cfg(feature = "tls")]
    #[test]
    fn certificate_failures_are_tls_errors_and_other_tls_trouble_is_retryable() {
        let wrap =
            |tls: rustls::Error| RedisError::from(io::Error::new(io::ErrorKind::InvalidData, tls));
        let untrusted = wrap(rustls::Error::InvalidCertificate(
            rustls::CertificateError::UnknownIssuer,
        ));
        let e = from_redis(&untrusted, "k");
        assert!(e.is_tls() && !e.is_retryable(), "{e:?}");
        assert!(e.to_string().contains("not trusted"), "{e}");
        let refused = wrap(rustls::Error::AlertReceived(
            rustls::AlertDescription::CertificateRequired,
        ));
        let e = from_redis(&refused, "k");
        assert!(e.is_tls(), "{e:?}");
        assert!(
            e.to_string().contains("refused the TLS client certificate"),
            "{e}"
        );
        // TLS spoken to a plain server: not a certificate problem.
        let garbled = wrap(rustls::Error::InvalidMessage(
            rustls::InvalidMessage::InvalidContentType,
        ));
        assert!(from_redis(&garbled, "k").is_retryable());
    }
}
