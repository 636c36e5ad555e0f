//! Redirect handling against scripted `-MOVED` / `-ASK` / `-TRYAGAIN` /
//! `-CLUSTERDOWN` replies from fake nodes: the transport's routing alone,
//! without a real cluster.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::fake_node::FakeNode;
use lock_redis::kinds::reentrant::INSPECT;
use lock_redis::ScriptCall;
use lock_redis_cluster::slot::key_slot;
use lock_redis_cluster::{ClusterConfig, ClusterTransport, PubSubMode, Transport};
use redis::Value;

const KEY: &str = "orders";

fn call() -> ScriptCall<'static> {
    ScriptCall::new(&INSPECT, vec![KEY.to_owned()], vec![])
}

/// Two fake nodes, `a` serving every slot.
async fn pair() -> (FakeNode, FakeNode) {
    let a = FakeNode::start().await;
    let b = FakeNode::start().await;
    a.set_slots(&[(0, 16383, a.port)]);
    b.set_slots(&[(0, 16383, a.port)]);
    (a, b)
}

async fn transport(seed: &FakeNode, redirects: u32) -> ClusterTransport {
    ClusterTransport::connect(
        ClusterConfig::new([seed.url()])
            .pubsub(PubSubMode::Classic)
            .max_redirects(redirects)
            .command_timeout(Duration::from_secs(2)),
    )
    .await
    .expect("connect to the fake cluster")
}

#[tokio::test]
async fn moved_goes_to_the_new_owner_and_updates_the_map() {
    let (a, b) = pair().await;
    let slot = key_slot(KEY);
    let b_addr = b.addr();
    a.on_evalsha(move |_| format!("-MOVED {slot} {b_addr}\r\n"));
    b.on_evalsha(|_| ":7\r\n".to_owned());
    let t = transport(&a, 5).await;
    assert_eq!(t.eval(call()).await.unwrap(), Value::Int(7));
    assert_eq!((a.count("EVALSHA"), b.count("EVALSHA")), (1, 1));
    assert_eq!(t.slot_map().master(slot), Some(b.addr().as_str()));
    assert_eq!(t.eval(call()).await.unwrap(), Value::Int(7));
    assert_eq!(
        (a.count("EVALSHA"), b.count("EVALSHA")),
        (1, 2),
        "the second call went straight to the new owner"
    );
}

#[tokio::test]
async fn ask_sends_asking_first_and_keeps_the_map() {
    let (a, b) = pair().await;
    let slot = key_slot(KEY);
    let b_addr = b.addr();
    a.on_evalsha(move |_| format!("-ASK {slot} {b_addr}\r\n"));
    let a_addr = a.addr();
    // Like an importing node: without ASKING, the slot is not ours.
    b.on_evalsha(move |log| {
        let asked = log.len() >= 2 && log[log.len() - 2][0] == "ASKING";
        if asked {
            ":9\r\n".to_owned()
        } else {
            format!("-MOVED {slot} {a_addr}\r\n")
        }
    });
    let t = transport(&a, 5).await;
    assert_eq!(t.eval(call()).await.unwrap(), Value::Int(9));
    assert_eq!(t.eval(call()).await.unwrap(), Value::Int(9));
    assert_eq!(a.count("EVALSHA"), 2, "ASK does not change the map");
    assert_eq!(b.count("ASKING"), 2);
    assert_eq!(t.slot_map().master(slot), Some(a.addr().as_str()));
}

#[tokio::test]
async fn tryagain_and_clusterdown_are_waited_out() {
    let (a, _b) = pair().await;
    a.queue(&[
        "-TRYAGAIN Multiple keys request during rehashing of slot\r\n",
        "-CLUSTERDOWN The cluster is down\r\n",
        "-TRYAGAIN Multiple keys request during rehashing of slot\r\n",
    ]);
    a.on_evalsha(|_| ":3\r\n".to_owned());
    let t = transport(&a, 5).await;
    let slots_before = a.count("CLUSTER");
    assert_eq!(t.eval(call()).await.unwrap(), Value::Int(3));
    assert_eq!(a.count("EVALSHA"), 4);
    assert!(
        a.count("CLUSTER") > slots_before,
        "CLUSTERDOWN made the transport read the topology again"
    );
}

#[tokio::test]
async fn a_redirect_loop_ends_at_the_budget_with_a_retryable_error() {
    let (a, b) = pair().await;
    let slot = key_slot(KEY);
    let (a_addr, b_addr) = (a.addr(), b.addr());
    a.on_evalsha(move |_| format!("-MOVED {slot} {b_addr}\r\n"));
    b.on_evalsha(move |_| format!("-MOVED {slot} {a_addr}\r\n"));
    let t = transport(&a, 3).await;
    let err = t.eval(call()).await.unwrap_err();
    assert!(err.is_retryable(), "{err}");
    assert!(err.to_string().contains("max_redirects"), "{err}");
    assert_eq!(
        a.count("EVALSHA") + b.count("EVALSHA"),
        4,
        "1 call + 3 redirects"
    );
}

#[tokio::test]
async fn a_cluster_that_stays_down_fails_within_the_command_timeout() {
    let (a, _b) = pair().await;
    a.on_evalsha(|_| "-CLUSTERDOWN The cluster is down\r\n".to_owned());
    let t = transport(&a, 5).await;
    let started = tokio::time::Instant::now();
    let err = t.eval(call()).await.unwrap_err();
    assert!(err.is_retryable(), "{err}");
    assert!(err.to_string().contains("CLUSTERDOWN"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn noscript_after_ask_loads_the_script_and_asks_again() {
    let (a, b) = pair().await;
    let slot = key_slot(KEY);
    let b_addr = b.addr();
    a.on_evalsha(move |_| format!("-ASK {slot} {b_addr}\r\n"));
    b.queue(&["-NOSCRIPT No matching script.\r\n"]);
    b.set_script_sha(INSPECT.get_hash());
    b.on_evalsha(|_| ":5\r\n".to_owned());
    let t = transport(&a, 5).await;
    assert_eq!(t.eval(call()).await.unwrap(), Value::Int(5));
    let log: Vec<String> = b.log().into_iter().map(|c| c[0].clone()).collect();
    assert_eq!(log, ["ASKING", "EVALSHA", "SCRIPT", "ASKING", "EVALSHA"]);
}

#[tokio::test]
async fn keys_in_different_slots_are_rejected_before_io() {
    let (a, _b) = pair().await;
    let t = transport(&a, 5).await;
    let split = ScriptCall::new(
        &INSPECT,
        vec!["a{}b".to_owned(), "x:a{}b".to_owned()],
        vec![],
    );
    let err = t.eval(split).await.unwrap_err();
    assert!(err.is_invalid_argument(), "{err}");
    assert_eq!(a.count("EVALSHA"), 0);
}

#[tokio::test]
async fn batches_split_by_master_and_reroute_redirected_calls() {
    let (a, b) = pair().await;
    // Slot of "orders" on b, everything else on a.
    let slot = key_slot(KEY);
    let mut ranges = vec![(slot, slot, b.port)];
    if slot > 0 {
        ranges.push((0, slot - 1, a.port));
    }
    if slot < 16383 {
        ranges.push((slot + 1, 16383, a.port));
    }
    a.set_slots(&ranges);
    a.on_evalsha(|_| ":1\r\n".to_owned());
    let a_addr = a.addr();
    let other = "invoices";
    let other_slot = key_slot(other);
    assert_ne!(other_slot, slot);
    // b answers its own slot, and pretends the first call it got moved.
    b.queue(&[&format!("-MOVED {slot} {a_addr}\r\n")]);
    b.on_evalsha(|_| ":2\r\n".to_owned());
    let t = Arc::new(transport(&a, 5).await);
    let calls = vec![
        ScriptCall::new(&INSPECT, vec![KEY.to_owned()], vec![]),
        ScriptCall::new(&INSPECT, vec![other.to_owned()], vec![]),
    ];
    let results = t.eval_batch(calls).await.unwrap();
    assert_eq!(
        results[0].as_ref().unwrap(),
        &Value::Int(1),
        "rerouted to a"
    );
    assert_eq!(results[1].as_ref().unwrap(), &Value::Int(1));
    assert_eq!(b.count("EVALSHA"), 1);
    assert_eq!(a.count("EVALSHA"), 2);
}
