//! [`LockClient::describe`]: what is stored under a name, told apart by
//! layout on every deployment (it is one kind-neutral script). Part of the
//! `latch` row of the suite's table, the first kind that shares its layout
//! with another.
//!
//! Read-write lock hashes (a `mode` field beside counts) are checked by the
//! decoder's unit tests and by `lockctl/tests/status.rs` on Redis.

use std::time::Duration;

use lock_redis::{Description, LockClient, LockName};

use super::{client, key, unique, RedisLayout};

/// Free, a lock, a latch's count, a permit-expirable semaphore's counter
/// and live leases, a list and a lean lock are each described as such.
pub async fn describe_tells_the_layouts_apart(h: &dyn RedisLayout) {
    let c: LockClient = client(h).await;
    let free = unique("describe-free");
    assert_eq!(c.describe(&free).await.unwrap(), Description::Free);

    let locked = unique("describe-lock");
    let guard = c
        .lock(&locked)
        .unwrap()
        .lock_with_lease(Duration::from_secs(20))
        .await
        .unwrap();
    match c.describe(&locked).await.unwrap() {
        Description::Lock(info) => {
            assert_eq!(info.holders.len(), 1);
            assert_eq!(info.holders[0].owner(), Some(guard.owner()));
            assert!(info.ttl.is_some_and(|t| t <= Duration::from_secs(20)));
        }
        other => panic!("{other:?}"),
    }
    guard.unlock().await.unwrap();

    let latch = unique("describe-latch");
    c.count_down_latch(&latch)
        .unwrap()
        .try_set_count(3)
        .await
        .unwrap();
    match c.describe(&latch).await.unwrap() {
        Description::SemaphoreOrLatch(counter) => {
            assert_eq!((counter.value, counter.ttl), (3, None));
        }
        other => panic!("{other:?}"),
    }

    let semaphore = unique("describe-expirable");
    let k = key(h, &semaphore);
    let leases = h
        .layout()
        .permit_leases_key(&LockName::new(&semaphore).unwrap());
    let list = format!("{leases}:list");
    let now = h.now_ms().await;
    h.set_string(&k, "2").await;
    h.enqueue(&list, &leases, now + 60_000, "0123456789abcdef")
        .await;
    h.enqueue(&list, &leases, now - 60_000, "fedcba9876543210")
        .await;
    let described = c.describe(&semaphore).await.unwrap();
    let after = h.now_ms().await;
    match described {
        Description::PermitExpirableSemaphore(s) => {
            assert_eq!(s.available, 2);
            assert_eq!(s.permits.len(), 1, "{s:?}");
            assert_eq!(s.permits[0].id, "30313233343536373839616263646566");
            assert!(s.permits[0].permit_id().is_some());
            // Time left by the store's clock at the read, which lies
            // between `now` and `after`.
            let left = s.permits[0].lease_time.expect("leased");
            let most = Duration::from_millis(60_000);
            let least = most.saturating_sub(Duration::from_millis(
                u64::try_from(after - now).unwrap_or(0),
            ));
            assert!((least..=most).contains(&left), "{left:?}");
        }
        other => panic!("{other:?}"),
    }

    // `list` is not under the layout's prefix: describe it by a name whose
    // key is `list` only when there is no prefix.
    if h.layout().prefix().is_empty() {
        assert_eq!(
            c.describe(&list).await.unwrap(),
            Description::Unknown {
                store_type: "list".into()
            }
        );
    }
    // Text that is no count is a lean lock's holder token (whoever wrote
    // it: ours, or redsync's, redis-py's, rslock's).
    h.set_string(&k, "many").await;
    match c.describe(&semaphore).await.unwrap() {
        Description::LeanLock(info) => {
            assert_eq!(info.holders.len(), 1);
            assert_eq!(
                (&*info.holders[0].field, info.holders[0].count),
                ("many", 1)
            );
        }
        other => panic!("{other:?}"),
    }

    let lean = unique("describe-lean");
    let guard = c
        .lean_lock(&lean)
        .unwrap()
        .lock_with_lease(Duration::from_secs(20))
        .await
        .unwrap();
    match c.describe(&lean).await.unwrap() {
        Description::LeanLock(info) => {
            assert_eq!(info.holders.len(), 1);
            assert_eq!(info.holders[0].owner(), Some(guard.owner()));
            assert!(info.ttl.is_some_and(|t| t <= Duration::from_secs(20)));
        }
        other => panic!("{other:?}"),
    }
    guard.unlock().await.unwrap();
}

/// A holder is described with its client's record (host, pid, service):
/// the record's scripts run where its keys live on every deployment (one
/// hash tag: one cluster slot), and a closed client's record is gone.
pub async fn describe_names_each_holders_client(h: &dyn RedisLayout) {
    let a = h.client(super::config().service_name("conformance")).await;
    let b = client(h).await;
    let name = unique("describe-who");
    let guard = a.lock(&name).unwrap().lock().await.unwrap();
    let holder_client = || async {
        match b.describe(&name).await.unwrap() {
            Description::Lock(info) => info.holders[0].client.clone(),
            other => panic!("{other:?}"),
        }
    };
    super::eventually(Duration::from_secs(5), "the holder's record", || async {
        holder_client().await.is_some()
    })
    .await;
    let found = holder_client().await.unwrap();
    assert_eq!(&found, a.client_info());
    assert_eq!(found.service.as_deref(), Some("conformance"));
    assert_eq!(found.pid, std::process::id());
    guard.unlock().await.unwrap();
    a.close().await;
    // A lock of a's (its field, written as Redisson would) no longer finds
    // a record.
    let owner = lock_redis::Owner::new(a.id(), 1);
    let k = key(h, &name);
    h.hset(&k, &owner.field(), 1, Some(20_000)).await;
    assert_eq!(holder_client().await, None);
    b.close().await;
}
