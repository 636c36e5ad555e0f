//! The expirable-permit semaphore's behaviours
//! ([`lock_core::PermitExpirableSemaphore`]): ids, leases that end by
//! themselves and wake waiters, releases by id that count once,
//! cancellation, typed errors.

use std::time::Duration;

use lock_core::{
    LeaseRelease, LockClient, LockError, LockName, PermitExpirableSemaphore, PermitId,
};
use tokio::time::Instant;

use super::{client, key, unique, waiting, Harness};

fn sem(c: &LockClient, name: &str) -> PermitExpirableSemaphore {
    c.permit_expirable_semaphore(name)
        .expect("an expirable-permit semaphore")
}

fn leases_key(h: &dyn Harness, name: &str) -> String {
    h.layout().permit_leases_key(&LockName::new(name).unwrap())
}

/// Woken by a notice or a lease end, well before the engine's recheck
/// (`no_ttl_recheck`, 5 s by default).
const WOKEN_WITHIN: Duration = Duration::from_secs(1);

/// A permit has a fresh 32-hex id; releasing it by id gives it back, once.
pub async fn acquire_gives_an_id_and_release_takes_it(h: &dyn Harness) {
    let a = client(h).await;
    let name = unique("psem-id");
    let s = sem(&a, &name);
    assert!(s.try_set_permits(2).await.unwrap());
    assert!(!s.try_set_permits(5).await.unwrap());
    let first = s.acquire(None).await.unwrap();
    let second = s
        .try_acquire(Some(Duration::from_secs(60)))
        .await
        .unwrap()
        .unwrap();
    assert_ne!(first, second);
    let hex = first.to_string();
    assert_eq!(hex.len(), 32);
    assert!(hex
        .chars()
        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    assert_eq!(hex.parse::<PermitId>().unwrap(), first);
    assert_eq!(s.available_permits().await.unwrap(), 0);
    assert!(s.try_acquire(None).await.unwrap().is_none());
    s.release(first).await.unwrap();
    assert!(!s.try_release(first).await.unwrap(), "released once");
    assert!(s.release(first).await.unwrap_err().is_not_held());
    assert!(s.try_release(second).await.unwrap());
    assert_eq!(s.available_permits().await.unwrap(), 2);
    assert!(s.release(PermitId::new()).await.unwrap_err().is_not_held());
}

/// A permit whose lease ended comes back by itself, and can no longer be
/// released.
pub async fn expired_permit_comes_back_by_itself(h: &dyn Harness) {
    let a = client(h).await;
    let s = sem(&a, &unique("psem-expire"));
    s.try_set_permits(1).await.unwrap();
    let id = s.acquire(Some(Duration::from_millis(200))).await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 0);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(s.available_permits().await.unwrap(), 1);
    assert!(!s.try_release(id).await.unwrap());
    assert_eq!(
        s.available_permits().await.unwrap(),
        1,
        "not given back twice"
    );
}

/// A waiter sleeps until the earliest lease ends (the script's reply arms
/// its timer) and takes the permit then, with no release and no notice.
pub async fn waiter_takes_a_permit_when_its_lease_ends(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("psem-lease-wait");
    sem(&a, &name).try_set_permits(1).await.unwrap();
    let lease = Duration::from_millis(400);
    let taken = Instant::now();
    sem(&a, &name).acquire(Some(lease)).await.unwrap();
    let id = sem(&b, &name).acquire(None).await.unwrap();
    let waited = taken.elapsed();
    assert!(waited >= lease - Duration::from_millis(20), "{waited:?}");
    assert!(waited < lease + WOKEN_WITHIN, "{waited:?}");
    sem(&b, &name).release(id).await.unwrap();
}

/// A release wakes a waiter at once.
pub async fn release_by_id_wakes_a_waiter(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("psem-wake");
    sem(&a, &name).try_set_permits(1).await.unwrap();
    let id = sem(&a, &name).acquire(None).await.unwrap();
    let waiter = tokio::spawn({
        let s = sem(&b, &name);
        async move { s.acquire(None).await.unwrap() }
    });
    waiting(&b, 1).await;
    let released = Instant::now();
    sem(&a, &name).release(id).await.unwrap();
    let got = waiter.await.unwrap();
    assert!(
        released.elapsed() < WOKEN_WITHIN,
        "{:?}",
        released.elapsed()
    );
    sem(&a, &name).release(got).await.unwrap();
}

/// `update_lease_time` moves a taken permit's lease end (or removes it);
/// it answers `false` once the permit is gone.
pub async fn update_lease_time_moves_the_lease_end(h: &dyn Harness) {
    let a = client(h).await;
    let s = sem(&a, &unique("psem-update"));
    s.try_set_permits(1).await.unwrap();
    let id = s.acquire(Some(Duration::from_millis(200))).await.unwrap();
    assert!(s
        .update_lease_time(id, Some(Duration::from_secs(60)))
        .await
        .unwrap());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(s.available_permits().await.unwrap(), 0, "extended");
    assert!(s.update_lease_time(id, None).await.unwrap());
    assert!(s
        .update_lease_time(id, Some(Duration::from_millis(100)))
        .await
        .unwrap());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(s.available_permits().await.unwrap(), 1, "shortened");
    assert!(!s.update_lease_time(id, None).await.unwrap());
    assert!(s
        .update_lease_time(id, Some(Duration::ZERO))
        .await
        .unwrap_err()
        .is_invalid_argument());
}

/// `try_acquire_for` gives up at its deadline; a permit without a lease
/// never comes back by itself.
pub async fn unleased_permit_stays_taken(h: &dyn Harness) {
    let a = client(h).await;
    let s = sem(&a, &unique("psem-forever"));
    s.try_set_permits(1).await.unwrap();
    let id = s.acquire(None).await.unwrap();
    let start = Instant::now();
    assert!(s
        .try_acquire_for(Duration::from_millis(300), None)
        .await
        .unwrap()
        .is_none());
    assert!(start.elapsed() >= Duration::from_millis(300));
    assert_eq!(a.stats().subscriptions_active, 0);
    assert_eq!(s.available_permits().await.unwrap(), 0);
    s.release(id).await.unwrap();
}

/// `add_permits` adds and removes free permits and wakes waiters.
pub async fn add_permits_wakes_waiters(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("psem-add");
    let s = sem(&a, &name);
    s.add_permits(2).await.unwrap();
    s.add_permits(-2).await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 0);
    let waiter = tokio::spawn({
        let s = sem(&b, &name);
        async move { s.acquire(None).await.unwrap() }
    });
    waiting(&b, 1).await;
    let added = Instant::now();
    s.add_permits(1).await.unwrap();
    waiter.await.unwrap();
    assert!(added.elapsed() < WOKEN_WITHIN);
    assert_eq!(s.available_permits().await.unwrap(), 0);
}

/// A release repeated with its request id returns its first outcome and
/// gives back once; an acquisition repeated with its permit id takes one.
pub async fn repeated_requests_count_once(h: &dyn Harness) {
    let a = client(h).await;
    let kind = a.kinds().permit_semaphore_kind().unwrap().clone();
    let name = unique("psem-latch");
    let s = sem(&a, &name);
    s.try_set_permits(2).await.unwrap();
    let n = LockName::new(&name).unwrap();
    let take = lock_core::LeaseRequest::new(n.clone(), None);
    assert_eq!(
        kind.try_acquire(&take).await.unwrap(),
        lock_core::LeaseOutcome::Acquired
    );
    assert_eq!(
        kind.try_acquire(&take).await.unwrap(),
        lock_core::LeaseOutcome::Acquired
    );
    assert_eq!(s.available_permits().await.unwrap(), 1, "taken once");
    let ttl = a.config().latch_ttl.as_millis() as u64;
    let give = LeaseRelease::new(n, take.id, ttl);
    assert!(kind.release(&give).await.unwrap());
    assert!(kind.release(&give).await.unwrap(), "first outcome again");
    assert_eq!(s.available_permits().await.unwrap(), 2, "given back once");
}

/// An acquisition dropped at any point leaves no permit taken.
pub async fn dropped_permit_acquire_leaves_no_permit(h: &dyn Harness) {
    let a = client(h).await;
    let s = sem(&a, &unique("psem-cancel"));
    s.try_set_permits(1).await.unwrap();
    for polls in 0..8 {
        // Boxed, so that dropping it drops the future itself.
        let mut fut = Box::pin(s.acquire(None));
        for _ in 0..polls {
            if let std::task::Poll::Ready(id) = futures::poll!(fut.as_mut()) {
                // Finished: the caller got the permit, and gives it back.
                s.release(id.unwrap()).await.unwrap();
                break;
            }
            tokio::task::yield_now().await;
        }
        drop(fut);
        a.settle().await;
        assert_eq!(
            s.available_permits().await.unwrap(),
            1,
            "after {polls} polls"
        );
    }
}

/// Bad leases are refused before any I/O; a key holding something else
/// fails with `WrongType` and is left untouched.
pub async fn bad_input_is_refused(h: &dyn Harness) {
    let a = client(h).await;
    let name = unique("psem-args");
    let s = sem(&a, &name);
    for lease in [Duration::ZERO, Duration::MAX] {
        assert!(s
            .acquire(Some(lease))
            .await
            .unwrap_err()
            .is_invalid_argument());
        assert!(s
            .try_acquire(Some(lease))
            .await
            .unwrap_err()
            .is_invalid_argument());
    }
    assert!(s
        .try_set_permits(lock_core::MAX_PERMITS + 1)
        .await
        .unwrap_err()
        .is_invalid_argument());
    assert!(s
        .add_permits(i64::MIN)
        .await
        .unwrap_err()
        .is_invalid_argument());
    assert!("not-an-id"
        .parse::<PermitId>()
        .unwrap_err()
        .is_invalid_argument());
    assert!(h.keys().await.iter().all(|k| !k.contains(&name)));

    let hashed = unique("psem-hash");
    h.hset(&key(h, &hashed), "f", 1, None).await;
    let s = sem(&a, &hashed);
    let k = key(h, &hashed);
    let wrong = |e: LockError| matches!(e, LockError::WrongType { ref key } if *key == k);
    assert!(wrong(s.try_set_permits(1).await.unwrap_err()));
    assert!(wrong(s.acquire(None).await.unwrap_err()));
    assert!(wrong(s.available_permits().await.unwrap_err()));
    assert!(wrong(s.try_release(PermitId::new()).await.unwrap_err()));
    assert!(wrong(s.add_permits(1).await.unwrap_err()));
    assert_eq!(h.hash(&k).await, vec![("f".to_owned(), 1)]);
    assert!(h.keys().await.iter().all(|x| *x != leases_key(h, &hashed)));
}
