//! `RedisConfig` (with `ClientConfig`) read from a service's configuration
//! file (feature `serde`): human durations, defaults, secrets never printed.
#![cfg(feature = "serde")]

use std::time::Duration;

use lock_redis::{ClientConfig, RedisConfig, ReplicaSync, WaitStrategy};
use lock_testkit::fixtures::RedisServer;
use serde::Deserialize;

const SECRET: &str = "hunter2-never-printed";

/// A service's own configuration file, with a `[locks]` section.
#[derive(Deserialize)]
struct ServiceConfig {
    #[allow(dead_code)] // the service's own setting, beside ours
    name: String,
    locks: LockSettings,
}

#[derive(Deserialize)]
struct LockSettings {
    redis: RedisConfig,
    #[serde(default)]
    client: ClientConfig,
}

#[test]
fn toml_example_sets_every_field() {
    let file = format!(
        r#"
        url = "redis://app:{SECRET}@10.0.0.5:6380/2"
        key_prefix = "billing:"
        command_timeout = "1s"
        connect_timeout = "250ms"
        pool_size = 8
        calls_per_connection = 2
        replica_sync = {{ replicas = 1, timeout = "200ms" }}
        lazy_connect = true
        "#
    );
    let config: RedisConfig = toml::from_str(&file).unwrap();
    let expected = RedisConfig::new(format!("redis://app:{SECRET}@10.0.0.5:6380/2"))
        .key_prefix("billing:")
        .command_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_millis(250))
        .pool_size(8)
        .calls_per_connection(2)
        .replica_sync(1, Duration::from_millis(200))
        .lazy_connect(true);
    assert_eq!(config, expected);
    assert_eq!(
        config.connection.replica_sync,
        Some(ReplicaSync::new(1, Duration::from_millis(200)))
    );
    assert!(config.validate().is_ok());
    let shown = format!("{config:?}");
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(shown.contains("app:***@10.0.0.5"), "{shown}");
}

/// Replica sync is on by default; files turn it off with `"off"`, or set
/// the default rule's timeout alone.
#[test]
fn replica_sync_is_on_by_default_and_files_can_turn_it_off() {
    let url = r#"url = "redis://127.0.0.1/""#;
    let default: RedisConfig = toml::from_str(url).unwrap();
    assert_eq!(
        default.connection.replica_sync,
        Some(ReplicaSync::default())
    );
    let off: RedisConfig = toml::from_str(&format!("{url}\nreplica_sync = \"off\"")).unwrap();
    assert_eq!(
        off,
        RedisConfig::new("redis://127.0.0.1/").replica_sync_off()
    );
    let connected: RedisConfig =
        toml::from_str(&format!("{url}\nreplica_sync = \"connected\"")).unwrap();
    assert_eq!(connected, default);
    let timeout: RedisConfig =
        toml::from_str(&format!("{url}\nreplica_sync = {{ timeout = \"500ms\" }}")).unwrap();
    assert_eq!(
        timeout.connection.replica_sync,
        Some(ReplicaSync::connected(Duration::from_millis(500)))
    );
    let e =
        toml::from_str::<RedisConfig>(&format!("{url}\nreplica_sync = \"always\"")).unwrap_err();
    assert!(e.to_string().contains("off"), "{e}");
}

#[test]
fn only_the_url_is_required() {
    let config: RedisConfig = toml::from_str(r#"url = "redis://127.0.0.1/""#).unwrap();
    assert_eq!(config, RedisConfig::new("redis://127.0.0.1/"));
    let e = toml::from_str::<RedisConfig>(r#"key_prefix = "x""#).unwrap_err();
    assert!(e.to_string().contains("url"), "{e}");
    let json: RedisConfig =
        serde_json::from_str(r#"{ "url": "redis://127.0.0.1/", "command_timeout": "500ms" }"#)
            .unwrap();
    assert_eq!(json.connection.command_timeout, Duration::from_millis(500));
}

/// A Sentinel group names its master: its file needs no `url`.
#[test]
fn a_sentinel_file_needs_no_url() {
    let file = r#"
        key_prefix = "billing:"
        sentinel = { sentinels = ["redis://127.0.0.1:26379"], master_name = "locks" }
    "#;
    let config: RedisConfig = toml::from_str(file).unwrap();
    assert_eq!(
        config,
        RedisConfig::sentinel(["redis://127.0.0.1:26379"], "locks").key_prefix("billing:")
    );
    assert!(config.validate().is_ok());
}

#[test]
fn errors_name_the_field_but_never_the_password() {
    let cases = [
        format!("url = \"redis://:{SECRET}@h/\"\ncommand_timeout = \"soon\""),
        format!("url = \"redis://:{SECRET}@h/\"\npool_size = \"many\""),
        format!("url = \"redis://:{SECRET}@h/\"\ncommand_timeuot = \"1s\""),
    ];
    for file in cases {
        let e = toml::from_str::<RedisConfig>(&file).unwrap_err();
        assert!(!e.to_string().contains(SECRET), "{e}");
    }
    let e = toml::from_str::<RedisConfig>("url = \"redis://h/\"\ncommand_timeuot = \"1s\"")
        .unwrap_err();
    assert!(
        e.to_string().contains("unknown field `command_timeuot`"),
        "{e}"
    );
    // A URL that parses as a string but not as a Redis URL fails validation,
    // redacted.
    let bad: RedisConfig = toml::from_str(&format!("url = \"redis://:{SECRET}@h:port/\"")).unwrap();
    let e = bad.validate().unwrap_err();
    assert!(
        e.is_invalid_argument() && !e.to_string().contains(SECRET),
        "{e}"
    );
}

/// A service file's lock section connects a polling client to a
/// password-protected server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_file_connects_and_locks() {
    let server = RedisServer::builder().password(SECRET).start();
    let file = format!(
        r#"
        name = "billing"

        [locks.redis]
        url = "{}"
        command_timeout = "2s"

        [locks.client]
        watchdog_timeout = "5s"
        wait_strategy = {{ poll = {{ max = "32ms" }} }}
        "#,
        server.url()
    );
    let service: ServiceConfig = toml::from_str(&file).unwrap();
    let settings = service.locks;
    assert!(matches!(
        settings.client.wait_strategy,
        WaitStrategy::Poll(_)
    ));
    let client = lock_redis::connect(settings.redis, settings.client)
        .await
        .unwrap();
    assert_eq!(client.config().watchdog_timeout, Duration::from_secs(5));
    assert!(!format!("{client:?}").contains(SECRET));
    let guard = client.lock("from-a-file").unwrap().lock().await.unwrap();
    guard.unlock().await.unwrap();
    client.close().await;
}
