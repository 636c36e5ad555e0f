//! End to end through [`LockClient`]s on fair backends: arrival order across
//! clients, and waiters that give up leave no trace in the queue.
//! (The conformance checks of the fair kinds on redis-server are rows of
//! lock-redis's `tests/conformance.rs`.)

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use lock_redis::{ClientConfig, LockClient};
use lock_testkit::fixtures::RedisServer;
use lock_testkit::{eventually, ExclusionChecker};

async fn client(server: &RedisServer) -> LockClient {
    lock_redis::connect(config(server), ClientConfig::default())
        .await
        .expect("connect to the fixture")
}

/// Waits until `name`'s raw queue has `len` entries.
async fn queue_reaches(server: &RedisServer, name: &str, len: usize) {
    let n = common::name(name);
    eventually(
        Duration::from_secs(5),
        format_args!("queue of {name} reaches {len}"),
        || async { queue(server, &n).len() == len },
    )
    .await;
}

/// Asserts `name` has no queue entry left, in the list or the zset.
fn no_queue_left(server: &RedisServer, name: &str) {
    let n = common::name(name);
    assert!(queue(server, &n).is_empty(), "{:?}", queue(server, &n));
    assert!(
        deadlines(server, &n).is_empty(),
        "{:?}",
        deadlines(server, &n)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_from_two_clients_acquire_in_arrival_order() {
    let server = RedisServer::start();
    let clients = [client(&server).await, client(&server).await];
    let holder = clients[0].fair_lock("fifo").unwrap().lock().await.unwrap();

    let order = Arc::new(Mutex::new(Vec::new()));
    let checker = ExclusionChecker::new();
    let mut waiters = Vec::new();
    for i in 0..5 {
        let lock = clients[i % 2].fair_lock("fifo").unwrap();
        let (order, checker) = (Arc::clone(&order), checker.clone());
        waiters.push(tokio::spawn(async move {
            let guard = lock.lock().await.unwrap();
            let section = checker.enter(format!("waiter {i}"), None);
            order.lock().unwrap().push(i);
            tokio::time::sleep(Duration::from_millis(20)).await;
            drop(section);
            guard.unlock().await.unwrap();
        }));
        // Start the next one only once this one is in the queue.
        queue_reaches(&server, "fifo", i + 1).await;
    }
    let info = clients[1].fair_lock("fifo").unwrap().info().await.unwrap();
    assert_eq!(info.queue.len(), 5);

    holder.unlock().await.unwrap();
    for waiter in waiters {
        tokio::time::timeout(Duration::from_secs(20), waiter)
            .await
            .expect("every waiter gets the lock")
            .unwrap();
    }
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4]);
    assert!(
        checker.violations().is_empty(),
        "{:?}",
        checker.violations()
    );
    no_queue_left(&server, "fifo");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_times_out_leaves_the_queue() {
    let server = RedisServer::start();
    let (a, b) = (client(&server).await, client(&server).await);
    let holder = a.fair_lock("timeout").unwrap().lock().await.unwrap();

    let got = b
        .fair_lock("timeout")
        .unwrap()
        .try_lock_for(Duration::from_millis(300))
        .await
        .unwrap();
    assert!(got.is_none());
    b.settle().await;
    no_queue_left(&server, "timeout");

    // A try never queued in the first place.
    assert!(b
        .fair_lock("timeout")
        .unwrap()
        .try_lock()
        .await
        .unwrap()
        .is_none());
    no_queue_left(&server, "timeout");
    holder.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_waiter_leaves_the_queue() {
    let server = RedisServer::start();
    let (a, b) = (client(&server).await, client(&server).await);
    let holder = a.fair_lock("dropped").unwrap().lock().await.unwrap();

    let lock = b.fair_lock("dropped").unwrap();
    let waited = tokio::time::timeout(Duration::from_millis(300), lock.lock()).await;
    assert!(
        waited.is_err(),
        "the lock is held: the waiter cannot get it"
    );
    b.settle().await;
    no_queue_left(&server, "dropped");

    // The lock still goes to the next waiter as usual.
    let next = tokio::spawn(async move { lock.lock().await.unwrap().unlock().await.unwrap() });
    queue_reaches(&server, "dropped", 1).await;
    holder.unlock().await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), next)
        .await
        .expect("the next waiter gets the lock")
        .unwrap();
    no_queue_left(&server, "dropped");
}
