//! Failures users get: a frozen or dead server gives a retryable error
//! within the timeout, never a hang; bad configuration fails before I/O.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use lock_core::backend::{ExclusiveKind, RenewTarget};
use lock_redis::{LockError, RedisConfig};
use lock_testkit::fixtures::RedisServer;

/// Generous bound for "returned within about the timeout".
const SLACK: Duration = Duration::from_millis(700);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_server_times_out_every_call() {
    let env = env().await;
    let n = name("frozen");
    let o = owner();
    must_acquire(&env.backend, &acquire(&n, o, 10_000)).await;
    env.server.pause();
    // The calls below stay in the paused server's socket buffers and run
    // once it resumes, with deadlines far off: sent by another owner, they
    // change nothing `o` holds, whichever connection they went on.
    let other = owner();

    let started = Instant::now();
    let err = env
        .backend
        .try_acquire(&acquire(&n, other, 10_000))
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(err.is_retryable() && err.is_timeout(), "{err:?}");
    assert!(
        took >= TIMEOUT - Duration::from_millis(50) && took < TIMEOUT + SLACK,
        "{took:?}"
    );

    let started = Instant::now();
    let err = env
        .backend
        .release(&release(&n, other, 10_000))
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert!(started.elapsed() < TIMEOUT + SLACK);

    let started = Instant::now();
    let target = RenewTarget {
        name: n.clone(),
        owner: o,
    };
    match env.backend.renew(&[target], 10_000).await {
        Ok(results) => assert!(results[0].as_ref().is_err_and(LockError::is_timeout)),
        Err(e) => assert!(e.is_timeout(), "{e:?}"),
    }
    assert!(started.elapsed() < TIMEOUT + SLACK);

    let started = Instant::now();
    assert!(env.backend.inspect(&n).await.unwrap_err().is_timeout());
    assert!(started.elapsed() < TIMEOUT + SLACK);

    env.server.resume();
    // Back to normal without intervention (the first call may still land on
    // a connection that was waiting for a stale reply).
    let mut recovered = false;
    for _ in 0..5 {
        if let Ok(info) = env.backend.inspect(&n).await {
            assert_eq!(info.hold_count(&o), 1);
            recovered = true;
            break;
        }
    }
    assert!(recovered);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_server_does_not_hang_subscribe() {
    let env = env().await;
    env.server.pause();
    let started = Instant::now();
    let err = env
        .backend
        .subscribe(&env.backend.channel(&name("frozen-sub")))
        .await
        .unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert!(started.elapsed() < TIMEOUT * 2 + SLACK);
    env.server.resume();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_server_gives_a_retryable_error() {
    let mut env = env().await;
    let n = name("dead");
    let o = owner();
    must_acquire(&env.backend, &acquire(&n, o, 10_000)).await;
    env.server.kill();
    let started = Instant::now();
    let err = env
        .backend
        .try_acquire(&acquire(&n, o, 10_000))
        .await
        .unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert!(started.elapsed() < TIMEOUT + SLACK);
    let err = env.backend.force_unlock(&n).await.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");

    env.server.restart();
    must_acquire(&env.backend, &acquire(&n, o, 10_000)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_to_a_dead_server_is_retryable() {
    let mut server = RedisServer::start();
    let config = config(&server);
    server.kill();
    let started = Instant::now();
    let err = RedisBackend::connect(config).await.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert!(started.elapsed() < TIMEOUT + SLACK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_to_a_frozen_server_times_out() {
    let server = RedisServer::start();
    server.pause();
    let started = Instant::now();
    let err = RedisBackend::connect(config(&server)).await.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert!(started.elapsed() < TIMEOUT + SLACK);
    server.resume();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_config_is_rejected_before_io() {
    // A frozen server would make any I/O hang until a timeout.
    let server = RedisServer::start();
    server.pause();
    let good = config(&server);
    let cases = [
        RedisConfig::new("definitely not a url"),
        RedisConfig::new("ftp://127.0.0.1/"),
        good.clone().command_timeout(Duration::ZERO),
        good.clone().connect_timeout(Duration::ZERO),
        good.clone().pool_size(0),
    ];
    for config in cases {
        let started = Instant::now();
        let err = RedisBackend::connect(config.clone()).await.unwrap_err();
        assert!(err.is_invalid_argument(), "{config:?}: {err:?}");
        assert!(started.elapsed() < Duration::from_millis(100), "{config:?}");
    }
    server.resume();
}

/// A record ttl shorter than the retry window (4 attempts × 10 s + backoff > the
/// default 30 s) is refused before any I/O; the backend reports its command
/// timeout so a client made on it directly checks the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_ttl_shorter_than_the_retry_window_is_rejected_before_io() {
    let server = RedisServer::start();
    let slow = config(&server).command_timeout(Duration::from_secs(10));
    let backend = RedisBackend::connect(slow.clone()).await.unwrap();
    // The longest call: the command timeout and the default replica sync's
    // 1 s `WAIT` timeout.
    assert_eq!(backend.command_timeout(), Some(Duration::from_secs(11)));
    let err = lock_redis::LockClient::new(backend.env().clone(), Default::default()).unwrap_err();
    assert!(err.to_string().contains("record_ttl"), "{err}");
    server.pause();
    let started = Instant::now();
    let err = lock_redis::connect(slow, Default::default())
        .await
        .unwrap_err();
    assert!(err.is_invalid_argument(), "{err:?}");
    assert!(err.to_string().contains("record_ttl"), "{err}");
    assert!(started.elapsed() < Duration::from_millis(100));
    server.resume();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_password_is_not_retryable() {
    let server = RedisServer::builder().password("right").start();
    let url = format!("redis://:wrong@127.0.0.1:{}/", server.port());
    let err = RedisBackend::connect(RedisConfig::new(url).command_timeout(TIMEOUT))
        .await
        .unwrap_err();
    // Its own error, not a bad URL's (InvalidArgument).
    assert!(err.is_unauthorized() && !err.is_retryable(), "{err:?}");
    assert!(!err.to_string().contains("wrong@"), "{err}");

    // The right one works, with a user name too.
    let backend = RedisBackend::connect(config(&server)).await.unwrap();
    must_acquire(&backend, &acquire(&name("authed"), owner(), 1_000)).await;
    let url = format!("redis://default:right@127.0.0.1:{}/", server.port());
    let backend = RedisBackend::connect(RedisConfig::new(url)).await.unwrap();
    must_acquire(&backend, &acquire(&name("authed2"), owner(), 1_000)).await;
}

#[test]
fn outside_a_runtime_is_an_error_not_a_panic() {
    let err = lock_redis::SingleNode::new(&RedisConfig::new("redis://127.0.0.1:1/")).unwrap_err();
    assert!(err.is_invalid_argument(), "{err:?}");
}
