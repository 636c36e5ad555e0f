//! One owner, no contention: the calls a lock and an unlock cost.

use crate::fake::{Fake, Op};

#[tokio::test(start_paused = true)]
async fn lock_then_unlock_is_one_acquire_and_one_release() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let guard = lock.lock().await.unwrap();
    assert_eq!(fake.kind.entry("a").map(|e| e.count), Some(1));
    guard.unlock().await.unwrap();
    assert_eq!(fake.kind.calls(Op::Acquire), 1);
    assert_eq!(fake.kind.calls(Op::Release), 1);
    assert!(fake.kind.is_empty());
    assert!(fake.connection.subscriptions().is_empty());
    assert_eq!(fake.connection.subscribe_calls(), 0);
}
