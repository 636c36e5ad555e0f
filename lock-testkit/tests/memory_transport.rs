//! The in-memory deployment as a transport: the kinds' own scripts run on
//! it through the one registration of kinds, with `EVALSHA` and `NOSCRIPT`,
//! `WAIT` and replica sync, and a transport's lifecycle.

use std::time::Duration;

use lock_redis::lock_core::backend::{Channel, Connection};
use lock_redis::{ClientConfig, LockError};
use lock_script::{ReplicaSync, ScriptCall, Transport};
use lock_testkit::conformance::{config, kind_lock, Kind};
use lock_testkit::InMemoryServer;
use tokio::time::Instant;

/// After `SCRIPT FLUSH` (a restart or failover of the script cache), the
/// next call of each script answers `NOSCRIPT`; the transport loads the
/// script and runs it once more, so every kind keeps working.
#[tokio::test(start_paused = true)]
async fn every_kind_works_after_the_script_cache_is_flushed() {
    let server = InMemoryServer::new();
    let client = server.client_with(config()).unwrap();
    for &kind in Kind::ALL {
        let lock = kind_lock(kind, &client, format!("flushed-{kind:?}"));
        let guard = lock.lock().await.unwrap();
        server.flush_scripts();
        assert!(lock.is_locked().await.unwrap(), "{kind:?}: inspect");
        server.flush_scripts();
        guard.unlock().await.unwrap();
        assert!(!lock.is_locked().await.unwrap(), "{kind:?}: released");
    }
}

/// The scripts a transport runs are the kinds' own: a call of the reentrant
/// kind's acquire script, made by hand, takes the lock a client then sees.
#[tokio::test(start_paused = true)]
async fn the_transport_runs_the_kinds_lua() {
    let server = InMemoryServer::new();
    let transport = server.transport();
    let field = "client-1:7";
    let reply = transport
        .eval(ScriptCall::new(
            &lock_redis::kinds::reentrant::ACQUIRE,
            vec![
                "raw".into(),
                "redisson_lock_latch:{raw}:1".into(),
                "redisson_lock_token:{raw}".into(),
            ],
            vec![
                "30000".into(),
                field.into(),
                "1".into(),
                lock_testkit::conformance::request_deadline().to_string(),
            ],
        ))
        .await
        .unwrap();
    assert_eq!(
        reply,
        redis::Value::Array(vec![redis::Value::Int(1), redis::Value::Int(1)]),
        "acquired, fencing token 1"
    );
    assert_eq!(server.hash("raw"), vec![(field.to_owned(), 1)]);
    let client = server.client().unwrap();
    assert!(client.lock("raw").unwrap().is_locked().await.unwrap());
}

/// With replica sync on a store without replicas, every kind's acquisition
/// waits out `WAIT`'s timeout, gives the hold back and fails with
/// `NotReplicated`, as on a Redis node without replicas.
#[tokio::test(start_paused = true)]
async fn replica_sync_without_replicas_gives_every_kinds_hold_back() {
    let server = InMemoryServer::new();
    let wait = Duration::from_millis(200);
    let env = server
        .env()
        .with_replica_sync(Some(ReplicaSync::new(1, wait)));
    let client = lock_redis::LockClient::new(env, config()).unwrap();
    for &kind in Kind::ALL {
        let name = format!("unreplicated-{kind:?}");
        let lock = kind_lock(kind, &client, &name);
        let started = Instant::now();
        let err = lock.try_lock().await.unwrap_err();
        assert!(
            matches!(
                err,
                LockError::NotReplicated {
                    wanted: 1,
                    acked: 0,
                    ..
                }
            ),
            "{kind:?}: {err:?}"
        );
        assert!(started.elapsed() >= wait, "{kind:?}: WAIT waited");
        assert!(server.hash(&name).is_empty(), "{kind:?}: hold given back");
    }
}

/// The default replica sync (the connected replicas) on a store without
/// replicas costs nothing: every kind's acquisition succeeds at once, with
/// no `WAIT` waited out.
#[tokio::test(start_paused = true)]
async fn the_default_replica_sync_costs_a_store_without_replicas_nothing() {
    let server = InMemoryServer::new();
    let env = server.env().with_replica_sync(Some(ReplicaSync::default()));
    let client = lock_redis::LockClient::new(env, config()).unwrap();
    for &kind in Kind::ALL {
        let name = format!("unwaited-{kind:?}");
        let lock = kind_lock(kind, &client, &name);
        let started = Instant::now();
        assert!(lock.try_lock().await.unwrap().is_some(), "{kind:?}");
        assert_eq!(started.elapsed(), Duration::ZERO, "{kind:?}: no WAIT");
    }
}

/// A closed transport refuses calls and subscriptions, and hears nothing.
#[tokio::test(start_paused = true)]
async fn a_closed_transport_refuses_calls() {
    let server = InMemoryServer::new();
    let transport = server.transport();
    transport.subscribe(&Channel::new("ch")).await.unwrap();
    assert_eq!(server.subscribers("ch"), 1);
    transport.close().await;
    assert_eq!(server.subscribers("ch"), 0);
    let call = ScriptCall::new(
        &lock_redis::kinds::reentrant::INSPECT,
        vec!["k".into()],
        vec![],
    );
    assert!(matches!(transport.eval(call).await, Err(LockError::Closed)));
    assert!(matches!(
        transport.subscribe(&Channel::new("ch")).await,
        Err(LockError::Closed)
    ));
    assert!(matches!(
        transport.eval_batch(Vec::new()).await,
        Err(LockError::Closed)
    ));
}

/// The command timeout is the transport's: a client made after it is set
/// counts it in its retry window.
#[tokio::test(start_paused = true)]
async fn the_command_timeout_is_the_transports() {
    let server = InMemoryServer::new();
    assert_eq!(server.transport().command_timeout(), None);
    server.set_command_timeout(Some(Duration::from_millis(250)));
    assert_eq!(
        server.transport().command_timeout(),
        Some(Duration::from_millis(250))
    );
    server.client_with(ClientConfig::default()).unwrap();
}

/// The transport is the engine's connection, and its command timeout is
/// its own; a client still counts the replica wait on top of it in its
/// retry window (an acquisition may take both): 4 × 7 s + backoff fits
/// the default 30 s record ttl, 4 × (7 s + 1 s) + backoff does not.
#[tokio::test(start_paused = true)]
async fn the_replica_wait_counts_in_the_retry_window() {
    let server = InMemoryServer::new();
    server.set_command_timeout(Some(Duration::from_secs(7)));
    let env = server.env();
    assert_eq!(
        env.connection().command_timeout(),
        Some(Duration::from_secs(7))
    );
    lock_redis::LockClient::new(env.clone(), ClientConfig::default()).unwrap();
    let synced = env.with_replica_sync(Some(ReplicaSync::default()));
    assert_eq!(synced.command_timeout(), Some(Duration::from_secs(8)));
    let err = lock_redis::LockClient::new(synced, ClientConfig::default()).unwrap_err();
    assert!(err.is_invalid_argument(), "{err:?}");
    assert!(err.to_string().contains("record_ttl"), "{err}");
}

/// The reentrant kind's acquire of lock `raw` by `field`, as a client sends it.
fn raw_acquire(field: &str) -> ScriptCall<'static> {
    ScriptCall::new(
        &lock_redis::kinds::reentrant::ACQUIRE,
        vec![
            "raw".into(),
            format!("redisson_lock_latch:{{raw}}:{field}"),
            "redisson_lock_token:{raw}".into(),
        ],
        vec![
            "30000".into(),
            field.into(),
            "1".into(),
            lock_testkit::conformance::request_deadline().to_string(),
        ],
    )
}

/// A delayed call fails at once with a timeout (its caller cannot tell it
/// from one lost on the way) and runs on the store only `delay` later;
/// the calls after the `n` delayed ones run as usual.
#[tokio::test(start_paused = true)]
async fn a_delayed_call_fails_at_once_and_runs_late() {
    let server = InMemoryServer::new();
    let transport = server.transport();
    server.delay_next(1, Duration::from_secs(2));
    let started = Instant::now();
    let err = transport.eval(raw_acquire("late:1")).await.unwrap_err();
    assert!(err.is_timeout() && err.is_retryable(), "{err:?}");
    assert_eq!(started.elapsed(), Duration::ZERO);
    tokio::time::sleep(Duration::from_millis(1999)).await;
    assert!(server.hash("raw").is_empty(), "not arrived yet");
    tokio::time::sleep(Duration::from_millis(1)).await;
    tokio::task::yield_now().await;
    assert_eq!(server.hash("raw"), vec![("late:1".to_owned(), 1)]);
    let again = transport.eval(raw_acquire("late:1")).await.unwrap();
    assert_eq!(
        again,
        redis::Value::Array(vec![redis::Value::Int(1), redis::Value::Int(1)]),
        "not delayed: the record answers the repeat"
    );
}

/// With a command timeout set, the caller of a delayed call waits it out,
/// as on a stuck connection; a delayed batch runs all its calls late.
#[tokio::test(start_paused = true)]
async fn a_delayed_call_times_out_after_the_command_timeout() {
    let server = InMemoryServer::new();
    server.set_command_timeout(Some(Duration::from_millis(250)));
    let transport = server.transport();
    server.delay_next(1, Duration::from_secs(1));
    let started = Instant::now();
    let err = transport
        .eval_batch(vec![raw_acquire("a:1")])
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert_eq!(started.elapsed(), Duration::from_millis(250));
    assert!(server.hash("raw").is_empty());
    tokio::time::sleep(Duration::from_secs(1)).await;
    tokio::task::yield_now().await;
    assert_eq!(server.hash("raw"), vec![("a:1".to_owned(), 1)]);
}

/// A semaphore acquisition whose first attempt is held on the way is
/// retried and takes its permit; the original, arriving late, finds the
/// request's record and takes none.
#[tokio::test(start_paused = true)]
async fn a_late_original_of_a_retried_acquisition_counts_once() {
    let server = InMemoryServer::new();
    let c = server.client_with(config()).unwrap();
    let s = c.semaphore("late").unwrap();
    s.try_set_permits(3).await.unwrap();
    server.delay_next(1, Duration::from_secs(1));
    let permit = s.acquire().await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 2);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(s.available_permits().await.unwrap(), 2, "taken once");
    permit.release().await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 3);
}

/// An acquisition's future is what every caller's future carries (and
/// moves as it is built): the wait, which needs most of the room, is
/// boxed only when an acquisition waits. 3 976 bytes before that, 1 624
/// after (rustc 1.95).
#[tokio::test(start_paused = true)]
async fn an_acquisitions_future_stays_small() {
    let server = InMemoryServer::new();
    let client = server.client_with(config()).unwrap();
    for &kind in Kind::ALL {
        let lock = kind_lock(kind, &client, format!("small-{kind:?}"));
        let (lock_future, try_future) = (lock.lock(), lock.try_lock());
        for (what, size) in [
            ("lock()", std::mem::size_of_val(&lock_future)),
            ("try_lock()", std::mem::size_of_val(&try_future)),
        ] {
            assert!(size <= 2048, "{kind:?}: {what}'s future is {size} bytes");
        }
    }
}
