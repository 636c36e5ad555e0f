//! [`Deadline`]: until when a hold lasts, as this client reckons it. A
//! value the configuration computes ([`crate::ClientConfig::lease_deadline`])
//! and the engine's tables keep.

use std::time::Duration;

use tokio::time::Instant;

/// Until when a hold (or a leased permit) lasts, as far as this client
/// knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    /// When the store may expire the hold: after this instant another
    /// client may hold the lock.
    pub(crate) expires: Instant,
    /// When the hold is reported lost: `expires` less the safety margin.
    pub(crate) lost_at: Instant,
}

impl Deadline {
    /// The deadline of a lease of `lease` sent at `sent`, reported lost
    /// `margin` before it ends.
    pub fn new(sent: Instant, lease: Duration, margin: Duration) -> Self {
        let expires = sent + lease;
        Self {
            expires,
            lost_at: expires.checked_sub(margin).unwrap_or(sent),
        }
    }

    /// When the store may expire the hold.
    pub fn expires(&self) -> Instant {
        self.expires
    }

    /// Whether the hold is reported lost by now: [`Deadline::expires`]
    /// less the safety margin has passed.
    pub fn is_lost(&self) -> bool {
        Instant::now() >= self.lost_at
    }
}
