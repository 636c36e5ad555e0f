//! Replica sync on a single primary: an acquisition of every kind waits
//! for replicas, and is undone (a first hold freed, a re-entry counted
//! back) when too few acknowledge.

use std::time::Duration;

use lock_redis::{ClientConfig, LockClient, LockError, RedisConfig};
use lock_testkit::fixtures::RedisServer;

async fn client(url: String, replicas: u32) -> LockClient {
    client_waiting(url, replicas, Duration::from_millis(100)).await
}

/// A client whose `WAIT` gives the replicas `wait` to acknowledge.
async fn client_waiting(url: String, replicas: u32, wait: Duration) -> LockClient {
    let redis = RedisConfig::new(url).replica_sync(replicas, wait);
    lock_redis::connect(redis, ClientConfig::default())
        .await
        .unwrap()
}

/// Fair locks wait for replicas too (they used not to: the fair backend
/// ran its acquire script without `WAIT`).
#[tokio::test]
async fn too_few_replicas_undo_a_fair_acquisition() {
    let server = RedisServer::start();
    let c = client(server.url(), 1).await;
    let lock = c.fair_lock("unreplicated-fair").unwrap();
    let err = lock.lock().await.unwrap_err();
    assert!(
        matches!(
            err,
            LockError::NotReplicated {
                wanted: 1,
                acked: 0,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!lock.is_locked().await.unwrap(), "the hold was given back");
    assert_eq!(c.stats().watched, 0, "no watchdog entry for a failed lock");
}

#[tokio::test]
async fn too_few_replicas_undo_the_acquisition() {
    let server = RedisServer::start();
    let c = client(server.url(), 1).await;
    let lock = c.lock("unreplicated").unwrap();
    let err = lock.lock().await.unwrap_err();
    assert!(
        matches!(err, LockError::NotReplicated { wanted: 1, acked: 0, ref name } if name == "unreplicated"),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    assert!(!lock.is_locked().await.unwrap(), "the hold was given back");
    assert_eq!(c.stats().watched, 0, "no watchdog entry for a failed lock");
}

#[tokio::test]
async fn with_a_replica_in_sync_acquisitions_succeed() {
    let primary = RedisServer::start();
    let replica = RedisServer::builder()
        .arg("--replicaof")
        .arg("127.0.0.1")
        .arg(primary.port().to_string())
        .start();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let info = replica.cmd(&["INFO", "replication"]);
        if format!("{info:?}").contains("master_link_status:up") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "replica never synced"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A live replica acknowledges in well under a second even on a loaded
    // machine; the frozen one below never does, whatever the wait.
    let c = client_waiting(primary.url(), 1, Duration::from_secs(1)).await;
    let lock = c.lock("replicated").unwrap();
    let guard = lock.lock().await.unwrap();
    let again = lock.lock_as(guard.owner()).await.unwrap();
    assert_eq!(lock.hold_count(guard.owner()).await.unwrap(), 2);
    again.unlock().await.unwrap();

    // A frozen replica acknowledges nothing: a re-entry is undone, and the
    // first hold stays.
    replica.pause();
    let err = lock.lock_as(guard.owner()).await.unwrap_err();
    replica.resume();
    assert!(
        matches!(err, LockError::NotReplicated { acked: 0, .. }),
        "{err:?}"
    );
    assert_eq!(lock.hold_count(guard.owner()).await.unwrap(), 1);
    guard.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}
