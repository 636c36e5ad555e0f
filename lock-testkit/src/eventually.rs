//! [`eventually`]: waiting for a condition that settles in the background.
//!
//! The one poll loop of the tests: a background release, an unsubscribe,
//! a retry that the library runs on its own all finish at a time the test
//! does not control, so a test asks "did it happen within a generous
//! bound?" instead of sleeping a guessed time. Under tokio's paused time
//! the bound costs no real time; on a real server it is only an upper
//! bound (the check returns as soon as the condition holds), so it never
//! asserts how fast anything was.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

/// How often the condition is looked at.
const POLL: Duration = Duration::from_millis(10);

/// Polls `cond` every 10 ms until it holds, or panics naming `what` once
/// `within` has passed without it.
///
/// `cond` is async so it can ask the store (`lock.is_locked().await`); a
/// plain check reads `|| async { queue.len() == 2 }`. Time is tokio's, so
/// under paused time the wait is virtual.
///
/// # Panics
/// When `cond` has not held within `within`: the test's failure, with
/// `what` as its message.
///
/// # Examples
/// ```
/// # use std::sync::atomic::{AtomicBool, Ordering};
/// # use std::sync::Arc;
/// # use std::time::Duration;
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let done = Arc::new(AtomicBool::new(false));
/// let flag = done.clone();
/// tokio::spawn(async move {
///     tokio::time::sleep(Duration::from_secs(1)).await;
///     flag.store(true, Ordering::SeqCst);
/// });
/// lock_testkit::eventually(Duration::from_secs(5), "the task ran", || async {
///     done.load(Ordering::SeqCst)
/// })
/// .await;
/// # }
/// ```
pub async fn eventually<F, Fut>(within: Duration, what: impl Display, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if cond().await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not within {within:?}: {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}
