//! A client's close on a real redis-server (issue 37, item 9): it gives
//! back every lock and permit its guards hold, so the keys are gone when
//! `close()` returns; against a frozen server (SIGSTOP) it returns after
//! its bound, and the guards were told.

use std::time::Duration;

use lock_redis::{ClientConfig, LockError, RedisConfig};
use lock_testkit::fixtures::redis::Value;
use lock_testkit::fixtures::RedisServer;
use tokio::time::Instant;

fn exists(server: &RedisServer, key: &str) -> bool {
    server.cmd(&["EXISTS", key]) == Value::Int(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_gives_back_every_lock_and_permit() {
    let server = RedisServer::start();
    let c = lock_redis::connect(RedisConfig::new(server.url()), ClientConfig::default())
        .await
        .unwrap();
    let lock = c.lock("leader").unwrap();
    let leader = lock.lock().await.unwrap();
    let again = lock.lock_as(leader.owner()).await.unwrap();
    let fair = c.fair_lock("fair").unwrap().lock().await.unwrap();
    let rw = c.read_write_lock("rw").unwrap();
    let read = rw.read().lock().await.unwrap();
    let lean = c.lean_lock("lean").unwrap().lock().await.unwrap();
    let sem = c.semaphore("sem").unwrap();
    assert!(sem.try_set_permits(2).await.unwrap());
    let permits = sem.acquire_many(2).await.unwrap();
    let eps = c.permit_expirable_semaphore("eps").unwrap();
    assert!(eps.try_set_permits(1).await.unwrap());
    let permit = eps.acquire().await.unwrap();
    for key in ["leader", "fair", "rw", "lean"] {
        assert!(exists(&server, key), "{key} held");
    }

    tokio::time::timeout(Duration::from_secs(30), c.close())
        .await
        .expect("the close finished");
    for key in ["leader", "fair", "rw", "lean"] {
        assert!(!exists(&server, key), "{key} given back by the close");
    }
    assert_eq!(
        server.cmd(&["GET", "sem"]),
        Value::BulkString(b"2".to_vec()),
        "the semaphore's permits are back"
    );
    assert!(leader.is_lost() && again.is_lost() && fair.is_lost() && read.is_lost());
    assert!(permit.is_lost());
    assert!(matches!(leader.unlock().await, Err(LockError::Closed)));
    assert!(matches!(permits.release().await, Err(LockError::Closed)));
    assert!(matches!(permit.release().await, Err(LockError::Closed)));
    drop((again, fair, read, lean));

    let other = lock_redis::connect(RedisConfig::new(server.url()), ClientConfig::default())
        .await
        .unwrap();
    let eps = other.permit_expirable_semaphore("eps").unwrap();
    assert_eq!(eps.available_permits().await.unwrap(), 1);
    other.close().await;
}

/// A frozen server: nothing is answered, and the close returns once its
/// bound is over (a generous upper bound: it must not hang), the guard
/// told at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_against_a_frozen_server_returns_after_its_bound() {
    let server = RedisServer::start();
    let bound = Duration::from_secs(1);
    let c = lock_redis::connect(
        RedisConfig::new(server.url()).command_timeout(Duration::from_millis(300)),
        ClientConfig::default().close_timeout(bound),
    )
    .await
    .unwrap();
    let guard = c.lock("frozen").unwrap().lock().await.unwrap();
    server.pause();
    let started = Instant::now();
    let closing = tokio::spawn({
        let c = c.clone();
        async move { c.close().await }
    });
    tokio::time::timeout(Duration::from_secs(5), guard.lost())
        .await
        .expect("told at once");
    tokio::time::timeout(Duration::from_secs(60), closing)
        .await
        .expect("the close did not hang")
        .unwrap();
    assert!(started.elapsed() >= bound, "it tried for its bound");
    // Releases sent meanwhile may still wait in the frozen server's socket
    // and run when it resumes, within their deadline: they are of this
    // client's own owner, and no hold of it can start after the close, so
    // they free the lock early or find it gone. Either way it ends.
    server.resume();
    assert!(matches!(guard.unlock().await, Err(LockError::Closed)));
}
