//! A queued wait dropped while one of its attempts is still on its way to
//! the store: its place is given up only after that attempt landed, so the
//! attempt cannot put the waiter back at the tail of the queue it had just
//! left. Before, dropping the wait left the queue at once; the attempt,
//! retried after a failure, then ran and queued the waiter again behind
//! everyone, until its own outcome left the queue a second time (and a
//! `settle` that slipped in between saw the dead waiter queued).
//!
//! In memory, paused time; the attempt's first send fails (`fail_next`),
//! so its retry runs after the wait was dropped, or every copy of it is
//! held on the way (`delay_next`), so its outcome stays unknown.

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

/// How the waiter's attempt meets the store before the waiter is dropped.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// The next call fails before it runs; the waiter is dropped in the
    /// backoff before that call's retry (25 ms at least).
    FailedOnce,
    /// Every copy of the next call is held on the way and runs 2 s late:
    /// its outcome stays unknown, and the wait goes on (its later polls
    /// get through) until it is dropped 1 s later.
    Unknown,
}

/// Every attempt of one retried call (the default policy's).
const ATTEMPTS: u32 = 4;

/// Makes `client`'s next call meet `fault`, then drops `waiter`, reading
/// `look` every millisecond until the client has settled. From the drop
/// on, every call takes 5 ms: what lands, and in what order, stays in the
/// store long enough to be read. Returns what `look` read.
async fn drop_after<T: Send + 'static, G>(
    server: &InMemoryServer,
    client: &LockClient,
    fault: Fault,
    waiter: tokio::task::JoinHandle<G>,
    look: impl Fn(&InMemoryServer) -> T + Send + 'static,
) -> Vec<T> {
    let tries = client.stats().tries;
    match fault {
        Fault::FailedOnce => server.fail_next(1),
        Fault::Unknown => server.delay_next(ATTEMPTS, Duration::from_secs(2)),
    }
    while client.stats().tries == tries {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    if let Fault::Unknown = fault {
        tokio::time::sleep(Duration::from_secs(1)).await;
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
    // Past any copy still held on the way.
    tokio::time::sleep(Duration::from_secs(3)).await;
    server.set_latency(Duration::ZERO);
    std::mem::take(&mut *seen.lock().unwrap())
}

/// W is queued between two waiters of another process (they make no
/// calls, so W's are the only ones the faults meet), then dropped while
/// its poll is retried.
#[tokio::test(start_paused = true)]
async fn a_dropped_waiter_is_not_queued_again_by_its_attempt_in_flight() {
    for handoff in [false, true] {
        dropped_waiter_stays_out_of_the_queue(handoff, Fault::FailedOnce).await;
    }
}

/// The same when W is dropped with an attempt whose outcome is unknown
/// (it may still run): W's place is given up only once that attempt was
/// answered.
#[tokio::test(start_paused = true)]
async fn a_dropped_waiter_is_not_queued_again_by_an_unknown_attempt() {
    for handoff in [false, true] {
        dropped_waiter_stays_out_of_the_queue(handoff, Fault::Unknown).await;
    }
}

/// W (of client `b`, which polls) queued between two waiters of another
/// process, dropped after its attempt met `fault`: it is never seen behind
/// the last waiter, and is gone once `b` settled.
async fn dropped_waiter_stays_out_of_the_queue(handoff: bool, fault: Fault) {
    let server = InMemoryServer::new();
    let holder = server.client_with(config()).unwrap();
    let b = server
        .client_with(config().wait_strategy(WaitStrategy::poll()))
        .unwrap();
    let name = format!("cancel-{fault:?}-{handoff}");
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

    let seen = drop_after(&server, &b, fault, waiter, {
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
        "{fault:?}, handoff {handoff}: the dropped waiter was queued again behind {last}: {:?}",
        requeued.first()
    );
    assert_eq!(
        server.list(&queue),
        vec![first, last],
        "{fault:?}, handoff {handoff}"
    );
    assert_eq!(
        server.zscore(&timeouts, &w),
        None,
        "{fault:?}, handoff {handoff}"
    );
    held.unlock().await.unwrap();
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

    let seen = drop_after(&server, &b, Fault::FailedOnce, waiter, waiting).await;

    let left = seen.iter().position(|n| *n == 0).expect("the writer left");
    assert!(
        seen[left..].iter().all(|n| *n == 0),
        "the dropped writer waited again after it left: {seen:?}"
    );
    read.unlock().await.unwrap();
}
