//! A connection that breaks after a script was sent: the transport sends it
//! once more only when running it twice is harmless (a recorded acquire or
//! release, a renewal, a read). Scripted fake nodes stand in for the
//! cluster, so the send can be observed.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::fake_node::{FakeNode, HANG_UP};
use lock_core::backend::{ExclusiveKind, ReleaseOutcome, ReleaseRequest};
use lock_redis::kinds::Reentrant;
use lock_redis_cluster::{ClusterConfig, ClusterTransport, KeyLayout, LockName, Owner, PubSubMode};
use lock_script::ScriptEnv;

/// A reentrant backend on a one-node fake cluster whose first `EVALSHA`
/// hangs up and whose next ones answer `:0` (release: still held).
async fn backend() -> (FakeNode, Reentrant) {
    let node = FakeNode::start().await;
    node.set_slots(&[(0, 16383, node.port)]);
    node.queue(&[HANG_UP]);
    node.on_evalsha(|_| ":0\r\n".to_owned());
    let transport = ClusterTransport::connect(
        ClusterConfig::new([node.url()])
            .pubsub(PubSubMode::Classic)
            .command_timeout(Duration::from_secs(2)),
    )
    .await
    .expect("connect to the fake cluster");
    let backend = Reentrant::new(ScriptEnv::new(Arc::new(transport), KeyLayout::default()));
    (node, backend)
}

fn release(deadline_ms: u64) -> ReleaseRequest {
    ReleaseRequest::new(
        LockName::new("orders").unwrap(),
        Owner::parse_field("00000000-0000-0000-0000-000000000001:1").unwrap(),
        10_000,
        deadline_ms,
    )
}

/// A release is sent once more: its record answers a repeat (every
/// request is recorded, retries on or off).
#[tokio::test]
async fn a_recorded_release_is_sent_again() {
    let (node, backend) = backend().await;
    let deadline = lock_redis::lock_core::backend::deadline_in(Duration::from_secs(30));
    let outcome = backend.release(&release(deadline)).await.unwrap();
    assert_eq!(outcome, ReleaseOutcome::StillHeld);
    assert_eq!(node.count("EVALSHA"), 2);
}

/// A force unlock has no request record: never sent twice (a second one could
/// delete the next holder's lock).
#[tokio::test]
async fn a_force_unlock_is_sent_once() {
    let (node, backend) = backend().await;
    let err = backend
        .force_unlock(&LockName::new("orders").unwrap())
        .await
        .unwrap_err();
    assert!(err.is_retryable(), "{err}");
    assert_eq!(node.count("EVALSHA"), 1);
}
