//! RedLock over five in-memory stores whose masters fail during a hold,
//! in paused time: the in-memory twin of lock-redis's
//! `tests/redlock_faults.rs` (a store that is down fails every call; one
//! that "restarted empty" lost the lock's key).

use lock_redis::{LockClient, RedLock};
use lock_testkit::conformance::{config, multi::STORES, unique, WATCHDOG};
use lock_testkit::InMemoryServer;

/// Five stores and a RedLock over them for each of `processes`.
fn setup(processes: usize, name: &str) -> (Vec<InMemoryServer>, Vec<RedLock>) {
    let stores: Vec<InMemoryServer> = (0..STORES).map(|_| InMemoryServer::new()).collect();
    let reds = (0..processes)
        .map(|_| {
            let clients: Vec<LockClient> = stores
                .iter()
                .map(|s| s.client_with(config()).unwrap())
                .collect();
            RedLock::new(clients.iter().map(|c| c.lock(name).unwrap())).unwrap()
        })
        .collect();
    (stores, reds)
}

#[tokio::test(start_paused = true)]
async fn two_stores_down_keep_the_lock_held() {
    let name = unique("mem-red-two");
    let (stores, reds) = setup(2, &name);
    let guard = reds[0].lock().await.unwrap();
    assert_eq!(guard.held(), STORES);
    stores[0].set_down(true);
    stores[1].set_down(true);
    tokio::time::sleep(WATCHDOG * 3).await;
    assert_eq!(guard.held(), 3);
    assert!(!guard.is_lost());
    assert!(reds[1].try_lock_for(WATCHDOG).await.unwrap().is_none());
    guard.unlock().await.unwrap();
    assert!(reds[1].try_lock().await.unwrap().is_some());
}

#[tokio::test(start_paused = true)]
async fn three_stores_down_lose_the_lock_and_say_so() {
    let name = unique("mem-red-three");
    let (stores, reds) = setup(1, &name);
    let guard = reds[0].lock().await.unwrap();
    for store in &stores[..3] {
        store.set_down(true);
    }
    tokio::time::timeout(WATCHDOG * 2, guard.lost())
        .await
        .expect("the loss is reported within a lease");
    assert!(guard.is_lost());
    assert!(guard.unlock().await.is_err());
    // With most stores down, acquiring fails with their (retryable) error.
    let err = reds[0].try_lock_for(WATCHDOG).await.unwrap_err();
    assert!(err.is_retryable(), "{err}");
}

#[tokio::test(start_paused = true)]
async fn stores_that_lost_the_key_let_no_second_holder_in() {
    let name = unique("mem-red-empty");
    let (stores, reds) = setup(2, &name);
    let guard = reds[0].lock().await.unwrap();
    for store in &stores[..2] {
        assert!(store.del(&name), "the key was there");
    }
    assert!(reds[1].try_lock_for(WATCHDOG * 2).await.unwrap().is_none());
    assert!(!guard.is_lost());
    assert_eq!(
        guard.held(),
        3,
        "renewals found the emptied stores' members gone"
    );
    guard.unlock().await.unwrap();
    assert!(reds[1].try_lock().await.unwrap().is_some());
}
