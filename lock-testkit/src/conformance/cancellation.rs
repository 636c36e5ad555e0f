//! Cancellation safety: dropping any future leaves nothing behind.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use super::{
    channel, client, contended, eventually, key, leftover_keys, unique, waiting, Contended,
    Harness, RedisLayout, WATCHDOG,
};

/// Polls `fut` up to `n` times (yielding between polls), then drops it.
/// Returns its output if it finished.
async fn poll_then_drop<F: Future>(fut: F, n: usize) -> Option<F::Output> {
    let mut fut = pin!(fut);
    for _ in 0..n {
        if let Poll::Ready(out) = futures::poll!(fut.as_mut()) {
            return Some(out);
        }
        tokio::task::yield_now().await;
    }
    None
}

/// A waiter that gives up (its future dropped) leaves no subscription, no
/// key and no hold behind.
pub async fn dropped_waiter_leaves_nothing_behind(h: &dyn RedisLayout) {
    let Contended { b, name, held, .. } = contended(h, "drop-waiter").await;
    let lb = super::lock(h, &b, &name);
    for _ in 0..3 {
        let gave_up = tokio::time::timeout(Duration::from_millis(150), lb.lock()).await;
        assert!(gave_up.is_err());
    }
    assert_eq!(b.stats().subscriptions_active, 0);
    b.settle().await;
    eventually(Duration::from_secs(2), "unsubscribed", || async {
        h.subscribers(&channel(h, &name)).await == 0
    })
    .await;
    let info = lb.info().await.unwrap();
    assert_eq!(info.holders.len(), 1);
    assert_eq!(info.holders[0].owner(), Some(held.owner()));
    assert_eq!(leftover_keys(h, &name).await, vec![key(h, &name)]);
    held.unlock().await.unwrap();
}

/// An acquisition dropped at any await point holds nothing afterwards, even
/// if its request reached the store.
pub async fn dropped_acquire_leaves_no_lock(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("drop-acquire");
    let lock = super::lock(h, &a, &name);
    for polls in 0..8 {
        let finished = poll_then_drop(lock.lock(), polls).await;
        drop(finished);
        // Once the abandoned request has landed and been undone — well
        // before its lease could expire — nothing is held.
        tokio::time::timeout(WATCHDOG / 3, a.settle())
            .await
            .expect("abandoned acquisition undone");
        assert!(!lock.is_locked().await.unwrap());
    }
    assert_eq!(a.stats().watched, 0);
    assert_eq!(leftover_keys(h, &name).await, Vec::<String>::new());
    let g = lock.try_lock().await.unwrap().expect("still usable");
    g.unlock().await.unwrap();
}

/// An unlock whose future is dropped still releases.
pub async fn dropped_unlock_still_releases(h: &dyn Harness) {
    let a = client(h).await;
    let name = unique("drop-unlock");
    let lock = super::lock(h, &a, &name);
    for polls in 0..3 {
        let g = lock.lock().await.unwrap();
        drop(poll_then_drop(g.unlock(), polls).await);
        tokio::time::timeout(WATCHDOG / 3, a.settle())
            .await
            .expect("release finished");
        assert!(!lock.is_locked().await.unwrap());
    }
    assert_eq!(a.stats().watched, 0);
}

/// A waiter that is woken and then dropped does not swallow the wake-up:
/// the next waiter takes the lock promptly, not after the holder's TTL.
pub async fn woken_waiter_dropped_passes_wakeup_on(h: &dyn Harness) {
    let Contended { b, name, held, .. } = contended(h, "baton").await;
    let first = {
        let lock = super::lock(h, &b, &name);
        tokio::spawn(async move { lock.try_lock_for(Duration::from_secs(30)).await })
    };
    waiting(&b, 1).await;
    let second = {
        let lock = super::lock(h, &b, &name);
        tokio::spawn(async move { lock.try_lock_for(Duration::from_secs(30)).await })
    };
    waiting(&b, 2).await;
    let released = tokio::time::Instant::now();
    held.unlock().await.unwrap();
    // Cancel the first waiter wherever it is: still asleep, woken but not
    // yet trying, mid-attempt, or already holding (then its guard drops).
    first.abort();
    drop(first);
    let g = second
        .await
        .unwrap()
        .unwrap()
        .expect("second waiter gets the lock");
    assert!(
        released.elapsed() < Duration::from_secs(2),
        "took {:?}: the wake-up was swallowed",
        released.elapsed()
    );
    g.unlock().await.unwrap();
}
