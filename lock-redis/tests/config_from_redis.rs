//! `RedisConfig::from_connection_info` / `from_client`: starting from an
//! existing redis-rs configuration, credentials and database included.

use std::time::Duration;

use lock_redis::{ClientConfig, RedisConfig};
use lock_testkit::fixtures::RedisServer;
use redis::IntoConnectionInfo;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_from_a_redis_client_connects_with_its_password_and_db() {
    let server = RedisServer::builder().password("p@ss word").start();
    let info = format!("redis://:p%40ss%20word@127.0.0.1:{}/5", server.port())
        .into_connection_info()
        .unwrap();
    let client = redis::Client::open(info).unwrap();
    let config = RedisConfig::from_client(&client)
        .unwrap()
        .key_prefix("from-info:")
        .command_timeout(Duration::from_secs(2));
    assert!(!format!("{config:?}").contains("p%40ss"), "{config:?}");
    let locks = lock_redis::connect(config, ClientConfig::default())
        .await
        .unwrap();
    let guard = locks.lock("job").unwrap().lock().await.unwrap();
    // The lock is in database 5, under the prefix.
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let exists: i64 = redis::cmd("EXISTS")
        .arg("from-info:job")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(exists, 1);
    guard.unlock().await.unwrap();
    locks.close().await;
}

#[test]
fn what_a_url_cannot_carry_is_refused() {
    // A Unix socket path that is not UTF-8.
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let path = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/\xff.sock"));
        let info = "redis+unix:///tmp/x.sock"
            .into_connection_info()
            .unwrap()
            .set_addr(redis::ConnectionAddr::Unix(path));
        let e = RedisConfig::from_connection_info(&info).unwrap_err();
        assert!(e.is_invalid_argument(), "{e:?}");
    }
}
