//! Direct handoff ([`lock_redis::LockClient::handoff_lock`]): a release
//! grants the lock to the live queue head, which holds it without asking
//! again; a grant the waiter missed is taken by its next look, never
//! entered twice; a wait that gives up gives its grant back; Redisson
//! waiters and fenced waits are told, never granted. The `handoff` row of
//! the suite's table (after the checks every lock kind shares).

use std::time::Duration;

use lock_core::backend::{
    AcquireOutcome, AcquireRequest, ExclusiveKind, ReleaseOutcome, ReleaseRequest,
};
use lock_redis::{AcquireOptions, LockClient, LockName, Owner};

use super::fair::{queue_and_hand_on, queue_key, queued, timeout_key};
use super::{
    client, contended, eventually, key, leftover_keys, unique, waiting, Contended, RedisLayout,
    WATCHDOG,
};

const LEASE_MS: u64 = 10_000;
/// How long the requests made here may run: past any paused-time advance
/// of a check.
const RECORD_MS: u64 = 3_600_000;

/// The deadline of a request made now (by the wall clock) that may run for
/// `RECORD_MS`.
fn deadline() -> u64 {
    lock_core::backend::deadline_in(std::time::Duration::from_millis(RECORD_MS))
}

fn handoff_kind(c: &LockClient) -> std::sync::Arc<dyn ExclusiveKind> {
    c.kinds().handoff()
}

/// A waiting attempt of `owner` for `name` in the wait with `ticket`.
fn wait_attempt(name: &str, owner: Owner, ticket: Option<u64>) -> AcquireRequest {
    AcquireRequest::new(
        LockName::new(name).unwrap(),
        owner,
        LEASE_MS,
        false,
        deadline(),
    )
    .queue(Some(10_000))
    .ticket(ticket)
}

fn is_held(outcome: AcquireOutcome) {
    assert!(
        matches!(outcome, AcquireOutcome::Held { .. }),
        "{outcome:?}"
    );
}

fn is_acquired(outcome: AcquireOutcome) {
    assert!(
        matches!(outcome, AcquireOutcome::Acquired { .. }),
        "{outcome:?}"
    );
}

/// The lock granted to the attempt's ticket, taken as granted.
fn is_claimed(outcome: AcquireOutcome) {
    assert_eq!(outcome, AcquireOutcome::Claimed);
}

/// Releases `owner`'s last hold of `name` through `kind`; nothing of the
/// lock is left but its request records and token counter.
async fn release_last(h: &dyn RedisLayout, kind: &dyn ExclusiveKind, name: &str, owner: Owner) {
    let release = ReleaseRequest::new(LockName::new(name).unwrap(), owner, LEASE_MS, deadline());
    assert_eq!(
        kind.release(&release).await.unwrap(),
        ReleaseOutcome::Released
    );
    assert_eq!(leftover_keys(h, name).await, Vec::<String>::new());
}

/// A lock named after `prefix`, held by another client, released while a
/// wait (ticket 77) of owner `x` of client `b` is queued: granted to it.
/// Returns `b`, the name and `x`.
async fn granted_to_a_wait(h: &dyn RedisLayout, prefix: &str) -> (LockClient, String, Owner) {
    let Contended { b, name, held, .. } = contended(h, prefix).await;
    let x = b.new_owner();
    let attempt = wait_attempt(&name, x, Some(77));
    is_held(handoff_kind(&b).try_acquire(&attempt).await.unwrap());
    held.unlock().await.unwrap();
    assert_eq!(holders(h, &name).await, vec![(x.field(), 1)], "granted");
    (b, name, x)
}

/// The lock's hash as (holder field, count).
async fn holders(h: &dyn RedisLayout, name: &str) -> Vec<(String, i64)> {
    h.hash(&key(h, name)).await
}

/// The lock's one holder right after a release that must have granted it
/// to the queued waiter: one hold, not the releaser's. The release itself
/// wrote it, whichever way the waiter then learns of it (the grant's
/// notice, or its own next look at the store, which a loaded machine may
/// run first: [`lock_redis::ClientStats::grants`] counts only the former).
async fn granted_by_the_release(h: &dyn RedisLayout, name: &str, releaser: &str) {
    let now = holders(h, name).await;
    assert!(
        now.len() == 1 && now[0].1 == 1 && now[0].0 != releaser,
        "granted once by the release: {now:?}"
    );
}

/// A parked waiter holds the lock the moment its holder unlocks, without
/// another attempt, and keeps it: the watchdog renews the granted hold.
pub async fn a_release_hands_the_lock_to_the_waiter(h: &dyn RedisLayout) {
    let Contended { b, name, held, .. } = contended(h, "handoff").await;
    let lock = b.handoff_lock(&name).unwrap();
    let handle = lock.clone();
    let waiter = tokio::spawn(async move { lock.lock().await });
    queued(h, &name, 1).await;
    waiting(&b, 1).await;
    // Its own info shows the fair lock's queue: the waiter, with time left.
    let info = handle.info().await.unwrap();
    assert_eq!(info.holders.len(), 1);
    assert_eq!(info.queue.len(), 1);
    assert!(!info.queue[0].timeout.is_zero(), "{info:?}");
    let releaser = held.owner().field();
    held.unlock().await.unwrap();
    granted_by_the_release(h, &name, &releaser).await;
    let guard = waiter.await.unwrap().unwrap();
    assert_eq!(holders(h, &name).await, vec![(guard.owner().field(), 1)]);
    assert!(h.list(&queue_key(h, &name)).await.is_empty());
    tokio::time::sleep(WATCHDOG * 2).await;
    assert!(!guard.is_lost());
    assert!(h.pttl(&key(h, &name)).await > 0, "renewed by the watchdog");
    guard.unlock().await.unwrap();
    assert!(holders(h, &name).await.is_empty());
}

/// Waiters of two clients are granted the lock in their arrival order, one
/// at a time, each grant taken without asking again.
pub async fn grants_follow_the_queue_and_exclude(h: &dyn RedisLayout) {
    let Contended { b, name, held, .. } = contended(h, "handoff-order").await;
    let c = client(h).await;
    let order = queue_and_hand_on(h, (&b, &c), &name, held, 6, |client, name| {
        client.handoff_lock(name).unwrap().as_lock().clone()
    })
    .await;
    // The order and the exclusion checker are the behaviour; how many of
    // the six grants were taken by their notice rather than by the
    // waiter's next look depends on scheduling, so it is not asserted.
    assert_eq!(order, (0..6).collect::<Vec<_>>());
}

/// A wait that missed its grant (its notice lost) takes it at its next
/// attempt, as the one hold it was granted, not a second one.
pub async fn a_missed_grant_is_taken_by_the_next_look(h: &dyn RedisLayout) {
    let (b, name, x) = granted_to_a_wait(h, "handoff-missed").await;
    let kind = handoff_kind(&b);
    let pttl = h.pttl(&key(h, &name)).await;
    assert!(
        pttl > 0 && pttl <= LEASE_MS as i64,
        "the waiter's lease: {pttl}"
    );
    is_claimed(
        kind.try_acquire(&wait_attempt(&name, x, Some(77)))
            .await
            .unwrap(),
    );
    assert_eq!(holders(h, &name).await, vec![(x.field(), 1)], "one hold");
    release_last(h, kind.as_ref(), &name, x).await;
}

/// The owner's other calls are not the granted wait: they enter the lock
/// again (a second hold), and the wait, giving up, gives back only its own.
pub async fn another_call_of_the_owner_enters_again(h: &dyn RedisLayout) {
    let (b, name, x) = granted_to_a_wait(h, "handoff-reenter").await;
    let kind = handoff_kind(&b);
    for other in [None, Some(78)] {
        let mut attempt = wait_attempt(&name, x, other);
        attempt.queue_ms = None;
        is_acquired(kind.try_acquire(&attempt).await.unwrap());
    }
    assert_eq!(holders(h, &name).await, vec![(x.field(), 3)]);
    let lock_name = LockName::new(&name).unwrap();
    kind.leave_queue(&lock_name, &x, Some(77)).await.unwrap();
    assert_eq!(holders(h, &name).await, vec![(x.field(), 2)]);
    // Leaving again, or with another ticket, gives nothing more back.
    kind.leave_queue(&lock_name, &x, Some(77)).await.unwrap();
    kind.leave_queue(&lock_name, &x, Some(78)).await.unwrap();
    assert_eq!(holders(h, &name).await, vec![(x.field(), 2)]);
    assert!(b.handoff_lock(&name).unwrap().force_unlock().await.unwrap());
}

/// A wait that gives up after the lock was granted to it gives the lock
/// back, and it is granted to the next live waiter.
pub async fn a_wait_that_gives_up_gives_its_grant_back(h: &dyn RedisLayout) {
    let Contended { b, name, held, .. } = contended(h, "handoff-give-back").await;
    let kind = handoff_kind(&b);
    let (x, y) = (b.new_owner(), b.new_owner());
    is_held(
        kind.try_acquire(&wait_attempt(&name, x, Some(77)))
            .await
            .unwrap(),
    );
    is_held(
        kind.try_acquire(&wait_attempt(&name, y, Some(88)))
            .await
            .unwrap(),
    );
    held.unlock().await.unwrap();
    assert_eq!(holders(h, &name).await, vec![(x.field(), 1)]);
    kind.leave_queue(&LockName::new(&name).unwrap(), &x, Some(77))
        .await
        .unwrap();
    assert_eq!(holders(h, &name).await, vec![(y.field(), 1)], "handed on");
    assert!(h.list(&queue_key(h, &name)).await.is_empty());
    is_claimed(
        kind.try_acquire(&wait_attempt(&name, y, Some(88)))
            .await
            .unwrap(),
    );
    release_last(h, kind.as_ref(), &name, y).await;
}

/// A waiter whose future is dropped around the release (before it, or
/// right after it, when the grant may already be its own) leaves nothing
/// held for it: the waiter behind it gets the lock.
pub async fn a_dropped_waiter_leaves_the_lock_free_or_handed_on(h: &dyn RedisLayout) {
    for drop_after_unlock in [false, true] {
        let Contended { b, name, held, .. } = contended(h, "handoff-dropped").await;
        let c = client(h).await;
        let dropped = {
            let lock = b.handoff_lock(&name).unwrap();
            tokio::spawn(async move { lock.lock().await })
        };
        queued(h, &name, 1).await;
        let behind = {
            let lock = c.handoff_lock(&name).unwrap();
            tokio::spawn(async move { lock.try_lock_for(Duration::from_secs(10)).await })
        };
        queued(h, &name, 2).await;
        // Dropping the task's handle too: a waiter that already took its
        // grant finished with a guard, which its handle keeps until dropped.
        if drop_after_unlock {
            held.unlock().await.unwrap();
            dropped.abort();
            drop(dropped);
        } else {
            dropped.abort();
            drop(dropped);
            held.unlock().await.unwrap();
        }
        let guard = behind.await.unwrap().unwrap().expect("handed on");
        assert_eq!(holders(h, &name).await, vec![(guard.owner().field(), 1)]);
        guard.unlock().await.unwrap();
        eventually(Duration::from_secs(3), "nothing left", || async {
            leftover_keys(h, &name).await.is_empty() && b.stats().in_flight == 0
        })
        .await;
    }
}

/// A Redisson waiter at the head of the queue is told, as Redisson's own
/// fair lock tells it, never granted: it would take a granted hold for a
/// second one.
pub async fn a_redisson_waiter_at_the_head_is_told_not_granted(h: &dyn RedisLayout) {
    let Contended { b, name, held, .. } = contended(h, "handoff-redisson").await;
    let java = Owner::new(uuid::Uuid::new_v4(), 1).field();
    let far = h.now_ms().await + 60_000;
    h.enqueue(&queue_key(h, &name), &timeout_key(h, &name), far, &java)
        .await;
    let ours = {
        let lock = b.handoff_lock(&name).unwrap();
        tokio::spawn(async move { lock.lock().await })
    };
    queued(h, &name, 2).await;
    held.unlock().await.unwrap();
    assert!(holders(h, &name).await.is_empty(), "not granted");
    assert_eq!(h.list(&queue_key(h, &name)).await[0], java);
    ours.abort();
    h.del(&queue_key(h, &name)).await;
    h.del(&timeout_key(h, &name)).await;
}

/// A fenced wait takes its token itself: it is told, never granted, and
/// gets a token.
pub async fn a_fenced_wait_is_never_granted(h: &dyn RedisLayout) {
    let Contended { b, name, held, .. } = contended(h, "handoff-fenced").await;
    let lock = b.handoff_lock(&name).unwrap();
    let waiter = tokio::spawn(async move {
        lock.acquire(AcquireOptions::new().fenced())
            .await
            .map(Option::unwrap)
    });
    queued(h, &name, 1).await;
    held.unlock().await.unwrap();
    let guard = waiter.await.unwrap().unwrap();
    assert!(guard.fencing_token().is_some());
    assert_eq!(b.stats().grants, 0);
    guard.unlock().await.unwrap();
}

/// The plain fair lock and the handoff lock are one lock: a release through
/// the fair handle grants the lock to a handoff waiter.
pub async fn a_plain_fair_release_grants_too(h: &dyn RedisLayout) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("handoff-plain");
    let held = a.fair_lock(&name).unwrap().lock().await.unwrap();
    let lock = b.handoff_lock(&name).unwrap();
    let waiter = tokio::spawn(async move { lock.lock().await });
    queued(h, &name, 1).await;
    let releaser = held.owner().field();
    held.unlock().await.unwrap();
    granted_by_the_release(h, &name, &releaser).await;
    let guard = waiter.await.unwrap().unwrap();
    assert_eq!(holders(h, &name).await, vec![(guard.owner().field(), 1)]);
    assert!(h.list(&queue_key(h, &name)).await.is_empty());
    assert!(
        a.fair_lock(&name)
            .unwrap()
            .try_lock()
            .await
            .unwrap()
            .is_none(),
        "the waiter excludes the others"
    );
    guard.unlock().await.unwrap();
}

/// Grants leave nothing behind: after a run of handoffs every key of the
/// lock but its request records and token counter is gone.
pub async fn a_handoff_cycle_leaves_no_keys(h: &dyn RedisLayout) {
    let Contended { b, name, held, .. } = contended(h, "handoff-keys").await;
    let c = client(h).await;
    let mut waiters = Vec::new();
    for (i, client) in [&b, &c, &b].into_iter().enumerate() {
        let lock = client.handoff_lock(&name).unwrap();
        waiters.push(tokio::spawn(async move {
            lock.lock().await.unwrap().unlock().await.unwrap();
        }));
        queued(h, &name, i + 1).await;
    }
    held.unlock().await.unwrap();
    for w in waiters {
        w.await.unwrap();
    }
    assert_eq!(leftover_keys(h, &name).await, Vec::<String>::new());
}
