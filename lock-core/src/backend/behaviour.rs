//! [`KindBehaviour`]: how a kind's locks behave, in the plain terms the
//! engine reads — the one description a kind gives besides its store
//! operations ([`crate::backend::ExclusiveKind::behaviour`]).
//!
//! The engine knows no kind: everything it does differently for one is
//! decided here, by a field, never by a kind's name or type.

use std::time::Duration;

/// How a kind's locks behave. Start from [`KindBehaviour::exclusive`] (a
/// re-entrant exclusive lock whose releases send notices) and set what
/// differs.
///
/// ```
/// # use lock_core::backend::KindBehaviour;
/// # use std::time::Duration;
/// // A lock whose holders other libraries release without a notice.
/// const LEAN: KindBehaviour = KindBehaviour::exclusive("lean")
///     .one_hold_per_owner()
///     .recheck_within(Duration::from_secs(1));
/// assert!(LEAN.one_hold_per_owner && !LEAN.queues_waiters);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct KindBehaviour {
    /// A short name of the kind (`"reentrant"`, `"fair"`, …), the `kind`
    /// of its tracing spans and metric labels. Constant, and of few
    /// values: it labels metrics.
    pub name: &'static str,
    /// Which side of a lock this kind's holds are on. An owner's holds of
    /// one name taken through kinds of the same side are one hold in the
    /// store (one count, ending together): they share one entry of the
    /// client's table of holds, with one lost signal. Kinds whose locks
    /// have two sides kept apart in the store (a read-write lock's read
    /// and write holds of one owner) name them differently, so ending one
    /// side leaves the other's guards alone. `""` is the side of every
    /// exclusive lock.
    pub hold_side: &'static str,
    /// Whether holds on this side are shared: another owner's hold on it
    /// does not keep an acquisition of this side waiting (a read-write
    /// lock's read side). The engine refuses a plain acquisition that
    /// would wait for a hold its own task took
    /// ([`crate::LockError::SelfDeadlock`]), unless both are on shared
    /// sides.
    pub shares_side: bool,
    /// Whether an owner holds the lock at most once: the store keeps only
    /// *that* an owner holds it, not which of its requests took it (a
    /// repeat of any acquisition of the owner then answers "acquired"
    /// while the owner holds it), or the kind refuses re-entry (a request
    /// record saying "acquired" may outlive a short lease, while the owner
    /// holds the lock by a later request). The engine then never releases
    /// on behalf of an unknown attempt of a wait that took the lock (what
    /// it took is the wait's own hold, or a hold that ended). `false` for
    /// kinds that count an owner's re-entries, whose request records
    /// answer each request with its own outcome.
    pub one_hold_per_owner: bool,
    /// The longest a waiter sleeps between looks, whatever the holder's
    /// time to live says: for a kind whose lock others release without a
    /// notice (another library on the same layout), so only a look sees
    /// the release. `None`: a notice tells, and the time to live bounds
    /// what a lost one costs.
    pub recheck_within: Option<Duration>,
    /// Whether waiters queue: the engine then asks to join the queue from
    /// a waiter's first attempt
    /// ([`crate::backend::AcquireRequest::queue_ms`]), looks again at
    /// least every third of the waiter timeout (which refreshes its
    /// place), and leaves the queue when it gives up
    /// ([`crate::backend::ExclusiveKind::leave_queue`]).
    pub queues_waiters: bool,
    /// Whether a release hands the freed lock straight to the first queued
    /// waiter of this kind (which then holds it, and is told so with
    /// [`crate::backend::Wake::Granted`]), instead of telling it to try
    /// again. Only kinds whose waiters queue hand over; the engine then
    /// gives each wait a ticket
    /// ([`crate::backend::AcquireRequest::wait_ticket`]).
    pub hands_over: bool,
}

impl KindBehaviour {
    /// A re-entrant exclusive lock called `name`: one side (`""`), counted
    /// re-entries, notices on release, no queue.
    pub const fn exclusive(name: &'static str) -> Self {
        Self {
            name,
            hold_side: "",
            shares_side: false,
            one_hold_per_owner: false,
            recheck_within: None,
            queues_waiters: false,
            hands_over: false,
        }
    }

    /// Holds on side `side` ([`KindBehaviour::hold_side`]).
    pub const fn side(mut self, side: &'static str) -> Self {
        self.hold_side = side;
        self
    }

    /// Holds on this side are shared ([`KindBehaviour::shares_side`]).
    pub const fn shared(mut self) -> Self {
        self.shares_side = true;
        self
    }

    /// An owner holds the lock at most once
    /// ([`KindBehaviour::one_hold_per_owner`]).
    pub const fn one_hold_per_owner(mut self) -> Self {
        self.one_hold_per_owner = true;
        self
    }

    /// Waiters look again at least this often
    /// ([`KindBehaviour::recheck_within`]).
    pub const fn recheck_within(mut self, every: Duration) -> Self {
        self.recheck_within = Some(every);
        self
    }

    /// Waiters queue ([`KindBehaviour::queues_waiters`]).
    pub const fn queues_waiters(mut self) -> Self {
        self.queues_waiters = true;
        self
    }

    /// Releases hand the lock to the first queued waiter
    /// ([`KindBehaviour::hands_over`]); implies queueing.
    pub const fn hands_over(mut self) -> Self {
        self.queues_waiters = true;
        self.hands_over = true;
        self
    }
}
