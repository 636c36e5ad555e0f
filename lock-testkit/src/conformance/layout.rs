//! The on-store layout is Redisson's, so Java and Rust clients share locks.

use std::time::Duration;

use lock_redis::{AcquireOptions, LockName};
use tokio::time::Instant;

use super::{channel, client, eventually, key, unique, RedisLayout, WATCHDOG};

/// A held lock is a hash with one field `<client-uuid>:<owner-id>` whose
/// value is the hold count, and a TTL of the lease.
pub async fn hash_field_is_owner_and_count(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("layout");
    let lock = super::lock(h, &a, &name);
    let g = lock.lock().await.unwrap();
    let field = format!("{}:{}", a.id().hyphenated(), g.owner().owner_id());
    assert_eq!(h.hash(&key(h, &name)).await, vec![(field.clone(), 1)]);
    let again = lock.lock_as(g.owner()).await.unwrap();
    assert_eq!(h.hash(&key(h, &name)).await, vec![(field, 2)]);
    let pttl = h.pttl(&key(h, &name)).await;
    assert!(
        pttl > 0 && pttl <= WATCHDOG.as_millis() as i64,
        "pttl {pttl}"
    );
    again.unlock().await.unwrap();
    g.unlock().await.unwrap();
    assert!(h.hash(&key(h, &name)).await.is_empty());
}

/// A lock written the way Redisson writes it blocks us, and we report its
/// holder and TTL.
pub async fn redisson_written_lock_blocks_us(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("java");
    let java_holder = "0b5f3b2e-8c1d-4a57-9a8f-6c0e1f2d3a4b:57";
    h.hset(&key(h, &name), java_holder, 1, Some(5_000)).await;
    let lock = super::lock(h, &a, &name);
    assert!(lock.try_lock().await.unwrap().is_none());
    let info = lock.info().await.unwrap();
    assert_eq!(info.holders.len(), 1);
    assert_eq!(info.holders[0].field, java_holder);
    assert_eq!(info.holders[0].owner().map(|o| o.owner_id()), Some(57));
    let ttl = info.ttl.unwrap();
    assert!(
        ttl > Duration::from_secs(4) && ttl <= Duration::from_secs(5),
        "{ttl:?}"
    );
    assert!(lock.force_unlock().await.unwrap());
}

/// Redisson's unlock (delete + `PUBLISH redisson_lock__channel:{name} 0`)
/// wakes our waiter at once (a polling waiter, never subscribed, finds the
/// lock free at its next look).
pub async fn redisson_style_unlock_notice_wakes_us(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("java-unlock");
    let k = key(h, &name);
    h.hset(
        &k,
        "0b5f3b2e-8c1d-4a57-9a8f-6c0e1f2d3a4b:1",
        1,
        Some(20_000),
    )
    .await;
    let lock = super::lock(h, &a, &name);
    let waiter = tokio::spawn(async move { lock.try_lock_for(Duration::from_secs(30)).await });
    let subscribed = usize::from(super::subscribes(&a));
    eventually(Duration::from_secs(2), "waiter parked", || async {
        h.subscribers(&channel(h, &name)).await == subscribed && a.stats().waiting >= 1
    })
    .await;
    let unlocked = Instant::now();
    h.del(&k).await;
    h.publish(&channel(h, &name), "0").await;
    let g = waiter
        .await
        .unwrap()
        .unwrap()
        .expect("woken by the Redisson-style notice");
    assert!(unlocked.elapsed() < Duration::from_secs(2));
    assert_eq!(a.stats().wakeups, subscribed as u64);
    g.unlock().await.unwrap();
}

/// The fencing counter and the unlock request record live under
/// Redisson's helper names (`redisson_unlock_latch` is Redisson's name for
/// a request record).
pub async fn helper_keys_follow_the_layout(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("helpers");
    let lock = super::lock(h, &a, &name);
    let g = lock
        .acquire(AcquireOptions::new().fenced())
        .await
        .unwrap()
        .unwrap();
    let n = LockName::new(&name).unwrap();
    let token_key = h.layout().token_key(&n);
    assert_eq!(
        token_key,
        format!("redisson_lock_token:{{{}}}", key(h, &name))
    );
    assert_eq!(
        h.get_string(&token_key).await,
        g.fencing_token().map(|t| t.to_string())
    );
    g.unlock().await.unwrap();
    let record_prefix = format!("redisson_unlock_latch:{{{}}}:", key(h, &name));
    let keys = h.keys().await;
    assert!(
        keys.iter().any(|k| k.starts_with(&record_prefix)),
        "no unlock request record among {keys:?}"
    );
}
