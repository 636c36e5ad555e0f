//! The pub/sub connection: delivery, unsubscribe, and recovery after the
//! connection or the server goes away.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use lock_core::backend::{Channel, ExclusiveKind, Notice};
use lock_redis::LockError;
use lock_testkit::eventually;
use lock_testkit::fixtures::redis::Value;

fn unlocked(topic: &Channel) -> Notice {
    common::unlocked(topic)
}

fn lock_topic(s: &str) -> (Channel, String) {
    let channel = format!("redisson_lock__channel:{{{s}}}");
    (Channel::new(channel.clone()), channel)
}

fn numsub(env: &Env, channel: &str) -> i64 {
    match env.server.cmd(&["PUBSUB", "NUMSUB", channel]) {
        Value::Array(items) => int(items[1].clone()),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsubscribe_stops_delivery() {
    let mut env = env().await;
    let (a, a_channel) = lock_topic("a");
    let (b, b_channel) = lock_topic("b");
    let (c, _) = lock_topic("c");
    env.backend.subscribe(&a).await.unwrap();
    env.backend.subscribe(&b).await.unwrap();
    assert_eq!(numsub(&env, &a_channel), 1);

    env.backend.unsubscribe(&a);
    // Commands are applied in call order on one connection: once c is
    // confirmed, a is gone at the server.
    env.backend.subscribe(&c).await.unwrap();
    assert_eq!(numsub(&env, &a_channel), 0);
    env.server.cmd(&["PUBLISH", &a_channel, "0"]);
    env.server.cmd(&["PUBLISH", &b_channel, "0"]);
    assert_eq!(
        env.notices.next(Duration::from_secs(2)).await,
        Some(unlocked(&b))
    );
    env.notices.expect_none(Duration::from_millis(100)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribe_is_registered_before_the_future_is_polled() {
    let mut env = env().await;
    let (a, a_channel) = lock_topic("early");
    let (b, _) = lock_topic("later");
    // Never poll the first future: the subscription still happens.
    let unpolled = env.backend.subscribe(&a);
    env.backend.subscribe(&b).await.unwrap();
    assert_eq!(numsub(&env, &a_channel), 1);
    drop(unpolled);
    env.server.cmd(&["PUBLISH", &a_channel, "0"]);
    env.notices
        .expect(&unlocked(&a), Duration::from_secs(2))
        .await;

    // subscribe, unsubscribe, subscribe in one go ends subscribed.
    let (x, x_channel) = lock_topic("flip");
    let first = env.backend.subscribe(&x);
    env.backend.unsubscribe(&x);
    let second = env.backend.subscribe(&x);
    first.await.unwrap();
    second.await.unwrap();
    assert_eq!(numsub(&env, &x_channel), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_pubsub_connection_resets_and_resubscribes() {
    let mut env = env().await;
    let (a, a_channel) = lock_topic("survivor");
    env.backend.subscribe(&a).await.unwrap();
    assert_eq!(env.server.kill_pubsub_clients(), 1);
    env.notices
        .expect(&Notice::Reset, Duration::from_secs(5))
        .await;
    // Reset comes after the channels were subscribed again.
    assert_eq!(numsub(&env, &a_channel), 1);
    env.server.cmd(&["PUBLISH", &a_channel, "0"]);
    env.notices
        .expect(&unlocked(&a), Duration::from_secs(2))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_restart_resets_and_resubscribes() {
    let mut env = env().await;
    let (a, a_channel) = lock_topic("restarted");
    env.backend.subscribe(&a).await.unwrap();
    env.server.restart();
    env.notices
        .expect(&Notice::Reset, Duration::from_secs(5))
        .await;
    env.server.cmd(&["PUBLISH", &a_channel, "0"]);
    env.notices
        .expect(&unlocked(&a), Duration::from_secs(2))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_made_while_down_are_kept() {
    let mut env = env().await;
    let (a, a_channel) = lock_topic("while-down");
    env.server.kill();
    // The future fails (retryable) after connect + command timeout ...
    let started = Instant::now();
    let err = env.backend.subscribe(&a).await.unwrap_err();
    assert!(err.is_retryable(), "{err}");
    assert!(started.elapsed() < TIMEOUT * 2 + Duration::from_secs(1));
    // ... but the subscription stays and is made once the server is back.
    env.server.restart();
    env.notices
        .expect(&Notice::Reset, Duration::from_secs(5))
        .await;
    assert_eq!(numsub(&env, &a_channel), 1);
    env.server.cmd(&["PUBLISH", &a_channel, "0"]);
    env.notices
        .expect(&unlocked(&a), Duration::from_secs(2))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_confirms_once_the_server_is_back() {
    let env = env().await;
    let mut server = env.server;
    let (a, a_channel) = lock_topic("late-confirm");
    server.kill();
    let pending = env.backend.subscribe(&a);
    // Restart in the background while the future waits.
    let restarter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        server.restart();
        server
    });
    let result = pending.await;
    let server = restarter.join().unwrap();
    // Depending on backoff timing it was confirmed or timed out; either way
    // the channel ends up subscribed.
    if let Err(e) = result {
        assert!(e.is_retryable(), "{e}");
    }
    eventually(
        Duration::from_secs(5),
        "the channel subscribed again",
        || async {
            matches!(
                server.cmd(&["PUBSUB", "NUMSUB", &a_channel]),
                Value::Array(ref items) if items[1] == Value::Int(1)
            )
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_ends_pubsub_and_calls() {
    let env = env().await;
    let (a, a_channel) = lock_topic("closing");
    env.backend.subscribe(&a).await.unwrap();
    env.backend.close().await;
    eventually(
        Duration::from_secs(2),
        "the pub/sub connection closes with close()",
        || async {
            matches!(
                env.server.cmd(&["PUBSUB", "NUMSUB", &a_channel]),
                Value::Array(ref items) if items[1] == Value::Int(0)
            )
        },
    )
    .await;
    assert!(matches!(
        env.backend.subscribe(&a).await,
        Err(LockError::Closed)
    ));
    let err = env
        .backend
        .try_acquire(&acquire(&name("x"), owner(), 1_000))
        .await
        .unwrap_err();
    assert!(matches!(err, LockError::Closed), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_backend_closes_the_pubsub_connection() {
    let env = env().await;
    let (a, a_channel) = lock_topic("dropped");
    env.backend.subscribe(&a).await.unwrap();
    drop(env.backend);
    eventually(
        Duration::from_secs(2),
        "the pub/sub task ends with the backend",
        || async {
            matches!(
                env.server.cmd(&["PUBSUB", "NUMSUB", &a_channel]),
                Value::Array(ref items) if items[1] == Value::Int(0)
            )
        },
    )
    .await;
}
