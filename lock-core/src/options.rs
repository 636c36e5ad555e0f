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
    /// At most this long; `Duration::ZERO` tries once (a failure the
    /// retry policy does not get past is returned at once).
    For(Duration),
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
