//! Clients that wait by polling never send `SUBSCRIBE` (their conformance
//! checks are the `polling` row of `conformance.rs`).

use std::time::Duration;

use lock_redis::{ClientConfig, LockClient, RedisConfig, WaitStrategy};
use lock_testkit::fixtures::RedisServer;

async fn connect(url: String, config: ClientConfig) -> LockClient {
    let redis = RedisConfig::new(url)
        .command_timeout(Duration::from_secs(2))
        .connect_timeout(Duration::from_secs(2));
    lock_redis::connect(redis, config)
        .await
        .expect("connect to the fixture")
}

/// How many calls of each subscribe command the server has run
/// (`INFO commandstats`).
fn subscribe_calls(server: &RedisServer) -> Vec<String> {
    let text: String =
        redis::from_redis_value(server.cmd(&["INFO", "commandstats"])).expect("INFO is text");
    text.lines()
        .filter(|l| {
            [
                "cmdstat_subscribe:",
                "cmdstat_ssubscribe:",
                "cmdstat_psubscribe:",
            ]
            .iter()
            .any(|c| l.starts_with(c))
        })
        .map(str::to_owned)
        .collect()
}

/// Waiters of both kinds wait out a holder and take the lock after its
/// unlock, and the server has run no subscribe command at all; the same
/// waits with a subscribing client do show up, so the count can see them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polling_waiters_send_no_subscribe() {
    let server = RedisServer::start();
    let config = ClientConfig::default().watchdog_timeout(Duration::from_millis(900));
    let holder = connect(server.url(), config.clone()).await;
    let poller = connect(
        server.url(),
        config.clone().wait_strategy(WaitStrategy::poll()),
    )
    .await;
    for fair in [false, true] {
        let (held, waiting) = if fair {
            (
                holder.fair_lock("no-sub-fair").unwrap().as_lock().clone(),
                poller.fair_lock("no-sub-fair").unwrap().as_lock().clone(),
            )
        } else {
            (
                holder.lock("no-sub").unwrap(),
                poller.lock("no-sub").unwrap(),
            )
        };
        let guard = held.lock().await.unwrap();
        let waiter =
            tokio::spawn(async move { waiting.try_lock_for(Duration::from_secs(3)).await });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !waiter.is_finished(),
            "the waiter waits while the lock is held"
        );
        guard.unlock().await.unwrap();
        let g = waiter
            .await
            .unwrap()
            .unwrap()
            .expect("taken after the unlock");
        g.unlock().await.unwrap();
    }
    assert_eq!(poller.stats().subscriptions_opened, 0);
    assert_eq!(subscribe_calls(&server), Vec::<String>::new());

    // The same wait by a subscribing client is seen by the count.
    let guard = holder.lock("sub").unwrap().lock().await.unwrap();
    let subscriber = connect(server.url(), config).await;
    let waiting = subscriber.lock("sub").unwrap();
    let waiter = tokio::spawn(async move { waiting.try_lock_for(Duration::from_secs(3)).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    guard.unlock().await.unwrap();
    waiter
        .await
        .unwrap()
        .unwrap()
        .expect("taken")
        .unlock()
        .await
        .unwrap();
    assert_eq!(subscriber.stats().subscriptions_opened, 1);
    assert_ne!(subscribe_calls(&server), Vec::<String>::new());
}
