//! Request records, at the backend level: a request sent again (a retry
//! after an unknown outcome, or a late duplicate of one stuck on the wire)
//! returns its first outcome and writes nothing, whatever that outcome was
//! and whatever happened in between (issue 10, item 2).

use std::time::Duration;

use std::sync::Arc;

use lock_core::backend::{
    AcquireOutcome, AcquireRequest, ExclusiveKind, ReleaseOutcome, ReleaseRequest,
};
use lock_redis::{LockClient, LockName, Owner};

use super::{client, unique, Harness, Kind, RedisLayout};

/// The record ttl of these requests: far longer than any check.
/// How long the requests made here may run: past any paused-time advance
/// of a check.
const RECORD_MS: u64 = 3_600_000;

/// The deadline of a request made now (by the wall clock) that may run for
/// `RECORD_MS`.
fn deadline() -> u64 {
    lock_core::backend::deadline_in(std::time::Duration::from_millis(RECORD_MS))
}
const LEASE_MS: u64 = 20_000;
/// Fair locks queue with this waiter timeout; other kinds ignore it.
const QUEUE_MS: u64 = 10_000;

fn lock_name(name: &str) -> LockName {
    LockName::new(name).expect("check names are valid")
}

fn acquire(name: &str, owner: Owner) -> AcquireRequest {
    AcquireRequest::new(lock_name(name), owner, LEASE_MS, true, deadline()).queue(Some(QUEUE_MS))
}

fn release(name: &str, owner: Owner) -> ReleaseRequest {
    ReleaseRequest::new(lock_name(name), owner, LEASE_MS, deadline())
}

/// The raw store operations of the suite's kind on client `c`.
fn kind_of(h: &dyn Harness, c: &LockClient) -> Arc<dyn ExclusiveKind> {
    let kinds = c.kinds();
    match h.kind() {
        Kind::Reentrant => kinds.reentrant(),
        Kind::Fair => kinds.fair() as Arc<dyn ExclusiveKind>,
        Kind::Handoff => kinds.handoff() as Arc<dyn ExclusiveKind>,
    }
}

async fn must_acquire(backend: &dyn ExclusiveKind, req: &AcquireRequest) -> u64 {
    match backend.try_acquire(req).await.expect("acquire") {
        AcquireOutcome::Acquired {
            fencing_token: Some(token),
        } => token,
        other => panic!("expected to acquire, got {other:?}"),
    }
}

async fn must_be_held(backend: &dyn ExclusiveKind, req: &AcquireRequest) -> Option<Duration> {
    match backend.try_acquire(req).await.expect("acquire") {
        AcquireOutcome::Held { ttl } => ttl,
        other => panic!("expected held, got {other:?}"),
    }
}

/// The sequence: a waiter's attempt finds the lock held; the holder
/// unlocks; the waiter takes it with a new request; then the first attempt
/// arrives again (stuck on the wire). It must report "held" as it first did
/// — not take a second hold under one guard (reentrant), nor queue a waiter
/// that already has the lock (fair) — and tell the lock's current time to
/// live.
pub async fn a_repeated_held_attempt_takes_nothing(h: &dyn RedisLayout) {
    let (a, b) = (client(h).await, client(h).await);
    let (ka, kb) = (kind_of(h, &a), kind_of(h, &b));
    let (ba, bb) = (ka.as_ref(), kb.as_ref());
    let name = unique("recorded-held");
    let (holder, waiter) = (a.new_owner(), b.new_owner());
    must_acquire(ba, &acquire(&name, holder)).await;
    let stuck = acquire(&name, waiter);
    must_be_held(bb, &stuck).await;
    assert_eq!(
        ba.release(&release(&name, holder)).await.unwrap(),
        ReleaseOutcome::Released
    );
    let token = must_acquire(bb, &acquire(&name, waiter)).await;

    let ttl = must_be_held(bb, &stuck).await;
    assert!(
        ttl.is_some_and(|t| t > Duration::from_millis(LEASE_MS - 5_000)),
        "the lock's current ttl: {ttl:?}"
    );
    let info = bb.inspect(&lock_name(&name)).await.unwrap();
    assert_eq!(info.hold_count(&waiter), 1, "a second hold under one guard");
    let queue = h.list(&h.layout().queue_key(&lock_name(&name))).await;
    assert!(queue.is_empty(), "queued again: {queue:?}");
    // Still held once: one release frees it.
    assert_eq!(
        bb.release(&release(&name, waiter)).await.unwrap(),
        ReleaseOutcome::Released
    );
    // A repeat of the winning request is still the same acquisition.
    assert!(token > 0);
}

/// A release that found the lock not held, sent again after the owner took
/// the lock with a new request, must not release that newer hold.
pub async fn a_repeated_not_held_release_frees_nothing(h: &dyn Harness) {
    let a = client(h).await;
    let kind = kind_of(h, &a);
    let backend = kind.as_ref();
    let name = unique("recorded-not-held");
    let owner = a.new_owner();
    let stuck = release(&name, owner);
    assert_eq!(
        backend.release(&stuck).await.unwrap(),
        ReleaseOutcome::NotHeld
    );
    must_acquire(backend, &acquire(&name, owner)).await;
    assert_eq!(
        backend.release(&stuck).await.unwrap(),
        ReleaseOutcome::NotHeld
    );
    let info = backend.inspect(&lock_name(&name)).await.unwrap();
    assert_eq!(info.hold_count(&owner), 1, "the newer hold was released");
}

/// Every outcome of acquire and release is recorded: a repeat returns it
/// unchanged (the same token for an acquisition) with other requests in
/// between, and counts nothing twice.
pub async fn repeated_requests_return_their_first_outcome(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let (ka, kb) = (kind_of(h, &a), kind_of(h, &b));
    let (ba, bb) = (ka.as_ref(), kb.as_ref());
    let name = unique("recorded");
    let (first, other) = (a.new_owner(), b.new_owner());

    let take = acquire(&name, first);
    let token = must_acquire(ba, &take).await;
    let reenter = acquire(&name, first);
    let token2 = must_acquire(ba, &reenter).await;
    must_be_held(bb, &acquire(&name, other)).await;
    assert_eq!(must_acquire(ba, &take).await, token);
    assert_eq!(must_acquire(ba, &reenter).await, token2);
    let info = ba.inspect(&lock_name(&name)).await.unwrap();
    assert_eq!(info.hold_count(&first), 2);

    let partial = release(&name, first);
    assert_eq!(
        ba.release(&partial).await.unwrap(),
        ReleaseOutcome::StillHeld
    );
    let last = release(&name, first);
    assert_eq!(ba.release(&last).await.unwrap(), ReleaseOutcome::Released);
    // Someone else takes the lock; the repeats change nothing.
    must_acquire(bb, &acquire(&name, other)).await;
    assert_eq!(
        ba.release(&partial).await.unwrap(),
        ReleaseOutcome::StillHeld
    );
    assert_eq!(ba.release(&last).await.unwrap(), ReleaseOutcome::Released);
    assert_eq!(must_acquire(ba, &take).await, token);
    let info = bb.inspect(&lock_name(&name)).await.unwrap();
    assert_eq!(info.hold_count(&other), 1);
    assert_eq!(info.hold_count(&first), 0);
}

/// `name` taken by `owner` and released again: the request that took it,
/// whose late copy the checks below send, and the token it got.
async fn taken_and_released(
    backend: &dyn ExclusiveKind,
    name: &str,
    owner: Owner,
) -> (AcquireRequest, u64) {
    let take = acquire(name, owner);
    let token = must_acquire(backend, &take).await;
    assert_eq!(
        backend.release(&release(name, owner)).await.unwrap(),
        ReleaseOutcome::Released
    );
    (take, token)
}

/// A copy of a successful acquisition stuck on the wire (a retry of it took
/// the lock, and that hold was released since) arrives before the
/// request's deadline. It must take nothing: the lock is free, and a hold
/// taken now would belong to no guard. It answers its first outcome.
pub async fn a_late_copy_of_a_released_acquisition_takes_nothing(h: &dyn Harness) {
    let a = client(h).await;
    let kind = kind_of(h, &a);
    let backend = kind.as_ref();
    let name = unique("recorded-late-copy");
    let owner = a.new_owner();
    let (take, token) = taken_and_released(backend, &name, owner).await;

    assert_eq!(must_acquire(backend, &take).await, token);
    let info = backend.inspect(&lock_name(&name)).await.unwrap();
    assert!(!info.is_locked(), "the late copy took the lock: {info:?}");
}

/// The same late copy arriving once its owner holds the lock again by a
/// newer request must not count a second hold under the newer guard (whose
/// release would then leave the lock held by nobody's guard).
pub async fn a_late_copy_of_an_acquisition_adds_no_hold_to_a_newer_one(h: &dyn Harness) {
    let a = client(h).await;
    let kind = kind_of(h, &a);
    let backend = kind.as_ref();
    let name = unique("recorded-late-copy-newer");
    let owner = a.new_owner();
    let (take, token) = taken_and_released(backend, &name, owner).await;
    must_acquire(backend, &acquire(&name, owner)).await;

    assert_eq!(must_acquire(backend, &take).await, token);
    let info = backend.inspect(&lock_name(&name)).await.unwrap();
    assert_eq!(info.hold_count(&owner), 1, "a second hold under one guard");
    assert_eq!(
        backend.release(&release(&name, owner)).await.unwrap(),
        ReleaseOutcome::Released
    );
}
