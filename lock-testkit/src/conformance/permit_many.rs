//! The expirable-permit semaphore's totals and many-permit operations
//! ([`lock_redis::PermitExpirableSemaphore::set_permits`],
//! [`permits`](lock_redis::PermitExpirableSemaphore::permits),
//! [`acquired_permits`](lock_redis::PermitExpirableSemaphore::acquired_permits),
//! [`lease_time`](lock_redis::PermitExpirableSemaphore::lease_time),
//! [`acquire_many`](lock_redis::PermitExpirableSemaphore::acquire_many),
//! [`release_many`](lock_redis::PermitExpirableSemaphore::release_many)):
//! Redisson's semantics, retries that count once, typed errors.

use std::time::Duration;

use lock_redis::kinds::permit_semaphore::{LeasesRelease, LeasesRequest};
use lock_redis::kinds::semaphore::PermitRequest;
use lock_redis::{
    ExpirablePermitGuard, LockClient, LockError, LockName, PermitExpirableSemaphore, PermitId,
    MAX_PERMITS,
};
use tokio::time::Instant;

use super::{client, key, unique, waiting, Harness, RedisLayout};

fn sem(c: &LockClient, name: &str) -> PermitExpirableSemaphore {
    c.permit_expirable_semaphore(name)
        .expect("an expirable-permit semaphore")
}

fn ids_of(permits: &[ExpirablePermitGuard]) -> Vec<PermitId> {
    permits.iter().map(ExpirablePermitGuard::id).collect()
}

/// Woken by a notice well before the engine's recheck (`no_ttl_recheck`,
/// 5 s by default).
const WOKEN_WITHIN: Duration = Duration::from_secs(1);

/// `set_permits` sets the total: taken permits stay taken, the free count
/// moves by the difference (negative below the taken ones), and a raise
/// wakes a waiter.
pub async fn set_permits_moves_the_free_count_by_the_difference(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("psem-set");
    let s = sem(&a, &name);
    assert_eq!(s.permits().await.unwrap(), 0, "never set");
    s.set_permits(2).await.unwrap();
    let taken = s.acquire_many(2).await.unwrap();
    assert_eq!(
        (
            s.permits().await.unwrap(),
            s.acquired_permits().await.unwrap()
        ),
        (2, 2)
    );
    let waiter = tokio::spawn({
        let s = sem(&b, &name);
        async move { s.acquire().await.unwrap() }
    });
    waiting(&b, 1).await;
    let raised = Instant::now();
    s.set_permits(3).await.unwrap();
    let third = waiter.await.unwrap();
    assert!(raised.elapsed() < WOKEN_WITHIN);
    assert_eq!(s.available_permits().await.unwrap(), 0);
    s.set_permits(1).await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), -2);
    assert_eq!(s.acquired_permits().await.unwrap(), 3);
    s.release_many(&ids_of(&taken)).await.unwrap();
    third.release().await.unwrap();
    assert_eq!(
        (
            s.permits().await.unwrap(),
            s.available_permits().await.unwrap()
        ),
        (1, 1)
    );
}

/// Many permits are taken at once or not at all, each under its own id,
/// and given back all or none; a release of many wakes a waiter for many.
pub async fn many_permits_are_taken_and_given_back_all_or_none(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("psem-many");
    let s = sem(&a, &name);
    s.try_set_permits(3).await.unwrap();
    let permits = s.acquire_many(3).await.unwrap();
    let ids = ids_of(&permits);
    assert_eq!(ids.len(), 3);
    assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
    assert!(s.try_acquire_many(1).await.unwrap().is_none());
    let waiter = tokio::spawn({
        let s = sem(&b, &name);
        async move { s.acquire_many(2).await.unwrap() }
    });
    waiting(&b, 1).await;
    // One unknown id among them: none given back.
    let mut with_unknown = ids[..2].to_vec();
    with_unknown.push(PermitId::new());
    assert_eq!(s.try_release_many(&with_unknown).await.unwrap(), 0);
    assert!(s
        .release_many(&with_unknown)
        .await
        .unwrap_err()
        .is_not_held());
    assert_eq!(s.acquired_permits().await.unwrap(), 3);
    let freed = Instant::now();
    assert_eq!(s.try_release_many(&ids[..2]).await.unwrap(), 2);
    let theirs = waiter.await.unwrap();
    assert!(freed.elapsed() < WOKEN_WITHIN);
    assert_eq!(theirs.len(), 2);
    assert!(s
        .try_acquire_many_for(2, Duration::from_millis(100))
        .await
        .unwrap()
        .is_none());
    // Leased together, they come back together.
    s.release_many(&ids_of(&theirs)).await.unwrap();
    s.release(ids[2]).await.unwrap();
    for permit in s
        .acquire_many_with_lease(3, Duration::from_millis(200))
        .await
        .unwrap()
    {
        permit.into_id(); // kept taken until the lease ends
    }
    assert_eq!(s.available_permits().await.unwrap(), 0);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(s.available_permits().await.unwrap(), 3);
    // A try with a lease: not renewed, back by itself too.
    let leased = s
        .try_acquire_many_with_lease(3, Duration::from_millis(200))
        .await
        .unwrap()
        .expect("three are free");
    assert!(leased.iter().all(|p| !p.is_renewed()));
    for permit in leased {
        permit.into_id();
    }
    assert!(s
        .try_acquire_many_with_lease(1, Duration::from_millis(200))
        .await
        .unwrap()
        .is_none());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(s.available_permits().await.unwrap(), 3);
}

/// `lease_time` tells how long a permit's lease still runs, `None` for one
/// without a lease, `NotHeld` once it is gone.
pub async fn lease_time_tells_what_is_left(h: &dyn Harness) {
    let a = client(h).await;
    let s = sem(&a, &unique("psem-lease-time"));
    s.try_set_permits(2).await.unwrap();
    let leased = s
        .acquire_with_lease(Duration::from_secs(10))
        .await
        .unwrap()
        .into_id();
    let forever = s.acquire().await.unwrap().into_id();
    assert!(s.clear_lease_time(forever).await.unwrap());
    let left = s.lease_time(leased).await.unwrap().unwrap();
    assert!(
        left <= Duration::from_secs(10) && left > Duration::from_secs(8),
        "{left:?}"
    );
    assert_eq!(s.lease_time(forever).await.unwrap(), None);
    s.update_lease_time(forever, Duration::from_millis(200))
        .await
        .unwrap();
    assert!(s.lease_time(forever).await.unwrap().unwrap() <= Duration::from_millis(200));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(s.lease_time(forever).await.unwrap_err().is_not_held());
    s.release(leased).await.unwrap();
    assert!(s.lease_time(leased).await.unwrap_err().is_not_held());
}

/// The new changes repeated with their request (a retry after a lost reply)
/// answer their first outcome and count once.
pub async fn repeated_totals_and_many_requests_count_once(h: &dyn Harness) {
    let a = client(h).await;
    let kind = a.kinds().permit_semaphore();
    let name = unique("psem-many-record");
    let s = sem(&a, &name);
    let n = LockName::new(&name).unwrap();
    let ttl = super::request_deadline();
    let create = PermitRequest::new(n.clone(), 4, ttl);
    assert!(kind.try_set_permits(&create).await.unwrap());
    assert!(kind.try_set_permits(&create).await.unwrap(), "first reply");
    let take = LeasesRequest::new(n.clone(), 3, None);
    for _ in 0..2 {
        assert_eq!(
            kind.try_acquire_many(&take).await.unwrap(),
            lock_redis::kinds::permit_semaphore::LeaseOutcome::Acquired
        );
    }
    assert_eq!(s.available_permits().await.unwrap(), 1, "taken once");
    let lower = PermitRequest::new(n.clone(), 3, ttl);
    kind.set_permits(&lower).await.unwrap();
    kind.set_permits(&lower).await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 0, "moved once");
    let give = LeasesRelease::new(n, take.ids.clone(), ttl);
    assert_eq!(kind.release_many(&give).await.unwrap(), 3);
    assert_eq!(kind.release_many(&give).await.unwrap(), 3, "first reply");
    assert_eq!(s.available_permits().await.unwrap(), 3, "given back once");
}

/// Bad input to the totals and many-permit methods is refused before any
/// I/O; a key holding something else fails with `WrongType`, untouched.
pub async fn bad_input_to_totals_and_many_is_refused(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("psem-many-args");
    let s = sem(&a, &name);
    let invalid = |e: LockError| e.is_invalid_argument();
    assert!(invalid(s.acquire_many(0).await.unwrap_err()));
    assert!(invalid(
        s.try_acquire_many(MAX_PERMITS + 1).await.unwrap_err()
    ));
    assert!(invalid(
        s.try_acquire_many_with_lease(1, Duration::ZERO)
            .await
            .unwrap_err()
    ));
    assert!(invalid(s.try_release_many(&[]).await.unwrap_err()));
    let id = PermitId::new();
    assert!(invalid(s.release_many(&[id, id]).await.unwrap_err()));
    assert!(invalid(s.set_permits(MAX_PERMITS + 1).await.unwrap_err()));
    assert!(h.keys().await.iter().all(|k| !k.contains(&name)));

    let hashed = unique("psem-many-hash");
    h.hset(&key(h, &hashed), "f", 1, None).await;
    let s = sem(&a, &hashed);
    let k = key(h, &hashed);
    let wrong = |e: LockError| matches!(e, LockError::WrongType { ref key } if *key == k);
    assert!(wrong(s.set_permits(1).await.unwrap_err()));
    assert!(wrong(s.permits().await.unwrap_err()));
    assert!(wrong(s.acquired_permits().await.unwrap_err()));
    assert!(wrong(s.lease_time(id).await.unwrap_err()));
    assert!(wrong(s.acquire_many(2).await.unwrap_err()));
    assert!(wrong(s.try_release_many(&[id]).await.unwrap_err()));
    assert_eq!(h.hash(&k).await, vec![("f".to_owned(), 1)]);
}
