//! Requests that run late, on real redis-server through the fault proxy:
//! a request held on its connection past its retry, a server frozen past
//! the request's deadline, an outage or a restart during a release. A
//! request applies at most once however late it runs (its deadline on the
//! store's clock, with a record that outlives it), and permits given back or
//! taken by a failed acquisition are never lost to a transient fault.
//!
//! Each of these failed before requests carried deadlines: the late
//! original gave a permit back a second time (2 of 1 available), counted a
//! latch down a second time (opened early), or the permit stayed taken for
//! good (0 of 1).

use std::time::Duration;

use lock_redis::{ClientConfig, RedisConfig, RetryPolicy};
use lock_testkit::eventually;
use lock_testkit::fixtures::{redis, FaultProxy, RedisServer};

/// The shortest request window accepted for 4 attempts of 200 ms each with
/// the default backoff: a held request outlives it easily.
const WINDOW: Duration = Duration::from_millis(1500);
/// Longer than the window plus the record's grace past it.
const HELD: Duration = Duration::from_millis(3000);

/// Lazily connected: the connect-time script loading would run under the
/// tests' short command timeout, which a loaded machine can miss; the
/// first call loads what it needs under the retry policy instead. Replica
/// sync off: the server has no replicas, and the default's 1 s `WAIT`
/// timeout would count in every attempt of the retry window that the
/// tests' short records must cover.
async fn through(proxy: &FaultProxy, config: ClientConfig) -> lock_redis::LockClient {
    lock_redis::connect(
        RedisConfig::new(proxy.url())
            .command_timeout(Duration::from_millis(200))
            .replica_sync_off()
            .lazy_connect(true),
        config,
    )
    .await
    .unwrap()
}

fn short_window() -> ClientConfig {
    ClientConfig::default()
        .watchdog_timeout(Duration::from_secs(3))
        .record_ttl(WINDOW)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_original_release_does_not_give_a_permit_back_twice() {
    let server = RedisServer::start();
    let proxy = FaultProxy::in_front_of(&server);
    let client = through(&proxy, short_window()).await;
    let name = "late-release";
    let sem = client.semaphore(name).unwrap();
    assert!(sem.try_set_permits(1).await.unwrap());
    let permit = sem.try_acquire().await.unwrap().expect("one permit free");
    let held = proxy.hold_next(format!("redisson_unlock_latch:{{{name}}}"), HELD);
    permit
        .release()
        .await
        .expect("the retry on another connection gives the permit back");
    assert_eq!(sem.available_permits().await.unwrap(), 1);
    held.wait_done().await;
    assert_eq!(
        sem.available_permits().await.unwrap(),
        1,
        "the late original gave the permit back a second time"
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_original_count_down_does_not_open_the_latch_early() {
    let server = RedisServer::start();
    let proxy = FaultProxy::in_front_of(&server);
    let client = through(&proxy, short_window()).await;
    let name = "late-count-down";
    let latch = client.count_down_latch(name).unwrap();
    assert!(latch.try_set_count(2).await.unwrap());
    let held = proxy.hold_next(format!("redisson_unlock_latch:{{{name}}}"), HELD);
    assert_eq!(latch.count_down().await.unwrap(), 1);
    held.wait_done().await;
    assert_eq!(
        latch.count().await.unwrap(),
        1,
        "the late original counted down a second time"
    );
    assert!(!latch.wait_for(Duration::from_millis(100)).await.unwrap());
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_retries_a_swallowed_acquisition_is_given_back() {
    let server = RedisServer::start();
    let proxy = FaultProxy::in_front_of(&server);
    let client = through(
        &proxy,
        ClientConfig::default()
            .watchdog_timeout(Duration::from_secs(3))
            .retry(RetryPolicy::none()),
    )
    .await;
    let sem = client.semaphore("swallowed").unwrap();
    assert!(sem.try_set_permits(1).await.unwrap());
    let swallowed = proxy.swallow_reply_next("redisson_lock_latch:{swallowed}");
    let err = sem.try_acquire().await.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    swallowed.wait_done().await;
    eventually(
        Duration::from_secs(10),
        "the permit the swallowed acquisition took is given back",
        || async { sem.available_permits().await.unwrap() == 1 },
    )
    .await;
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_server_past_the_window_loses_no_permit() {
    let server = RedisServer::start();
    let client = lock_redis::connect(
        RedisConfig::new(server.url())
            .command_timeout(Duration::from_millis(200))
            .replica_sync_off(),
        short_window(),
    )
    .await
    .unwrap();
    let sem = client.semaphore("frozen").unwrap();
    assert!(sem.try_set_permits(1).await.unwrap());
    server.pause();
    let err = sem.try_acquire().await.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    tokio::time::sleep(HELD).await;
    server.resume();
    // Every queued copy of the acquisition now runs past its deadline and is
    // refused; the background repeat learns that and stops.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sem.available_permits().await.unwrap(), 1);
    assert!(sem.try_acquire().await.unwrap().is_some());
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_during_a_restart_is_finished_in_the_background() {
    let mut server = RedisServer::builder()
        .arg("--appendonly")
        .arg("yes")
        .arg("--appendfsync")
        .arg("always")
        .start();
    let client = lock_redis::connect(
        RedisConfig::new(server.url())
            .command_timeout(Duration::from_millis(200))
            .replica_sync_off(),
        ClientConfig::default().watchdog_timeout(Duration::from_secs(3)),
    )
    .await
    .unwrap();
    let sem = client.semaphore("restarted").unwrap();
    assert!(sem.try_set_permits(2).await.unwrap());
    let a = sem.try_acquire().await.unwrap().expect("free");
    let b = sem.try_acquire().await.unwrap().expect("free");
    server.kill();
    let err = a.release().await.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    drop(b);
    tokio::time::sleep(Duration::from_secs(1)).await;
    server.restart();
    eventually(
        Duration::from_secs(20),
        "a permit given back during the outage is given back",
        || async { sem.available_permits().await.ok() == Some(2) },
    )
    .await;
    client.close().await;
}

/// A handoff lock's queue head whose refresh attempt has every reply lost,
/// granted the lock by a release meanwhile: it holds the lock alone. Before,
/// the engine repeated the attempt in the background while the wait went
/// on; its "held" answer made it leave the queue with the wait's ticket,
/// which gave the grant back: the next waiter got the lock while the first
/// still took the grant's notice and held a guard too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_to_a_live_wait_whose_replies_were_lost_has_one_holder() {
    let server = RedisServer::start();
    let proxy = FaultProxy::in_front_of(&server);
    let config = || ClientConfig::default().watchdog_timeout(Duration::from_secs(3));
    let direct = || async {
        lock_redis::connect(RedisConfig::new(server.url()), config())
            .await
            .unwrap()
    };
    let (h, x) = (direct().await, direct().await);
    // Only W talks through the proxy, so only its attempts are faulted.
    let w = through(&proxy, config()).await;
    let name = "handoff-lost-refresh";
    let queue = format!("redisson_lock_queue:{{{name}}}");
    let queued = |n: i64, what: &'static str| {
        let (server, queue) = (&server, queue.clone());
        async move {
            eventually(Duration::from_secs(10), what, || async {
                server.cmd(&["LLEN", &queue]) == redis::Value::Int(n)
            })
            .await
        }
    };
    let held = h
        .handoff_lock(name)
        .unwrap()
        .lock_with_lease(Duration::from_secs(20))
        .await
        .unwrap();
    let w_lock = w.handoff_lock(name).unwrap().as_lock().clone();
    let w_task = tokio::spawn(async move { w_lock.lock().await });
    queued(1, "W queued").await;
    let x_lock = x.handoff_lock(name).unwrap().as_lock().clone();
    let x_task = tokio::spawn(async move { x_lock.lock().await });
    queued(2, "X queued behind W").await;

    // W's next refresh, and each of its retries, runs with its reply lost.
    let pattern = format!("redisson_lock_latch:{{{name}}}");
    let swallowed: Vec<_> = (0..4).map(|_| proxy.swallow_reply_next(&pattern)).collect();
    swallowed[0].wait_done().await;
    held.unlock().await.unwrap();

    let w_guard = tokio::time::timeout(Duration::from_secs(20), w_task)
        .await
        .expect("W gets the lock")
        .unwrap()
        .unwrap();
    // Give X every chance to get in beside W.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !x_task.is_finished() || w_guard.is_lost(),
        "X holds the lock while W's guard does"
    );
    assert!(!w_guard.is_lost(), "W's granted lock was taken from it");
    let holders = match server.cmd(&["HKEYS", name]) {
        redis::Value::Array(fields) => fields.len(),
        other => panic!("HKEYS answered {other:?}"),
    };
    assert_eq!(holders, 1);
    w_guard.unlock().await.unwrap();
    let x_guard = x_task.await.unwrap().unwrap();
    x_guard.unlock().await.unwrap();
    for c in [h, w, x] {
        c.close().await;
    }
}

/// A wait's own attempt (issue 37, item 4), on Redis: a non-reentrant
/// wait's first attempt takes the lock, and its reply and every retry's is
/// swallowed (the outcome unknown). Its next attempt finds the lock held
/// by the wait's own owner; asking the first attempt again (its record:
/// "acquired") gives the wait that hold, instead of `ReentryRefused` for
/// a lock nobody else held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_reentrant_wait_takes_the_hold_its_swallowed_attempt_took() {
    let server = RedisServer::start();
    let proxy = FaultProxy::in_front_of(&server);
    let client = through(
        &proxy,
        ClientConfig::default().watchdog_timeout(Duration::from_secs(3)),
    )
    .await;
    // Loads the script first: a swallowed EVALSHA answered NOSCRIPT would
    // not have run.
    let warm = client.non_reentrant_lock("own-swallowed-warm").unwrap();
    warm.lock().await.unwrap().unlock().await.unwrap();
    let name = "own-swallowed";
    let lock = client.non_reentrant_lock(name).unwrap();
    let pattern = format!("redisson_lock_latch:{{{name}}}");
    let attempts = RetryPolicy::default().attempts;
    let swallowed: Vec<_> = (0..attempts)
        .map(|_| proxy.swallow_reply_next(&pattern))
        .collect();
    let guard = tokio::time::timeout(Duration::from_secs(20), lock.lock())
        .await
        .expect("the wait ends")
        .expect("the wait's own hold, not a re-entry");
    assert!(
        swallowed.iter().all(|s| s.has_matched()),
        "every reply was swallowed"
    );
    client.settle().await;
    assert_eq!(lock.hold_count(guard.owner()).await.unwrap(), 1);
    assert!(!guard.is_lost());
    guard.unlock().await.unwrap();
    client.settle().await;
    assert!(!lock.is_locked().await.unwrap());
    client.close().await;
}
