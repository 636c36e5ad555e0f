//! Client records: each client keeps a record of itself (host, pid,
//! service, start time) that `describe` and a fair lock's `info` join to
//! every holder, waiter and permit it owns. In memory, paused time: the
//! record's refreshes and expiry are exact.

use std::time::Duration;

use lock_redis::lock_script::clients::{record_key, registry_key};
use lock_redis::{ClientConfig, ClientInfo, Description, LockClient, ReadWriteMode};
use lock_testkit::memory::ScriptReply;
use lock_testkit::InMemoryServer;

/// Refreshes every second, records live three.
const WATCHDOG: Duration = Duration::from_secs(3);

fn client(server: &InMemoryServer, service: &str) -> LockClient {
    server
        .client_with(
            ClientConfig::default()
                .watchdog_timeout(WATCHDOG)
                .service_name(service),
        )
        .unwrap()
}

/// Lets the clients' record tasks run (a paused runtime runs them once
/// the test task waits).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

fn record(server: &InMemoryServer, client: &LockClient) -> String {
    record_key(server.layout(), client.id())
}

fn field(server: &InMemoryServer, key: &str, field: &str) -> Option<String> {
    match server.command(&["HGET", key, field]) {
        ScriptReply::Bulk(bytes) => Some(String::from_utf8(bytes).unwrap()),
        ScriptReply::Nil => None,
        other => panic!("HGET {key} {field}: {other:?}"),
    }
}

fn registered(server: &InMemoryServer, client: &LockClient) -> bool {
    server
        .zscore(&registry_key(server.layout()), &client.id().to_string())
        .is_some()
}

#[tokio::test(start_paused = true)]
async fn a_record_appears_at_start_and_is_refreshed() {
    let server = InMemoryServer::new();
    let a = client(&server, "billing");
    settle().await;
    let key = record(&server, &a);
    assert_eq!(field(&server, &key, "service").as_deref(), Some("billing"));
    assert_eq!(
        field(&server, &key, "pid"),
        Some(std::process::id().to_string())
    );
    assert_eq!(
        field(&server, &key, "host"),
        Some(a.client_info().host.clone())
    );
    assert!(registered(&server, &a));
    // Written at 1 ms with a 3 s time to live; refreshed at ~1 s and ~2 s.
    // Without refreshes it would be gone by 3 s.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(server.pttl(&key) > 2000, "refreshed: {}", server.pttl(&key));
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(server.pttl(&key) > 0, "still kept while the client lives");
    a.close().await;
}

#[tokio::test(start_paused = true)]
async fn close_removes_the_record() {
    let server = InMemoryServer::new();
    let a = client(&server, "billing");
    let b = client(&server, "other");
    settle().await;
    a.close().await;
    assert_eq!(server.pttl(&record(&server, &a)), -2, "deleted");
    assert!(!registered(&server, &a));
    // Nothing writes it back.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(server.pttl(&record(&server, &a)), -2);
    assert!(registered(&server, &b), "the others' records stay");
    b.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_client_dropped_without_close_loses_its_record_within_its_ttl() {
    let server = InMemoryServer::new();
    let a = client(&server, "billing");
    settle().await;
    let key = record(&server, &a);
    drop(a);
    tokio::time::sleep(WATCHDOG + Duration::from_millis(10)).await;
    assert_eq!(server.pttl(&key), -2, "expired");
}

#[tokio::test(start_paused = true)]
async fn a_guard_keeps_the_record_after_its_client_is_dropped() {
    let server = InMemoryServer::new();
    let a = client(&server, "billing");
    let guard = a.lock("kept").unwrap().lock().await.unwrap();
    settle().await;
    let key = record(&server, &a);
    drop(a);
    tokio::time::sleep(WATCHDOG * 3).await;
    assert!(server.pttl(&key) > 0, "the lock is still held and renewed");
    guard.unlock().await.unwrap();
    tokio::time::sleep(WATCHDOG * 2).await;
    assert_eq!(server.pttl(&key), -2);
}

fn joined(info: &Option<ClientInfo>, client: &LockClient) {
    assert_eq!(info.as_ref(), Some(client.client_info()), "{info:?}");
}

#[tokio::test(start_paused = true)]
async fn describe_joins_the_holder_of_a_reentrant_lock_and_a_lean_lock() {
    let server = InMemoryServer::new();
    let (a, b) = (client(&server, "a"), client(&server, "b"));
    let held = a.lock("reentrant").unwrap().lock().await.unwrap();
    let lean = b.lean_lock("lean").unwrap().lock().await.unwrap();
    settle().await;
    let Description::Lock(info) = b.describe("reentrant").await.unwrap() else {
        panic!()
    };
    joined(&info.holders[0].client, &a);
    let Description::LeanLock(info) = a.describe("lean").await.unwrap() else {
        panic!()
    };
    joined(&info.holders[0].client, &b);
    held.unlock().await.unwrap();
    lean.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn describe_joins_readers_and_the_writer() {
    let server = InMemoryServer::new();
    let (a, b) = (client(&server, "a"), client(&server, "b"));
    let rw = a.read_write_lock("rw").unwrap();
    let ra = rw.read().lock().await.unwrap();
    let rb = b
        .read_write_lock("rw")
        .unwrap()
        .read()
        .lock()
        .await
        .unwrap();
    settle().await;
    let Description::ReadWriteLock(info) = a.describe("rw").await.unwrap() else {
        panic!()
    };
    assert_eq!(info.mode, ReadWriteMode::Read);
    for reader in &info.readers {
        let owner = reader.owner().unwrap().client_id();
        let expected = if owner == a.id() { &a } else { &b };
        joined(&reader.client, expected);
    }
    assert_eq!(info.readers.len(), 2);
    ra.unlock().await.unwrap();
    rb.unlock().await.unwrap();
    let w = b
        .read_write_lock("rw")
        .unwrap()
        .write()
        .lock()
        .await
        .unwrap();
    let Description::ReadWriteLock(info) = a.describe("rw").await.unwrap() else {
        panic!()
    };
    joined(&info.writer.unwrap().client, &b);
    w.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_fair_lock_joins_its_holder_and_its_queued_waiter() {
    let server = InMemoryServer::new();
    let (a, b) = (client(&server, "a"), client(&server, "b"));
    let held = a.fair_lock("fair").unwrap().lock().await.unwrap();
    let waiting = tokio::spawn({
        let lock = b.fair_lock("fair").unwrap();
        async move { lock.lock().await.unwrap().unlock().await }
    });
    settle().await;
    let info = a.fair_lock("fair").unwrap().info().await.unwrap();
    joined(&info.lock.holders[0].client, &a);
    assert_eq!(info.queue.len(), 1);
    joined(&info.queue[0].client, &b);
    held.unlock().await.unwrap();
    waiting.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn describe_finds_a_permits_client_from_its_next_refresh() {
    let server = InMemoryServer::new();
    let (a, b) = (client(&server, "a"), client(&server, "b"));
    let semaphore = a.permit_expirable_semaphore("permits").unwrap();
    assert!(semaphore.try_set_permits(2).await.unwrap());
    let permit = semaphore.acquire().await.unwrap();
    // A permit another library leased: no client's record names it.
    let foreign = "AAAAAAAAAAAAAAAA";
    server.zadd("{permits}:timeout", server.now_ms() + 60_000, foreign);
    let unguarded_id = "41".repeat(16);
    // The permit's id is in a's record from its next refresh on.
    tokio::time::sleep(WATCHDOG / 3 + Duration::from_millis(10)).await;
    let Description::PermitExpirableSemaphore(info) = b.describe("permits").await.unwrap() else {
        panic!()
    };
    assert_eq!(info.permits.len(), 2);
    for p in &info.permits {
        if p.id == unguarded_id {
            assert_eq!(p.client, None);
        } else {
            assert_eq!(p.id, permit.id().to_string());
            joined(&p.client, &a);
        }
    }
    permit.release().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_holder_without_a_record_shows_none_and_no_error() {
    let server = InMemoryServer::new();
    let a = client(&server, "a");
    settle().await;
    // A Redisson holder: a client id that keeps no record, a thread id.
    server
        .hset(
            "java",
            "6f0c9d1e-6b7a-4a44-9d0e-1c2b3a4d5e6f:81",
            1,
            Some(30_000),
        )
        .unwrap();
    server.hset("other", "node-3", 1, Some(30_000)).unwrap();
    for name in ["java", "other"] {
        let Description::Lock(info) = a.describe(name).await.unwrap() else {
            panic!()
        };
        assert_eq!(info.holders.len(), 1);
        assert_eq!(info.holders[0].client, None);
    }
}

/// A client that starts while its store is down (a lazily connecting
/// client) writes its record once the store answers, within a second, not
/// a whole refresh period later.
#[tokio::test(start_paused = true)]
async fn a_record_not_written_at_start_is_written_once_the_store_answers() {
    let server = InMemoryServer::new();
    server.set_down(true);
    let a = server
        .client_with(ClientConfig::default().service_name("late"))
        .unwrap();
    settle().await;
    let key = record(&server, &a);
    assert_eq!(server.pttl(&key), -2, "not written while down");
    server.set_down(false);
    tokio::time::sleep(Duration::from_millis(1010)).await;
    assert_eq!(field(&server, &key, "service").as_deref(), Some("late"));
    a.close().await;
}
