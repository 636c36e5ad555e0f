//! Replica sync by default (issue 37, item 8): Redisson's rule. On a
//! master with a connected replica every acquisition waits for it (`WAIT`
//! runs), and fails with `NotReplicated` only when no replica
//! acknowledged; a master without replicas is sent no `WAIT`; a user who
//! may not run `WAIT` or `INFO` still locks.

use lock_redis::{ClientConfig, LockClient, LockError, RedisConfig};
use lock_testkit::fixtures::redis::Value;
use lock_testkit::fixtures::RedisServer;
use tokio::time::Instant;

use crate::replica_sync::primary_with_replica;

/// How often `server` ran `command` (`INFO commandstats`).
fn calls(server: &RedisServer, command: &str) -> u64 {
    let stats = match server.cmd(&["INFO", "commandstats"]) {
        Value::BulkString(bytes) => String::from_utf8(bytes).unwrap(),
        Value::VerbatimString { text, .. } => text,
        other => panic!("expected text, got {other:?}"),
    };
    let prefix = format!("cmdstat_{command}:calls=");
    stats
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
}

/// Resets the server's command counts; returns how many `INFO` calls one
/// [`calls`] adds by itself (so a test counts only the client's).
fn reset_stats(server: &RedisServer) -> u64 {
    server.cmd(&["CONFIG", "RESETSTAT"]);
    let first = calls(server, "info");
    calls(server, "info") - first
}

async fn default_client(url: String) -> LockClient {
    lock_redis::connect(RedisConfig::new(url), ClientConfig::default())
        .await
        .unwrap()
}

#[tokio::test]
async fn by_default_acquisitions_wait_for_a_connected_replica() {
    let (primary, replica) = primary_with_replica().await;
    let c = default_client(primary.url()).await;
    let waits_before = calls(&primary, "wait");
    for i in 0..5 {
        let guard = c.lock(format!("synced-{i}")).unwrap().lock().await.unwrap();
        guard.unlock().await.unwrap();
    }
    assert_eq!(
        calls(&primary, "wait") - waits_before,
        5,
        "one WAIT per acquisition, none for the releases"
    );

    // Redisson's rule: a connected replica that acknowledges nothing fails
    // the acquisition (after the 1 s default wait), and the hold is undone.
    replica.pause();
    let lock = c.lock("unsynced").unwrap();
    let err = lock.lock().await.unwrap_err();
    replica.resume();
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

    // Back in sync: acquisitions succeed again.
    let guard = lock.lock().await.unwrap();
    guard.unlock().await.unwrap();
    c.close().await;
}

#[tokio::test]
async fn by_default_a_master_without_replicas_gets_no_wait() {
    let server = RedisServer::start();
    let c = default_client(server.url()).await;
    let per_read = reset_stats(&server);
    let before = calls(&server, "info");
    let started = Instant::now();
    for i in 0..20 {
        let guard = c.lock(format!("alone-{i}")).unwrap().lock().await.unwrap();
        guard.unlock().await.unwrap();
    }
    let elapsed = started.elapsed();
    assert_eq!(calls(&server, "wait"), 0, "no WAIT without replicas");
    // The replica count is asked about once a second, pipelined with an
    // acquisition: at most one INFO per second begun.
    let infos = calls(&server, "info") - before - 2 * per_read;
    let seconds = elapsed.as_secs() + 1;
    assert!(
        infos >= 1 && infos <= seconds,
        "{infos} INFO calls in {elapsed:?}"
    );
    c.close().await;
}

#[tokio::test]
async fn replica_sync_off_sends_no_wait() {
    let (primary, _replica) = primary_with_replica().await;
    let redis = RedisConfig::new(primary.url()).replica_sync_off();
    let c = lock_redis::connect(redis, ClientConfig::default())
        .await
        .unwrap();
    reset_stats(&primary);
    let guard = c.lock("unchecked").unwrap().lock().await.unwrap();
    guard.unlock().await.unwrap();
    assert_eq!(calls(&primary, "wait"), 0);
    c.close().await;
}

/// A user who may not run `WAIT` or `INFO` connects and locks with the
/// default: the master then counts as having no replicas. Asking for
/// replicas explicitly makes `WAIT` a requirement, refused at connect
/// (`commands::wait_is_needed_only_with_replica_sync`).
#[tokio::test]
async fn the_default_works_for_a_user_without_wait_or_info() {
    let (primary, _replica) = primary_with_replica().await;
    primary.cmd(&[
        "ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-wait", "-info",
    ]);
    let url = format!("redis://app:pw@127.0.0.1:{}/", primary.port());
    let c = default_client(url).await;
    for i in 0..3 {
        let guard = c
            .lock(format!("allowed-{i}"))
            .unwrap()
            .lock()
            .await
            .unwrap();
        guard.unlock().await.unwrap();
    }
    c.close().await;
}
