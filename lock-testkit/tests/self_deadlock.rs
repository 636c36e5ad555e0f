//! A plain acquisition that would wait for its own task fails at once
//! (issue 37, item 10), on the in-memory backend with paused time. Each
//! plain `lock()` is an owner of its own, so before this a task asking
//! twice waited for itself forever, silently. Every wait is bounded by a
//! timeout that fails the test instead of hanging.

use std::time::Duration;

use lock_redis::{LockClient, LockError};
use lock_testkit::conformance::config;
use lock_testkit::InMemoryServer;

fn setup() -> (InMemoryServer, LockClient) {
    let server = InMemoryServer::new();
    let client = server.client_with(config()).unwrap();
    (server, client)
}

/// Fails the test when `fut` does not finish at once (within a minute of
/// paused time, which passes only when every task waits).
async fn at_once<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), fut)
        .await
        .expect("would have waited for itself")
}

fn self_deadlock<T: std::fmt::Debug>(result: lock_redis::Result<T>, name: &str) {
    match result {
        Err(LockError::SelfDeadlock { name: refused }) => assert_eq!(refused, name),
        other => panic!("expected SelfDeadlock, got {other:?}"),
    }
}

/// Two plain `lock()` in one task: the second fails at once, with the
/// first hold untouched; after the unlock the task may lock again.
#[tokio::test(start_paused = true)]
async fn a_second_plain_lock_in_one_task_fails_at_once() {
    let (_server, c) = setup();
    let lock = c.lock("twice").unwrap();
    let first = lock.lock().await.unwrap();
    let err = at_once(lock.lock()).await;
    assert!(err.as_ref().is_err_and(LockError::is_self_deadlock));
    self_deadlock(err, "twice");
    self_deadlock(
        at_once(lock.try_lock_for(Duration::from_secs(5))).await,
        "twice",
    );
    assert_eq!(lock.hold_count(first.owner()).await.unwrap(), 1);
    // A try that does not wait cannot hang: it answers "held", as before.
    assert!(at_once(lock.try_lock()).await.unwrap().is_none());
    first.unlock().await.unwrap();
    let again = at_once(lock.lock()).await.unwrap();
    again.unlock().await.unwrap();
}

/// Every exclusive kind: the fair lock, the lean lock, the non-reentrant
/// lock, a fenced lock, and the write side of a read-write lock (a write
/// after a read, a read after a write, in one task).
#[tokio::test(start_paused = true)]
async fn every_exclusive_kind_refuses_its_own_task() {
    let (_server, c) = setup();
    let fair = c.fair_lock("fair").unwrap();
    let held = fair.lock().await.unwrap();
    self_deadlock(at_once(fair.lock()).await, "fair");
    drop(held);
    let lean = c.lean_lock("lean").unwrap();
    let held = lean.lock().await.unwrap();
    self_deadlock(at_once(lean.lock()).await, "lean");
    drop(held);
    let nr = c.non_reentrant_lock("nr").unwrap();
    let held = nr.lock().await.unwrap();
    self_deadlock(at_once(nr.lock()).await, "nr");
    drop(held);
    let fenced = c.fenced_lock("fenced").unwrap();
    let held = fenced.lock().await.unwrap();
    self_deadlock(at_once(fenced.lock()).await, "fenced");
    drop(held);

    let rw = c.read_write_lock("rw").unwrap();
    let read = rw.read().lock().await.unwrap();
    // Readers share: a second read in the same task is fine.
    let read_again = at_once(rw.read().lock()).await.unwrap();
    self_deadlock(at_once(rw.write().lock()).await, "rw");
    drop(read_again);
    drop(read);
    c.settle().await;
    let write = rw.write().lock().await.unwrap();
    self_deadlock(at_once(rw.read().lock()).await, "rw");
    self_deadlock(at_once(rw.write().lock()).await, "rw");
    write.unlock().await.unwrap();
}

/// In two tasks the second waits, as before, and gets the lock once the
/// first lets go.
#[tokio::test(start_paused = true)]
async fn in_two_tasks_the_second_waits() {
    let (_server, c) = setup();
    let lock = c.lock("two-tasks").unwrap();
    let first = lock.lock().await.unwrap();
    let waiter = {
        let lock = lock.clone();
        tokio::spawn(async move { lock.lock().await.map(|g| g.owner()) })
    };
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(!waiter.is_finished(), "waits for the other task's hold");
    first.unlock().await.unwrap();
    let owner = at_once(waiter).await.unwrap().unwrap();
    assert!(
        !lock.is_held_by(owner).await.unwrap(),
        "dropped in its task"
    );
}

/// Explicit owners and owner scopes re-enter per owner, as before.
#[tokio::test(start_paused = true)]
async fn explicit_owners_and_scopes_re_enter() {
    let (_server, c) = setup();
    let lock = c.lock("owners").unwrap();
    let first = lock.lock().await.unwrap();
    let again = at_once(lock.lock_as(first.owner())).await.unwrap();
    assert_eq!(lock.hold_count(first.owner()).await.unwrap(), 2);
    again.unlock().await.unwrap();
    first.unlock().await.unwrap();
    let scoped = c
        .scope(async {
            let outer = lock.lock().await?;
            let inner = at_once(lock.lock()).await?;
            let count = lock.hold_count(outer.owner()).await?;
            inner.unlock().await?;
            outer.unlock().await?;
            Ok::<_, LockError>(count)
        })
        .await
        .unwrap();
    assert_eq!(scoped, 2);
}

/// Semaphores are not locks: one task may take permits twice.
#[tokio::test(start_paused = true)]
async fn semaphores_are_unchanged() {
    let (_server, c) = setup();
    let sem = c.semaphore("sem").unwrap();
    sem.try_set_permits(2).await.unwrap();
    let one = sem.acquire().await.unwrap();
    let two = at_once(sem.acquire()).await.unwrap();
    drop((one, two));
}

/// A guard moved to another task still counts for the task that took the
/// lock (the check goes by the task recorded at the acquisition): that
/// task is refused; the task holding the guard now is not protected.
#[tokio::test(start_paused = true)]
async fn a_moved_guard_counts_for_the_task_that_took_it() {
    let (_server, c) = setup();
    let lock = c.lock("moved").unwrap();
    let guard = lock.lock().await.unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let holder = tokio::spawn(async move {
        let _ = rx.await;
        guard.unlock().await
    });
    self_deadlock(at_once(lock.lock()).await, "moved");
    tx.send(()).unwrap();
    holder.await.unwrap().unwrap();
    let again = at_once(lock.lock()).await.unwrap();
    again.unlock().await.unwrap();
}

/// Outside any tokio task (the body of `#[tokio::main]`, a `block_on`),
/// the thread running the future stands for its task: the second plain
/// lock on that thread fails at once too, and a lock in a task spawned
/// from there waits as in any other task.
#[tokio::test(start_paused = true)]
async fn outside_a_task_the_thread_counts() {
    assert!(tokio::task::try_id().is_none(), "a test's body is no task");
    let (_server, c) = setup();
    let lock = c.lock("no-task").unwrap();
    let first = lock.lock().await.unwrap();
    self_deadlock(at_once(lock.lock()).await, "no-task");
    let in_a_task = {
        let lock = lock.clone();
        tokio::spawn(async move {
            lock.try_lock_for(Duration::from_secs(1))
                .await
                .map(|g| g.is_none())
        })
    };
    assert!(
        at_once(in_a_task).await.unwrap().unwrap(),
        "waited out its bound"
    );
    first.unlock().await.unwrap();
}

/// A hold with a fixed lease ends by itself: a plain lock of the same task
/// waits for it, as before, since that wait ends with the lease.
#[tokio::test(start_paused = true)]
async fn a_fixed_lease_hold_is_waited_for() {
    let (_server, c) = setup();
    let lock = c.lock("leased").unwrap();
    let leased = lock.lock_with_lease(Duration::from_secs(2)).await.unwrap();
    let started = tokio::time::Instant::now();
    let next = at_once(lock.lock()).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited for the lease"
    );
    assert!(leased.is_lost());
    next.unlock().await.unwrap();
}

/// The check runs only once the store said "held": a lock the task still
/// has a guard of, but which was force-unlocked (the guard not yet told),
/// is taken as the free lock it is.
#[tokio::test(start_paused = true)]
async fn a_force_unlocked_hold_refuses_nothing() {
    let (_server, c) = setup();
    let lock = c.lock("forced").unwrap();
    let stale = lock.lock().await.unwrap();
    assert!(lock.force_unlock().await.unwrap());
    let fresh = at_once(lock.lock()).await.unwrap();
    assert!(lock.is_held_by(fresh.owner()).await.unwrap());
    drop(stale);
    fresh.unlock().await.unwrap();
}
