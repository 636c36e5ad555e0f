//! A wait knows its own earlier attempt's hold (issue 37, item 4), on the
//! in-memory backend with paused time: an attempt takes the lock, every
//! reply of it and its retries is lost (its outcome unknown), and the next
//! attempt of the same wait finds the lock held by the wait's own owner.
//! On a kind that refuses re-entry that used to end the wait with
//! `ReentryRefused` for a lock nobody else held; now the wait takes the
//! hold its earlier attempt made. A second wait of the same explicit
//! owner, while a guard holds the lock, is still refused.

use std::time::Duration;

use lock_redis::{AcquireOptions, Guard, Lock, LockClient, RetryPolicy};
use lock_testkit::conformance::config;
use lock_testkit::InMemoryServer;

fn setup() -> (InMemoryServer, LockClient) {
    let server = InMemoryServer::new();
    let client = server.client_with(config()).unwrap();
    (server, client)
}

/// Every live key but the client records and the fencing-token counters
/// (which must outlive every hold: tokens only ever rise).
fn lock_keys(server: &InMemoryServer) -> Vec<String> {
    let mut keys: Vec<String> = server
        .keys()
        .into_iter()
        .filter(|k| !lock_redis::lock_script::clients::is_client_key(k))
        .filter(|k| !k.starts_with("redisson_lock_token:"))
        .collect();
    keys.sort();
    keys
}

/// The first attempt of the next acquisition takes the lock, and its reply
/// and every retry's is lost: its outcome stays unknown.
fn lose_the_first_attempt(server: &InMemoryServer) {
    server.lose_next_replies(RetryPolicy::default().attempts);
}

/// Once the wait's unknown attempt was settled the guard holds the lock
/// once (a reentrant kind counted the later attempt as one more hold,
/// which settling gives back); unlocking frees it; once the request
/// records expired nothing is left in the store.
async fn one_hold_then_nothing(server: &InMemoryServer, c: &LockClient, lock: &Lock, g: Guard) {
    c.settle().await;
    assert!(!g.is_lost(), "settling the unknown attempt took the hold");
    assert_eq!(
        lock.hold_count(g.owner()).await.unwrap(),
        1,
        "one hold after the unknown attempt was settled"
    );
    g.unlock().await.unwrap();
    c.settle().await;
    assert!(!lock.is_locked().await.unwrap());
    // Request records outlive their requests' deadlines, then expire.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(lock_keys(server), Vec::<String>::new(), "left behind");
}

#[tokio::test(start_paused = true)]
async fn a_non_reentrant_wait_takes_its_own_unknown_attempts_hold() {
    let (server, c) = setup();
    let lock = c.non_reentrant_lock("own-nr").unwrap();
    lose_the_first_attempt(&server);
    let g = lock
        .lock()
        .await
        .expect("the wait's own hold, not a re-entry");
    one_hold_then_nothing(&server, &c, &lock, g).await;
}

#[tokio::test(start_paused = true)]
async fn a_non_reentrant_wait_as_an_explicit_owner_takes_its_own_hold() {
    let (server, c) = setup();
    let lock = c.non_reentrant_lock("own-nr-as").unwrap();
    lose_the_first_attempt(&server);
    let g = lock.lock_as(c.new_owner()).await.unwrap();
    one_hold_then_nothing(&server, &c, &lock, g).await;
}

#[tokio::test(start_paused = true)]
async fn a_fenced_non_reentrant_wait_keeps_its_first_token() {
    let (server, c) = setup();
    let lock = c.non_reentrant_lock("own-nr-fenced").unwrap();
    lose_the_first_attempt(&server);
    let g = lock
        .acquire(AcquireOptions::new().fenced())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(g.fencing_token(), Some(1), "the first attempt's token");
    one_hold_then_nothing(&server, &c, &lock, g).await;
}

#[tokio::test(start_paused = true)]
async fn a_fenced_lean_wait_takes_its_own_hold_with_its_token() {
    let (server, c) = setup();
    let lock = c.lean_lock("own-lean-fenced").unwrap();
    lose_the_first_attempt(&server);
    let g = lock
        .acquire(AcquireOptions::new().fenced())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(g.fencing_token(), Some(1), "the first attempt's token");
    one_hold_then_nothing(&server, &c, &lock, g).await;
}

#[tokio::test(start_paused = true)]
async fn a_lean_wait_as_an_explicit_owner_takes_its_own_hold() {
    let (server, c) = setup();
    let lock = c.lean_lock("own-lean-as").unwrap();
    lose_the_first_attempt(&server);
    let g = lock.lock_as(c.new_owner()).await.unwrap();
    one_hold_then_nothing(&server, &c, &lock, g).await;
}

#[tokio::test(start_paused = true)]
async fn a_lean_wait_in_a_scope_takes_its_own_hold() {
    let (server, c) = setup();
    let lock = c.lean_lock("own-lean-scope").unwrap();
    lose_the_first_attempt(&server);
    let g = c.scope(lock.lock()).await.unwrap();
    one_hold_then_nothing(&server, &c, &lock, g).await;
}

#[tokio::test(start_paused = true)]
async fn a_lean_wait_on_the_lean_path_takes_its_own_hold() {
    let (server, c) = setup();
    let lock = c.lean_lock("own-lean").unwrap();
    lose_the_first_attempt(&server);
    let g = lock.lock().await.unwrap();
    one_hold_then_nothing(&server, &c, &lock, g).await;
}

/// The reentrant kinds count the later attempt as a re-entry; settling the
/// unknown attempt gives its extra hold back, so the guard's is the one
/// left.
#[tokio::test(start_paused = true)]
async fn a_reentrant_wait_is_left_one_hold_after_its_unknown_attempt() {
    let (server, c) = setup();
    let lock = c.lock("own-reentrant").unwrap();
    lose_the_first_attempt(&server);
    let g = lock.lock().await.unwrap();
    one_hold_then_nothing(&server, &c, &lock, g).await;
}

#[tokio::test(start_paused = true)]
async fn a_write_lock_wait_is_left_one_hold_after_its_unknown_attempt() {
    let (server, c) = setup();
    let rw = c.read_write_lock("own-rw-write").unwrap();
    lose_the_first_attempt(&server);
    let g = rw.write().lock().await.unwrap();
    one_hold_then_nothing(&server, &c, rw.write(), g).await;
}

#[tokio::test(start_paused = true)]
async fn a_read_lock_wait_is_left_one_hold_after_its_unknown_attempt() {
    let (server, c) = setup();
    let rw = c.read_write_lock("own-rw-read").unwrap();
    lose_the_first_attempt(&server);
    let g = rw.read().lock().await.unwrap();
    one_hold_then_nothing(&server, &c, rw.read(), g).await;
}

#[tokio::test(start_paused = true)]
async fn a_fair_lock_wait_is_left_one_hold_after_its_unknown_attempt() {
    let (server, c) = setup();
    let fair = c.fair_lock("own-fair").unwrap();
    lose_the_first_attempt(&server);
    let g = fair.lock().await.unwrap();
    one_hold_then_nothing(&server, &c, &fair, g).await;
}

#[tokio::test(start_paused = true)]
async fn a_handoff_lock_wait_is_left_one_hold_after_its_unknown_attempt() {
    let (server, c) = setup();
    let handoff = c.handoff_lock("own-handoff").unwrap();
    lose_the_first_attempt(&server);
    let g = handoff.lock().await.unwrap();
    one_hold_then_nothing(&server, &c, &handoff, g).await;
}

/// A second wait of the same explicit owner while a guard holds the lock
/// is a genuine re-entry, whatever became of its own attempts: refused,
/// with the first hold untouched: plainly; when the second wait's first
/// attempt was held on the way (its caller heard only timeouts; it ran
/// late, and was refused), so the wait asks it again when its next
/// attempt is refused and its record says "refused"; and when that first
/// attempt never ran (asked again, it runs now, and is refused).
#[tokio::test(start_paused = true)]
async fn a_second_wait_of_the_same_owner_is_still_refused() {
    for kind in ["non_reentrant", "lean"] {
        let (server, c) = setup();
        let name = format!("own-second-{kind}");
        let lock = match kind {
            "lean" => c.lean_lock(&name).unwrap(),
            _ => c.non_reentrant_lock(&name).unwrap(),
        };
        let owner = c.new_owner();
        let g = lock.lock_as(owner).await.unwrap();
        let again = lock.lock_as(owner).await.unwrap_err();
        assert!(again.is_reentry_refused(), "{kind}: {again}");
        let attempts = RetryPolicy::default().attempts;
        server.delay_next(attempts, Duration::from_millis(10));
        let again = lock.lock_as(owner).await.unwrap_err();
        assert!(again.is_reentry_refused(), "{kind}: {again}");
        server.fail_next(RetryPolicy::default().attempts);
        let again = lock.lock_as(owner).await.unwrap_err();
        assert!(again.is_reentry_refused(), "{kind}: {again}");
        c.settle().await;
        assert!(!g.is_lost(), "{kind}");
        assert_eq!(lock.hold_count(owner).await.unwrap(), 1, "{kind}");
        g.unlock().await.unwrap();
        c.settle().await;
        assert!(!lock.is_locked().await.unwrap(), "{kind}");
    }
}

/// A lease shorter than the retries: the unknown first attempt's hold
/// expired before the wait's next attempt, which took the lock afresh.
/// The first attempt's record still says "acquired"; settling it must not
/// release on its behalf, which would give back the guard's hold (a
/// non-reentrant owner holds the lock once, whichever request took it).
#[tokio::test(start_paused = true)]
async fn settling_an_expired_unknown_attempt_leaves_the_guards_hold() {
    let (server, c) = setup();
    let lock = c.non_reentrant_lock("own-nr-expired").unwrap();
    let lease = Duration::from_millis(150);
    lose_the_first_attempt(&server);
    let g = lock.lock_with_lease(lease).await.unwrap();
    c.settle().await;
    assert!(!g.is_lost());
    assert_eq!(
        lock.hold_count(g.owner()).await.unwrap(),
        1,
        "the guard's hold was released on the expired attempt's behalf"
    );
    g.unlock().await.unwrap();
}
