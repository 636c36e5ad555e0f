//! Sharing a fair lock with Redisson: its queue, written the way
//! `RedissonFairLock` writes it, is respected, and its waiters are told on
//! their channels. Key and channel names are spelled out literally here, to
//! pin Redisson's layout.

use crate::common;

use std::time::Duration;

use common::*;
use lock_core::backend::{AcquireRequest, ExclusiveKind, ReleaseOutcome};
use lock_testkit::fixtures::redis::Value;

const LEASE: u64 = 10_000;
/// A Redisson thread waiting on the lock: `<client-uuid>:<thread-id>`.
const REDISSON_WAITER: &str = "6f1c2a4e-8d0b-4b7e-9a35-2c1d0e9f7a61:55";
/// Redisson's default thread wait time, 5 minutes.
const REDISSON_WAIT_MS: i64 = 300_000;

/// Queues the Redisson waiter as Redisson does: RPUSH plus a deadline of
/// now + its wait time (far in the future for us).
fn queue_redisson_waiter(env: &Env) -> i64 {
    let deadline = server_now_ms(&env.server) + REDISSON_WAIT_MS;
    env.server
        .cmd(&["RPUSH", "redisson_lock_queue:{job}", REDISSON_WAITER]);
    env.server.cmd(&[
        "ZADD",
        "redisson_lock_timeout:{job}",
        &deadline.to_string(),
        REDISSON_WAITER,
    ]);
    deadline
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_acquire_does_not_jump_a_redisson_queue() {
    let env = env().await;
    let n = name("job");
    let (a, b) = (owner(), owner());
    let deadline = queue_redisson_waiter(&env);

    // The lock is free, but Redisson's waiter is first: neither a try nor a
    // waiting attempt takes it. Its deadline is minutes away, so the hint is
    // the short recheck: a live head takes the lock within a round trip.
    let hint = must_wait(&env.backend, &try_req(&n, a, LEASE)).await;
    assert_eq!(hint, Some(Duration::from_millis(50)));
    must_wait(&env.backend, &wait_req(&n, a, LEASE)).await;
    must_wait(&env.backend, &wait_req(&n, b, LEASE)).await;
    assert_eq!(env.server.cmd(&["EXISTS", "job"]), Value::Int(0));
    // We queue behind it, in the same list and zset, and leave its deadline
    // alone.
    assert_eq!(
        queue(&env.server, &n),
        vec![REDISSON_WAITER.to_owned(), a.field(), b.field()]
    );
    assert_eq!(
        env.server
            .cmd(&["ZSCORE", "redisson_lock_timeout:{job}", REDISSON_WAITER]),
        bulk(&deadline.to_string())
    );
    assert_eq!(deadlines(&env.server, &n).len(), 3);

    // Once the Redisson waiter has taken the lock (as Redisson does: pop
    // itself, HSET) and released it, our head is next.
    env.server.cmd(&["LPOP", "redisson_lock_queue:{job}"]);
    env.server
        .cmd(&["ZREM", "redisson_lock_timeout:{job}", REDISSON_WAITER]);
    must_wait(&env.backend, &wait_req(&n, b, LEASE)).await;
    must_acquire(&env.backend, &wait_req(&n, a, LEASE)).await;
    assert_eq!(queue(&env.server, &n), vec![b.field()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redisson_waiter_at_the_head_is_told_on_its_channel() {
    let env = env().await;
    let n = name("job");
    let a = owner();
    must_acquire(&env.backend, &wait_req(&n, a, LEASE)).await;
    queue_redisson_waiter(&env);
    let channel = format!("redisson_lock__channel:{{job}}:{REDISSON_WAITER}");
    let mut sub = RawSub::new(&env.server, std::slice::from_ref(&channel)).await;

    assert_eq!(
        must_release(&env.backend, &release(&n, a, LEASE)).await,
        ReleaseOutcome::Released
    );
    assert_eq!(
        sub.next(Duration::from_secs(2)).await,
        Some((channel.clone(), "0".to_owned()))
    );

    // Force unlock tells it as well.
    assert!(!env.backend.force_unlock(&n).await.unwrap());
    assert_eq!(
        sub.next(Duration::from_secs(2)).await,
        Some((channel, "0".to_owned()))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_by_redisson_queues_us_with_its_ttl() {
    let env = env().await;
    let n = name("job");
    let a = owner();
    env.server.cmd(&["HSET", "job", REDISSON_WAITER, "1"]);
    env.server.cmd(&["PEXPIRE", "job", "20000"]);

    let hint = must_wait(&env.backend, &wait_req(&n, a, LEASE)).await;
    assert!(
        hint.is_some_and(|t| t <= Duration::from_secs(20) && t > Duration::from_secs(15)),
        "{hint:?}"
    );
    assert_eq!(queue(&env.server, &n), vec![a.field()]);
    assert_eq!(
        env.server
            .cmd(&["LRANGE", "redisson_lock_queue:{job}", "0", "-1"]),
        Value::Array(vec![bulk(&a.field())])
    );
    // Redisson's unlock deletes the hash; then we are the head and take it.
    env.server.cmd(&["DEL", "job"]);
    must_acquire(&env.backend, &wait_req(&n, a, LEASE)).await;
    assert!(queue(&env.server, &n).is_empty());
    assert!(deadlines(&env.server, &n).is_empty());
}

/// Redisson's join (`tryLockInnerAsync`): deadline = (the tail's deadline,
/// or now + the lock's PTTL) + its wait time, then RPUSH.
fn redisson_joins(env: &Env, waiter: &str) -> i64 {
    let now = server_now_ms(&env.server);
    let tail = env
        .server
        .cmd(&["LINDEX", "redisson_lock_queue:{job}", "-1"]);
    let base = match tail {
        Value::Nil => now + int(env.server.cmd(&["PTTL", "job"])).max(0),
        tail => deadline_of(&env.server, &name("job"), &text(&tail)).unwrap(),
    };
    let deadline = base + REDISSON_WAIT_MS;
    env.server.cmd(&[
        "ZADD",
        "redisson_lock_timeout:{job}",
        &deadline.to_string(),
        waiter,
    ]);
    env.server
        .cmd(&["RPUSH", "redisson_lock_queue:{job}", waiter]);
    deadline
}

/// Redisson's take by its queue head (the lock is free): pop itself, move
/// every remaining deadline up by its wait time (ZINCRBY −wait), HSET.
fn redisson_takes(env: &Env, waiter: &str) {
    assert_eq!(
        env.server.cmd(&["LPOP", "redisson_lock_queue:{job}"]),
        bulk(waiter)
    );
    env.server
        .cmd(&["ZREM", "redisson_lock_timeout:{job}", waiter]);
    for (field, _) in deadlines(&env.server, &name("job")) {
        env.server.cmd(&[
            "ZINCRBY",
            "redisson_lock_timeout:{job}",
            &(-REDISSON_WAIT_MS).to_string(),
            &field,
        ]);
    }
    env.server.cmd(&["HSET", "job", waiter, "1"]);
    env.server.cmd(&["PEXPIRE", "job", "30000"]);
}

/// Redisson's give-up (`acquireFailedAsync`): every waiter behind it moves
/// up by its wait time; then it leaves.
fn redisson_gives_up(env: &Env, waiter: &str) {
    let q = queue(&env.server, &name("job"));
    let at = q.iter().position(|f| f == waiter).unwrap();
    for field in &q[at + 1..] {
        env.server.cmd(&[
            "ZINCRBY",
            "redisson_lock_timeout:{job}",
            &(-REDISSON_WAIT_MS).to_string(),
            field,
        ]);
    }
    env.server
        .cmd(&["ZREM", "redisson_lock_timeout:{job}", waiter]);
    env.server
        .cmd(&["LREM", "redisson_lock_queue:{job}", "0", waiter]);
}

/// Issue 10, item 10: our waiters queued behind Redisson waiters keep their
/// place when those give up or take the lock, although Redisson then moves
/// every deadline behind them up by its wait time (5 minutes): behind a
/// waiter whose deadline is far beyond ours, our deadline stays that far
/// ahead plus our waiter timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_waiters_keep_their_place_when_redisson_waiters_ahead_move_on() {
    let env = env().await;
    let n = name("job");
    let (a, b, c) = (owner(), owner(), owner());
    const SECOND_REDISSON_WAITER: &str = "6f1c2a4e-8d0b-4b7e-9a35-2c1d0e9f7a61:56";
    env.server.cmd(&["HSET", "job", "holder:1", "1"]);
    env.server.cmd(&["PEXPIRE", "job", "2000"]);
    let first = redisson_joins(&env, REDISSON_WAITER);
    redisson_joins(&env, SECOND_REDISSON_WAITER);
    must_wait(&env.backend, &wait_req(&n, a, LEASE)).await;
    must_wait(&env.backend, &wait_req(&n, b, LEASE)).await;
    let behind = deadline_of(&env.server, &n, &a.field()).unwrap();
    assert!(behind >= first + REDISSON_WAIT_MS, "{behind} {first}");

    redisson_gives_up(&env, SECOND_REDISSON_WAITER);
    // Our waiters refresh (as they do every third of the waiter timeout).
    must_wait(&env.backend, &wait_req(&n, a, LEASE)).await;
    must_wait(&env.backend, &wait_req(&n, b, LEASE)).await;
    assert_eq!(
        queue(&env.server, &n),
        vec![REDISSON_WAITER.to_owned(), a.field(), b.field()]
    );

    // The holder unlocks; the Redisson head takes the lock. Another of our
    // waiters joins before ours refresh: they are still queued, in order.
    env.server.cmd(&["DEL", "job"]);
    redisson_takes(&env, REDISSON_WAITER);
    must_wait(&env.backend, &wait_req(&n, c, LEASE)).await;
    assert_eq!(
        queue(&env.server, &n),
        vec![a.field(), b.field(), c.field()]
    );
    must_wait(&env.backend, &wait_req(&n, a, LEASE)).await;
    assert_eq!(
        queue(&env.server, &n),
        vec![a.field(), b.field(), c.field()]
    );

    // Redisson unlocks; our head takes the lock.
    env.server.cmd(&["DEL", "job"]);
    must_wait(&env.backend, &wait_req(&n, c, LEASE)).await;
    must_acquire(&env.backend, &wait_req(&n, a, LEASE)).await;
    assert_eq!(queue(&env.server, &n), vec![b.field(), c.field()]);
}

/// The other half of the rule: a waiter of ours that died behind a Redisson
/// waiter is still evicted soon after that waiter takes the lock (within
/// the lock's time to live when the Redisson waiter joined, plus our waiter
/// timeout), not minutes later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_waiter_behind_redisson_is_evicted_soon_after_it_takes() {
    let env = env().await;
    let n = name("job");
    let (dead, c, d) = (owner(), owner(), owner());
    env.server.cmd(&["HSET", "job", "holder:1", "1"]);
    env.server.cmd(&["PEXPIRE", "job", "300"]);
    redisson_joins(&env, REDISSON_WAITER);
    let short = AcquireRequest::new(n.clone(), dead, LEASE, false, deadline()).queue(Some(1_000));
    must_wait(&env.backend, &short).await;

    env.server.cmd(&["DEL", "job"]);
    redisson_takes(&env, REDISSON_WAITER);
    must_wait(&env.backend, &wait_req(&n, c, LEASE)).await;
    assert_eq!(queue(&env.server, &n), vec![dead.field(), c.field()]);
    let left = deadline_of(&env.server, &n, &dead.field()).unwrap() - server_now_ms(&env.server);
    assert!(left <= 1_300, "{left} ms");

    // It never refreshes: gone once its deadline passes.
    tokio::time::sleep(Duration::from_millis(left as u64 + 100)).await;
    must_wait(&env.backend, &wait_req(&n, d, LEASE)).await;
    assert_eq!(queue(&env.server, &n), vec![c.field(), d.field()]);
}
