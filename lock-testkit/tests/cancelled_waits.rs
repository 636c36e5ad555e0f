//! A queued wait dropped while one of its attempts is still on its way to
//! the store: its place is given up only after that attempt landed, so the
//! attempt cannot put the waiter back at the tail of the queue it had just
//! left. Before, dropping the wait left the queue at once; the attempt,
//! retried after a failure, then ran and queued the waiter again behind
//! everyone, until its own outcome left the queue a second time (and a
//! `settle` that slipped in between saw the dead waiter queued).
//!
//! In memory, paused time; the attempt's first send fails
//! (`fail_next`), so its retry runs after the wait was dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lock_redis::{ClientConfig, Lock, LockClient, LockName, Owner, WaitStrategy};
use lock_testkit::memory::ScriptReply;
use lock_testkit::InMemoryServer;

fn config() -> ClientConfig {
    ClientConfig::default().watchdog_timeout(Duration::from_secs(3))
}

fn fair(c: &LockClient, name: &str, handoff: bool) -> Lock {
    if handoff {
        c.handoff_lock(name).unwrap().as_lock().clone()
    } else {
        c.fair_lock(name).unwrap().as_lock().clone()
    }
}

/// Fails `client`'s next call before it runs, then drops `waiter` in the
/// backoff before that call's retry (25 ms at least), reading `look` every
/// millisecond until the client has settled. From the failure on, every
/// call takes 5 ms: what lands, and in what order, stays in the store long
/// enough to be read. Returns what `look` read.
async fn drop_during_retry<T: Send + 'static, G>(
    server: &InMemoryServer,
    client: &LockClient,
    waiter: tokio::task::JoinHandle<G>,
    look: impl Fn(&InMemoryServer) -> T + Send + 'static,
) -> Vec<T> {
    let tries = client.stats().tries;
    server.fail_next(1);
    while client.stats().tries == tries {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    server.set_latency(Duration::from_millis(5));
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sampler = {
        let (server, seen, stop) = (server.clone(), Arc::clone(&seen), Arc::clone(&stop));
        tokio::spawn(async move {
            while !stop.load(Ordering::Acquire) {
                seen.lock().unwrap().push(look(&server));
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
    };
    waiter.abort();
    assert!(waiter.await.is_err_and(|e| e.is_cancelled()));
    client.settle().await;
    stop.store(true, Ordering::Release);
    sampler.await.unwrap();
    server.set_latency(Duration::ZERO);
    std::mem::take(&mut *seen.lock().unwrap())
}

/// W is queued between two waiters of another process (they make no
/// calls, so W's are the only ones the faults meet). W's next poll fails
/// before it runs, and W is dropped during the backoff before its retry.
#[tokio::test(start_paused = true)]
async fn a_dropped_waiter_is_not_queued_again_by_its_attempt_in_flight() {
    for handoff in [false, true] {
        let server = InMemoryServer::new();
        let holder = server.client_with(config()).unwrap();
        let b = server
            .client_with(config().wait_strategy(WaitStrategy::poll()))
            .unwrap();
        let name = format!("cancel-in-flight-{handoff}");
        let queue = server.layout().queue_key(&LockName::new(&name).unwrap());
        let timeouts = server.layout().timeout_key(&LockName::new(&name).unwrap());
        // A fixed lease: no watchdog renewals among the calls.
        let held = fair(&holder, &name, handoff)
            .lock_with_lease(Duration::from_secs(60))
            .await
            .unwrap();
        let far = server.now_ms() + 600_000;
        let (first, last) = (
            Owner::new(uuid::Uuid::new_v4(), 1).field(),
            Owner::new(uuid::Uuid::new_v4(), 3).field(),
        );
        server.rpush(&queue, &first);
        server.zadd(&timeouts, far, &first);
        let lock = fair(&b, &name, handoff);
        let waiter = tokio::spawn(async move { lock.lock().await });
        while server.list(&queue).len() < 2 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let w = server.list(&queue)[1].clone();
        server.rpush(&queue, &last);
        server.zadd(&timeouts, far, &last);

        let seen = drop_during_retry(&server, &b, waiter, {
            let queue = queue.clone();
            move |server| server.list(&queue)
        })
        .await;

        let requeued: Vec<_> = seen
            .iter()
            .filter(|q| q.iter().position(|o| *o == w) > q.iter().position(|o| *o == last))
            .cloned()
            .collect();
        assert!(
            requeued.is_empty(),
            "handoff {handoff}: the dropped waiter was queued again behind {last}: {:?}",
            requeued.first()
        );
        assert_eq!(server.list(&queue), vec![first, last], "handoff {handoff}");
        assert_eq!(server.zscore(&timeouts, &w), None, "handoff {handoff}");
        held.unlock().await.unwrap();
    }
}

/// The same for a writer waiting on a read-write lock: dropped while its
/// poll is retried, it must not count as waiting again (which holds new
/// readers off) once it has left.
#[tokio::test(start_paused = true)]
async fn a_dropped_writer_does_not_wait_again_by_its_attempt_in_flight() {
    let server = InMemoryServer::new();
    let holder = server.client_with(config()).unwrap();
    let b = server
        .client_with(config().wait_strategy(WaitStrategy::poll()))
        .unwrap();
    let name = "rw-cancel-in-flight";
    let writers = format!("redisson_rwlock_writers:{{{name}}}");
    let read = holder
        .read_write_lock(name)
        .unwrap()
        .read()
        .lock_with_lease(Duration::from_secs(60))
        .await
        .unwrap();
    let write = b.read_write_lock(name).unwrap().write().clone();
    let waiter = tokio::spawn(async move { write.lock().await });
    let waiting = move |server: &InMemoryServer| match server.command(&["ZCARD", &writers]) {
        ScriptReply::Int(n) => n,
        other => panic!("ZCARD answered {other:?}"),
    };
    while waiting(&server) == 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }

    let seen = drop_during_retry(&server, &b, waiter, waiting).await;

    let left = seen.iter().position(|n| *n == 0).expect("the writer left");
    assert!(
        seen[left..].iter().all(|n| *n == 0),
        "the dropped writer waited again after it left: {seen:?}"
    );
    read.unlock().await.unwrap();
}
