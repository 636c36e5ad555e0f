//! A real master refusing writes: `min-replicas-to-write 1` with no good
//! replica makes Redis answer `NOREPLICAS` to every script that writes
//! (also from inside the script), before anything is written. The refusal
//! proves the request did not run, so it is transient (issue 37, item 1):
//! permits given back during it are free once it ends, and a waiter rides
//! it out. The refusal is switched on and off with `CONFIG SET` (the same
//! refusal a replica going away causes, without waiting for its lag).

use std::time::Duration;

use lock_redis::{ClientConfig, LockClient, RedisConfig};
use lock_testkit::fixtures::RedisServer;

/// Bounds "it did finish" generously: a loaded machine is slow, never this
/// slow.
const WITHIN: Duration = Duration::from_secs(20);
/// How long the master refuses: longer than the retry policy (~0.4 s).
const REFUSAL: Duration = Duration::from_secs(2);

async fn client(server: &RedisServer) -> LockClient {
    lock_redis::connect(RedisConfig::new(server.url()), ClientConfig::default())
        .await
        .unwrap()
}

fn refuse_writes(server: &RedisServer, refuse: bool) {
    let replicas = if refuse { "1" } else { "0" };
    server.cmd(&["CONFIG", "SET", "min-replicas-to-write", replicas]);
}

/// Polls `available` until it reads `want`, within [`WITHIN`].
async fn until_available(sem: &lock_redis::Semaphore, want: i64) {
    let reached = tokio::time::timeout(WITHIN, async {
        loop {
            if sem.available_permits().await.ok() == Some(want) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        reached.is_ok(),
        "never {want} permits free: {:?}",
        sem.available_permits().await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_given_back_while_the_master_refuses_writes_are_free_after() {
    let server = RedisServer::start();
    let client = client(&server).await;
    let sem = client.semaphore("noreplicas").unwrap();
    assert!(sem.try_set_permits(2).await.unwrap());
    let released = sem.acquire().await.unwrap();
    let dropped = sem.acquire().await.unwrap();

    refuse_writes(&server, true);
    let err = released.release().await.expect_err("the master refuses");
    assert!(err.is_retryable(), "{err:?}");
    assert!(err.to_string().contains("NOREPLICAS"), "{err}");
    drop(dropped);
    tokio::time::sleep(REFUSAL).await;
    assert_eq!(sem.available_permits().await.unwrap(), 0, "still refused");
    refuse_writes(&server, false);
    until_available(&sem, 2).await;
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_rides_out_a_master_refusing_writes() {
    let server = RedisServer::start();
    let (holder, client) = (self::client(&server).await, self::client(&server).await);
    let _held = holder
        .lock("noreplicas-wait")
        .unwrap()
        .lock_with_lease(Duration::from_millis(500))
        .await
        .unwrap();
    refuse_writes(&server, true);
    let lock = client.lock("noreplicas-wait").unwrap();
    let waiting = tokio::spawn(async move { lock.lock().await });
    // The holder's lease ends inside the refusal: the waiter's attempts
    // meet it.
    tokio::time::sleep(REFUSAL).await;
    assert!(!waiting.is_finished(), "the waiter gave up: {waiting:?}");
    refuse_writes(&server, false);
    let guard = tokio::time::timeout(WITHIN, waiting)
        .await
        .expect("the waiter gets an answer once the master writes again")
        .unwrap()
        .expect("and gets the lock");
    guard.unlock().await.unwrap();
    client.close().await;
    holder.close().await;
}

/// Polls `replica` until its link to the master is up, within [`WITHIN`].
async fn until_synced(replica: &RedisServer) {
    let synced = tokio::time::timeout(WITHIN, async {
        while !format!("{:?}", replica.cmd(&["INFO", "replication"]))
            .contains("master_link_status:up")
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(synced.is_ok(), "the replica never synced");
}

/// The same with a real replica going away: the master has
/// `min-replicas-to-write 1`, and its one replica leaves
/// (`REPLICAOF NO ONE`) and comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_given_back_while_the_replica_is_away_are_free_when_it_is_back() {
    let primary = RedisServer::start();
    let replica = primary.start_replica();
    primary.cmd(&["CONFIG", "SET", "min-replicas-to-write", "1"]);
    let client = client(&primary).await;
    let sem = client.semaphore("replica-away").unwrap();
    assert!(sem.try_set_permits(2).await.unwrap());
    let released = sem.acquire().await.unwrap();
    let dropped = sem.acquire().await.unwrap();

    replica.cmd(&["REPLICAOF", "NO", "ONE"]);
    // The master notices at once (the replica's link closes); poll until
    // it refuses, so the releases below surely meet the refusal.
    let refusing = tokio::time::timeout(WITHIN, async {
        while !primary
            .try_cmd(&["SET", "probe", "1"])
            .is_err_and(|e| e.code() == Some("NOREPLICAS"))
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(refusing.is_ok(), "the master never refused writes");
    if let Err(e) = released.release().await {
        assert!(e.is_retryable(), "{e:?}");
    }
    drop(dropped);
    tokio::time::sleep(REFUSAL).await;
    let port = primary.port().to_string();
    replica.cmd(&["REPLICAOF", "127.0.0.1", &port]);
    until_synced(&replica).await;
    until_available(&sem, 2).await;
    client.close().await;
}
