//! One owner's holds: re-entry counts, partial releases keep the lock,
//! fencing tokens grow.

use crate::fake::{Fake, Op};

#[tokio::test(start_paused = true)]
async fn the_same_owner_re_enters_and_holds_until_its_last_release() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let owner = fake.engine.new_owner();
    let outer = lock.lock_as(owner).await.unwrap();
    let inner = lock.lock_as(owner).await.unwrap();
    assert_eq!(lock.hold_count(owner).await.unwrap(), 2);
    inner.unlock().await.unwrap();
    assert_eq!(fake.kind.entry("a").map(|e| e.count), Some(1));
    outer.check().unwrap();
    outer.unlock().await.unwrap();
    assert!(fake.kind.is_empty());
    assert_eq!(fake.kind.calls(Op::Release), 2);
}

#[tokio::test(start_paused = true)]
async fn an_owner_scope_re_enters_plain_acquisitions() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    fake.engine
        .scope(async {
            let outer = lock.lock().await.unwrap();
            let inner = lock.lock().await.unwrap();
            assert_eq!(outer.owner(), inner.owner());
            assert_eq!(fake.kind.entry("a").map(|e| e.count), Some(2));
            inner.unlock().await.unwrap();
            outer.unlock().await.unwrap();
        })
        .await;
    assert!(fake.kind.is_empty());
}

#[tokio::test(start_paused = true)]
async fn fencing_tokens_grow_with_each_acquisition() {
    let fake = Fake::new();
    let lock = fake.engine.fenced_lock("f", fake.kind.dyn_kind()).unwrap();
    let mut last = 0;
    for _ in 0..3 {
        let guard = lock.lock().await.unwrap();
        assert!(guard.fencing_token() > last);
        last = guard.fencing_token();
        guard.unlock().await.unwrap();
    }
    assert_eq!(lock.last_fencing_token().await.unwrap(), Some(last));
}

#[tokio::test(start_paused = true)]
async fn dropping_a_guard_releases_it_in_the_background() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    drop(lock.lock().await.unwrap());
    fake.settle().await;
    assert!(fake.kind.is_empty());
    assert_eq!(fake.kind.calls(Op::Release), 1);
}

#[tokio::test(start_paused = true)]
async fn an_owner_of_another_client_is_refused_before_any_call() {
    let fake = Fake::new();
    let other = Fake::new();
    let lock = fake.lock("a");
    let error = lock.lock_as(other.engine.new_owner()).await.unwrap_err();
    assert!(error.is_invalid_argument(), "{error}");
    assert_eq!(fake.kind.calls(Op::Acquire), 0);
}

#[tokio::test(start_paused = true)]
async fn unlock_as_an_owner_that_does_not_hold_it_is_not_held() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let error = lock.unlock_as(fake.engine.new_owner()).await.unwrap_err();
    assert!(error.is_not_held(), "{error}");
}
