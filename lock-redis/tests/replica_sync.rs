//! Replica sync on a single primary: an acquisition of every kind waits
//! for replicas, and is undone (a first hold freed, a re-entry counted
//! back) when too few acknowledge; a `WAIT` delays nothing but its own
//! acquisition.

use std::time::Duration;

use lock_redis::{ClientConfig, LockClient, LockError, RedisConfig};
use lock_testkit::fixtures::RedisServer;
use tokio::time::Instant;

/// A primary and one replica of it, in sync.
pub(crate) async fn primary_with_replica() -> (RedisServer, RedisServer) {
    let primary = RedisServer::start();
    let replica = primary.start_replica();
    (primary, replica)
}

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
    let (primary, replica) = primary_with_replica().await;
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

/// Issue 37, item 3: with a replica that stopped acknowledging, other
/// acquisitions' `EVALSHA + WAIT` pipelines used to fill the first
/// connection, where the watchdog renews: renewals sat behind seconds of
/// `WAIT`s, timed out, and held locks expired (5 of 5 with a 3 s
/// watchdog). Now `WAIT`s go on connections of their own: every held lock
/// is still held after three leases of `WAIT` traffic, and an unlock made
/// meanwhile is not queued behind them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_and_unlocks_never_queue_behind_waits() {
    let (primary, replica) = primary_with_replica().await;
    let watchdog = Duration::from_secs(3);
    let redis = RedisConfig::new(primary.url()).replica_sync(1, Duration::from_secs(1));
    let c = lock_redis::connect(redis, ClientConfig::default().watchdog_timeout(watchdog))
        .await
        .unwrap();
    let mut held = Vec::new();
    for i in 0..5 {
        held.push(c.lock(format!("held-{i}")).unwrap().lock().await.unwrap());
    }

    replica.pause();
    let stop = Instant::now() + 3 * watchdog;
    // Twelve acquisitions at a time, each waiting out its `WAIT`: enough to
    // fill the first connection (8 calls) as they used to.
    let waiters: Vec<_> = (0..12)
        .map(|t| {
            let c = c.clone();
            tokio::spawn(async move {
                let mut refused = 0;
                for i in 0.. {
                    if Instant::now() >= stop {
                        break;
                    }
                    match c.lock(format!("w-{t}-{i}")).unwrap().try_lock().await {
                        Err(LockError::NotReplicated { .. }) => refused += 1,
                        Err(e) if e.is_timeout() => {}
                        other => panic!("the frozen replica acknowledged nothing: {other:?}"),
                    }
                }
                refused
            })
        })
        .collect();

    tokio::time::sleep(watchdog * 2).await;
    // Generous: an unlock behind a connection's queue of 1 s `WAIT`s took
    // seconds or timed out (3 s); on its own connection it is one round
    // trip.
    let started = Instant::now();
    held.pop().unwrap().unlock().await.unwrap();
    let unlock_took = started.elapsed();
    let mut refused = 0;
    for waiter in waiters {
        refused += waiter.await.unwrap();
    }
    replica.resume();

    assert!(refused > 0, "the acquisitions did wait for the replica");
    for guard in &held {
        assert!(!guard.is_lost(), "{} was lost", guard.name());
    }
    let observer = lock_redis::connect(
        RedisConfig::new(primary.url()).replica_sync_off(),
        ClientConfig::default(),
    )
    .await
    .unwrap();
    for i in 0..4 {
        assert!(
            observer
                .lock(format!("held-{i}"))
                .unwrap()
                .is_locked()
                .await
                .unwrap(),
            "held-{i} expired: its renewals were stuck"
        );
    }
    assert!(
        unlock_took < Duration::from_secs(2),
        "the unlock took {unlock_took:?}, queued behind WAITs"
    );
    for guard in held {
        guard.unlock().await.unwrap();
    }
}
