//! `ClusterConfig` read from a configuration file (feature `serde`).
#![cfg(feature = "serde")]

use std::time::Duration;

use lock_redis_cluster::{ClusterConfig, PubSubMode};

#[test]
fn toml_example_sets_every_field() {
    let config: ClusterConfig = toml::from_str(
        r#"
        seeds = ["redis://:s3cret@10.0.0.1:7000/", "redis://10.0.0.2:7000/"]
        key_prefix = "billing:"
        command_timeout = "2s"
        connect_timeout = "500ms"
        pool_size = 3
        calls_per_connection = 4
        max_redirects = 7
        pubsub = "classic"
        replica_sync = { replicas = 1, timeout = "200ms" }
        lazy_connect = true
        "#,
    )
    .unwrap();
    assert_eq!(
        config.seeds,
        ["redis://:s3cret@10.0.0.1:7000/", "redis://10.0.0.2:7000/"]
    );
    assert_eq!(config.connection.key_prefix, "billing:");
    assert_eq!(config.connection.command_timeout, Duration::from_secs(2));
    assert_eq!(
        config.connection.connect_timeout,
        Duration::from_millis(500)
    );
    // The connections' number and filling are shared options too.
    assert_eq!(
        (config.connection.pool_size, config.max_redirects),
        (Some(3), 7)
    );
    assert_eq!(config.connection.calls_per_connection, 4);
    assert_eq!(config.pubsub, PubSubMode::Classic);
    assert!(config.connection.lazy_connect);
    let sync = config.connection.replica_sync.expect("replica sync");
    assert_eq!(
        (sync.replicas, sync.timeout),
        (1, Duration::from_millis(200))
    );
    assert!(config.validate().is_ok());
    let shown = format!("{config:?}");
    assert!(!shown.contains("s3cret"), "{shown}");
}

#[test]
fn only_the_seeds_are_required() {
    let config: ClusterConfig =
        serde_json::from_str(r#"{ "seeds": ["redis://127.0.0.1:7000/"] }"#).unwrap();
    let defaults = ClusterConfig::new(["redis://127.0.0.1:7000/"]);
    assert_eq!(format!("{config:?}"), format!("{defaults:?}"));
    let e = toml::from_str::<ClusterConfig>("pool_size = 2").unwrap_err();
    assert!(e.to_string().contains("seeds"), "{e}");
    let e = toml::from_str::<ClusterConfig>("seeds = []\npubsub = \"loud\"").unwrap_err();
    assert!(e.to_string().contains("loud"), "{e}");
    // Unknown fields are refused, beside the shared options too.
    let e = toml::from_str::<ClusterConfig>("seeds = []\nlazy_conect = true").unwrap_err();
    assert!(e.to_string().contains("lazy_conect"), "{e}");
}
