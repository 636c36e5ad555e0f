//! Kinds whose waiters queue, and kinds that hand a freed lock to the
//! queue head: the engine joins the queue from a waiter's first look,
//! keeps its place while it waits, leaves it when the wait gives up or is
//! dropped, and takes a lock granted to its ticket without asking again.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lock_core::backend::KindBehaviour;
use lock_core::{AcquireOptions, ClientConfig, LockError};
use tokio::sync::oneshot;
use tokio::time::{sleep, timeout, Instant};

use crate::fake::{bounded, Fake, Op, Step};

/// Waiters queue; a release tells the head, which then takes the lock.
const QUEUES: KindBehaviour = KindBehaviour::exclusive("fake-queue").queues_waiters();

/// Waiters queue; a release grants the lock to the head.
const HANDS_OVER: KindBehaviour = KindBehaviour::exclusive("fake-hand-over").hands_over();

#[tokio::test(start_paused = true)]
async fn queued_waiters_are_served_in_arrival_order_and_keep_their_places() {
    let fake = Fake::with_behaviour(QUEUES);
    let lock = fake.lock("a");
    let held = lock.lock().await.unwrap();
    let served = Arc::new(Mutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for i in 0..3 {
        let (lock, served) = (lock.clone(), Arc::clone(&served));
        waiters.push(tokio::spawn(async move {
            let guard = lock.lock().await.unwrap();
            served.lock().unwrap().push(i);
            // Held a moment, so the next one cannot overtake.
            sleep(Duration::from_millis(1)).await;
            guard.unlock().await.unwrap();
        }));
        // Arrival order is this order.
        sleep(Duration::from_millis(1)).await;
    }
    // Far past the 5 s waiter timeout: only looks every third of it kept
    // the places (each look refreshes one).
    sleep(Duration::from_secs(12)).await;
    assert_eq!(fake.kind.queue("a").len(), 3);
    let released = Instant::now();
    held.unlock().await.unwrap();
    for waiter in waiters {
        bounded(waiter).await.unwrap();
    }
    assert_eq!(*served.lock().unwrap(), vec![0, 1, 2]);
    // Each was told by the release before it (its own channel), at once.
    assert_eq!(Instant::now() - released, Duration::from_millis(3));
    assert!(fake.kind.queue("a").is_empty());
    assert!(fake.kind.leaves().is_empty(), "every place was used");
    assert!(fake.kind.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_waiter_that_gives_up_leaves_the_queue() {
    let fake = Fake::with_behaviour(QUEUES);
    let lock = fake.lock("a");
    let held = lock.lock().await.unwrap();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.try_lock_for(Duration::from_secs(2)).await }
    });
    sleep(Duration::from_secs(1)).await;
    let queued = fake.kind.queue("a");
    assert_eq!(queued.len(), 1);
    assert!(bounded(waiter).await.unwrap().unwrap().is_none());
    fake.settle().await;
    // Left once, as the owner it queued as (no ticket: no hand-over).
    assert_eq!(fake.kind.leaves(), vec![(queued[0].clone(), None)]);
    assert!(fake.kind.queue("a").is_empty());
    held.unlock().await.unwrap();
    assert!(fake.kind.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_dropped_waiting_future_leaves_the_queue() {
    let fake = Fake::with_behaviour(QUEUES);
    let lock = fake.lock("a");
    let held = lock.lock().await.unwrap();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.lock().await }
    });
    sleep(Duration::from_secs(1)).await;
    let queued = fake.kind.queue("a");
    assert_eq!(queued.len(), 1);
    waiter.abort();
    assert!(bounded(waiter).await.unwrap_err().is_cancelled());
    fake.settle().await;
    assert_eq!(fake.kind.leaves(), vec![(queued[0].clone(), None)]);
    assert!(fake.kind.queue("a").is_empty());
    held.unlock().await.unwrap();
    assert!(fake.kind.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_try_never_joins_the_queue() {
    let fake = Fake::with_behaviour(HANDS_OVER);
    let lock = fake.lock("a");
    let held = lock.lock().await.unwrap();
    let tried = tokio::spawn({
        let lock = lock.clone();
        async move { lock.try_lock().await }
    });
    assert!(bounded(tried).await.unwrap().unwrap().is_none());
    fake.settle().await;
    // Neither joined nor (so) left.
    assert!(fake.kind.queue("a").is_empty());
    assert!(fake.kind.leaves().is_empty());
    // So the release grants nothing: the lock is free.
    held.unlock().await.unwrap();
    assert!(fake.kind.is_empty());
    assert_eq!(fake.kind.store().grants_made, 0);
}

#[tokio::test(start_paused = true)]
async fn a_fenced_wait_queues_without_a_ticket_and_takes_its_token_itself() {
    let fake = Fake::with_behaviour(HANDS_OVER);
    let lock = fake.lock("a");
    let held = lock.lock().await.unwrap();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire(AcquireOptions::new().fenced()).await }
    });
    sleep(Duration::from_secs(1)).await;
    assert_eq!(fake.kind.queue("a").len(), 1);
    let released = Instant::now();
    held.unlock().await.unwrap();
    let guard = bounded(waiter).await.unwrap().unwrap().unwrap();
    // Told it is next (no grant: a grant carries no token), it took the
    // lock, and its token, by one more look, at once.
    assert_eq!(Instant::now(), released);
    assert_eq!(fake.kind.store().grants_made, 0);
    assert_eq!(guard.fencing_token(), Some(1));
    guard.unlock().await.unwrap();
    assert!(fake.kind.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_lock_handed_over_is_taken_without_asking_again() {
    let fake = Fake::with_behaviour(HANDS_OVER);
    let lock = fake.lock("a");
    let held = lock.lock().await.unwrap();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.lock().await.map(|guard| (guard, Instant::now())) }
    });
    sleep(Duration::from_secs(1)).await;
    assert_eq!(fake.kind.queue("a").len(), 1);
    let looks = fake.kind.calls(Op::Acquire);
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (guard, acquired_at) = bounded(waiter).await.unwrap().unwrap();
    // Told by the grant, at once, and held without another attempt.
    assert_eq!(acquired_at, released);
    assert_eq!(fake.kind.calls(Op::Acquire), looks);
    assert_eq!(fake.engine.stats().grants, 1);
    let entry = fake.kind.entry("a").unwrap();
    assert_eq!(entry.field, guard.owner().field());
    assert!(entry.grant.is_some());
    assert!(fake.kind.queue("a").is_empty());
    // The guard of a grant unlocks as any other.
    guard.unlock().await.unwrap();
    assert!(fake.kind.is_empty());
    fake.settle().await;
    assert!(fake.kind.leaves().is_empty(), "the place was used");
}

#[tokio::test(start_paused = true)]
async fn a_grant_whose_notice_is_lost_is_claimed_by_the_next_look() {
    let fake = Fake::with_behaviour(HANDS_OVER);
    fake.kind
        .skip_grant_notices
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let lock = fake.lock("a");
    let held = lock.lock().await.unwrap();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.lock().await.map(|guard| (guard, Instant::now())) }
    });
    sleep(Duration::from_secs(1)).await;
    let looks = fake.kind.calls(Op::Acquire);
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (guard, acquired_at) = bounded(waiter).await.unwrap().unwrap();
    // Not told: its next look (within a third of the waiter timeout, not
    // the holder's 30 s lease) found the grant ("claimed").
    let waiter_timeout = ClientConfig::default().waiter_timeout;
    assert!(acquired_at > released);
    assert!(acquired_at - released <= waiter_timeout / 3);
    assert_eq!(fake.kind.calls(Op::Acquire), looks + 1);
    assert_eq!(fake.engine.stats().grants, 0);
    assert_eq!(
        fake.kind.entry("a").map(|e| e.field),
        Some(guard.owner().field())
    );
    guard.unlock().await.unwrap();
    assert!(fake.kind.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_grant_to_a_dropped_waiter_is_handed_on() {
    let fake = Fake::with_behaviour(HANDS_OVER);
    let lock = fake.lock("a");
    // Held by another task, released on a signal.
    let (release, released) = oneshot::channel::<()>();
    let holder = tokio::spawn({
        let lock = lock.clone();
        async move {
            let guard = lock.lock().await.unwrap();
            released.await.unwrap();
            guard.unlock().await.unwrap();
        }
    });
    sleep(Duration::from_millis(1)).await;
    // The first waiter is a future of this task, polled only here: it is
    // granted the lock and dropped before it runs again.
    let mut first = Box::pin(lock.lock());
    assert!(timeout(Duration::from_millis(1), &mut first).await.is_err());
    let second = tokio::spawn({
        let lock = lock.clone();
        async move { lock.lock().await }
    });
    sleep(Duration::from_millis(1)).await;
    let queued = fake.kind.queue("a");
    assert_eq!(queued.len(), 2);
    release.send(()).unwrap();
    bounded(holder).await.unwrap();
    // Granted to the first waiter, which has not seen it yet.
    let entry = fake.kind.entry("a").unwrap();
    assert_eq!(entry.field, queued[0]);
    assert!(entry.grant.is_some());
    drop(first);
    // Its leave gave the grant back, and the store handed it on, at once
    // (not when the first waiter's 30 s lease would have run out).
    let guard = timeout(Duration::from_millis(1), second)
        .await
        .expect("handed on at once")
        .unwrap()
        .unwrap();
    assert_eq!(guard.owner().field(), queued[1]);
    assert_eq!(fake.kind.leaves(), vec![(queued[0].clone(), entry.grant)]);
    assert_eq!(fake.kind.store().grants_given_back, 1);
    assert_eq!(fake.kind.store().grants_made, 2);
    guard.unlock().await.unwrap();
    fake.settle().await;
    assert!(fake.kind.is_empty());
    assert!(fake.kind.queue("a").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_grant_made_while_a_look_is_on_its_way_back_is_taken() {
    let fake = Fake::with_behaviour(HANDS_OVER);
    let lock = fake.lock("a");
    let held = lock.lock().await.unwrap();
    // The look once subscribed runs at once ("held", queued) but its reply
    // takes 2 s; the grant comes at 1 s, meanwhile.
    fake.kind.script(
        Op::Acquire,
        [Step::Answer, Step::Late(Duration::from_secs(2))],
    );
    let start = Instant::now();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.lock().await.map(|guard| (guard, Instant::now())) }
    });
    sleep(Duration::from_secs(1)).await;
    held.unlock().await.unwrap();
    let (guard, acquired_at) = bounded(waiter).await.unwrap().unwrap();
    // Taken as the reply landed, by the grant's notice.
    assert_eq!(acquired_at - start, Duration::from_secs(2));
    assert_eq!(fake.engine.stats().grants, 1);
    assert_eq!(
        fake.kind.entry("a").map(|e| e.field),
        Some(guard.owner().field())
    );
    guard.unlock().await.unwrap();
    assert!(fake.kind.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_look_that_runs_after_the_grant_claims_it_as_one_hold() {
    let fake = Fake::with_behaviour(HANDS_OVER);
    let lock = fake.lock("a");
    let held = lock.lock().await.unwrap();
    // The look once subscribed reaches the store only at 2 s, after the
    // grant (1 s): it answers "claimed".
    fake.kind.script(
        Op::Acquire,
        [Step::Answer, Step::Slow(Duration::from_secs(2))],
    );
    let start = Instant::now();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.lock().await.map(|guard| (guard, Instant::now())) }
    });
    sleep(Duration::from_secs(1)).await;
    held.unlock().await.unwrap();
    let (guard, acquired_at) = bounded(waiter).await.unwrap().unwrap();
    // Taken as the look landed, by its "claimed" (the grant's notice came
    // while it was in flight, and stands for the same hold).
    assert_eq!(acquired_at - start, Duration::from_secs(2));
    assert_eq!(fake.engine.stats().grants, 0);
    let entry = fake.kind.entry("a").unwrap();
    assert_eq!(entry.field, guard.owner().field());
    // The grant and the claim are one hold: one unlock frees the lock.
    assert_eq!(entry.count, 1);
    guard.unlock().await.unwrap();
    fake.settle().await;
    assert!(fake.kind.is_empty());
    assert!(fake.kind.queue("a").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_grant_never_seen_by_a_wait_that_ran_out_is_released() {
    let fake = Fake::with_behaviour(HANDS_OVER);
    fake.kind
        .skip_grant_notices
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let lock = fake.lock("a");
    let held = lock.lock().await.unwrap();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.try_lock_for(Duration::from_millis(1200)).await }
    });
    sleep(Duration::from_secs(1)).await;
    let queued = fake.kind.queue("a");
    // The store stops answering looks: the wait's last look, at its
    // deadline, would otherwise claim the grant.
    let down = LockError::unavailable("down", None);
    fake.kind.always(Op::Acquire, Some(Step::Fail(down)));
    let released = Instant::now();
    held.unlock().await.unwrap();
    // Granted, but not told, and never found.
    assert_eq!(
        fake.kind.entry("a").map(|e| e.field),
        Some(queued[0].clone())
    );
    assert!(!matches!(bounded(waiter).await.unwrap(), Ok(Some(_))));
    // The store is back (so anything the engine still settles can be).
    fake.kind.always(Op::Acquire, None);
    fake.settle().await;
    // The failed looks' outcomes were unknown; settled once the store was
    // back, the one that then ran claimed the grant for a wait that is
    // over, and the engine released it: the lock is not held for nobody
    // until the grant's 30 s lease runs out.
    assert!(Instant::now() - released < Duration::from_secs(30));
    assert!(fake.kind.is_empty());
    assert_eq!(fake.kind.store().releases_applied, 2);
    assert!(fake.kind.queue("a").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_grant_at_the_waits_deadline_is_taken_or_given_back() {
    let fake = Fake::with_behaviour(HANDS_OVER);
    let lock = fake.lock("a");
    let held = lock.lock().await.unwrap();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.try_lock_for(Duration::from_secs(1)).await }
    });
    // Released (and granted) at the very instant the wait runs out.
    sleep(Duration::from_secs(1)).await;
    held.unlock().await.unwrap();
    let got = bounded(waiter).await.unwrap().unwrap();
    fake.settle().await;
    match got {
        Some(guard) => {
            assert_eq!(
                fake.kind.entry("a").map(|e| e.field),
                Some(guard.owner().field())
            );
            guard.unlock().await.unwrap();
        }
        None => assert_eq!(fake.kind.store().grants_given_back, 1),
    }
    assert!(fake.kind.is_empty());
    assert!(fake.kind.queue("a").is_empty());
}
