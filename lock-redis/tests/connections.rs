//! The command connections: one round trip per operation, few failed calls
//! when connections break, many tasks sharing few connections.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use lock_core::backend::ExclusiveKind;
use lock_testkit::eventually;
use lock_testkit::fixtures::redis::Value;
use lock_testkit::fixtures::RedisServer;

fn text(value: Value) -> String {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes).unwrap(),
        Value::VerbatimString { text, .. } => text,
        other => panic!("expected text, got {other:?}"),
    }
}

/// How often the server ran `command` since the last `CONFIG RESETSTAT`.
fn calls(server: &RedisServer, command: &str) -> u64 {
    let stats = text(server.cmd(&["INFO", "commandstats"]));
    let prefix = format!("cmdstat_{command}:calls=");
    stats
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
}

/// How many client connections last ran `command` (`CLIENT LIST`).
fn clients_last_running(server: &RedisServer, command: &str) -> usize {
    let field = format!("cmd={command}");
    text(server.cmd(&["CLIENT", "LIST"]))
        .lines()
        .filter(|line| line.split(' ').any(|f| f == field))
        .count()
}

/// Runs `n` acquire + release pairs on fresh names; returns how many
/// operations failed (each failure must be retryable).
async fn run_pairs(backend: &RedisBackend, tag: &str, n: usize) -> usize {
    let mut failed = 0;
    for i in 0..n {
        let name = name(&format!("{tag}-{i}"));
        let owner = owner();
        match backend.try_acquire(&acquire(&name, owner, 10_000)).await {
            Ok(_) => {}
            Err(e) => {
                assert!(e.is_retryable(), "{e:?}");
                failed += 1;
                continue;
            }
        }
        if let Err(e) = backend.release(&release(&name, owner, 10_000)).await {
            assert!(e.is_retryable(), "{e:?}");
            failed += 1;
        }
    }
    failed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_operation_is_one_round_trip() {
    let env = env().await;
    // Every connection made before the stats are reset, so connecting does
    // not count.
    assert_eq!(run_pairs(&env.backend, "warm", 16).await, 0);
    env.server.cmd(&["CONFIG", "RESETSTAT"]);

    assert_eq!(run_pairs(&env.backend, "counted", 100).await, 0);

    // The pub/sub connection pings only after 10 s idle; this takes far less.
    assert_eq!(calls(&env.server, "evalsha"), 200);
    assert_eq!(calls(&env.server, "ping"), 0);
    assert_eq!(calls(&env.server, "unwatch"), 0);
    assert_eq!(calls(&env.server, "script|load"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_fails_about_one_call() {
    let mut env = env_with(|c| c.pool_size(16).calls_per_connection(0)).await;
    // Connect every slot.
    assert_eq!(run_pairs(&env.backend, "before", 32).await, 0);
    assert_eq!(clients_last_running(&env.server, "evalsha"), 16);

    env.server.restart();
    let failed = run_pairs(&env.backend, "after", 50).await;
    assert!((1..=2).contains(&failed), "{failed} calls failed");
    // Working again, and every slot reconnected.
    assert_eq!(run_pairs(&env.backend, "settled", 16).await, 0);
    assert_eq!(clients_last_running(&env.server, "evalsha"), 16);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_connections_fail_about_one_call() {
    let env = env_with(|c| c.pool_size(16).calls_per_connection(0)).await;
    assert_eq!(run_pairs(&env.backend, "before", 32).await, 0);
    assert!(env.server.kill_normal_clients() >= 16);

    let failed = run_pairs(&env.backend, "after", 50).await;
    assert!((1..=2).contains(&failed), "{failed} calls failed");
    assert_eq!(run_pairs(&env.backend, "settled", 16).await, 0);
    assert_eq!(clients_last_running(&env.server, "evalsha"), 16);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tasks_share_few_connections() {
    let env = env_with(|c| c.pool_size(2)).await;
    let backend = Arc::new(env.backend);
    let tasks: Vec<_> = (0..64)
        .map(|task| {
            let backend = backend.clone();
            tokio::spawn(async move {
                for i in 0..50 {
                    let name = name(&format!("many-{task}-{i}"));
                    let owner = owner();
                    must_acquire(&backend, &acquire(&name, owner, 10_000)).await;
                    assert_eq!(
                        must_release(&backend, &release(&name, owner, 10_000)).await,
                        lock_core::backend::ReleaseOutcome::Released
                    );
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(clients_last_running(&env.server, "evalsha"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_backends_fail_with_closed() {
    let env = env().await;
    assert_eq!(run_pairs(&env.backend, "open", 2).await, 0);
    env.backend.close().await;
    let err = env
        .backend
        .try_acquire(&acquire(&name("shut"), owner(), 1_000))
        .await
        .unwrap_err();
    assert!(matches!(err, lock_redis::LockError::Closed), "{err:?}");
    // The command connections are gone from the server.
    eventually(
        Duration::from_secs(2),
        "command connections closed",
        || async { clients_last_running(&env.server, "evalsha") == 0 },
    )
    .await;
}

/// A database index past the server's `databases` (16) is a configuration
/// to fix: `InvalidArgument`, naming the setting, not `Protocol`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_index_out_of_range_is_an_invalid_argument() {
    let server = RedisServer::start();
    let url = format!("{}99", server.url());
    let e = lock_redis::connect(
        lock_redis::RedisConfig::new(url),
        lock_redis::ClientConfig::default(),
    )
    .await
    .unwrap_err();
    assert!(e.is_invalid_argument(), "{e:?}");
    assert!(e.to_string().contains("databases"), "{e}");
}
