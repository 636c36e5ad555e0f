//! Waiting until a condition read from the store holds, for kinds whose
//! waiters take nothing, such as a count-down latch's: the counting kinds'
//! wait loop ([`crate::counting`]) with a check that takes nothing, so it
//! honours the client's wait strategy and a refused channel alike.
//!
//! # Algorithm
//! Check; when that fails, join the channel's shared subscription (the
//! `waiter` module: one per channel per client), wait for it to be
//! confirmed, then loop: register for a wake-up, check again (a notice
//! sent between the first check and the subscription is not lost), and
//! sleep until a notice, the caller's deadline, or
//! [`crate::ClientConfig::no_ttl_recheck`] — whichever is first. Nothing in
//! the store expires on its own here, so that interval bounds what a lost
//! notice costs (a reconnect of the notice connection wakes every waiter
//! anyway); it is not a poll of the condition's progress.
//!
//! # Cancel safety
//! The only state is the subscription share, dropped with the future: the
//! last waiter to leave unsubscribes.

use std::future::Future;
use std::sync::Arc;

use tokio::time::Instant;

use crate::client::ClientInner;
use crate::connection::Channel;
use crate::counting::wait_for;
use crate::error::Result;
use crate::name::LockName;
use crate::wait_loop::Look;
use crate::waiter::WakeReader;

/// Waits until `check` answers `true` (then `Ok(true)`) or `deadline`
/// passes (`Ok(false)`); see the module docs.
pub(crate) async fn wait_until<F, Fut>(
    inner: &Arc<ClientInner>,
    kind: &'static str,
    name: &LockName,
    channel: Channel,
    read: WakeReader,
    deadline: Option<Instant>,
    mut check: F,
) -> Result<bool>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool>>,
{
    inner.check_open()?;
    let attempt = || {
        let checked = check();
        async move {
            Ok(if checked.await? {
                Look::Got(())
            } else {
                Look::Busy(None)
            })
        }
    };
    Ok(
        wait_for(inner, kind, name, channel, read, deadline, attempt)
            .await?
            .is_some(),
    )
}
