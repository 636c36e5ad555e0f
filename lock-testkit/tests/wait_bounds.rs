//! Every wait bound holds whatever a store does (issue 37, item 6), on the
//! in-memory backend with paused time: `try_lock_for(d)` returns by `d` +
//! [`WAIT_OVERSHOOT`] when the store (a single lock's, or one member's of
//! a RedLock or multi-lock) never answers, or answers only after the
//! wait. What a call still in flight then takes is released in the
//! background: nothing is held afterwards on any store.
//!
//! "Silent": every call waits far longer than the command timeout and
//! fails with a timeout without running (a master dropping packets).
//! "Slow": every call runs, but only after the wait is over.

use std::time::Duration;

use lock_redis::{ClientConfig, LockClient, MultiLock, RedLock, WAIT_OVERSHOOT};
use lock_testkit::InMemoryServer;
use tokio::time::Instant;

/// Redis's default command timeout, as the in-memory transport applies it.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(3);
/// The wait of every `try_lock_for` here.
const WAIT: Duration = Duration::from_secs(2);
/// How long a slow store takes to answer: well past the wait.
const SLOW: Duration = Duration::from_secs(5);

/// A store with Redis's command timeout, and a client of it with the
/// default configuration (the 30 s watchdog, four attempts per call).
fn store() -> (InMemoryServer, LockClient) {
    let server = InMemoryServer::new();
    server.set_command_timeout(Some(COMMAND_TIMEOUT));
    let client = server.client_with(ClientConfig::default()).unwrap();
    (server, client)
}

/// A store without a command timeout: a slow call waits its latency out.
fn store_without_timeout() -> (InMemoryServer, LockClient) {
    let server = InMemoryServer::new();
    let client = server.client_with(ClientConfig::default()).unwrap();
    (server, client)
}

fn silence(server: &InMemoryServer) {
    server.set_latency(Duration::from_secs(3600));
}

/// The lock keys left on `server` (no client records, no request records,
/// no fencing counters).
fn locks_left(server: &InMemoryServer, name: &str) -> Vec<String> {
    server.keys().into_iter().filter(|k| k == name).collect()
}

fn assert_within_bound(started: Instant) {
    let took = started.elapsed();
    assert!(
        took <= WAIT + WAIT_OVERSHOOT,
        "try_lock_for({WAIT:?}) took {took:?}"
    );
}

/// Lets every call still in flight land and be undone, with the stores
/// answering again.
async fn settle(servers: &[&InMemoryServer], clients: &[&LockClient]) {
    tokio::time::sleep(SLOW * 4).await;
    for server in servers {
        server.set_latency(Duration::ZERO);
    }
    for client in clients {
        client.settle().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_wait_on_a_silent_server_ends_at_its_bound() {
    let (server, c) = store();
    let lock = c.lock("bound-silent").unwrap();
    silence(&server);
    let started = Instant::now();
    let err = lock.try_lock_for(WAIT).await.unwrap_err();
    assert_within_bound(started);
    assert!(err.is_retryable() && err.is_timeout(), "{err}");
    settle(&[&server], &[&c]).await;
    assert!(!lock.is_locked().await.unwrap());
}

/// The attempt in flight at the deadline runs later and takes the free
/// lock; nobody receives it, so it is released.
#[tokio::test(start_paused = true)]
async fn a_wait_on_a_slow_server_ends_at_its_bound_and_leaves_nothing() {
    let (server, c) = store_without_timeout();
    let lock = c.lock("bound-slow").unwrap();
    server.set_latency(SLOW);
    let started = Instant::now();
    let err = lock.try_lock_for(WAIT).await.unwrap_err();
    assert_within_bound(started);
    assert!(err.is_retryable(), "{err}");
    // The attempt ran at SLOW and took the lock; its release, sent when
    // its reply came, runs SLOW later.
    tokio::time::sleep(SLOW).await;
    assert_eq!(
        locks_left(&server, "bound-slow"),
        ["bound-slow"],
        "the late attempt took it"
    );
    settle(&[&server], &[&c]).await;
    assert!(!lock.is_locked().await.unwrap(), "and it was released");
    assert_eq!(locks_left(&server, "bound-slow"), Vec::<String>::new());
}

/// A wait whose store answered (the lock was held) and then went silent:
/// the wait ran out, as for a held lock.
#[tokio::test(start_paused = true)]
async fn a_wait_whose_store_went_silent_runs_out_at_its_bound() {
    let (server, c) = store();
    let lock = c.lock("bound-went-silent").unwrap();
    let held = lock.lock().await.unwrap();
    let waiter = lock.clone();
    let started = Instant::now();
    let wait = tokio::spawn(async move { waiter.try_lock_for(WAIT).await });
    tokio::time::sleep(WAIT / 4).await;
    silence(&server);
    assert!(wait.await.unwrap().unwrap().is_none());
    assert_within_bound(started);
    settle(&[&server], &[&c]).await;
    held.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

/// Three masters; a RedLock holds the lock on all three, then master 0
/// drops packets. A contender's ordered rounds try master 0 first: they
/// used to wait out its whole retry policy (4 × 3 s + backoff).
#[tokio::test(start_paused = true)]
async fn a_redlock_wait_with_a_silent_master_ends_at_its_bound() {
    let name = "bound-red-silent";
    let stores: Vec<(InMemoryServer, LockClient)> = (0..3).map(|_| store()).collect();
    let contenders: Vec<LockClient> = stores
        .iter()
        .map(|(s, _)| s.client_with(ClientConfig::default()).unwrap())
        .collect();
    let holder = RedLock::new(stores.iter().map(|(_, c)| c.lock(name).unwrap())).unwrap();
    let contender = RedLock::new(contenders.iter().map(|c| c.lock(name).unwrap())).unwrap();
    let held = holder.lock().await.unwrap();
    silence(&stores[0].0);
    let started = Instant::now();
    assert!(contender.try_lock_for(WAIT).await.unwrap().is_none());
    assert_within_bound(started);
    held.unlock().await.unwrap();
    let servers: Vec<&InMemoryServer> = stores.iter().map(|(s, _)| s).collect();
    let clients: Vec<&LockClient> = stores.iter().map(|(_, c)| c).chain(&contenders).collect();
    settle(&servers, &clients).await;
    for server in servers {
        assert_eq!(locks_left(server, name), Vec::<String>::new());
    }
}

/// Master 0 is free but answers only after the wait; masters 1 and 2 are
/// held by someone else, so no quorum can be had. Every attempt the
/// contender made on master 0 runs late and takes it: each is released.
#[tokio::test(start_paused = true)]
async fn a_redlock_wait_with_a_slow_master_ends_at_its_bound_and_leaves_nothing() {
    let name = "bound-red-slow";
    let stores: Vec<(InMemoryServer, LockClient)> = vec![store_without_timeout(), store(), store()];
    let others: Vec<LockClient> = stores[1..]
        .iter()
        .map(|(s, _)| s.client_with(ClientConfig::default()).unwrap())
        .collect();
    let mut held = Vec::new();
    for other in &others {
        held.push(other.lock(name).unwrap().lock().await.unwrap());
    }
    let contender = RedLock::new(stores.iter().map(|(_, c)| c.lock(name).unwrap())).unwrap();
    stores[0].0.set_latency(SLOW);
    let started = Instant::now();
    assert!(contender.try_lock_for(WAIT).await.unwrap().is_none());
    assert_within_bound(started);
    for guard in held {
        guard.unlock().await.unwrap();
    }
    let servers: Vec<&InMemoryServer> = stores.iter().map(|(s, _)| s).collect();
    let clients: Vec<&LockClient> = stores.iter().map(|(_, c)| c).chain(&others).collect();
    settle(&servers, &clients).await;
    for server in servers {
        assert_eq!(locks_left(server, name), Vec::<String>::new());
    }
}

/// A multi-lock whose second member's store drops packets: the first
/// member, taken, is given back, and the wait ends at its bound.
#[tokio::test(start_paused = true)]
async fn a_multi_lock_wait_with_a_silent_store_ends_at_its_bound() {
    let (first, a) = store();
    let (second, b) = store();
    let multi = MultiLock::new([
        a.lock("bound-multi-a").unwrap(),
        b.lock("bound-multi-b").unwrap(),
    ])
    .unwrap();
    silence(&second);
    let started = Instant::now();
    let outcome = multi.try_lock_for(WAIT).await;
    assert_within_bound(started);
    assert!(!matches!(outcome, Ok(Some(_))), "{outcome:?}");
    settle(&[&first, &second], &[&a, &b]).await;
    assert_eq!(locks_left(&first, "bound-multi-a"), Vec::<String>::new());
    assert_eq!(locks_left(&second, "bound-multi-b"), Vec::<String>::new());
}

/// The counting kinds wait through the same loop: a semaphore's, an
/// expirable-permit semaphore's and a latch's timed waits end at their
/// bound with a silent store.
#[tokio::test(start_paused = true)]
async fn counting_waits_on_a_silent_server_end_at_their_bound() {
    let (server, c) = store();
    let sem = c.semaphore("bound-sem").unwrap();
    assert!(sem.try_set_permits(1).await.unwrap());
    let expirable = c.permit_expirable_semaphore("bound-exp").unwrap();
    assert!(expirable.try_set_permits(1).await.unwrap());
    let latch = c.count_down_latch("bound-latch").unwrap();
    assert!(latch.try_set_count(1).await.unwrap());
    silence(&server);
    let started = Instant::now();
    let err = sem.try_acquire_for(WAIT).await.unwrap_err();
    assert_within_bound(started);
    assert!(err.is_timeout(), "{err}");
    let started = Instant::now();
    let err = expirable.try_acquire_for(WAIT).await.unwrap_err();
    assert_within_bound(started);
    assert!(err.is_timeout(), "{err}");
    let started = Instant::now();
    let err = latch.wait_for(WAIT).await.unwrap_err();
    assert_within_bound(started);
    assert!(err.is_timeout(), "{err}");
    settle(&[&server], &[&c]).await;
    assert_eq!(sem.available_permits().await.unwrap(), 1);
    assert_eq!(expirable.available_permits().await.unwrap(), 1);
}

/// A semaphore on a slow store: the attempt in flight at the deadline
/// takes the permit later, and nobody receives it, so it goes back.
#[tokio::test(start_paused = true)]
async fn a_semaphore_wait_on_a_slow_server_gives_its_late_permit_back() {
    let (server, c) = store_without_timeout();
    let sem = c.semaphore("bound-sem-slow").unwrap();
    assert!(sem.try_set_permits(1).await.unwrap());
    server.set_latency(SLOW);
    let started = Instant::now();
    let err = sem.try_acquire_for(WAIT).await.unwrap_err();
    assert_within_bound(started);
    assert!(err.is_timeout(), "{err}");
    settle(&[&server], &[&c]).await;
    assert_eq!(sem.available_permits().await.unwrap(), 1);
}

/// A fair lock's waiter queues from its first look: cut off with the
/// store silent, its place is given up once its attempt lands, so no
/// entry is left in the queue.
#[tokio::test(start_paused = true)]
async fn a_fair_wait_whose_store_went_silent_leaves_no_queue_entry() {
    let (server, c) = store();
    let other = server.client_with(ClientConfig::default()).unwrap();
    let held = other.fair_lock("bound-fair").unwrap().lock().await.unwrap();
    let fair = c.fair_lock("bound-fair").unwrap();
    let waiter = fair.clone();
    let started = Instant::now();
    let wait = tokio::spawn(async move { waiter.try_lock_for(WAIT).await });
    tokio::time::sleep(WAIT / 4).await;
    assert_eq!(
        server.list("redisson_lock_queue:{bound-fair}").len(),
        1,
        "queued"
    );
    silence(&server);
    assert!(wait.await.unwrap().unwrap().is_none());
    assert_within_bound(started);
    settle(&[&server], &[&c, &other]).await;
    assert_eq!(
        server.list("redisson_lock_queue:{bound-fair}"),
        Vec::<String>::new(),
        "a queue entry was left behind"
    );
    held.unlock().await.unwrap();
    assert!(fair.try_lock().await.unwrap().is_some());
}
