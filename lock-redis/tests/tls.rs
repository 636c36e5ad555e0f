//! `rediss://` URLs: accepted only with the `tls` feature, and a TLS
//! handshake failure is an error, not a panic.

mod common;

use lock_redis::RedisConfig;

#[cfg(feature = "tls")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_handshake_with_a_plain_server_fails_cleanly() {
    use common::TIMEOUT;
    use lock_testkit::fixtures::RedisServer;

    let server = RedisServer::start();
    let config = RedisConfig::new(format!("rediss://127.0.0.1:{}/", server.port()))
        .command_timeout(TIMEOUT)
        .connect_timeout(TIMEOUT);
    assert!(config.validate().is_ok());
    let started = std::time::Instant::now();
    let err = lock_redis::connect_env(&config).await.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert!(started.elapsed() < TIMEOUT * 3);
}

#[cfg(not(feature = "tls"))]
#[tokio::test]
async fn rediss_needs_the_tls_feature() {
    let err = lock_redis::connect_env(&RedisConfig::new("rediss://127.0.0.1:6379/"))
        .await
        .unwrap_err();
    assert!(err.is_invalid_argument(), "{err:?}");
}
