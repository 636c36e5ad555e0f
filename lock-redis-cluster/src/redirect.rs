//! What a cluster's error reply asks the client to do next.

use redis::{ErrorKind, RedisError, ServerErrorKind};

/// The client's next step after an error reply or failure of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    /// `-MOVED`: the slot lives on `addr` now; update the map, go there.
    Moved { slot: u16, addr: String },
    /// `-ASK`: this one call goes to `addr`, preceded by `ASKING`.
    Ask { addr: String },
    /// `TRYAGAIN` (a multi-key call during a slot migration), `CLUSTERDOWN`,
    /// `MASTERDOWN`, `LOADING`, `READONLY`: nothing ran; wait a little and
    /// send again, re-reading the topology first when `refresh`.
    Retry { refresh: bool },
    /// The connection broke after the call was sent: the outcome is
    /// unknown, so the error goes to the caller (the engine retries with the
    /// same request id).
    Broken,
    /// Anything else: the caller gets the error.
    Fail,
}

/// Classifies `err`.
pub(crate) fn next_step(err: &RedisError) -> Next {
    match err.kind() {
        ErrorKind::Server(ServerErrorKind::Moved) => match err.redirect_node() {
            Some((addr, slot)) => Next::Moved {
                slot,
                addr: addr.to_owned(),
            },
            None => Next::Retry { refresh: true },
        },
        ErrorKind::Server(ServerErrorKind::Ask) => match err.redirect_node() {
            Some((addr, _)) => Next::Ask {
                addr: addr.to_owned(),
            },
            None => Next::Retry { refresh: true },
        },
        ErrorKind::Server(ServerErrorKind::TryAgain) => Next::Retry { refresh: false },
        ErrorKind::Server(
            ServerErrorKind::ClusterDown
            | ServerErrorKind::MasterDown
            | ServerErrorKind::BusyLoading
            | ServerErrorKind::ReadOnly,
        ) => Next::Retry { refresh: true },
        _ if matches!(
            err.code(),
            Some("CLUSTERDOWN" | "MASTERDOWN" | "LOADING" | "READONLY")
        ) =>
        {
            Next::Retry { refresh: true }
        }
        _ if err.code() == Some("TRYAGAIN") => Next::Retry { refresh: false },
        _ if err.is_io_error()
            || err.is_connection_dropped()
            || err.is_connection_refusal()
            || err.is_unrecoverable_error() =>
        {
            Next::Broken
        }
        _ => Next::Fail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &str) -> RedisError {
        let (code, detail) = line.split_once(' ').unwrap_or((line, ""));
        let kind = match code {
            "MOVED" => ServerErrorKind::Moved,
            "ASK" => ServerErrorKind::Ask,
            "TRYAGAIN" => ServerErrorKind::TryAgain,
            "CLUSTERDOWN" => ServerErrorKind::ClusterDown,
            _ => return redis::make_extension_error(code.to_owned(), Some(detail.to_owned())),
        };
        RedisError::from((ErrorKind::Server(kind), "", detail.to_owned()))
    }

    #[test]
    fn redirects_carry_slot_and_address() {
        assert_eq!(
            next_step(&reply("MOVED 3999 127.0.0.1:6381")),
            Next::Moved {
                slot: 3999,
                addr: "127.0.0.1:6381".into()
            }
        );
        assert_eq!(
            next_step(&reply("ASK 3999 127.0.0.1:6381")),
            Next::Ask {
                addr: "127.0.0.1:6381".into()
            }
        );
    }

    #[test]
    fn transient_states_are_retried() {
        assert_eq!(
            next_step(&reply(
                "TRYAGAIN Multiple keys request during rehashing of slot"
            )),
            Next::Retry { refresh: false }
        );
        assert_eq!(
            next_step(&reply("CLUSTERDOWN The cluster is down")),
            Next::Retry { refresh: true }
        );
        assert_eq!(
            next_step(&reply(
                "READONLY You can't write against a read only replica."
            )),
            Next::Retry { refresh: true }
        );
    }

    #[test]
    fn other_replies_fail_and_broken_connections_say_so() {
        assert_eq!(next_step(&reply("WRONGTYPE bad")), Next::Fail);
        let reset = RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert_eq!(next_step(&reset), Next::Broken);
    }
}
