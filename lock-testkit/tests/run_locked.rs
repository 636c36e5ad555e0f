//! `run_locked`: work runs while the lock is held, is cancelled when it is
//! lost, and the unlock and the loss come back in its result. In memory,
//! paused time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_redis::{ClientConfig, LockClient, LockError, MultiLock, RedLock};
use lock_testkit::InMemoryServer;
use tokio::time::Instant;

fn config() -> ClientConfig {
    ClientConfig::default().watchdog_timeout(Duration::from_secs(3))
}

fn clients(server: &InMemoryServer) -> (LockClient, LockClient) {
    (
        server.client_with(config()).unwrap(),
        server.client_with(config()).unwrap(),
    )
}

/// Set when dropped: tells whether a work future was cancelled.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(start_paused = true)]
async fn finished_work_returns_its_value_and_unlocks() {
    let server = InMemoryServer::new();
    let (a, _) = clients(&server);
    let lock = a.lock("run-ok").unwrap();
    let value = lock
        .run_locked(async |guard| {
            assert!(!guard.is_lost());
            tokio::time::sleep(Duration::from_secs(7)).await;
            guard.name().as_str().len()
        })
        .await
        .unwrap();
    assert_eq!(value, "run-ok".len());
    assert!(!lock.is_locked().await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn a_lost_lock_cancels_the_work_and_releases_nothing() {
    let server = InMemoryServer::new();
    let (a, b) = clients(&server);
    let lock = a.lock("run-lost").unwrap();
    let other = b.lock("run-lost").unwrap();
    let cancelled = Arc::new(AtomicBool::new(false));
    let flag = DropFlag(Arc::clone(&cancelled));
    let started = Instant::now();
    let run = tokio::spawn(async move {
        lock.run_locked(async move |_| {
            let _flag = flag;
            tokio::time::sleep(Duration::from_secs(60)).await;
            "finished"
        })
        .await
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(other.force_unlock().await.unwrap());
    let taken = other.lock().await.unwrap();
    let err = run.await.unwrap().unwrap_err();
    assert!(
        matches!(err, LockError::LockLost { ref name, .. } if name == "run-lost"),
        "{err}"
    );
    // Cancelled at the first renewal that found the lock gone, not after
    // the work's 60 s.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(cancelled.load(Ordering::SeqCst));
    // The new holder keeps the lock: the lost guard sent no release.
    a.settle().await;
    assert!(!taken.is_lost());
    assert!(other.is_held_by(taken.owner()).await.unwrap());
    taken.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_lock_found_gone_by_the_unlock_is_reported_lost() {
    let server = InMemoryServer::new();
    let (a, b) = clients(&server);
    let lock = a.lock("run-gone").unwrap();
    let other = b.lock("run-gone").unwrap();
    // Deleted behind the guard's back with no renewal in between: only the
    // unlock can tell.
    let err = lock
        .run_locked(async |_| other.force_unlock().await.unwrap())
        .await
        .unwrap_err();
    assert!(matches!(err, LockError::LockLost { .. }), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_failed_unlock_is_returned() {
    let server = InMemoryServer::new();
    let a = server
        .client_with(config().retry(lock_redis::RetryPolicy::none()))
        .unwrap();
    let lock = a.lock("run-unlock-fails").unwrap();
    let err = lock
        .run_locked(async |_| server.set_down(true))
        .await
        .unwrap_err();
    assert!(err.is_retryable(), "{err}");
    server.set_down(false);
    // The lock expires with its lease; nothing else held it meanwhile.
    assert!(lock.is_locked().await.unwrap());
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(!lock.is_locked().await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn dropping_the_run_cancels_the_work_and_releases_the_lock() {
    let server = InMemoryServer::new();
    let (a, _) = clients(&server);
    let lock = a.lock("run-dropped").unwrap();
    let cancelled = Arc::new(AtomicBool::new(false));
    let flag = DropFlag(Arc::clone(&cancelled));
    let run = lock.run_locked(async move |_| {
        let _flag = flag;
        tokio::time::sleep(Duration::from_secs(60)).await;
    });
    assert!(tokio::time::timeout(Duration::from_secs(1), run)
        .await
        .is_err());
    assert!(cancelled.load(Ordering::SeqCst));
    a.settle().await;
    assert!(!lock.is_locked().await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn fenced_runs_see_their_token() {
    let server = InMemoryServer::new();
    let (a, _) = clients(&server);
    let lock = a.fenced_lock("run-fenced").unwrap();
    let first = lock
        .run_locked(async |guard| guard.fencing_token())
        .await
        .unwrap();
    let second = lock
        .run_locked(async |guard| guard.fencing_token())
        .await
        .unwrap();
    assert!(second > first);
    assert!(!lock.is_locked().await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn multi_and_red_locks_run_and_release_every_member() {
    let servers: Vec<InMemoryServer> = (0..3).map(|_| InMemoryServer::new()).collect();
    let locks = || {
        servers
            .iter()
            .map(|s| s.client_with(config()).unwrap().lock("run-many").unwrap())
            .collect::<Vec<_>>()
    };
    let members = locks();
    let multi = MultiLock::new(members.clone()).unwrap();
    let held = multi
        .run_locked(async |guard| guard.guards().len())
        .await
        .unwrap();
    assert_eq!(held, 3);
    let red = RedLock::new(locks()).unwrap();
    let quorum = red
        .run_locked(async |guard| guard.held() >= guard.quorum())
        .await
        .unwrap();
    assert!(quorum);
    for member in &members {
        assert!(!member.is_locked().await.unwrap());
    }
}

#[tokio::test(start_paused = true)]
async fn a_permit_whose_lease_ends_cancels_the_work() {
    let server = InMemoryServer::new();
    let (a, _) = clients(&server);
    let sem = a.permit_expirable_semaphore("run-permit").unwrap();
    assert!(sem.try_set_permits(1).await.unwrap());
    let permit = sem
        .acquire_with_lease(Duration::from_secs(2))
        .await
        .unwrap();
    let started = Instant::now();
    let err = permit
        .run_locked(async |_| tokio::time::sleep(Duration::from_secs(60)).await)
        .await
        .unwrap_err();
    assert!(matches!(err, LockError::LockLost { .. }), "{err}");
    assert!(
        started.elapsed() <= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(sem.available_permits().await.unwrap(), 1);
    let permit = sem.acquire().await.unwrap();
    let id = permit.id();
    let same = permit.run_locked(async |p| p.id() == id).await.unwrap();
    assert!(same);
    assert_eq!(sem.available_permits().await.unwrap(), 1);
}
