//! Engine behaviour under injected faults, on the in-memory backend with
//! paused time: retries after lost replies never double-count, outages
//! surface as retryable errors, failed renewals fire the lost signal, lost
//! notices cost at most a TTL, cancelled operations leave nothing behind,
//! and configurations that could not ride these faults are refused. (Real
//! server failures, restarts and a lost pub/sub connection: lock-redis's
//! `server_restarts_and_pubsub_loss`.)

use std::time::Duration;

use lock_redis::{AcquireOptions, ClientConfig, LockClient, RetryPolicy};
use lock_testkit::conformance::{config, WATCHDOG};
use lock_testkit::InMemoryServer;
use tokio::time::Instant;

fn setup() -> (InMemoryServer, LockClient) {
    let server = InMemoryServer::new();
    let client = server.client_with(config()).unwrap();
    (server, client)
}

#[tokio::test(start_paused = true)]
async fn acquire_retried_after_lost_reply_counts_once() {
    let (server, c) = setup();
    let lock = c.lock("lost-reply").unwrap();
    server.lose_next_replies(1);
    let g = lock.lock().await.unwrap();
    assert_eq!(lock.hold_count(g.owner()).await.unwrap(), 1);
    server.lose_next_replies(1);
    let again = lock.lock_as(g.owner()).await.unwrap();
    assert_eq!(
        lock.hold_count(g.owner()).await.unwrap(),
        2,
        "re-entry counted once"
    );
    again.unlock().await.unwrap();
    g.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

/// The repeat of a non-reentrant acquisition whose reply was lost finds
/// the lock held by its own owner: its record answers "acquired", where
/// the check alone would refuse it as a re-acquisition.
#[tokio::test(start_paused = true)]
async fn non_reentrant_acquire_retried_after_lost_reply_is_not_refused() {
    let (server, c) = setup();
    let lock = c.non_reentrant_lock("lost-reply-once").unwrap();
    server.lose_next_replies(1);
    let g = lock.lock().await.unwrap();
    assert_eq!(lock.hold_count(g.owner()).await.unwrap(), 1);
    let again = lock.lock_as(g.owner()).await.unwrap_err();
    assert!(again.is_reentry_refused(), "{again}");
    g.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

/// The lean lock keeps the owner's token in the key, so only the request's
/// record tells a retry of a first acquisition whose reply was lost from a
/// re-entry: the retry is answered "acquired", with the first token.
#[tokio::test(start_paused = true)]
async fn lean_acquire_retried_after_lost_reply_is_not_refused() {
    let (server, c) = setup();
    let lock = c.lean_lock("lean-lost-reply").unwrap();
    server.lose_next_replies(1);
    let g = lock
        .acquire(lock_redis::AcquireOptions::new().fenced())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        g.fencing_token(),
        Some(1),
        "the retry returned the first token"
    );
    assert_eq!(
        server.get_string("lean-lost-reply").as_deref(),
        Some(g.owner().field().as_str())
    );
    let again = lock.lock_as(g.owner()).await.unwrap_err();
    assert!(again.is_reentry_refused(), "{again}");
    g.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

/// A lean release whose reply was lost is retried: the repeat finds the
/// key gone, which its first copy did, but which a loss meanwhile (a force
/// unlock) would show alike. The lean path keeps no record to tell them
/// apart, so the unlock reports the loss it cannot rule out, never a
/// release it cannot prove; the lock is free either way.
#[tokio::test(start_paused = true)]
async fn lean_release_retried_after_lost_reply_reports_what_it_cannot_prove() {
    let (server, c) = setup();
    let lock = c.lean_lock("lean-lost-release").unwrap();
    let g = lock.lock().await.unwrap();
    server.lose_next_replies(1);
    let unlocked = g.unlock().await.unwrap_err();
    assert!(unlocked.is_not_held(), "{unlocked:?}");
    assert_eq!(server.get_string("lean-lost-release"), None);
    assert!(!lock.is_locked().await.unwrap());
}

/// An unlock whose first send never reached the store, of a lean lock
/// force-unlocked meanwhile: its next send finds the key gone, and says
/// so. (It said "released" when the engine marked every second send a
/// repeat.)
#[tokio::test(start_paused = true)]
async fn a_lean_unlock_never_reports_a_lost_lock_as_released() {
    let (server, c) = setup();
    let lock = c.lean_lock("lean-force-unlocked").unwrap();
    let g = lock.lock().await.unwrap();
    assert!(lock.force_unlock().await.unwrap());
    server.fail_next(1);
    let unlocked = g.unlock().await.unwrap_err();
    assert!(unlocked.is_not_held(), "{unlocked:?}");
}

/// `run_locked` of a lean lock force-unlocked during the work, whose
/// unlock's first send fails before reaching the store: the loss comes
/// back, not the work's result.
#[tokio::test(start_paused = true)]
async fn run_locked_reports_a_lean_lock_lost_behind_a_failed_send() {
    let (server, c) = setup();
    let lock = c.lean_lock("lean-run-locked").unwrap();
    let other = c.lean_lock("lean-run-locked").unwrap();
    let ran = lock
        .run_locked(async |_| {
            assert!(other.force_unlock().await.unwrap());
            server.fail_next(1);
            42
        })
        .await;
    let lost = ran.unwrap_err();
    assert!(
        matches!(lost, lock_redis::LockError::LockLost { .. }),
        "{lost:?}"
    );
}

/// The keys the store holds, but the clients' own records.
fn lock_keys(server: &InMemoryServer) -> Vec<String> {
    let mut keys: Vec<String> = server
        .keys()
        .into_iter()
        .filter(|k| !lock_redis::lock_script::clients::is_client_key(k))
        .collect();
    keys.sort();
    keys
}

/// The lean path of the lean lock (an owner of the wait's own, unfenced)
/// writes the lock key and nothing else; a repeat of an acquisition whose
/// reply was lost finds the wait's token and takes its hold back.
#[tokio::test(start_paused = true)]
async fn a_lean_take_whose_reply_was_lost_takes_its_hold_back() {
    let (server, c) = setup();
    let lock = c.lean_lock("lean-take").unwrap();
    server.lose_next_replies(1);
    let g = lock.lock().await.unwrap();
    assert_eq!(
        server.get_string("lean-take").as_deref(),
        Some(g.owner().field().as_str())
    );
    assert_eq!(lock_keys(&server), ["lean-take"], "no request record");
    g.unlock().await.unwrap();
    assert_eq!(lock_keys(&server), Vec::<String>::new());
}

/// A wait whose first attempt's outcome stayed unknown (every retry lost
/// its reply) and that then took the lock: the unknown attempt took the
/// same hold, the guard's, which settling it leaves alone. (A repeat that
/// answered "acquired" used to be released on its behalf, taking the
/// guard's lock from under it.)
#[tokio::test(start_paused = true)]
async fn a_lean_wait_that_took_the_lock_keeps_it_after_an_unknown_attempt() {
    let (server, c) = setup();
    let lock = c.lean_lock("lean-unknown-won").unwrap();
    server.lose_next_replies(RetryPolicy::default().attempts);
    let g = lock.lock().await.unwrap();
    tokio::time::sleep(RetryPolicy::default().max_backoff * 2).await;
    c.settle().await;
    assert_eq!(
        server.get_string("lean-unknown-won").as_deref(),
        Some(g.owner().field().as_str()),
        "the guard's hold was released on an unknown attempt's behalf"
    );
    assert!(!g.is_lost());
    g.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

/// What the lean path gives up: a copy of an acquisition held on the
/// network and delivered after its wait's guard released the lock takes
/// it again, for no one, until its lease runs out (as with every library
/// of the pattern, and as after a crash). The recorded path (an explicit
/// owner here) refuses the late copy: its record answers it.
#[tokio::test(start_paused = true)]
async fn a_late_copy_of_a_lean_take_holds_the_lock_until_its_lease() {
    let (server, c) = setup();
    let lock = c.lean_lock("lean-late").unwrap();
    let lease = Duration::from_secs(10);
    server.delay_next(1, Duration::from_secs(2));
    let g = lock.lock_with_lease(lease).await.unwrap();
    g.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(lock.is_locked().await.unwrap(), "the late copy took it");
    tokio::time::sleep(lease).await;
    assert!(!lock.is_locked().await.unwrap(), "until its lease ran out");

    let owner = c.new_owner();
    server.delay_next(1, Duration::from_secs(2));
    let g = lock
        .acquire(AcquireOptions::new().owner(owner).lease(lease))
        .await
        .unwrap()
        .unwrap();
    g.unlock().await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!lock.is_locked().await.unwrap(), "the record refused it");
}

#[tokio::test(start_paused = true)]
async fn fenced_acquire_retried_keeps_its_token() {
    let (server, c) = setup();
    let lock = c.lock("lost-token").unwrap();
    server.lose_next_replies(1);
    let g = lock
        .acquire(lock_redis::AcquireOptions::new().fenced())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        g.fencing_token(),
        Some(1),
        "the retry returned the first token"
    );
    assert_eq!(
        server
            .get_string("redisson_lock_token:{lost-token}")
            .as_deref(),
        Some("1")
    );
    g.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn release_retried_after_lost_reply_counts_once() {
    let (server, c) = setup();
    let lock = c.lock("lost-release").unwrap();
    let g = lock.lock().await.unwrap();
    let inner = lock.lock_as(g.owner()).await.unwrap();
    server.lose_next_replies(1);
    inner.unlock().await.unwrap();
    assert_eq!(
        lock.hold_count(g.owner()).await.unwrap(),
        1,
        "released once"
    );
    server.lose_next_replies(1);
    g.unlock()
        .await
        .expect("the retry reports the first outcome: released");
    assert!(!lock.is_locked().await.unwrap());
}

/// Every reply lost: the acquisition ran but the caller only saw errors. The
/// engine finds out and releases it, long before its lease would expire.
#[tokio::test(start_paused = true)]
async fn acquisition_that_failed_but_ran_is_undone() {
    let (server, c) = setup();
    let lock = c.lock("orphan").unwrap();
    server.lose_next_replies(RetryPolicy::default().attempts);
    // A try: a waiter would ride the failures out (see the outage tests).
    let err = lock
        .acquire(
            AcquireOptions::new()
                .no_wait()
                .lease(Duration::from_secs(3600)),
        )
        .await
        .unwrap_err();
    assert!(err.is_retryable());
    assert!(lock.is_locked().await.unwrap(), "the request did run");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!lock.is_locked().await.unwrap(), "orphaned hold undone");
}

/// The same for a re-entry: the count goes back to exactly one.
#[tokio::test(start_paused = true)]
async fn reentry_that_failed_but_ran_is_undone_exactly_once() {
    let (server, c) = setup();
    let lock = c.lock("orphan-reentry").unwrap();
    // A leased hold: a watchdog renewal during the retry backoff would take
    // one of the lost replies and let the last attempt through.
    let g = lock
        .lock_with_lease(Duration::from_secs(3600))
        .await
        .unwrap();
    server.lose_next_replies(RetryPolicy::default().attempts);
    let again = AcquireOptions::new().owner(g.owner()).no_wait();
    assert!(lock.acquire(again).await.unwrap_err().is_retryable());
    assert_eq!(lock.hold_count(g.owner()).await.unwrap(), 2);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(lock.hold_count(g.owner()).await.unwrap(), 1);
    g.unlock().await.unwrap();
}

/// Failed before running: the background check takes and releases the lock
/// itself; nothing is left either way.
#[tokio::test(start_paused = true)]
async fn acquisition_that_failed_without_running_leaves_nothing() {
    let (server, c) = setup();
    let lock = c.lock("never-ran").unwrap();
    server.fail_next(RetryPolicy::default().attempts);
    assert!(lock.try_lock().await.unwrap_err().is_retryable());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!lock.is_locked().await.unwrap());
    assert_eq!(c.stats().in_flight, 0);
}

#[tokio::test(start_paused = true)]
async fn transient_failures_are_retried() {
    let (server, c) = setup();
    server.fail_next(2);
    let g = c.lock("flaky").unwrap().lock().await.unwrap();
    server.fail_next(2);
    g.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_try_during_an_outage_fails_after_the_retry_policy() {
    let (server, c) = setup();
    server.set_down(true);
    let started = Instant::now();
    let err = c.lock("down").unwrap().try_lock().await.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    let policy = RetryPolicy::default();
    let most: Duration = (1..policy.attempts)
        .map(|r| policy.base_backoff * (1 << (r - 1)))
        .sum();
    assert!(started.elapsed() <= most, "took {:?}", started.elapsed());
    assert!(started.elapsed() >= most / 2);
    let err = c.lock("down").unwrap().info().await.unwrap_err();
    assert!(err.is_retryable());
    server.set_down(false);
    assert!(!c.lock("down").unwrap().is_locked().await.unwrap());
}

/// Without retries every request is still recorded, so an acquisition
/// whose reply was lost is found and released in the background (it used
/// to keep its lock, or a semaphore's permit, for good).
#[tokio::test(start_paused = true)]
async fn without_retries_lost_replies_are_settled_and_errors_surface_at_once() {
    let server = InMemoryServer::new();
    let c = server
        .client_with(config().retry(RetryPolicy::none()))
        .unwrap();
    server.lose_next_replies(1);
    let err = c.lock("no-retry").unwrap().try_lock().await.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        !c.lock("no-retry").unwrap().is_locked().await.unwrap(),
        "the acquisition whose reply was lost was released"
    );
    let sem = c.semaphore("no-retry-sem").unwrap();
    sem.try_set_permits(1).await.unwrap();
    server.lose_next_replies(1);
    assert!(sem.try_acquire().await.unwrap_err().is_retryable());
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(sem.available_permits().await.unwrap(), 1, "no permit lost");
    server.fail_next(1);
    let started = Instant::now();
    assert!(c
        .lock("no-retry")
        .unwrap()
        .try_lock()
        .await
        .unwrap_err()
        .is_retryable());
    assert_eq!(started.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn renewals_failing_past_the_lease_fire_the_lost_signal() {
    let (server, c) = setup();
    let g = c.lock("outage").unwrap().lock().await.unwrap();
    let acquired = Instant::now();
    server.set_down(true);
    tokio::time::timeout(WATCHDOG * 2, g.lost())
        .await
        .expect("lost signal fires once the lease deadline passes");
    // Reported a safety margin before the deadline (9 ms + 2 ms here).
    let lost_at = WATCHDOG - config().safety_margin(WATCHDOG);
    let after = acquired.elapsed();
    assert!(after <= lost_at, "lost reported late: {after:?}");
    assert!(
        after >= lost_at - Duration::from_millis(1),
        "lost reported early: {after:?}"
    );
    assert!(g.check().unwrap_err().is_lock_lost());
    assert_eq!(c.stats().watched, 0);
    server.set_down(false);
}

#[tokio::test(start_paused = true)]
async fn short_outage_does_not_lose_the_lock() {
    let (server, c) = setup();
    let g = c.lock("blip").unwrap().lock().await.unwrap();
    tokio::time::sleep(WATCHDOG / 3 - Duration::from_millis(10)).await;
    server.set_down(true);
    tokio::time::sleep(WATCHDOG / 2).await;
    server.set_down(false);
    tokio::time::sleep(WATCHDOG * 3).await;
    assert!(!g.is_lost());
    assert!(server.pttl("blip") > 0);
    g.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn lost_unlock_notice_costs_at_most_one_ttl() {
    let (server, a) = setup();
    let b = server.client_with(config()).unwrap();
    let g = a.lock("quiet").unwrap().lock().await.unwrap();
    let lb = b.lock("quiet").unwrap();
    let waiter = tokio::spawn(async move { lb.lock().await.map(|g| (g, Instant::now())) });
    tokio::time::sleep(Duration::from_millis(50)).await;
    server.set_drop_notices(true);
    let released = Instant::now();
    g.unlock().await.unwrap();
    let (gb, acquired) = waiter.await.unwrap().unwrap();
    assert!(acquired - released <= WATCHDOG, "{:?}", acquired - released);
    assert_eq!(b.stats().wakeups, 0);
    gb.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn reset_notice_wakes_every_waiter_to_look_again() {
    let (server, a) = setup();
    let b = server.client_with(config()).unwrap();
    let g = a
        .lock("reset")
        .unwrap()
        .lock_with_lease(Duration::from_secs(60))
        .await
        .unwrap();
    let lb = b.lock("reset").unwrap();
    let waiter = tokio::spawn(async move { lb.lock().await.map(|g| (g, Instant::now())) });
    tokio::time::sleep(Duration::from_millis(50)).await;
    server.set_drop_notices(true);
    g.unlock().await.unwrap();
    server.set_drop_notices(false);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let reset_at = Instant::now();
    server.reset_notices();
    let (gb, acquired) = waiter.await.unwrap().unwrap();
    assert_eq!(acquired, reset_at, "woken by the reset, not a 60 s TTL");
    gb.unlock().await.unwrap();
}

/// The cancellation matrix: for backends that answer fast, slowly, with
/// errors, or not at all, drop acquisitions and unlocks at many points in
/// time; once the requests in flight have landed, nothing may be held,
/// watched or subscribed. Leases are an hour long, so a leaked hold cannot
/// hide by expiring.
#[tokio::test(start_paused = true)]
async fn cancellation_matrix_leaves_nothing_behind() {
    #[derive(Debug, Clone, Copy)]
    enum Mode {
        Ok,
        Slow,
        Err,
        Never,
    }
    let hour = Duration::from_secs(3600);
    for mode in [Mode::Ok, Mode::Slow, Mode::Err, Mode::Never] {
        for cancel_after_ms in [0u64, 1, 5, 10, 20, 60, 150] {
            let server = InMemoryServer::new();
            let holder = server.client_with(config()).unwrap();
            let c = server.client_with(config()).unwrap();
            // A held lock makes waits happen, so subscriptions are in play.
            let held = holder
                .lock("contended")
                .unwrap()
                .lock_with_lease(Duration::from_millis(40))
                .await
                .unwrap();
            let latency = match mode {
                Mode::Ok => Duration::ZERO,
                Mode::Slow => Duration::from_millis(10),
                Mode::Err => {
                    server.fail_next(3);
                    Duration::ZERO
                }
                Mode::Never => hour,
            };
            server.set_latency(latency);
            let cancel = Duration::from_millis(cancel_after_ms);
            let contended = c.lock("contended").unwrap();
            let free = c.lock("free").unwrap();
            let _ = tokio::time::timeout(cancel, contended.lock_with_lease(hour)).await;
            let _ = tokio::time::timeout(cancel, free.lock_with_lease(hour)).await;
            let _ = tokio::time::timeout(cancel, free.lock()).await;
            if let Ok(Ok(g)) = tokio::time::timeout(cancel, free.lock_with_lease(hour)).await {
                let _ = tokio::time::timeout(cancel, g.unlock()).await;
            }
            // Let the requests in flight land, and their undoing finish.
            server.set_latency(Duration::ZERO);
            tokio::time::sleep(latency + Duration::from_millis(100)).await;
            let ctx = format!("{mode:?} cancelled after {cancel:?}");
            assert_eq!(c.stats().subscriptions_active, 0, "{ctx}");
            assert_eq!(c.stats().watched, 0, "{ctx}");
            assert!(
                server.hash("free").is_empty(),
                "{ctx}: {:?}",
                server.hash("free")
            );
            let ours = c.id().to_string();
            assert!(
                server
                    .hash("contended")
                    .iter()
                    .all(|(f, _)| !f.starts_with(&ours)),
                "{ctx}: {:?}",
                server.hash("contended")
            );
            let ch = server
                .layout()
                .channel(&lock_redis::LockName::new("contended").unwrap());
            assert_eq!(server.subscribers(&ch), 0, "{ctx}");
            drop(held);
        }
    }
}

/// A woken waiter whose attempt fails for good (its wait ran out during the
/// failures) hands its wake-up on, so the next waiter does not sleep out the
/// holder's 60 s lease.
#[tokio::test(start_paused = true)]
async fn woken_waiter_that_fails_passes_its_wakeup_on() {
    let (server, a) = setup();
    let b = server.client_with(config()).unwrap();
    let _held = a
        .lock("baton")
        .unwrap()
        .lock_with_lease(Duration::from_secs(60))
        .await
        .unwrap();
    let first = {
        let lock = b.lock("baton").unwrap();
        // Its retries outlast its wait: it gives up at its bound, as a
        // wait that ran out (the store had answered it: the lock was held).
        tokio::spawn(async move { lock.try_lock_for(Duration::from_millis(100)).await })
    };
    tokio::time::sleep(Duration::from_millis(10)).await;
    let second = {
        let lock = b.lock("baton").unwrap();
        tokio::spawn(async move { lock.lock().await.map(|g| (g, Instant::now())) })
    };
    tokio::time::sleep(Duration::from_millis(10)).await;
    // Unlock as another client would, and make exactly the first waiter's
    // attempt (all its retries) fail.
    assert!(server.del("baton"));
    server.fail_next(RetryPolicy::default().attempts);
    let unlocked = Instant::now();
    server.publish("redisson_lock__channel:{baton}", "0");
    assert!(first.await.unwrap().unwrap().is_none());
    let (g, acquired) = second.await.unwrap().unwrap();
    assert!(
        acquired - unlocked < Duration::from_secs(1),
        "second waiter slept {:?}: the wake-up was swallowed",
        acquired - unlocked
    );
    g.unlock().await.unwrap();
}

#[test]
fn client_outside_a_runtime_is_an_invalid_argument() {
    let server = InMemoryServer::new();
    let err = server.client().unwrap_err();
    assert!(err.is_invalid_argument(), "{err:?}");
}

#[tokio::test]
async fn bad_client_config_is_rejected() {
    let server = InMemoryServer::new();
    let err = server
        .client_with(ClientConfig::default().watchdog_timeout(Duration::ZERO))
        .unwrap_err();
    assert!(err.to_string().contains("watchdog_timeout"));
}

/// The close gives the lock back itself (it used to stop renewing and
/// leave the lock to expire within the watchdog timeout: issue 37, item
/// 9); the guard dropped afterwards sends nothing. More in `shutdown`.
#[tokio::test(start_paused = true)]
async fn closed_client_gives_its_locks_back() {
    let (server, c) = setup();
    let g = c.lock("closing").unwrap().lock().await.unwrap();
    c.close().await;
    assert_eq!(server.pttl("closing"), -2, "given back by the close");
    assert!(g.is_lost());
    drop(g);
}

/// A request record must outlive every attempt of a retried request, or a
/// late retry runs it twice: 4 attempts of up to 10 s each (plus backoff) do
/// not fit a 30 s record ttl, so such a client is refused, saying what to
/// set.
#[tokio::test(start_paused = true)]
async fn record_ttl_shorter_than_the_retry_window_is_rejected() {
    let server = InMemoryServer::new();
    server.set_command_timeout(Some(Duration::from_secs(10)));
    let err = server.client_with(config()).unwrap_err();
    assert!(err.is_invalid_argument(), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("record_ttl"), "{message}");
    assert!(message.contains("40.35s"), "names the window: {message}");
    // A record ttl as long as the window, fewer attempts, or no retries at
    // all (no record is written) are all fine.
    let window = Duration::from_millis(40_350);
    server.client_with(config().record_ttl(window)).unwrap();
    let mut two = RetryPolicy::default();
    two.attempts = 2;
    server.client_with(config().retry(two)).unwrap();
    server
        .client_with(config().retry(RetryPolicy::none()))
        .unwrap();
}

/// Without a known command timeout only the backoff can be checked.
#[tokio::test(start_paused = true)]
async fn record_ttl_shorter_than_the_backoff_is_rejected() {
    let server = InMemoryServer::new();
    let err = server
        .client_with(config().record_ttl(Duration::from_millis(100)))
        .unwrap_err();
    assert!(err.to_string().contains("record_ttl"), "{err}");
}

/// A partition: every call hangs until the 3 s command timeout. The lease
/// deadline passes while the renewal sent at a third of it still waits for
/// its reply; the loss is reported by the deadline, not when that renewal
/// gives up 2.4 s later (issue 10, item 5).
#[tokio::test(start_paused = true)]
async fn loss_during_a_hanging_renewal_is_reported_on_time() {
    let server = InMemoryServer::new();
    server.set_command_timeout(Some(Duration::from_secs(3)));
    let c = server.client_with(config()).unwrap();
    let g = c.lock("partition").unwrap().lock().await.unwrap();
    let deadline = Instant::now() + WATCHDOG;
    server.set_latency(Duration::from_secs(3600));
    tokio::time::timeout_at(deadline, g.lost())
        .await
        .expect("lost() resolves by the lease deadline");
    assert!(g.is_lost());
    assert!(g.check().unwrap_err().is_lock_lost());
    assert_eq!(c.stats().watched, 0, "the watchdog dropped it on time");
}

/// `is_lost()` reads the deadline itself: true at the deadline even while
/// the watchdog task is stuck in a renewal.
#[tokio::test(start_paused = true)]
async fn is_lost_turns_true_at_the_deadline_by_itself() {
    let server = InMemoryServer::new();
    server.set_command_timeout(Some(Duration::from_secs(3)));
    let c = server.client_with(config()).unwrap();
    let g = c.lock("partition-poll").unwrap().lock().await.unwrap();
    server.set_latency(Duration::from_secs(3600));
    tokio::time::sleep(WATCHDOG / 2).await;
    assert!(!g.is_lost());
    tokio::time::sleep(WATCHDOG / 2).await;
    assert!(
        g.is_lost(),
        "still held by the guard's account at its deadline"
    );
}

/// The watchdog itself drops an overdue hold on time, racing the renewal
/// that hangs, rather than after that renewal gives up.
#[tokio::test(start_paused = true)]
async fn watchdog_drops_an_overdue_hold_while_its_renewal_hangs() {
    let server = InMemoryServer::new();
    server.set_command_timeout(Some(Duration::from_secs(3)));
    let c = server.client_with(config()).unwrap();
    let _g = c.lock("partition-drop").unwrap().lock().await.unwrap();
    server.set_latency(Duration::from_secs(3600));
    tokio::time::sleep(WATCHDOG + Duration::from_millis(1)).await;
    assert_eq!(c.stats().watched, 0, "still renewing a lost hold");
}

/// Loss is reported a safety margin before the lease deadline (lease/100 +
/// 2 ms by default), so a holder can stop before another client may take
/// the lock (issue 10, item 12).
#[tokio::test(start_paused = true)]
async fn loss_is_reported_before_the_lease_deadline() {
    let (_server, c) = setup();
    let lease = Duration::from_secs(1);
    let started = Instant::now();
    let g = c
        .lock("margin")
        .unwrap()
        .lock_with_lease(lease)
        .await
        .unwrap();
    g.lost().await;
    assert_eq!(started.elapsed(), lease - Duration::from_millis(12));
    assert!(g.is_lost());
}

/// `loss_margin` moves the report earlier still; the deadline itself (when
/// another client may hold the lock) is exposed, and under the watchdog it
/// moves with each renewal.
#[tokio::test(start_paused = true)]
async fn loss_margin_is_configurable_and_the_deadline_is_exposed() {
    let server = InMemoryServer::new();
    let extra = Duration::from_millis(100);
    let c = server.client_with(config().loss_margin(extra)).unwrap();
    assert_eq!(
        c.config().safety_margin(Duration::from_secs(1)),
        Duration::from_millis(112)
    );
    let lock = c.lock("deadline").unwrap();
    let lease = Duration::from_secs(1);
    let started = Instant::now();
    let g = lock.lock_with_lease(lease).await.unwrap();
    assert_eq!(g.lease_deadline(), started + lease);
    g.lost().await;
    assert_eq!(started.elapsed(), lease - Duration::from_millis(112));
    assert!(server.pttl("deadline") > 0, "the store still holds it");
    drop(g);

    let w = c.lock("deadline-watched").unwrap().lock().await.unwrap();
    let first = w.lease_deadline();
    assert_eq!(first, Instant::now() + WATCHDOG);
    tokio::time::sleep(WATCHDOG / 2).await;
    assert!(w.lease_deadline() >= first + WATCHDOG / 3, "renewed");
    server.set_down(true);
    w.lost().await;
    let left = w.lease_deadline() - Instant::now();
    assert_eq!(left, config().loss_margin(extra).safety_margin(WATCHDOG));
    server.set_down(false);
}

/// A margin that leaves no lease is refused: a fixed lease not longer than
/// its margin (lost at once), and a `loss_margin` that leaves no time for
/// renewals within the watchdog timeout.
#[tokio::test(start_paused = true)]
async fn margins_that_leave_no_lease_are_rejected() {
    let (_server, c) = setup();
    let lock = c.lock("too-short").unwrap();
    let err = lock
        .lock_with_lease(Duration::from_millis(2))
        .await
        .unwrap_err();
    assert!(err.is_invalid_argument(), "{err:?}");
    assert!(err.to_string().contains("margin"), "{err}");
    let g = lock
        .lock_with_lease(Duration::from_millis(3))
        .await
        .unwrap();
    assert!(!g.is_lost(), "a 3 ms lease is lost 2.03 ms in");

    let server = InMemoryServer::new();
    let err = server
        .client_with(config().loss_margin(WATCHDOG / 3))
        .unwrap_err();
    assert!(err.to_string().contains("loss_margin"), "{err}");
    server
        .client_with(config().loss_margin(WATCHDOG / 4))
        .unwrap();
    let c = server
        .client_with(config().loss_margin(Duration::from_millis(100)))
        .unwrap();
    let err = c
        .lock("too-short")
        .unwrap()
        .lock_with_lease(Duration::from_millis(100))
        .await
        .unwrap_err();
    assert!(err.is_invalid_argument(), "{err:?}");
}

/// Past its request's deadline, an acquisition whose record expired is
/// refused as stale whether or not it ran: the outcome can no longer be
/// learned.
const RECORD_GONE: Duration = Duration::from_secs(40);

/// Starts an acquisition of `lock` with `options` (inside the owner scope
/// of `scope`, when given) whose first attempt runs and loses its reply
/// (`ran`) or fails before it runs, and whose retries meet an outage that
/// lasts until the request's record is gone; returns once the store is
/// back and the background repeat had time to land.
async fn unknown_past_its_record(
    server: &InMemoryServer,
    lock: &lock_redis::Lock,
    options: AcquireOptions,
    scope: Option<lock_redis::Owner>,
    ran: bool,
) {
    if ran {
        server.lose_next_replies(1);
    } else {
        server.fail_next(1);
    }
    let trying = {
        let lock = lock.clone();
        tokio::spawn(async move {
            match scope {
                Some(owner) => owner.scope(lock.acquire(options)).await,
                None => lock.acquire(options).await,
            }
        })
    };
    // The first attempt has run (or failed); its retry waits a backoff.
    tokio::time::sleep(Duration::from_millis(1)).await;
    server.set_down(true);
    let err = trying.await.unwrap().unwrap_err();
    assert!(err.is_retryable(), "{err}");
    tokio::time::sleep(RECORD_GONE).await;
    server.set_down(false);
    tokio::time::sleep(RetryPolicy::default().max_backoff * 2).await;
}

/// An acquisition that ran, whose reply was lost, and whose store stayed
/// out of reach until its record expired: the background repeat is
/// refused as stale, which no longer proves it never ran. Its owner was
/// the wait's own and the wait gave up, so no guard can hold anything as
/// that owner: the client releases on its behalf rather than leave the
/// lock to its hour-long lease.
#[tokio::test(start_paused = true)]
async fn an_acquisition_whose_record_expired_is_released_on_its_behalf() {
    let (server, c) = setup();
    let lock = c.lock("record-expired").unwrap();
    let options = AcquireOptions::new()
        .no_wait()
        .lease(Duration::from_secs(3600));
    unknown_past_its_record(&server, &lock, options, None, true).await;
    assert!(
        !lock.is_locked().await.unwrap(),
        "the hold it took is left until its lease ends"
    );
    assert_eq!(c.stats().in_flight, 0);
}

/// The same for an acquisition that never ran: the release on its behalf
/// finds nothing, and leaves nothing.
#[tokio::test(start_paused = true)]
async fn an_expired_record_of_an_acquisition_that_never_ran_leaves_nothing() {
    let (server, c) = setup();
    let lock = c.lock("record-expired-never-ran").unwrap();
    let options = AcquireOptions::new()
        .no_wait()
        .lease(Duration::from_secs(3600));
    unknown_past_its_record(&server, &lock, options, None, false).await;
    assert!(!lock.is_locked().await.unwrap());
    assert!(lock.try_lock().await.unwrap().is_some());
}

/// A re-entry by an explicit owner that holds the lock: past its record,
/// whether it ran cannot be learned, and a release on its behalf could
/// take the owner's other hold (here it never ran). It is left alone: the
/// guard keeps its hold.
#[tokio::test(start_paused = true)]
async fn an_expired_record_of_an_explicit_owner_releases_nothing() {
    let (server, c) = setup();
    let lock = c.lock("record-expired-explicit").unwrap();
    let g = lock
        .lock_with_lease(Duration::from_secs(3600))
        .await
        .unwrap();
    let again = AcquireOptions::new()
        .owner(g.owner())
        .no_wait()
        .lease(Duration::from_secs(3600));
    unknown_past_its_record(&server, &lock, again, None, false).await;
    assert_eq!(lock.hold_count(g.owner()).await.unwrap(), 1);
    assert!(!g.is_lost());
    g.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

/// The same for an owner scope: its owner is shared by every acquisition
/// inside the scope, so it is not released on an unknown attempt's behalf.
#[tokio::test(start_paused = true)]
async fn an_expired_record_in_an_owner_scope_releases_nothing() {
    let (server, c) = setup();
    let lock = c.lock("record-expired-scope").unwrap();
    c.scope(async {
        let g = lock
            .lock_with_lease(Duration::from_secs(3600))
            .await
            .unwrap();
        let again = AcquireOptions::new()
            .no_wait()
            .lease(Duration::from_secs(3600));
        unknown_past_its_record(&server, &lock, again, Some(g.owner()), false).await;
        assert_eq!(lock.hold_count(g.owner()).await.unwrap(), 1);
        assert!(!g.is_lost());
        g.unlock().await.unwrap();
    })
    .await;
    assert!(!lock.is_locked().await.unwrap());
}

/// A wait that took the lock with a later attempt, as the owner made for
/// it: a release on behalf of its earlier attempt, forgotten during the
/// outage it rode out, could take the guard's own hold (here the earlier
/// attempt never ran). Nothing is released.
#[tokio::test(start_paused = true)]
async fn a_forgotten_attempt_of_a_wait_that_took_the_lock_releases_nothing() {
    let (server, c) = setup();
    let lock = c.lock("record-expired-won").unwrap();
    server.fail_next(1);
    let waiting = {
        let lock = lock.clone();
        tokio::spawn(async move { lock.lock_with_lease(Duration::from_secs(3600)).await })
    };
    tokio::time::sleep(Duration::from_millis(1)).await;
    server.set_down(true);
    tokio::time::sleep(RECORD_GONE).await;
    server.set_down(false);
    let g = waiting.await.unwrap().unwrap();
    tokio::time::sleep(RetryPolicy::default().max_backoff * 2).await;
    assert_eq!(lock.hold_count(g.owner()).await.unwrap(), 1);
    assert!(!g.is_lost());
    g.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

/// A reply that comes after the lease (less its safety margin) ran out,
/// counted from when the request was sent: the guard would be lost as it is
/// handed out, so `lock()` fails with `LockLost` instead, and the hold is
/// released rather than left to its lease. (Before, `lock()` returned a
/// guard whose `is_lost()` was already true.)
#[tokio::test(start_paused = true)]
async fn a_reply_later_than_the_lease_hands_out_no_guard() {
    let (server, c) = setup();
    let lock = c.lock("late-reply").unwrap();
    server.set_latency(Duration::from_millis(1500));
    let late = lock.lock_with_lease(Duration::from_secs(1)).await;
    server.set_latency(Duration::ZERO);
    let err = late.expect_err("a guard lost as it is handed out");
    assert!(
        matches!(err, lock_redis::LockError::LockLost { .. }),
        "{err:?}"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!lock.is_locked().await.unwrap(), "the hold was released");
    assert_eq!(c.stats().in_flight, 0);
}

/// The same for a re-entry by an explicit owner: only the hold the late
/// acquisition added is given back; the owner's guard keeps its own.
#[tokio::test(start_paused = true)]
async fn a_late_reentry_gives_back_only_its_own_hold() {
    let (server, c) = setup();
    let lock = c.lock("late-reentry").unwrap();
    let g = lock
        .lock_with_lease(Duration::from_secs(3600))
        .await
        .unwrap();
    server.set_latency(Duration::from_millis(1500));
    let again = AcquireOptions::new()
        .owner(g.owner())
        .lease(Duration::from_secs(1));
    let err = lock.acquire(again).await.expect_err("lost as handed out");
    server.set_latency(Duration::ZERO);
    assert!(
        matches!(err, lock_redis::LockError::LockLost { .. }),
        "{err:?}"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(lock.hold_count(g.owner()).await.unwrap(), 1);
    assert!(!g.is_lost());
    g.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

/// A client that takes and releases locks in quick succession wakes its
/// watchdog once per renewal interval, not once per lock: each wake-up is
/// a hop to another task, on a multi-threaded runtime often to another
/// thread, on the path of every acquisition.
#[tokio::test(start_paused = true)]
async fn locking_in_quick_succession_wakes_the_watchdog_once_per_interval() {
    let (_server, c) = setup();
    let lock = c.lock("succession").unwrap();
    let succession = async || {
        for _ in 0..20 {
            let g = lock.lock().await.unwrap();
            g.unlock().await.unwrap();
            // The watchdog runs here, after the release: it finds nothing
            // to renew.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    succession().await;
    assert_eq!(c.stats().watchdog_wakes, 1);
    // A renewal interval (a third of the lease) with nothing to renew puts
    // it to rest: the next hold wakes it again.
    tokio::time::sleep(WATCHDOG / 3).await;
    succession().await;
    assert_eq!(c.stats().watchdog_wakes, 2);
    assert_eq!(c.stats().renew_calls, 0, "no lock was held at a tick");
    // Resting until its tick, it still renews a hold taken meanwhile,
    // which no wake-up announced.
    let g = lock.lock().await.unwrap();
    tokio::time::sleep(WATCHDOG * 3).await;
    g.check().expect("renewed at every tick");
    assert_eq!(c.stats().watchdog_wakes, 2);
    assert!(c.stats().renew_calls >= 8, "{:?}", c.stats());
    g.unlock().await.unwrap();
}
