//! The one error type every lock operation returns.
//!
//! Backends map their own failures into [`LockError`]; callers branch on the
//! predicates ([`LockError::is_retryable`], [`LockError::is_not_held`], …)
//! rather than on messages.

use std::sync::Arc;

/// A boxed, shareable error source (errors are `Clone` so one failure can be
/// reported to every waiter that shared the failed operation).
pub type ErrorSource = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong when taking, holding or releasing a lock.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// The caller asked to release (or extend) a lock its owner does not
    /// hold, or a permit that is not taken: it was never taken, was already
    /// released, or its lease ran out. Java lock clients report this as
    /// `IllegalMonitorStateException`.
    #[error("{what} is not held")]
    NotHeld {
        /// The name of the lock or semaphore.
        name: String,
        /// What was not held, for the message: `lock "orders"`,
        /// `permit 3f2a… of semaphore "pool"`.
        what: String,
    },

    /// The lock was lost while a guard still existed: a renewal found it
    /// gone, or renewals failed until its lease ran out. Also the answer
    /// of an acquisition whose reply came after its lease (less the safety
    /// margin) ran out, counted from when it was sent: a store or network
    /// slower than the lease, or a paused process. No guard is handed out
    /// then (it would be lost already), and the hold is released.
    #[error("{what} was lost while held")]
    LockLost {
        /// The name of the lock or semaphore.
        name: String,
        /// What was lost, for the message (as for [`LockError::NotHeld`]).
        what: String,
    },

    /// An argument was rejected before any I/O happened.
    #[error("invalid argument: {message}")]
    InvalidArgument {
        /// What was wrong, in words a user can act on.
        message: String,
    },

    /// A key the operation uses holds a value of another type than the kind
    /// keeps there: e.g. a lock key holding a string, a semaphore key
    /// holding a hash, a fencing-token counter that is not an integer. It
    /// is left untouched, and nothing else was written.
    #[error("key {key:?} is not a lock, semaphore or latch of this kind: it holds a value of another type (WRONGTYPE); it was left untouched")]
    WrongType {
        /// The offending key.
        key: String,
    },

    /// The backend could not be reached or did not answer in time. The
    /// operation may be retried.
    #[error("lock backend unavailable: {message}")]
    Unavailable {
        /// What happened.
        message: String,
        /// Whether the failure was a timeout (as opposed to a refused or
        /// reset connection).
        timed_out: bool,
        /// The underlying error, if any.
        #[source]
        source: Option<ErrorSource>,
    },

    /// The backend answered something this library does not understand.
    #[error("protocol error: {message}")]
    Protocol {
        /// What was unexpected.
        message: String,
    },

    /// The lock was taken, but fewer replicas than the backend's replica
    /// sync requires acknowledged it in time; it was released again. The
    /// caller does not hold it. Trying again later may succeed; the engine
    /// does not retry this by itself, as a failed replication usually
    /// means a replica is down or lagging.
    #[error(
        "lock {name:?} was taken but only {acked} of {wanted} replicas acknowledged it in time; it was released again"
    )]
    NotReplicated {
        /// The lock name.
        name: String,
        /// The replicas required.
        wanted: u32,
        /// The replicas that acknowledged in time.
        acked: u32,
    },

    /// The store is out of memory (Redis at `maxmemory` with the
    /// `noeviction` policy) and refused a write the operation needed: taking
    /// or re-entering a lock, or releasing one hold of several. Nothing was
    /// written; the outcome is known. Releasing a lock's last hold and
    /// renewing leases need no such write and still succeed.
    ///
    /// Not retryable: the state lasts until memory is freed (keys expire,
    /// an operator acts, the policy changes), which takes far longer than
    /// the engine's retry backoff, and retrying would only add load to a
    /// server already in trouble. The caller may try again later.
    #[error("lock backend is out of memory and refused the write: {message}")]
    OutOfMemory {
        /// What the store said.
        message: String,
    },

    /// The owner holds the read side of a read-write lock and asked for
    /// its write side. A reader cannot upgrade: the write side waits until
    /// no reader is left, this owner included, so the request would wait
    /// for itself forever (Redisson's `RReadWriteLock` does). Nothing was
    /// taken. Release the read holds first, then take the write lock (a
    /// writer may take the read side: that is how to downgrade).
    #[error("lock {name:?}: this owner holds its read lock and cannot upgrade to the write lock (it would wait for itself); release the read holds first")]
    UpgradeRefused {
        /// The lock name.
        name: String,
    },
    /// The owner asked again for a non-reentrant lock it holds
    /// (`client.non_reentrant_lock(name)`): it would wait for itself.
    /// Nothing was taken; the first hold is untouched. Java's
    /// `RedissonNonReentrantLock` throws `IllegalMonitorStateException`.
    #[error("lock {name:?} is not reentrant and this owner holds it already (it would wait for itself); release it first")]
    ReentryRefused {
        /// The lock name.
        name: String,
    },

    /// A plain acquisition (no explicit owner, no owner scope) that found
    /// the lock held by a plain acquisition of its own task: each plain
    /// acquisition is an owner of its own, so the second would wait for the
    /// first forever. Refused before it waits; nothing was taken, and the
    /// first hold is untouched. Re-enter with the first guard's owner
    /// (`lock.lock_as(guard.owner())`) or inside an owner scope
    /// (`client.scope`), or release first. A try that does not wait
    /// (`try_lock`) is not refused: it answers "held", as for any holder.
    /// See docs/locks.md, "Re-entry within a task".
    #[error("lock {name:?}: this task holds it already by a plain acquisition, so this one would wait for itself forever; re-enter with the guard's owner (lock_as / client.scope) or release it first")]
    SelfDeadlock {
        /// The lock name.
        name: String,
    },

    /// The client was closed ([`crate::backend::Engine::close`], a
    /// deployment's `client.close()`), or is closing: no new acquisition
    /// starts, and a guard or permit used after its close (unlock, extend,
    /// check, release) answers this; the close gave back what it held.
    #[error("lock client is closed")]
    Closed,

    /// The store refused a request that reached it after the request's
    /// deadline (held on a connection, in a frozen server or a partition,
    /// or dated by a client clock far behind the store's): this copy did
    /// not run and no copy ever will. A copy that ran before the deadline
    /// is answered from its record instead, while the record lasts (see
    /// [`crate::backend::outcome_forgotten`]). The client dates its requests by the store's clock
    /// from then on (`store_time_ms`); a new request is safe, so the engine
    /// makes one where it can and this is retryable.
    #[error("the lock store refused a request that reached it after its deadline (store time {store_time_ms} ms since the epoch); it was not run and never will be")]
    StaleRequest {
        /// The store's time when it refused, in milliseconds since the
        /// Unix epoch.
        store_time_ms: u64,
    },

    /// The backend refused who we are or what we asked: wrong user or
    /// password (`WRONGPASS`), no authentication (`NOAUTH`), or a user not
    /// allowed a command, key or channel the operation needs (`NOPERM`).
    /// Not retryable: fix the credentials or the user's permissions.
    #[error("lock backend refused the credentials or permissions: {message}")]
    Unauthorized {
        /// What the backend said.
        message: String,
    },

    /// The server does not know a command the client needs: disabled or
    /// renamed (`rename-command EVALSHA ""`, as hosted Redis services do).
    /// The message names each missing command and what needs it. Not
    /// retryable: the server's configuration has to change.
    #[error("lock backend lacks commands the client needs: {message}")]
    Unsupported {
        /// Which commands, and what needs them.
        message: String,
    },

    /// A TLS handshake failed over a certificate: the server's certificate
    /// is not signed by a trusted authority or does not name the server, or
    /// the server refused our client certificate (or its absence). The
    /// server was reached; retrying will not help until the certificates or
    /// the trusted authorities change.
    #[error("TLS certificate refused: {message}")]
    Tls {
        /// What failed, from the TLS library.
        message: String,
    },
}

impl LockError {
    /// Builds [`LockError::InvalidArgument`].
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidArgument {
            message: message.into(),
        }
    }

    /// Builds a retryable [`LockError::Unavailable`] from a message and
    /// optional source.
    pub fn unavailable(message: impl Into<String>, source: Option<ErrorSource>) -> Self {
        Self::Unavailable {
            message: message.into(),
            timed_out: false,
            source,
        }
    }

    /// Builds a [`LockError::Unavailable`] that records a timeout.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::Unavailable {
            message: message.into(),
            timed_out: true,
            source: None,
        }
    }

    /// [`LockError::NotHeld`] for the lock `name`: the owner that asked
    /// does not hold it (another owner may).
    pub fn lock_not_held(name: impl Into<String>) -> Self {
        let name = name.into();
        Self::NotHeld {
            what: format!("lock {name:?}"),
            name,
        }
    }

    /// [`LockError::LockLost`] for the lock `name`.
    pub fn lock_lost(name: impl Into<String>) -> Self {
        let name = name.into();
        Self::LockLost {
            what: format!("lock {name:?}"),
            name,
        }
    }

    /// Builds [`LockError::Protocol`].
    pub fn protocol(message: impl Into<String>) -> Self {
        Self::Protocol {
            message: message.into(),
        }
    }

    /// Whether trying the operation again may succeed (connection trouble,
    /// timeouts, a server that is loading or failing over, a request that
    /// arrived too late to run).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable { .. } | Self::StaleRequest { .. })
    }

    /// Whether the store refused a request as past its deadline
    /// ([`LockError::StaleRequest`]): it will never run (and, within the
    /// record's grace, never ran: [`crate::backend::outcome_forgotten`]).
    pub fn is_stale_request(&self) -> bool {
        matches!(self, Self::StaleRequest { .. })
    }

    /// Whether the failure was a timeout.
    pub fn is_timeout(&self) -> bool {
        matches!(
            self,
            Self::Unavailable {
                timed_out: true,
                ..
            }
        )
    }

    /// Whether the lock or permit was not held by the caller
    /// ([`LockError::NotHeld`]).
    pub fn is_not_held(&self) -> bool {
        matches!(self, Self::NotHeld { .. })
    }

    /// Whether the lock or permit was lost while held
    /// ([`LockError::LockLost`]).
    pub fn is_lock_lost(&self) -> bool {
        matches!(self, Self::LockLost { .. })
    }

    /// Whether the backend could not be reached or did not answer in time
    /// ([`LockError::Unavailable`]).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable { .. })
    }

    /// Whether the backend answered something not understood
    /// ([`LockError::Protocol`]).
    pub fn is_protocol(&self) -> bool {
        matches!(self, Self::Protocol { .. })
    }

    /// Whether too few replicas acknowledged the acquisition
    /// ([`LockError::NotReplicated`]).
    pub fn is_not_replicated(&self) -> bool {
        matches!(self, Self::NotReplicated { .. })
    }

    /// Whether an owner asked again for a non-reentrant lock it holds
    /// ([`LockError::ReentryRefused`]).
    pub fn is_reentry_refused(&self) -> bool {
        matches!(self, Self::ReentryRefused { .. })
    }

    /// Whether a plain acquisition would have waited for its own task's
    /// hold ([`LockError::SelfDeadlock`]).
    pub fn is_self_deadlock(&self) -> bool {
        matches!(self, Self::SelfDeadlock { .. })
    }

    /// Whether the client was closed ([`LockError::Closed`]).
    pub fn is_closed(&self) -> bool {
        matches!(self, Self::Closed)
    }

    /// Whether an argument was rejected.
    pub fn is_invalid_argument(&self) -> bool {
        matches!(self, Self::InvalidArgument { .. })
    }

    /// Whether the lock key held a value of another type.
    pub fn is_wrong_type(&self) -> bool {
        matches!(self, Self::WrongType { .. })
    }

    /// Whether the backend refused the credentials or a permission
    /// ([`LockError::Unauthorized`]).
    pub fn is_unauthorized(&self) -> bool {
        matches!(self, Self::Unauthorized { .. })
    }

    /// Whether a TLS handshake failed over a certificate
    /// ([`LockError::Tls`]).
    pub fn is_tls(&self) -> bool {
        matches!(self, Self::Tls { .. })
    }

    /// Whether the server lacks a command the client needs
    /// ([`LockError::Unsupported`]).
    pub fn is_unsupported(&self) -> bool {
        matches!(self, Self::Unsupported { .. })
    }

    /// Whether the store was out of memory and refused the write.
    pub fn is_out_of_memory(&self) -> bool {
        matches!(self, Self::OutOfMemory { .. })
    }

    /// Whether a reader asked for the write side of its read-write lock
    /// ([`LockError::UpgradeRefused`]).
    pub fn is_upgrade_refused(&self) -> bool {
        matches!(self, Self::UpgradeRefused { .. })
    }
}

/// Shorthand for results of lock operations.
pub type Result<T, E = LockError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predicates_classify_variants() {
        assert!(LockError::timeout("t").is_retryable());
        assert!(LockError::timeout("t").is_timeout());
        assert!(LockError::unavailable("u", None).is_retryable());
        assert!(!LockError::unavailable("u", None).is_timeout());
        assert!(!LockError::invalid("x").is_retryable());
        assert!(LockError::invalid("x").is_invalid_argument());
        assert!(LockError::lock_not_held("a").is_not_held());
        assert!(LockError::lock_lost("a").is_lock_lost());
        let permit_lost = LockError::LockLost {
            name: "a".into(),
            what: "permit p1 of \"a\"".into(),
        };
        assert!(permit_lost.is_lock_lost());
        assert!(LockError::unavailable("u", None).is_unavailable());
        assert!(LockError::protocol("p").is_protocol());
        assert!(LockError::Closed.is_closed());
        let again = LockError::ReentryRefused { name: "a".into() };
        assert!(again.is_reentry_refused() && !again.is_retryable());
        let lagging = LockError::NotReplicated {
            name: "a".into(),
            wanted: 1,
            acked: 0,
        };
        assert!(lagging.is_not_replicated() && !lagging.is_retryable());
        assert!(LockError::WrongType { key: "a".into() }.is_wrong_type());
        assert!(!LockError::Closed.is_retryable());
        assert!(!LockError::protocol("p").is_retryable());
        let oom = LockError::OutOfMemory {
            message: "OOM".into(),
        };
        assert!(oom.is_out_of_memory());
        assert!(!oom.is_retryable());
        let auth = LockError::Unauthorized {
            message: "WRONGPASS".into(),
        };
        assert!(auth.is_unauthorized() && !auth.is_retryable() && !auth.is_invalid_argument());
        let tls = LockError::Tls {
            message: "invalid peer certificate".into(),
        };
        assert!(tls.is_tls() && !tls.is_retryable() && !tls.is_unauthorized());
        let upgrade = LockError::UpgradeRefused { name: "a".into() };
        assert!(upgrade.is_upgrade_refused());
        assert!(!upgrade.is_retryable());
        assert!(upgrade.to_string().contains("cannot upgrade"));
    }

    #[test]
    fn messages_name_what_they_are_about() {
        assert_eq!(
            LockError::lock_not_held("orders").to_string(),
            "lock \"orders\" is not held"
        );
        assert_eq!(
            LockError::lock_lost("orders").to_string(),
            "lock \"orders\" was lost while held"
        );
        let e = LockError::WrongType { key: "k".into() };
        assert!(e.to_string().contains("semaphore or latch"), "{e}");
    }

    /// One of each variant (a new variant goes here too, and into
    /// `own_predicate`, which will not compile without it).
    fn every_variant() -> Vec<LockError> {
        vec![
            LockError::lock_not_held("a"),
            LockError::lock_lost("a"),
            LockError::invalid("x"),
            LockError::WrongType { key: "a".into() },
            LockError::unavailable("u", None),
            LockError::protocol("p"),
            LockError::NotReplicated {
                name: "a".into(),
                wanted: 1,
                acked: 0,
            },
            LockError::OutOfMemory {
                message: "OOM".into(),
            },
            LockError::UpgradeRefused { name: "a".into() },
            LockError::ReentryRefused { name: "a".into() },
            LockError::SelfDeadlock { name: "a".into() },
            LockError::Closed,
            LockError::StaleRequest { store_time_ms: 1 },
            LockError::Unauthorized {
                message: "NOPERM".into(),
            },
            LockError::Tls {
                message: "bad certificate".into(),
            },
            LockError::Unsupported {
                message: "EVALSHA".into(),
            },
        ]
    }

    /// The `is_<variant>` predicate of `e`'s variant, by an exhaustive
    /// match: a new variant does not compile here until it has one.
    fn own_predicate(e: &LockError) -> fn(&LockError) -> bool {
        match e {
            LockError::NotHeld { .. } => LockError::is_not_held,
            LockError::LockLost { .. } => LockError::is_lock_lost,
            LockError::InvalidArgument { .. } => LockError::is_invalid_argument,
            LockError::WrongType { .. } => LockError::is_wrong_type,
            LockError::Unavailable { .. } => LockError::is_unavailable,
            LockError::Protocol { .. } => LockError::is_protocol,
            LockError::NotReplicated { .. } => LockError::is_not_replicated,
            LockError::OutOfMemory { .. } => LockError::is_out_of_memory,
            LockError::UpgradeRefused { .. } => LockError::is_upgrade_refused,
            LockError::ReentryRefused { .. } => LockError::is_reentry_refused,
            LockError::SelfDeadlock { .. } => LockError::is_self_deadlock,
            LockError::Closed => LockError::is_closed,
            LockError::StaleRequest { .. } => LockError::is_stale_request,
            LockError::Unauthorized { .. } => LockError::is_unauthorized,
            LockError::Tls { .. } => LockError::is_tls,
            LockError::Unsupported { .. } => LockError::is_unsupported,
        }
    }

    /// Each variant answers its own predicate and no other variant's.
    #[test]
    fn each_variant_has_exactly_its_own_predicate() {
        let all = every_variant();
        let predicates: Vec<_> = all.iter().map(own_predicate).collect();
        for (i, e) in all.iter().enumerate() {
            for (j, is) in predicates.iter().enumerate() {
                assert_eq!(is(e), i == j, "{e:?} against the predicate of {:?}", all[j]);
            }
        }
    }
}
