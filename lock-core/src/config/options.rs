//! How an acquisition waits, how long it leases, as whom.

use std::time::Duration;

use crate::owner::Owner;

/// How long an acquisition waits for a held lock, and for a store that
/// does not answer (see [`crate::Lock::acquire`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wait {
    /// Until the lock is taken, through store outages of any length.
    #[default]
    Forever,
    /// At most this long (plus at most [`WAIT_OVERSHOOT`]), whatever the
    /// store does: a call still unanswered then is left to finish in the
    /// background (what it takes is released), also for a
    /// [`crate::RedLock`] or [`crate::MultiLock`] whose member's store
    /// never answers, answers slowly or drops packets. `Duration::ZERO`
    /// tries once, as the retry policy says: a failure it does not get
    /// past is returned then, however long its attempts took.
    For(Duration),
}

/// How far away "forever" is: 100 years. The one stand-in for "no end"
/// where a time must be given: the deadline of a wait too long to
/// represent (`Instant::now() + FOREVER`), the end of a hold without a
/// lease, and the longest lease accepted ([`crate::MAX_LEASE`]). Redis
/// keeps expiries as milliseconds since the epoch in a signed 64-bit
/// integer, so it holds this; anything longer is a bug in the caller.
pub const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// How much later than its [`Wait::For`] a wait may end: the grace a look
/// at the store still in flight at the deadline gets (a look made just
/// before the deadline, or the last one at the deadline itself, can still
/// take the lock). Bounded because every await of a wait is bounded by
/// the deadline plus this grace: its looks (each one's retries and
/// backoff included, cut at that instant and left to finish in the
/// background), its sleeps and its subscription; a multi-lock or RedLock
/// cuts the whole acquisition (its rounds, its members and the release of
/// what a failed round took) at the same instant. On a loaded machine the
/// scheduler's own delay comes on top.
pub const WAIT_OVERSHOOT: Duration = Duration::from_millis(50);

/// When a wait of `wait` started at `start` ends at the latest: its
/// deadline plus [`WAIT_OVERSHOOT`]; `None` for a wait without one and for
/// a try (`Wait::For(Duration::ZERO)`), which the retry policy bounds.
pub(crate) fn cut_off(wait: Wait, start: tokio::time::Instant) -> Option<tokio::time::Instant> {
    match wait {
        Wait::For(wait) if !wait.is_zero() => start
            .checked_add(wait)
            .and_then(|deadline| deadline.checked_add(WAIT_OVERSHOOT)),
        _ => None,
    }
}

/// Options of one acquisition; see [`crate::Lock::acquire`].
///
/// ```
/// # use std::time::Duration;
/// # use lock_core::AcquireOptions;
/// let opts = AcquireOptions::new()
///     .wait(Duration::from_secs(2))
///     .lease(Duration::from_secs(10))
///     .fenced();
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AcquireOptions {
    /// How long to wait. Default: forever.
    pub wait: Wait,
    /// A fixed lease with no renewal; `None` (default) uses the watchdog.
    pub lease: Option<Duration>,
    /// Hand out a fencing token. Default: no.
    pub fenced: bool,
    /// Acquire as this owner (re-entering if it holds the lock). Default: the
    /// enclosing [`Owner::scope`]'s owner, else a fresh one.
    pub owner: Option<Owner>,
}

impl AcquireOptions {
    /// Wait forever, watchdog lease, no token, fresh owner.
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits at most `wait` (zero: try once).
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = Wait::For(wait);
        self
    }

    /// Tries once without waiting.
    pub fn no_wait(self) -> Self {
        self.wait(Duration::ZERO)
    }

    /// Holds for `lease` at most, without renewal.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    /// Asks for a fencing token ([`crate::Guard::fencing_token`]).
    pub fn fenced(mut self) -> Self {
        self.fenced = true;
        self
    }

    /// Acquires as `owner`.
    pub fn owner(mut self, owner: Owner) -> Self {
        self.owner = Some(owner);
        self
    }
}
