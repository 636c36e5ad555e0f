//! A store refusing writes for a while (`NOREPLICAS` while a master has
//! fewer good replicas than `min-replicas-to-write`, `MISCONF` after a
//! failed RDB save), on the in-memory backend with paused time
//! ([`InMemoryServer::refuse_writes`]). The refusal proves the request did
//! not run, so it is transient like an outage: permits given back during
//! it are given back once it ends, and a waiter rides it out (issue 37,
//! item 1).

use std::time::Duration;

use lock_redis::{LockClient, RetryPolicy};
use lock_testkit::conformance::config;
use lock_testkit::InMemoryServer;

/// Longer than the retry policy (about 0.4 s): the calls made during it
/// return their error before it ends.
const REFUSAL: Duration = Duration::from_secs(2);

const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
const MISCONF: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently \
                       unable to persist to disk. Commands that may modify the data set are \
                       disabled.";

fn setup() -> (InMemoryServer, LockClient) {
    let server = InMemoryServer::new();
    let client = server.client_with(config()).unwrap();
    (server, client)
}

/// Time enough for a background give-back to get its answer once the
/// refusal is over: one capped backoff, and one more for the call.
async fn background_settles() {
    tokio::time::sleep(RetryPolicy::default().max_backoff * 2).await;
}

#[tokio::test(start_paused = true)]
async fn permits_given_back_during_a_refusal_are_free_after_it() {
    for refusal in [NOREPLICAS, MISCONF] {
        let (server, client) = setup();
        let sem = client.semaphore("refused-sem").unwrap();
        assert!(sem.try_set_permits(2).await.unwrap());
        let released = sem.acquire().await.unwrap();
        let dropped = sem.acquire().await.unwrap();
        assert_eq!(sem.available_permits().await.unwrap(), 0);

        server.refuse_writes(Some(refusal));
        let err = released
            .release()
            .await
            .expect_err("the store refuses the release");
        assert!(err.is_retryable(), "{refusal}: {err:?}");
        drop(dropped);
        tokio::time::sleep(REFUSAL).await;
        server.refuse_writes(None);
        background_settles().await;
        assert_eq!(
            sem.available_permits().await.unwrap(),
            2,
            "{refusal}: both permits are given back"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn an_unguarded_release_during_a_refusal_goes_on_until_it_ends() {
    let (server, client) = setup();
    let sem = client.semaphore("refused-unguarded").unwrap();
    assert!(sem.try_set_permits(0).await.unwrap());
    server.refuse_writes(Some(NOREPLICAS));
    assert!(sem.release(2).await.unwrap_err().is_retryable());
    tokio::time::sleep(REFUSAL).await;
    server.refuse_writes(None);
    background_settles().await;
    assert_eq!(sem.available_permits().await.unwrap(), 2, "given back once");
}

#[tokio::test(start_paused = true)]
async fn expirable_permits_given_back_during_a_refusal_are_free_after_it() {
    let (server, client) = setup();
    let sem = client
        .permit_expirable_semaphore("refused-permits")
        .unwrap();
    assert!(sem.try_set_permits(2).await.unwrap());
    // Leases far longer than the test: only a release frees them.
    let lease = Duration::from_secs(3600);
    let released = sem.acquire_with_lease(lease).await.unwrap();
    let dropped = sem.acquire_with_lease(lease).await.unwrap();
    server.refuse_writes(Some(NOREPLICAS));
    assert!(released.release().await.unwrap_err().is_retryable());
    drop(dropped);
    tokio::time::sleep(REFUSAL).await;
    server.refuse_writes(None);
    background_settles().await;
    assert_eq!(sem.available_permits().await.unwrap(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_waiting_lock_rides_out_a_refusal() {
    let (server, client) = setup();
    let other = server.client_with(config()).unwrap();
    let held = other
        .lock("refused-lock")
        .unwrap()
        .lock_with_lease(Duration::from_secs(1))
        .await
        .unwrap();
    let lock = client.lock("refused-lock").unwrap();
    let waiting = tokio::spawn(async move { lock.lock().await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.refuse_writes(Some(NOREPLICAS));
    // The holder's lease ends inside the refusal: the waiter's attempts
    // meet it.
    tokio::time::sleep(REFUSAL * 5).await;
    assert!(!waiting.is_finished(), "the waiter gave up: {waiting:?}");
    server.refuse_writes(None);
    let guard = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the waiter gets an answer")
        .unwrap()
        .expect("the waiter gets the lock");
    guard.check().unwrap();
    drop(held);
}

#[tokio::test(start_paused = true)]
async fn a_waiting_acquire_rides_out_a_refusal() {
    let (server, client) = setup();
    let sem = client.semaphore("refused-wait").unwrap();
    assert!(sem.try_set_permits(0).await.unwrap());
    // Its first attempt meets the refusal.
    server.refuse_writes(Some(MISCONF));
    let waiter = sem.clone();
    let waiting = tokio::spawn(async move { waiter.acquire().await });
    tokio::time::sleep(REFUSAL * 5).await;
    assert!(!waiting.is_finished(), "the waiter gave up");
    server.refuse_writes(None);
    sem.release(1).await.unwrap();
    let permit = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the waiter gets an answer")
        .unwrap()
        .expect("the waiter gets the permit");
    assert_eq!(permit.permits(), 1);
}

/// The exclusive kinds' locks, each as a `Lock` (the reentrant lock, the
/// fair lock, each side of a read-write lock: two locks, since a writer
/// waits for the reader of another owner).
fn exclusive(client: &LockClient, name: &str) -> Vec<(&'static str, lock_redis::Lock)> {
    let read = client.read_write_lock(format!("{name}-read")).unwrap();
    let write = client.read_write_lock(format!("{name}-write")).unwrap();
    vec![
        ("reentrant", client.lock(name).unwrap()),
        (
            "fair",
            client
                .fair_lock(format!("{name}-fair"))
                .unwrap()
                .as_lock()
                .clone(),
        ),
        ("read", read.read().clone()),
        ("write", write.write().clone()),
    ]
}

/// A guard's unlock (or drop) during a refusal goes on in the background:
/// the lock is free soon after the refusal ends, not at the end of its
/// lease (a minute here).
#[tokio::test(start_paused = true)]
async fn locks_released_during_a_refusal_are_free_soon_after_it() {
    let lease = Duration::from_secs(60);
    for dropped in [false, true] {
        let (server, client) = setup();
        let name = if dropped {
            "refused-drop"
        } else {
            "refused-unlock"
        };
        let locks = exclusive(&client, name);
        let mut guards = Vec::new();
        for (kind, lock) in &locks {
            guards.push((*kind, lock.lock_with_lease(lease).await.unwrap()));
        }
        server.refuse_writes(Some(NOREPLICAS));
        for (kind, guard) in guards {
            if dropped {
                drop(guard);
            } else {
                let err = guard.unlock().await.expect_err("refused");
                assert!(err.is_retryable(), "{kind}: {err:?}");
            }
        }
        tokio::time::sleep(REFUSAL).await;
        server.refuse_writes(None);
        background_settles().await;
        for (kind, lock) in &locks {
            assert!(
                !lock.is_locked().await.unwrap(),
                "{kind} (dropped: {dropped}): still held after the refusal"
            );
        }
    }
}

/// A count-down during a refusal is counted once the refusal ends: a
/// latch waited on opens.
#[tokio::test(start_paused = true)]
async fn a_count_down_during_a_refusal_counts_after_it() {
    let (server, client) = setup();
    let latch = client.count_down_latch("refused-latch").unwrap();
    assert!(latch.try_set_count(1).await.unwrap());
    server.refuse_writes(Some(NOREPLICAS));
    let err = latch.count_down().await.expect_err("refused");
    assert!(err.is_retryable(), "{err:?}");
    tokio::time::sleep(REFUSAL).await;
    server.refuse_writes(None);
    background_settles().await;
    assert_eq!(latch.count().await.unwrap(), 0, "counted down once");
}

/// A wait riding a long refusal says so, once, naming the refusal: it does
/// not hang silently (a semaphore's wait as a lock's).
#[cfg(feature = "logs")]
#[tokio::test(start_paused = true)]
async fn a_wait_riding_a_refusal_logs_it_once() {
    let warnings = lock_testkit::logs::capture_warnings();
    let (server, client) = setup();
    let sem = client.semaphore("refused-logged").unwrap();
    assert!(sem.try_set_permits(1).await.unwrap());
    server.refuse_writes(Some(NOREPLICAS));
    let waiter = sem.clone();
    let waiting = tokio::spawn(async move { waiter.acquire().await });
    tokio::time::sleep(REFUSAL * 10).await;
    assert!(!waiting.is_finished());
    let said = warnings.containing("while waiting");
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].contains("NOREPLICAS"), "{said:?}");
    server.refuse_writes(None);
    let permit = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    permit.release().await.unwrap();
}
