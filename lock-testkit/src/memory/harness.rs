//! The in-memory server as a conformance [`Harness`] and [`RedisLayout`]:
//! it is Redis, so it runs every check.

use async_trait::async_trait;
use lock_redis::{ClientConfig, LockClient};
use lock_script::KeyLayout;

use super::InMemoryServer;
use crate::conformance::{Harness, RedisLayout};

#[async_trait]
impl Harness for InMemoryServer {
    async fn client(&self, config: ClientConfig) -> LockClient {
        self.client_with(config).expect("valid client config")
    }
}

#[async_trait]
impl RedisLayout for InMemoryServer {
    fn layout(&self) -> KeyLayout {
        InMemoryServer::layout(self).clone()
    }

    async fn set_string(&self, key: &str, value: &str) {
        InMemoryServer::set_string(self, key, value);
    }

    async fn get_string(&self, key: &str) -> Option<String> {
        InMemoryServer::get_string(self, key)
    }

    async fn hash(&self, key: &str) -> Vec<(String, i64)> {
        InMemoryServer::hash(self, key)
    }

    async fn hset(&self, key: &str, field: &str, value: i64, pexpire_ms: Option<u64>) {
        InMemoryServer::hset(self, key, field, value, pexpire_ms).expect("hset on a hash");
    }

    async fn pttl(&self, key: &str) -> i64 {
        InMemoryServer::pttl(self, key)
    }

    async fn del(&self, key: &str) -> bool {
        InMemoryServer::del(self, key)
    }

    async fn keys(&self) -> Vec<String> {
        InMemoryServer::keys(self)
    }

    async fn publish(&self, channel: &str, message: &str) {
        InMemoryServer::publish(self, channel, message);
    }

    async fn subscribers(&self, channel: &str) -> usize {
        InMemoryServer::subscribers(self, channel)
    }

    async fn list(&self, key: &str) -> Vec<String> {
        InMemoryServer::list(self, key)
    }

    async fn enqueue(&self, key: &str, zkey: &str, score: i64, value: &str) {
        self.rpush(key, value);
        self.zadd(zkey, score, value);
    }

    async fn zscore(&self, key: &str, member: &str) -> Option<i64> {
        InMemoryServer::zscore(self, key, member)
    }

    async fn now_ms(&self) -> i64 {
        InMemoryServer::now_ms(self)
    }
}
