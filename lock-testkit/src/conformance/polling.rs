//! The polling deployment variant: every check, with clients that wait by
//! polling ([`WaitStrategy::Poll`]) and never subscribe.

use lock_redis::{ClientConfig, LockClient, WaitStrategy};
use lock_script::KeyLayout;

use super::{Harness, Kind, RedisLayout};

/// A harness whose clients wait by polling: `Polling(h, WaitStrategy::poll())`
/// runs a suite against `h`'s store with every client's
/// [`ClientConfig::wait_strategy`] replaced. Checks that look at how a
/// waiter learns of an unlock ask the client's configuration
/// ([`super::subscribes`]).
pub struct Polling<H>(pub H, pub WaitStrategy);

impl<H> Polling<H> {
    /// `harness` with the default polling backoff (1 ms doubling to 128 ms).
    pub fn new(harness: H) -> Self {
        Self(harness, WaitStrategy::poll())
    }
}

super::wrapping_harness!(Polling.0, |self| { self.0.kind() }, |self, config| {
    self.0.client(config.wait_strategy(self.1)).await
});
