//! An acquisition whose outcome stays unknown (its replies lost) while its
//! wait goes on: nothing in the background may take, give back or drop
//! what belongs to that live wait. Before, the engine repeated the request
//! in the background at once: its "held" answer made it leave the queue
//! under the wait's feet (a fair lock then served a later waiter first),
//! and on a handoff lock that leave gave back a lock just granted to the
//! wait, which went to the next waiter while the wait still took the
//! grant's message: two holders.
//!
//! In memory, paused time; faults from `lose_next_replies`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lock_redis::{ClientConfig, Guard, Lock, LockClient};
use lock_testkit::InMemoryServer;
use tokio::time::Instant;

fn config() -> ClientConfig {
    ClientConfig::default().watchdog_timeout(Duration::from_secs(3))
}

/// Every attempt of one retried call (the default policy's).
const ATTEMPTS: u32 = 4;

fn fair(c: &LockClient, name: &str, handoff: bool) -> Lock {
    if handoff {
        c.handoff_lock(name).unwrap().as_lock().clone()
    } else {
        c.fair_lock(name).unwrap().as_lock().clone()
    }
}

/// Waits on `lock` from a task, noting the order in which waiters got it
/// and the time each held it.
fn wait_on(
    lock: Lock,
    who: &'static str,
    order: Arc<Mutex<Vec<(&'static str, Instant)>>>,
) -> tokio::task::JoinHandle<Guard> {
    tokio::spawn(async move {
        let guard = lock.lock().await.expect("the waiter gets the lock");
        order.lock().unwrap().push((who, Instant::now()));
        guard
    })
}

/// W's first attempt queues it and every reply of it is lost; X queues
/// behind it at a moment swept over W's retries and what follows them.
#[tokio::test(start_paused = true)]
async fn an_unknown_first_attempt_keeps_the_waiters_place_in_the_queue() {
    for step in 0..8u64 {
        let server = InMemoryServer::new();
        let (h, w, x) = (
            server.client_with(config()).unwrap(),
            server.client_with(config()).unwrap(),
            server.client_with(config()).unwrap(),
        );
        let name = format!("fifo-unknown-{step}");
        let held = fair(&h, &name, false)
            .lock_with_lease(Duration::from_secs(20))
            .await
            .unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        server.lose_next_replies(ATTEMPTS);
        let w_task = wait_on(fair(&w, &name, false), "W", Arc::clone(&order));
        tokio::time::sleep(Duration::from_millis(50 + 100 * step)).await;
        let x_task = wait_on(fair(&x, &name, false), "X", Arc::clone(&order));
        tokio::time::sleep(Duration::from_secs(1)).await;
        held.unlock().await.unwrap();
        let first = tokio::time::timeout(Duration::from_secs(60), w_task)
            .await
            .unwrap_or_else(|_| {
                panic!("step {step}: W never got the lock: X took it first and keeps it")
            })
            .unwrap();
        first.unlock().await.unwrap();
        x_task.await.unwrap().unlock().await.unwrap();
        let order: Vec<_> = order.lock().unwrap().iter().map(|(who, _)| *who).collect();
        assert_eq!(order, ["W", "X"], "step {step}: W lost its place");
    }
}

/// W is the queue head of a handoff lock and its refresh attempt's replies
/// are lost; the holder releases at a moment swept over a range around the
/// retries, so the grant to W lands before, during and after them.
#[tokio::test(start_paused = true)]
async fn a_grant_to_a_live_wait_with_an_unknown_attempt_has_one_holder() {
    for step in 0..12u64 {
        let server = InMemoryServer::new();
        let (h, w, x) = (
            server.client_with(config()).unwrap(),
            server.client_with(config()).unwrap(),
            server.client_with(config()).unwrap(),
        );
        let name = format!("handoff-unknown-{step}");
        let held = fair(&h, &name, true)
            .lock_with_lease(Duration::from_secs(20))
            .await
            .unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let w_task = wait_on(fair(&w, &name, true), "W", Arc::clone(&order));
        tokio::time::sleep(Duration::from_secs(1)).await;
        let x_task = wait_on(fair(&x, &name, true), "X", Arc::clone(&order));
        // W refreshes its place every third of the waiter timeout (5 s,
        // so at 1.667 s), X a second later: the next call after this is
        // W's refresh. The release comes after its first attempt ran,
        // during its retries or after them.
        tokio::time::sleep(Duration::from_millis(600)).await;
        server.lose_next_replies(ATTEMPTS);
        tokio::time::sleep(Duration::from_millis(100 + 50 * step)).await;
        held.unlock().await.unwrap();

        let w_guard = tokio::time::timeout(Duration::from_secs(60), w_task)
            .await
            .unwrap_or_else(|_| panic!("step {step}: W never got the lock"))
            .unwrap();
        // X must still be waiting while W holds: give it every chance.
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(
            !x_task.is_finished() || w_guard.is_lost(),
            "step {step}: X took the lock while W's guard holds it"
        );
        let holders = server.hash(&name);
        assert_eq!(holders.len(), 1, "step {step}: holders {holders:?}");
        assert!(!w_guard.is_lost(), "step {step}: W's guard was lost");
        w_guard.unlock().await.unwrap();
        x_task.await.unwrap().unlock().await.unwrap();
        let order: Vec<_> = order.lock().unwrap().iter().map(|(who, _)| *who).collect();
        assert_eq!(order, ["W", "X"], "step {step}");
    }
}
