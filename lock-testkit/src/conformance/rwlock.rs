//! Read-write locks: readers share, a writer excludes, a writer may read
//! (downgrade), a reader may not write (fails fast), per-hold timeout keys,
//! wake-ups on `redisson_rwlock:{name}`, watchdog renewal of read holds,
//! cancellation. The `read_write` row of the suite's table (on the same
//! harness as every kind: its clients hand out every kind).

use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use lock_redis::{LockClient, LockError, LockName, ReadWriteLock};
use tokio::time::Instant;

use super::{client, eventually, key, unique, waiting, Harness, RedisLayout, WATCHDOG};
use crate::ExclusionChecker;

/// A lease long enough that anything quicker was a wake-up, not an expiry.
const LONG: Duration = Duration::from_secs(20);
/// How soon a woken waiter must hold the lock (a few round trips).
const PROMPT: Duration = Duration::from_secs(2);

fn rw(c: &LockClient, name: &str) -> ReadWriteLock {
    c.read_write_lock(name).expect("a read-write lock")
}

/// The key of hold `n` of `owner` on read-write lock `name`.
fn hold_key(h: &dyn RedisLayout, name: &str, owner: lock_redis::Owner, n: u64) -> String {
    let prefix = h
        .layout()
        .rwlock_hold_key_prefix(&LockName::new(name).unwrap(), &owner);
    format!("{prefix}:{n}")
}

/// The read-write lock's channel.
pub fn rw_channel(h: &dyn RedisLayout, name: &str) -> String {
    h.layout().rwlock_channel(&LockName::new(name).unwrap())
}

/// Two clients read at once; a third client's writer is kept out until
/// both left, then gets in.
pub async fn readers_share_and_exclude_a_writer(h: &dyn Harness) {
    let (a, b, c) = (client(h).await, client(h).await, client(h).await);
    let name = unique("rw-share");
    let r1 = rw(&a, &name).read().lock().await.unwrap();
    let r2 = rw(&b, &name).read().lock().await.unwrap();
    let readers = rw(&c, &name).read().info().await.unwrap();
    assert_eq!(readers.holders.len(), 2);
    assert!(rw(&c, &name).write().try_lock().await.unwrap().is_none());
    assert!(rw(&c, &name)
        .write()
        .info()
        .await
        .unwrap()
        .holders
        .is_empty());
    r1.unlock().await.unwrap();
    assert!(rw(&c, &name).write().try_lock().await.unwrap().is_none());
    r2.unlock().await.unwrap();
    let w = rw(&c, &name).write().try_lock().await.unwrap().unwrap();
    w.unlock().await.unwrap();
    assert!(!rw(&c, &name).is_locked().await.unwrap());
}

/// A writer keeps out readers and writers of every other owner.
pub async fn writer_excludes_readers_and_writers(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("rw-excl");
    let w = rw(&a, &name).write().lock().await.unwrap();
    assert!(rw(&b, &name).read().try_lock().await.unwrap().is_none());
    assert!(rw(&b, &name).write().try_lock().await.unwrap().is_none());
    // Another owner of the same client is kept out too.
    assert!(rw(&a, &name).read().try_lock().await.unwrap().is_none());
    let info = rw(&b, &name).write().info().await.unwrap();
    assert_eq!(info.hold_count(&w.owner()), 1);
    assert!(info.ttl.is_some());
    w.unlock().await.unwrap();
    let r = rw(&b, &name).read().try_lock().await.unwrap().unwrap();
    r.unlock().await.unwrap();
}

/// Writers and readers of many tasks never overlap a writer, and readers
/// do overlap each other.
pub async fn writers_never_overlap_anyone(h: &dyn Harness) {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("rw-mixed");
    // (writers inside, readers inside, most readers inside at once)
    let inside = Arc::new((
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    ));
    let checker = ExclusionChecker::new();
    let mut tasks = Vec::new();
    for i in 0..12u64 {
        let lock = rw(if i % 2 == 0 { &a } else { &b }, &name);
        let (checker, inside) = (checker.clone(), Arc::clone(&inside));
        tasks.push(tokio::spawn(async move {
            for round in 0..3u64 {
                if (i + round) % 4 == 0 {
                    let g = lock.write().lock().await.unwrap();
                    let section = checker.enter(i, None);
                    inside.0.fetch_add(1, SeqCst);
                    assert_eq!(inside.1.load(SeqCst), 0, "a reader inside with a writer");
                    tokio::time::sleep(Duration::from_millis(3)).await;
                    inside.0.fetch_sub(1, SeqCst);
                    drop(section);
                    g.unlock().await.unwrap();
                } else {
                    let g = lock.read().lock().await.unwrap();
                    let now = inside.1.fetch_add(1, SeqCst) + 1;
                    inside.2.fetch_max(now, SeqCst);
                    assert_eq!(inside.0.load(SeqCst), 0, "a writer inside with a reader");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    inside.1.fetch_sub(1, SeqCst);
                    g.unlock().await.unwrap();
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert!(
        checker.violations().is_empty(),
        "{:?}",
        checker.violations()
    );
    assert!(inside.2.load(SeqCst) > 1, "readers never shared the lock");
    assert!(!rw(&a, &name).is_locked().await.unwrap());
}

/// A read hold is counted per owner, each hold has its own timeout key with
/// its own lease, and the lock lives as long as its longest hold.
pub async fn read_holds_have_their_own_timeout_keys(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("rw-holds");
    let lock = rw(&a, &name);
    let long = lock
        .read()
        .lock_with_lease(Duration::from_secs(20))
        .await
        .unwrap();
    let owner = long.owner();
    let short = lock
        .read()
        .acquire(
            lock_redis::AcquireOptions::new()
                .owner(owner)
                .lease(Duration::from_secs(5)),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lock.read().hold_count(owner).await.unwrap(), 2);
    let k1 = hold_key(h, &name, owner, 1);
    let k2 = hold_key(h, &name, owner, 2);
    assert_eq!(h.get_string(&k1).await.as_deref(), Some("1"));
    assert!((15_000..=20_000).contains(&h.pttl(&k1).await));
    assert!((1..=5_000).contains(&h.pttl(&k2).await));
    assert!(h.pttl(&key(h, &name)).await > 15_000);
    // Giving back a hold gives back the one that ends soonest: the 20 s
    // hold left keeps the lock for 20 s, whichever guard unlocks.
    long.unlock().await.unwrap();
    assert_eq!(h.get_string(&k2).await, None);
    assert!(h.pttl(&k1).await > 15_000);
    assert!(h.pttl(&key(h, &name)).await > 15_000);
    short.unlock().await.unwrap();
    assert_eq!(h.get_string(&k1).await, None);
    assert!(!lock.is_locked().await.unwrap());
    assert!(!h.keys().await.contains(&key(h, &name)));
}

/// When a reader leaves, the lock's TTL becomes the longest remaining hold
/// of any reader, and a reader whose hold keys expired does not keep it.
pub async fn lock_ttl_follows_the_longest_live_read_hold(h: &dyn RedisLayout) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("rw-ttl");
    let long = rw(&a, &name)
        .read()
        .lock_with_lease(Duration::from_secs(20))
        .await
        .unwrap();
    let short = rw(&b, &name)
        .read()
        .lock_with_lease(Duration::from_secs(3))
        .await
        .unwrap();
    long.unlock().await.unwrap();
    let pttl = h.pttl(&key(h, &name)).await;
    assert!((1..=3_000).contains(&pttl), "pttl {pttl}");
    // Past its lease the short hold is gone: a writer gets in.
    let started = Instant::now();
    let w = rw(&a, &name)
        .write()
        .try_lock_for(Duration::from_secs(6))
        .await
        .unwrap()
        .expect("the writer gets in once the read lease ran out");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(short.is_lost());
    w.unlock().await.unwrap();
}

/// A write unlock wakes every waiting reader at once, long before the
/// writer's lease would end.
pub async fn write_unlock_wakes_every_waiting_reader(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("rw-wake-readers");
    let w = rw(&a, &name).write().lock_with_lease(LONG).await.unwrap();
    let mut readers = Vec::new();
    for _ in 0..4 {
        let lock = rw(&b, &name);
        readers.push(tokio::spawn(async move {
            let g = lock.read().lock().await.unwrap();
            let at = Instant::now();
            (g, at)
        }));
    }
    waiting(&b, 4).await;
    let released = Instant::now();
    w.unlock().await.unwrap();
    let mut guards = Vec::new();
    for r in readers {
        let (g, at) = r.await.unwrap();
        assert!(at - released < PROMPT);
        guards.push(g);
    }
    assert_eq!(
        rw(&a, &name).read().info().await.unwrap().holders.len(),
        4,
        "four owners read at once"
    );
    for g in guards {
        g.unlock().await.unwrap();
    }
}

/// The last reader's unlock wakes a waiting writer long before the read
/// lease would end.
pub async fn read_unlock_wakes_a_waiting_writer(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("rw-wake-writer");
    let r = rw(&a, &name).read().lock_with_lease(LONG).await.unwrap();
    let lock = rw(&b, &name);
    let writer = tokio::spawn(async move { lock.write().lock().await.unwrap() });
    waiting(&b, 1).await;
    let released = Instant::now();
    r.unlock().await.unwrap();
    let w = writer.await.unwrap();
    assert!(released.elapsed() < PROMPT);
    w.unlock().await.unwrap();
}

/// A writer may take the read side as the same owner; releasing the write
/// side then leaves a read lock (downgrade) that other readers share and
/// writers wait for.
pub async fn writer_downgrades_by_reading_then_releasing_write(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("rw-downgrade");
    let lock = rw(&a, &name);
    let w = lock.write().lock().await.unwrap();
    let r = lock.read().lock_as(w.owner()).await.unwrap();
    assert!(rw(&b, &name).read().try_lock().await.unwrap().is_none());
    w.unlock().await.unwrap();
    assert!(!r.is_lost());
    assert_eq!(lock.read().hold_count(r.owner()).await.unwrap(), 1);
    let other = rw(&b, &name).read().try_lock().await.unwrap().unwrap();
    assert!(rw(&b, &name).write().try_lock().await.unwrap().is_none());
    other.unlock().await.unwrap();
    r.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

/// A reader asking for the write side fails at once with `UpgradeRefused`
/// (Redisson would wait forever), taking nothing; its read hold stays.
pub async fn reader_cannot_upgrade(h: &dyn Harness) {
    let a = client(h).await;
    let name = unique("rw-upgrade");
    let lock = rw(&a, &name);
    let r = lock.read().lock().await.unwrap();
    let started = Instant::now();
    let err = lock.write().lock_as(r.owner()).await.unwrap_err();
    assert!(err.is_upgrade_refused(), "{err:?}");
    assert!(matches!(&err, LockError::UpgradeRefused { name: n } if *n == name));
    assert!(started.elapsed() < PROMPT);
    let err = lock
        .write()
        .acquire(lock_redis::AcquireOptions::new().owner(r.owner()).no_wait())
        .await
        .unwrap_err();
    assert!(err.is_upgrade_refused());
    assert!(lock.write().info().await.unwrap().holders.is_empty());
    assert_eq!(lock.read().hold_count(r.owner()).await.unwrap(), 1);
    assert!(!r.is_lost());
    let owner = r.owner();
    r.unlock().await.unwrap();
    // With the read hold gone, the same owner may write.
    let w = lock.write().lock_as(owner).await.unwrap();
    w.unlock().await.unwrap();
}

/// Read holds re-enter by owner and count; each hold is released by its
/// own guard.
pub async fn read_holds_reenter_by_owner(h: &dyn Harness) {
    let a = client(h).await;
    let name = unique("rw-reenter");
    let lock = rw(&a, &name);
    a.scope(async {
        let g1 = lock.read().lock().await.unwrap();
        let g2 = lock.read().lock().await.unwrap();
        assert_eq!(g1.owner(), g2.owner());
        assert_eq!(lock.read().hold_count(g1.owner()).await.unwrap(), 2);
        assert!(!lock.read().unlock_as(g1.owner()).await.unwrap());
        // `unlock_as` gave back one hold; the guards' own releases find
        // one hold and then none.
        g2.unlock().await.unwrap();
        assert!(g1.unlock().await.unwrap_err().is_not_held());
    })
    .await;
    assert!(!lock.is_locked().await.unwrap());
}

/// The watchdog keeps a read hold — its timeout key and the lock — alive
/// past several watchdog timeouts, and stops at unlock.
pub async fn watchdog_keeps_read_holds_alive(h: &dyn RedisLayout) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("rw-watchdog");
    let r = rw(&a, &name).read().lock().await.unwrap();
    tokio::time::sleep(WATCHDOG * 4).await;
    assert!(!r.is_lost());
    assert!(h.pttl(&hold_key(h, &name, r.owner(), 1)).await > 0);
    assert!(rw(&b, &name).write().try_lock().await.unwrap().is_none());
    let owner = r.owner();
    r.unlock().await.unwrap();
    assert_eq!(h.get_string(&hold_key(h, &name, owner, 1)).await, None);
    let w = rw(&b, &name).write().try_lock().await.unwrap().unwrap();
    tokio::time::sleep(WATCHDOG * 4).await;
    assert!(!w.is_lost());
    w.unlock().await.unwrap();
}

/// A deleted lock tells the read holder's guard at the next renewal; the
/// owner's write hold is tracked apart and told too only when its own
/// renewal fails.
pub async fn deleted_lock_fires_the_readers_lost_signal(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("rw-lost");
    let r = rw(&a, &name).read().lock().await.unwrap();
    assert!(h.del(&key(h, &name)).await);
    tokio::time::timeout(WATCHDOG, r.lost())
        .await
        .expect("the lost signal fires at the next renewal");
    assert!(r.unlock().await.unwrap_err().is_not_held());
}

/// Forcing open: each side deletes the lock only in its own mode (as
/// Redisson's), and [`ReadWriteLock::force_unlock`] in either; waiters are
/// woken.
pub async fn force_unlock_per_side(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("rw-force");
    let lock = rw(&a, &name);
    let r = lock.read().lock_with_lease(LONG).await.unwrap();
    assert!(!lock.write().force_unlock().await.unwrap());
    let writer = {
        let lock = rw(&b, &name);
        tokio::spawn(async move { lock.write().lock().await.unwrap() })
    };
    waiting(&b, 1).await;
    assert!(lock.read().force_unlock().await.unwrap());
    let w = tokio::time::timeout(PROMPT, writer).await.unwrap().unwrap();
    assert!(!lock.read().force_unlock().await.unwrap());
    assert!(rw(&a, &name).force_unlock().await.unwrap());
    assert!(!rw(&a, &name).force_unlock().await.unwrap());
    assert!(r.unlock().await.unwrap_err().is_not_held());
    assert!(w.unlock().await.unwrap_err().is_not_held());
}

/// A non-hash value at the key: every operation of either side reports
/// `WrongType` and leaves it as it is.
pub async fn wrong_type_is_reported_and_left_untouched(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("rw-wrongtype");
    h.set_string(&key(h, &name), "not a lock").await;
    let lock = rw(&a, &name);
    assert!(lock.read().try_lock().await.unwrap_err().is_wrong_type());
    assert!(lock.write().try_lock().await.unwrap_err().is_wrong_type());
    assert!(lock.read().info().await.unwrap_err().is_wrong_type());
    assert!(lock.force_unlock().await.unwrap_err().is_wrong_type());
    let owner = a.new_owner();
    assert!(lock
        .read()
        .unlock_as(owner)
        .await
        .unwrap_err()
        .is_wrong_type());
    assert!(lock
        .write()
        .unlock_as(owner)
        .await
        .unwrap_err()
        .is_wrong_type());
    assert_eq!(
        h.get_string(&key(h, &name)).await.as_deref(),
        Some("not a lock")
    );
    let fenced = lock_redis::AcquireOptions::new().fenced().no_wait();
    assert!(lock
        .read()
        .acquire(fenced)
        .await
        .unwrap_err()
        .is_invalid_argument());
}

/// A plain lock of the same name is not a read-write lock: neither side
/// takes it or writes into it.
pub async fn plain_lock_of_the_name_is_not_written_into(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("rw-plain");
    let plain = a.lock(&name).unwrap().lock().await.unwrap();
    let lock = rw(&a, &name);
    assert!(lock.read().try_lock().await.unwrap().is_none());
    assert!(lock.write().try_lock().await.unwrap().is_none());
    let fields = h.hash(&key(h, &name)).await;
    assert_eq!(fields, vec![(plain.owner().field(), 1)]);
    plain.unlock().await.unwrap();
}

/// Polls `fut` up to `n` times (yielding between polls), then drops it.
async fn poll_then_drop<F: Future>(fut: F, n: usize) {
    let mut fut = pin!(fut);
    for _ in 0..n {
        if let Poll::Ready(out) = futures::poll!(fut.as_mut()) {
            drop(out);
            return;
        }
        tokio::task::yield_now().await;
    }
}

/// Read and write acquisitions dropped at any await point, on a free lock
/// or while waiting, leave nothing held, no hold key and no subscription.
pub async fn dropped_acquires_leave_nothing_held(h: &dyn RedisLayout) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("rw-drop");
    let lock = rw(&a, &name);
    for polls in 0..6 {
        poll_then_drop(lock.read().lock(), polls).await;
        poll_then_drop(lock.write().lock(), polls).await;
        tokio::time::timeout(WATCHDOG / 3, a.settle())
            .await
            .unwrap();
        assert!(!lock.is_locked().await.unwrap(), "after {polls} polls");
    }
    // Waiting behind a writer of another client, then given up.
    let w = rw(&b, &name).write().lock_with_lease(LONG).await.unwrap();
    for _ in 0..2 {
        let gave_up = tokio::time::timeout(Duration::from_millis(150), lock.read().lock()).await;
        assert!(gave_up.is_err());
        let gave_up = tokio::time::timeout(Duration::from_millis(150), lock.write().lock()).await;
        assert!(gave_up.is_err());
    }
    a.settle().await;
    assert_eq!(a.stats().subscriptions_active, 0);
    eventually(Duration::from_secs(2), "unsubscribed", || async {
        h.subscribers(&rw_channel(h, &name)).await == 0
    })
    .await;
    assert!(lock.read().info().await.unwrap().holders.is_empty());
    w.unlock().await.unwrap();
    let left: Vec<String> = h
        .keys()
        .await
        .into_iter()
        .filter(|k| k.contains(&name) && !k.contains("_latch:"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Writers first: while a writer waits, owners that do not read the lock
/// yet wait too, so readers cannot starve it; readers already in may
/// re-enter; the writer gets in when they leave, then the held-off reader.
pub async fn a_waiting_writer_holds_new_readers_off(h: &dyn Harness) {
    let (a, b, c) = (client(h).await, client(h).await, client(h).await);
    let name = unique("rw-writers-first");
    let r = rw(&a, &name).read().lock_with_lease(LONG).await.unwrap();
    let lock = rw(&b, &name);
    let writer = tokio::spawn(async move { lock.write().lock().await.unwrap() });
    waiting(&b, 1).await;
    assert!(rw(&c, &name).read().try_lock().await.unwrap().is_none());
    let again = rw(&a, &name).read().lock_as(r.owner()).await.unwrap();
    let lock = rw(&c, &name);
    let reader = tokio::spawn(async move { lock.read().lock().await.unwrap() });
    waiting(&c, 1).await;
    again.unlock().await.unwrap();
    let released = Instant::now();
    r.unlock().await.unwrap();
    let w = writer.await.unwrap();
    assert!(released.elapsed() < PROMPT);
    assert!(!reader.is_finished());
    let released = Instant::now();
    w.unlock().await.unwrap();
    let late = reader.await.unwrap();
    assert!(released.elapsed() < PROMPT);
    late.unlock().await.unwrap();
}

/// A writer that gives up (timed out or dropped) holds readers off no
/// longer: readers held off by it are woken and get in.
pub async fn a_writer_that_gives_up_lets_readers_in(h: &dyn Harness) {
    let (a, b, c) = (client(h).await, client(h).await, client(h).await);
    let name = unique("rw-writer-gives-up");
    let r = rw(&a, &name).read().lock_with_lease(LONG).await.unwrap();
    let lock = rw(&b, &name);
    let writer = tokio::spawn(async move {
        lock.write()
            .try_lock_for(Duration::from_millis(500))
            .await
            .unwrap()
    });
    waiting(&b, 1).await;
    let lock = rw(&c, &name);
    let reader = tokio::spawn(async move { lock.read().lock().await.unwrap() });
    waiting(&c, 1).await;
    assert!(writer.await.unwrap().is_none());
    let gave_up = Instant::now();
    let late = reader.await.unwrap();
    assert!(gave_up.elapsed() < PROMPT);
    late.unlock().await.unwrap();
    // A dropped waiting writer leaves as well.
    let lock = rw(&b, &name);
    let dropped = tokio::time::timeout(Duration::from_millis(200), lock.write().lock()).await;
    assert!(dropped.is_err());
    b.settle().await;
    let other = rw(&c, &name).read().try_lock().await.unwrap();
    assert!(other.is_some(), "a dropped writer still holds readers off");
    drop(other);
    r.unlock().await.unwrap();
}
