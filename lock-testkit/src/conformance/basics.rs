//! Taking, re-entering, releasing and inspecting locks.

use std::time::Duration;

use lock_redis::{AcquireOptions, Owner};

use super::{client, leftover_keys, unique, Harness, RedisLayout};
use crate::ExclusionChecker;

/// A lock is held after `lock()` and free after `unlock()`, leaving no key.
pub async fn lock_then_unlock_frees_it(h: &dyn RedisLayout) {
    let c = client(h).await;
    let name = unique("basic");
    let lock = super::lock(h, &c, &name);
    assert!(!lock.is_locked().await.unwrap());
    let guard = lock.lock().await.unwrap();
    assert!(lock.is_locked().await.unwrap());
    assert!(lock.is_held_by(guard.owner()).await.unwrap());
    guard.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
    assert_eq!(leftover_keys(h, &name).await, Vec::<String>::new());
}

/// The same owner re-enters; each release brings the count down by one.
pub async fn reentrant_holds_count_depth(h: &dyn Harness) {
    let c = client(h).await;
    let lock = super::lock(h, &c, unique("reentry"));
    let first = lock.lock().await.unwrap();
    let owner = first.owner();
    let mut guards = vec![first];
    for depth in 2..=5 {
        guards.push(lock.lock_as(owner).await.unwrap());
        assert_eq!(lock.hold_count(owner).await.unwrap(), depth);
    }
    while let Some(g) = guards.pop() {
        g.unlock().await.unwrap();
        assert_eq!(lock.hold_count(owner).await.unwrap(), guards.len() as u64);
    }
    assert!(!lock.is_locked().await.unwrap());
}

/// Releasing an inner hold leaves the lock held by the owner.
pub async fn reentrant_release_keeps_the_lock(h: &dyn Harness) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("reentry-keep");
    let outer = super::lock(h, &a, &name).lock().await.unwrap();
    let inner = super::lock(h, &a, &name)
        .lock_as(outer.owner())
        .await
        .unwrap();
    inner.unlock().await.unwrap();
    assert!(super::lock(h, &b, &name)
        .try_lock()
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        super::lock(h, &a, &name)
            .hold_count(outer.owner())
            .await
            .unwrap(),
        1
    );
    outer.unlock().await.unwrap();
    assert!(super::lock(h, &b, &name)
        .try_lock()
        .await
        .unwrap()
        .is_some());
}

/// Inside an owner scope, nested plain acquisitions re-enter.
pub async fn scope_reenters_nested_locks(h: &dyn Harness) {
    let c = client(h).await;
    let lock = super::lock(h, &c, unique("scope"));
    let l2 = lock.clone();
    c.scope(async move {
        let outer = l2.lock().await.unwrap();
        let inner = l2.try_lock().await.unwrap().expect("re-entry in scope");
        assert_eq!(inner.owner(), outer.owner());
        assert_eq!(Owner::current(), Some(outer.owner()));
        assert_eq!(l2.hold_count(outer.owner()).await.unwrap(), 2);
        inner.unlock().await.unwrap();
        outer.unlock().await.unwrap();
    })
    .await;
    assert!(!lock.is_locked().await.unwrap());
}

/// Two plain acquisitions joined in one task do not share the lock. The
/// one that starts after the other took it is refused at once as waiting
/// for its own task ([`lock_redis::LockError::SelfDeadlock`]: the first guard is not
/// dropped until the join ends); one that started before waits, and runs
/// out of time.
pub async fn joined_plain_locks_exclude_each_other(h: &dyn Harness) {
    let c = client(h).await;
    let lock = super::lock(h, &c, unique("join"));
    let (a, b) = tokio::join!(
        lock.try_lock_for(Duration::from_millis(200)),
        lock.try_lock_for(Duration::from_millis(200))
    );
    let held = |r: &lock_redis::Result<Option<lock_redis::Guard>>| match r {
        Ok(guard) => guard.is_some(),
        Err(e) if e.is_self_deadlock() => false,
        Err(e) => panic!("a joined plain acquisition failed: {e}"),
    };
    assert!(
        held(&a) != held(&b),
        "exactly one of two joined plain acquisitions may hold the lock"
    );
}

/// `try_lock` on a lock someone else holds answers `None` at once.
pub async fn try_lock_on_held_lock_returns_none(h: &dyn Harness) {
    let c = client(h).await;
    let lock = super::lock(h, &c, unique("try"));
    let _held = lock.lock().await.unwrap();
    let started = tokio::time::Instant::now();
    assert!(lock.try_lock().await.unwrap().is_none());
    assert!(lock.try_lock_for(Duration::ZERO).await.unwrap().is_none());
    assert!(started.elapsed() < Duration::from_millis(500));
}

/// A lock held by one client cannot be taken by another until released.
pub async fn other_clients_are_excluded(h: &dyn Harness) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("clients");
    let guard = super::lock(h, &a, &name).lock().await.unwrap();
    let lb = super::lock(h, &b, &name);
    assert!(lb.try_lock().await.unwrap().is_none());
    assert!(!lb.is_held_by(b.new_owner()).await.unwrap());
    guard.unlock().await.unwrap();
    let gb = lb.try_lock().await.unwrap().expect("free after release");
    gb.unlock().await.unwrap();
}

/// Many tasks of several clients never overlap inside the lock.
pub async fn mutual_exclusion_under_contention(h: &dyn Harness) {
    let name = unique("mutex");
    let checker = ExclusionChecker::new();
    let mut tasks = Vec::new();
    for client_no in 0..2 {
        let c = client(h).await;
        for task_no in 0..4 {
            let lock = super::lock(h, &c, &name);
            let checker = checker.clone();
            tasks.push(tokio::spawn(async move {
                for _ in 0..5 {
                    let g = lock
                        .acquire(AcquireOptions::new().fenced())
                        .await
                        .unwrap()
                        .unwrap();
                    let section =
                        checker.enter(format!("{client_no}/{task_no}"), g.fencing_token());
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    drop(section);
                    g.unlock().await.unwrap();
                }
            }));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(checker.entries(), 40);
    assert_eq!(checker.violations(), Vec::<String>::new());
}

/// is_locked / is_held_by / hold_count / remaining_ttl / info agree.
pub async fn inspection_reports_holders_and_ttl(h: &dyn Harness) {
    let c = client(h).await;
    let lock = super::lock(h, &c, unique("inspect"));
    assert_eq!(lock.remaining_ttl().await.unwrap(), None);
    let g = lock.lock_with_lease(Duration::from_secs(10)).await.unwrap();
    let ttl = lock
        .remaining_ttl()
        .await
        .unwrap()
        .expect("a leased lock has a ttl");
    assert!(
        ttl > Duration::from_secs(9) && ttl <= Duration::from_secs(10),
        "{ttl:?}"
    );
    let info = lock.info().await.unwrap();
    assert_eq!(info.holders.len(), 1);
    assert_eq!(info.holders[0].owner(), Some(g.owner()));
    assert_eq!(info.holders[0].count, 1);
    assert_eq!(lock.hold_count(c.new_owner()).await.unwrap(), 0);
    assert!(!lock.is_held_by(c.new_owner()).await.unwrap());
    g.unlock().await.unwrap();
}

/// Force unlock deletes the lock whoever holds it and says whether it did.
pub async fn force_unlock_frees_and_reports(h: &dyn Harness) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("force");
    let held = super::lock(h, &a, &name).lock().await.unwrap();
    let lb = super::lock(h, &b, &name);
    assert!(lb.force_unlock().await.unwrap());
    assert!(!lb.is_locked().await.unwrap());
    assert!(!lb.force_unlock().await.unwrap());
    let taken = lb
        .try_lock()
        .await
        .unwrap()
        .expect("free after force unlock");
    assert!(held.unlock().await.unwrap_err().is_not_held());
    taken.unlock().await.unwrap();
}

/// Fencing tokens strictly increase across releases, force unlocks and
/// clients.
pub async fn fencing_tokens_strictly_increase(h: &dyn Harness) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("fence");
    let mut last = 0;
    for round in 0..6 {
        let c = if round % 2 == 0 { &a } else { &b };
        let lock = super::lock(h, c, &name);
        let g = lock
            .acquire(AcquireOptions::new().fenced())
            .await
            .unwrap()
            .unwrap();
        let token = g.fencing_token().expect("fenced acquisition has a token");
        assert!(token > last, "token {token} after {last}");
        last = token;
        if round % 3 == 0 {
            assert!(lock.force_unlock().await.unwrap());
            drop(g);
        } else {
            g.unlock().await.unwrap();
        }
    }
}

/// Without asking, there is no token.
pub async fn unfenced_acquisition_has_no_token(h: &dyn Harness) {
    let c = client(h).await;
    let g = super::lock(h, &c, unique("nofence")).lock().await.unwrap();
    assert_eq!(g.fencing_token(), None);
    g.unlock().await.unwrap();
}

/// Concurrent re-entries by one owner count exactly and all release.
pub async fn concurrent_reentry_counts_exactly(h: &dyn Harness) {
    let c = client(h).await;
    let lock = super::lock(h, &c, unique("reentry-many"));
    let first = lock.lock().await.unwrap();
    let owner = first.owner();
    let handles: Vec<_> = (0..20)
        .map(|_| {
            let lock = lock.clone();
            tokio::spawn(async move { lock.lock_as(owner).await.unwrap() })
        })
        .collect();
    let mut guards = Vec::new();
    for handle in handles {
        guards.push(handle.await.unwrap());
    }
    assert_eq!(lock.hold_count(owner).await.unwrap(), 21);
    let releases: Vec<_> = guards
        .into_iter()
        .map(|g| tokio::spawn(g.unlock()))
        .collect();
    for r in releases {
        r.await.unwrap().unwrap();
    }
    assert_eq!(lock.hold_count(owner).await.unwrap(), 1);
    first.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}
