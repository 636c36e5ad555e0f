//! `InMemoryServer::crash`: a client killed as SIGKILL would kill its
//! process. Its locks stay until their leases run out and then go to the
//! next waiter; nothing of it reaches the store afterwards.

use std::time::Duration;

use lock_testkit::conformance::{config, WATCHDOG};
use lock_testkit::InMemoryServer;
use tokio::time::Instant;

#[tokio::test(start_paused = true)]
async fn a_crashed_holders_lock_goes_to_the_next_waiter_after_its_lease() {
    let server = InMemoryServer::new();
    let (leader, standby) = (
        server.client_with(config()).unwrap(),
        server.client_with(config()).unwrap(),
    );
    let guard = leader.lock("leader").unwrap().lock().await.unwrap();
    // Renewed for a few leases while the process lives.
    tokio::time::sleep(WATCHDOG * 3).await;
    assert!(!guard.is_lost());
    let crashed = Instant::now();
    assert!(server.crash(&leader));
    let taken = standby.lock("leader").unwrap().lock().await.unwrap();
    let waited = crashed.elapsed();
    // Not before the lease the last renewal set could have run out, and
    // soon after it (a lost notice costs nothing: the waiter sleeps until
    // the holder's time to live).
    assert!(waited <= WATCHDOG, "taken over after {waited:?}");
    assert!(
        waited >= WATCHDOG / 3,
        "taken over after {waited:?}: before the lease could run out"
    );
    // The dead client's guard reaches nothing.
    drop(guard);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(taken.check().is_ok());
    taken.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_crashed_client_gives_nothing_back() {
    let server = InMemoryServer::new();
    let client = server.client_with(config()).unwrap();
    let permits = client.semaphore("pool").unwrap();
    assert!(permits.try_set_permits(2).await.unwrap());
    let permit = permits.acquire().await.unwrap();
    assert!(server.crash(&client));
    let released = permit.release().await.unwrap_err();
    assert!(
        matches!(released, lock_redis::LockError::Closed),
        "{released:?}"
    );
    // A plain permit has no lease: a crashed holder's is gone for good,
    // as it would be with Redisson's RSemaphore.
    let other = server.client_with(config()).unwrap();
    assert_eq!(
        other
            .semaphore("pool")
            .unwrap()
            .available_permits()
            .await
            .unwrap(),
        1
    );
    // And its record runs out as its locks do.
    tokio::time::sleep(WATCHDOG * 2).await;
    assert!(!server
        .keys()
        .iter()
        .any(|k| k.contains(&client.id().to_string())));
}

#[test]
fn only_its_own_clients_can_be_crashed() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (a, b) = (InMemoryServer::new(), InMemoryServer::new());
        let client = a.client().unwrap();
        assert!(!b.crash(&client));
        assert!(a.crash(&client));
        assert!(!a.crash(&client), "crashed once");
    });
}
