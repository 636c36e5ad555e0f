//! Every fair script against a real server, checked on the raw state (the
//! lock hash, the queue list, the deadline zset) and on what is published.

use crate::common;

use std::time::Duration;

use common::*;
use lock_core::backend::{AcquireOutcome, ExclusiveKind, ReleaseOutcome, RenewTarget};
use lock_core::{Holder, LockError};
use lock_testkit::fixtures::redis::Value;

const LEASE: u64 = 10_000;
const QUIET: Duration = Duration::from_millis(150);
const SOON: Duration = Duration::from_secs(2);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backend_is_fair() {
    let env = env().await;
    assert!(env.backend.behaviour().queues_waiters);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_join_in_order_and_refreshing_moves_only_the_score() {
    let env = env().await;
    let n = name("order");
    let (a, b, c, d) = (owner(), owner(), owner(), owner());
    must_acquire(&env.backend, &wait_req(&n, a, LEASE)).await;
    for w in [b, c, d] {
        let hint = must_wait(&env.backend, &wait_req(&n, w, LEASE)).await;
        // Held: the hint is the holder's remaining time.
        assert!(
            hint.is_some_and(
                |t| t <= Duration::from_millis(LEASE) && t > Duration::from_millis(LEASE - 2_000)
            ),
            "{hint:?}"
        );
    }
    assert_eq!(
        queue(&env.server, &n),
        vec![b.field(), c.field(), d.field()]
    );
    let before = deadline_of(&env.server, &n, &c.field()).unwrap();

    // C refreshes with a longer waiter timeout: same place, later deadline.
    let mut refresh = wait_req(&n, c, LEASE);
    refresh.queue_ms = Some(QUEUE_MS * 3);
    must_wait(&env.backend, &refresh).await;
    assert_eq!(
        queue(&env.server, &n),
        vec![b.field(), c.field(), d.field()]
    );
    let after = deadline_of(&env.server, &n, &c.field()).unwrap();
    assert!(
        after >= before + 2 * QUEUE_MS as i64 - 1_000,
        "{before} -> {after}"
    );
    // Nobody else's deadline moved, nobody was added twice.
    assert_eq!(deadlines(&env.server, &n).len(), 3);
    // The holder is not queued.
    assert_eq!(deadline_of(&env.server, &n, &a.field()), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_never_joins_the_queue() {
    let env = env().await;
    let n = name("try");
    let (a, b, c) = (owner(), owner(), owner());
    must_acquire(&env.backend, &try_req(&n, a, LEASE)).await;
    // Neither taking the lock nor failing to queues anyone.
    must_wait(&env.backend, &try_req(&n, b, LEASE)).await;
    assert!(queue(&env.server, &n).is_empty());
    assert!(deadlines(&env.server, &n).is_empty());

    // Also not when others are queued, and not behind them.
    must_wait(&env.backend, &wait_req(&n, b, LEASE)).await;
    must_wait(&env.backend, &try_req(&n, c, LEASE)).await;
    assert_eq!(queue(&env.server, &n), vec![b.field()]);
    assert_eq!(deadlines(&env.server, &n).len(), 1);
    // queue_ms Some(0) is "never queue" too.
    let mut zero = wait_req(&n, c, LEASE);
    zero.queue_ms = Some(0);
    must_wait(&env.backend, &zero).await;
    assert_eq!(queue(&env.server, &n), vec![b.field()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_head_takes_a_free_lock() {
    let env = env().await;
    let n = name("head");
    let (a, b, c, d) = (owner(), owner(), owner(), owner());
    must_acquire(&env.backend, &wait_req(&n, a, LEASE)).await;
    must_wait(&env.backend, &wait_req(&n, b, LEASE)).await;
    must_wait(&env.backend, &wait_req(&n, c, LEASE)).await;
    assert_eq!(
        must_release(&env.backend, &release(&n, a, LEASE)).await,
        ReleaseOutcome::Released
    );

    // Free, but B is first: C waits (told to look again in 50 ms, as B's
    // deadline is seconds away), and so does a newcomer's try.
    let hint = must_wait(&env.backend, &wait_req(&n, c, LEASE)).await;
    assert_eq!(hint, Some(Duration::from_millis(50)));
    must_wait(&env.backend, &try_req(&n, d, LEASE)).await;
    assert_eq!(env.server.cmd(&["EXISTS", "head"]), Value::Int(0));
    assert_eq!(queue(&env.server, &n), vec![b.field(), c.field()]);

    // The head takes it and leaves the queue (list and zset).
    must_acquire(&env.backend, &wait_req(&n, b, LEASE)).await;
    assert_eq!(queue(&env.server, &n), vec![c.field()]);
    assert_eq!(deadline_of(&env.server, &n, &b.field()), None);
    assert_eq!(env.server.cmd(&["HGET", "head", &b.field()]), bulk("1"));

    // Re-entry never waits, whoever is queued.
    must_acquire(&env.backend, &wait_req(&n, b, LEASE)).await;
    assert_eq!(env.server.cmd(&["HGET", "head", &b.field()]), bulk("2"));
    assert_eq!(queue(&env.server, &n), vec![c.field()]);

    must_release(&env.backend, &release(&n, b, LEASE)).await;
    must_release(&env.backend, &release(&n, b, LEASE)).await;
    // A try by the head takes it too (it is the head, so it is its turn).
    must_acquire(&env.backend, &try_req(&n, c, LEASE)).await;
    assert!(queue(&env.server, &n).is_empty());
    assert!(deadlines(&env.server, &n).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_head_is_evicted() {
    let env = env().await;
    let n = name("stale");
    let (b, c, d) = (owner(), owner(), owner());
    let (q, z) = (layout().queue_key(&n), layout().timeout_key(&n));
    let past = (server_now_ms(&env.server) - 1).to_string();
    let future = (server_now_ms(&env.server) + 60_000).to_string();
    // B's deadline has passed; C's has not.
    env.server.cmd(&["RPUSH", &q, &b.field(), &c.field()]);
    env.server
        .cmd(&["ZADD", &z, &past, &b.field(), &future, &c.field()]);

    // D is not C: after evicting B, C is the head and D must wait.
    must_wait(&env.backend, &wait_req(&n, d, LEASE)).await;
    assert_eq!(queue(&env.server, &n), vec![c.field(), d.field()]);
    assert_eq!(deadline_of(&env.server, &n, &b.field()), None);

    // C (now the head) takes the free lock.
    must_acquire(&env.backend, &wait_req(&n, c, LEASE)).await;
    assert_eq!(queue(&env.server, &n), vec![d.field()]);

    // A head without any deadline (a half-written foreign entry) is stale too,
    // and eviction goes on past it to the next stale one.
    env.server.cmd(&["DEL", &q, &z]);
    let e = owner();
    env.server
        .cmd(&["RPUSH", &q, "ghost:1", &b.field(), &e.field()]);
    env.server
        .cmd(&["ZADD", &z, &past, &b.field(), &future, &e.field()]);
    must_release(&env.backend, &release(&n, c, LEASE)).await;
    assert_eq!(queue(&env.server, &n), vec![e.field()]);
    assert_eq!(deadlines(&env.server, &n).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaving_as_head_tells_the_next_waiter_when_free() {
    let env = env().await;
    let n = name("leave");
    let (a, b, c, d) = (owner(), owner(), owner(), owner());
    let l = layout();
    must_acquire(&env.backend, &wait_req(&n, a, LEASE)).await;
    for w in [b, c, d] {
        must_wait(&env.backend, &wait_req(&n, w, LEASE)).await;
    }
    let mut sub = RawSub::new(
        &env.server,
        &[
            l.channel(&n),
            l.waiter_channel(&n, &b),
            l.waiter_channel(&n, &c),
            l.waiter_channel(&n, &d),
        ],
    )
    .await;

    // While the lock is held, leaving tells nobody.
    env.backend.leave_queue(&n, &c, None).await.unwrap();
    assert_eq!(queue(&env.server, &n), vec![b.field(), d.field()]);
    assert_eq!(deadline_of(&env.server, &n, &c.field()), None);
    sub.expect_none(QUIET).await;

    // The lock goes free: B (the head) is told.
    must_release(&env.backend, &release(&n, a, LEASE)).await;
    assert_eq!(
        sub.next(SOON).await,
        Some((l.waiter_channel(&n, &b), "0".to_owned()))
    );
    // B gives up instead of taking it: D, the new head, is told.
    env.backend.leave_queue(&n, &b, None).await.unwrap();
    assert_eq!(queue(&env.server, &n), vec![d.field()]);
    assert!(deadline_of(&env.server, &n, &b.field()).is_none());
    assert_eq!(
        sub.next(SOON).await,
        Some((l.waiter_channel(&n, &d), "0".to_owned()))
    );
    sub.expect_none(QUIET).await;

    // Leaving when not queued is fine and changes nothing.
    env.backend.leave_queue(&n, &c, None).await.unwrap();
    assert_eq!(queue(&env.server, &n), vec![d.field()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_tells_only_the_head() {
    let mut env = env().await;
    let n = name("notify");
    let (a, b, c) = (owner(), owner(), owner());
    let l = layout();
    must_acquire(&env.backend, &wait_req(&n, a, LEASE)).await;
    must_acquire(&env.backend, &wait_req(&n, a, LEASE)).await;
    must_wait(&env.backend, &wait_req(&n, b, LEASE)).await;
    must_wait(&env.backend, &wait_req(&n, c, LEASE)).await;
    let mut head = RawSub::new(&env.server, &[l.waiter_channel(&n, &b)]).await;
    let mut others = RawSub::new(&env.server, &[l.waiter_channel(&n, &c), l.channel(&n)]).await;
    // The backend's own subscription delivers a waiter notice.
    let topic = lock_core::backend::Channel::new(l.waiter_channel(&n, &b));
    env.backend.subscribe(&topic).await.unwrap();

    // One hold fewer: nobody is told.
    assert_eq!(
        must_release(&env.backend, &release(&n, a, LEASE)).await,
        ReleaseOutcome::StillHeld
    );
    head.expect_none(QUIET).await;

    assert_eq!(
        must_release(&env.backend, &release(&n, a, LEASE)).await,
        ReleaseOutcome::Released
    );
    assert_eq!(
        head.next(SOON).await,
        Some((l.waiter_channel(&n, &b), "0".to_owned()))
    );
    assert_eq!(env.notices.next(SOON).await, Some(unlocked(&topic)));
    others.expect_none(QUIET).await;
    // The queue is untouched by a release.
    assert_eq!(queue(&env.server, &n), vec![b.field(), c.field()]);

    // Not held: nil, nobody told.
    assert_eq!(
        must_release(&env.backend, &release(&n, a, LEASE)).await,
        ReleaseOutcome::NotHeld
    );
    head.expect_none(QUIET).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_with_an_empty_queue_publishes_nothing() {
    let env = env().await;
    let n = name("alone");
    let a = owner();
    let mut sub = RawSub::new(&env.server, &[layout().channel(&n)]).await;
    must_acquire(&env.backend, &wait_req(&n, a, LEASE)).await;
    assert_eq!(
        must_release(&env.backend, &release(&n, a, LEASE)).await,
        ReleaseOutcome::Released
    );
    sub.expect_none(QUIET).await;
    assert_eq!(env.server.cmd(&["EXISTS", "alone"]), Value::Int(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_unlock_keeps_the_queue_and_tells_its_head() {
    let env = env().await;
    let n = name("force");
    let (a, b, c) = (owner(), owner(), owner());
    let l = layout();
    must_acquire(&env.backend, &wait_req(&n, a, LEASE)).await;
    must_wait(&env.backend, &wait_req(&n, b, LEASE)).await;
    must_wait(&env.backend, &wait_req(&n, c, LEASE)).await;
    let mut sub = RawSub::new(
        &env.server,
        &[l.waiter_channel(&n, &b), l.waiter_channel(&n, &c)],
    )
    .await;

    assert!(env.backend.force_unlock(&n).await.unwrap());
    assert_eq!(env.server.cmd(&["EXISTS", "force"]), Value::Int(0));
    assert_eq!(queue(&env.server, &n), vec![b.field(), c.field()]);
    assert_eq!(
        sub.next(SOON).await,
        Some((l.waiter_channel(&n, &b), "0".to_owned()))
    );
    sub.expect_none(QUIET).await;

    // No lock: returns false, still evicts and tells the (new) head.
    let past = (server_now_ms(&env.server) - 1).to_string();
    env.server
        .cmd(&["ZADD", &l.timeout_key(&n), &past, &b.field()]);
    assert!(!env.backend.force_unlock(&n).await.unwrap());
    assert_eq!(queue(&env.server, &n), vec![c.field()]);
    assert_eq!(
        sub.next(SOON).await,
        Some((l.waiter_channel(&n, &c), "0".to_owned()))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_reports_holders_ttl_and_the_queue_in_order() {
    let env = env().await;
    let n = name("look");
    let (a, b, c) = (owner(), owner(), owner());
    assert_eq!(env.backend.inspect(&n).await.unwrap(), Default::default());
    must_acquire(&env.backend, &wait_req(&n, a, LEASE)).await;
    must_acquire(&env.backend, &wait_req(&n, a, LEASE)).await;
    must_wait(&env.backend, &wait_req(&n, b, LEASE)).await;
    must_wait(&env.backend, &wait_req(&n, c, LEASE)).await;

    let before = server_now_ms(&env.server);
    let info = env.backend.inspect(&n).await.unwrap();
    let after = server_now_ms(&env.server);
    assert_eq!(info.holders, vec![Holder::new(a.field(), 2)]);
    assert!(info.ttl.is_some_and(|t| t <= Duration::from_millis(LEASE)));
    let fields: Vec<String> = info.queue.iter().map(|w| w.field.clone()).collect();
    assert_eq!(fields, [b.field(), c.field()]);
    // Each waiter's time left is its stored deadline less the server's
    // clock at the read.
    for waiter in &info.queue {
        let deadline = deadline_of(&env.server, &n, &waiter.field).unwrap();
        let left = i64::try_from(waiter.timeout.as_millis()).unwrap();
        assert!(
            (deadline - after..=deadline - before).contains(&left),
            "{waiter:?}: deadline {deadline}, server clock {before}..={after}"
        );
    }

    // Read-only: a stale waiter is reported, not evicted.
    let past = server_now_ms(&env.server) - 5;
    env.server.cmd(&[
        "ZADD",
        &layout().timeout_key(&n),
        &past.to_string(),
        &b.field(),
    ]);
    let info = env.backend.inspect(&n).await.unwrap();
    assert_eq!(
        info.queue[0].timeout,
        Duration::ZERO,
        "overdue: no time left"
    );
    assert_eq!(queue(&env.server, &n).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_type_is_reported_and_left_untouched() {
    let env = env().await;
    let n = name("str");
    let a = owner();
    env.server.cmd(&["SET", "str", "not a lock"]);
    let is_wrongtype = |r: Result<_, LockError>| matches!(r, Err(LockError::WrongType { ref key }) if key == "str");

    assert!(is_wrongtype(
        env.backend
            .try_acquire(&wait_req(&n, a, LEASE))
            .await
            .map(drop)
    ));
    // Not queued either.
    assert!(queue(&env.server, &n).is_empty());
    assert!(deadlines(&env.server, &n).is_empty());
    assert!(is_wrongtype(
        env.backend.release(&release(&n, a, LEASE)).await.map(drop)
    ));
    assert!(is_wrongtype(env.backend.force_unlock(&n).await.map(drop)));
    assert!(is_wrongtype(env.backend.inspect(&n).await.map(drop)));
    // Leaving the queue does not touch the lock key at all.
    env.backend.leave_queue(&n, &a, None).await.unwrap();
    assert_eq!(env.server.cmd(&["GET", "str"]), bulk("not a lock"));
    assert_eq!(
        env.server.cmd(&["TYPE", "str"]),
        Value::SimpleString("string".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_requests_return_the_first_outcome() {
    let env = env().await;
    let n = name("recorded");
    let (a, b) = (owner(), owner());

    let mut first = wait_req(&n, a, LEASE);
    first.fenced = true;
    let token = must_acquire(&env.backend, &first).await.unwrap();
    assert_eq!(must_acquire(&env.backend, &first).await, Some(token));
    assert_eq!(env.server.cmd(&["HGET", "recorded", &a.field()]), bulk("1"));

    // A queued outcome is recorded too: repeating it keeps one place and
    // writes nothing (the deadline is not refreshed).
    let queued = wait_req(&n, b, LEASE);
    must_wait(&env.backend, &queued).await;
    let deadline = deadlines(&env.server, &n);
    must_wait(&env.backend, &queued).await;
    assert_eq!(queue(&env.server, &n), vec![b.field()]);
    assert_eq!(deadlines(&env.server, &n), deadline);
    let record = layout().acquire_record(&n, &queued.request_id.to_string());
    assert_eq!(env.server.cmd(&["GET", &record]), bulk("held"));

    // A second, distinct acquisition counts; a repeated release does not
    // count twice.
    must_acquire(&env.backend, &wait_req(&n, a, LEASE)).await;
    let rel = release(&n, a, LEASE);
    assert_eq!(
        must_release(&env.backend, &rel).await,
        ReleaseOutcome::StillHeld
    );
    assert_eq!(
        must_release(&env.backend, &rel).await,
        ReleaseOutcome::StillHeld
    );
    assert_eq!(env.server.cmd(&["HGET", "recorded", &a.field()]), bulk("1"));
    let last = release(&n, a, LEASE);
    assert_eq!(
        must_release(&env.backend, &last).await,
        ReleaseOutcome::Released
    );
    // B took nothing meanwhile; the repeat still says "released".
    must_acquire(&env.backend, &wait_req(&n, b, LEASE)).await;
    assert_eq!(
        must_release(&env.backend, &last).await,
        ReleaseOutcome::Released
    );
    assert_eq!(env.server.cmd(&["HGET", "recorded", &b.field()]), bulk("1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadlines_come_from_the_server_clock() {
    let env = env().await;
    let n = name("clock");
    let (a, b) = (owner(), owner());
    must_acquire(&env.backend, &wait_req(&n, a, LEASE)).await;
    let before = server_now_ms(&env.server);
    must_wait(&env.backend, &wait_req(&n, b, LEASE)).await;
    let after = server_now_ms(&env.server);
    let deadline = deadline_of(&env.server, &n, &b.field()).unwrap();
    let written_at = deadline - QUEUE_MS as i64;
    assert!(
        written_at >= before - 1_000 && written_at <= after + 1_000,
        "deadline {deadline} written at {written_at}, server time {before}..{after}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewal_is_the_reentrant_one() {
    let env = env().await;
    let n = name("renew");
    let (a, b) = (owner(), owner());
    must_acquire(&env.backend, &wait_req(&n, a, 1_000)).await;
    let renewed = env
        .backend
        .renew(
            &[
                RenewTarget {
                    name: n.clone(),
                    owner: a,
                },
                RenewTarget {
                    name: n.clone(),
                    owner: b,
                },
            ],
            LEASE,
        )
        .await
        .unwrap();
    assert_eq!(
        renewed.into_iter().map(Result::unwrap).collect::<Vec<_>>(),
        vec![true, false]
    );
    let pttl = match env.server.cmd(&["PTTL", "renew"]) {
        Value::Int(ms) => ms,
        other => panic!("{other:?}"),
    };
    assert!(pttl > 2_000, "{pttl}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flushed_script_cache_is_reloaded() {
    let env = env().await;
    let n = name("flushed");
    let (a, b) = (owner(), owner());
    must_acquire(&env.backend, &wait_req(&n, a, LEASE)).await;
    env.server.flush_scripts();
    must_wait(&env.backend, &wait_req(&n, b, LEASE)).await;
    env.server.flush_scripts();
    env.backend.leave_queue(&n, &b, None).await.unwrap();
    env.server.flush_scripts();
    assert_eq!(env.backend.inspect(&n).await.unwrap().holders.len(), 1);
    env.server.flush_scripts();
    assert_eq!(
        must_release(&env.backend, &release(&n, a, LEASE)).await,
        ReleaseOutcome::Released
    );
    env.server.flush_scripts();
    assert!(!env.backend.force_unlock(&n).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_lease_is_rejected_before_any_io() {
    let env = env().await;
    let n = name("zero");
    let a = owner();
    let e = env
        .backend
        .try_acquire(&wait_req(&n, a, 0))
        .await
        .unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    assert!(queue(&env.server, &n).is_empty());
    let e = env.backend.release(&release(&n, a, 0)).await.unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    // A held outcome with no expiry reports no ttl.
    env.server.cmd(&["HSET", "zero", "someone:1", "1"]);
    assert_eq!(
        env.backend.try_acquire(&try_req(&n, a, 100)).await.unwrap(),
        AcquireOutcome::Held { ttl: None }
    );
}

/// The handoff hash expires no sooner than its live entries (the first
/// queued waiter's included: the hash it creates has no TTL of its own),
/// and a waiter evicted at its deadline takes its entry with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handoff_hash_expires_and_an_evicted_waiter_takes_its_entry() {
    let env = env().await;
    let n = name("handoff-expiry");
    let (a, b, c) = (owner(), owner(), owner());
    let handoff = layout().handoff_key(&n);
    let handoff_wait = |who, queue_ms, ticket| {
        try_req(&n, who, LEASE)
            .queue(Some(queue_ms))
            .ticket(Some(ticket))
    };
    must_acquire(&env.backend, &try_req(&n, a, LEASE)).await;

    // B queues for a handoff with a short waiter timeout, then dies: it
    // never looks again and never leaves.
    must_wait(&env.backend, &handoff_wait(b, 300, 7)).await;
    let pttl = int(env.server.cmd(&["PTTL", &handoff]));
    assert!(0 < pttl && pttl <= 300, "PTTL of the handoff hash: {pttl}");

    // C queues behind it for longer: the hash lives as long as C's entry.
    must_wait(&env.backend, &handoff_wait(c, QUEUE_MS, 8)).await;
    let pttl = int(env.server.cmd(&["PTTL", &handoff]));
    assert!(
        QUEUE_MS as i64 - 1_000 < pttl && pttl <= QUEUE_MS as i64,
        "PTTL of the handoff hash: {pttl}"
    );

    // B's deadline passes; A's release evicts B and grants the lock to C.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        must_release(&env.backend, &release(&n, a, LEASE)).await,
        ReleaseOutcome::Released
    );
    assert!(queue(&env.server, &n).is_empty());
    assert_eq!(
        env.server.cmd(&["HGET", &handoff, &b.field()]),
        Value::Nil,
        "the evicted waiter's entry is gone"
    );
    assert_eq!(env.server.cmd(&["HGET", &handoff, &c.field()]), bulk("g:8"));
    assert!(int(env.server.cmd(&["PTTL", &handoff])) > 0);
}
