//! The polling deployment variant: every check, with clients that wait by
//! polling ([`WaitStrategy::Poll`]) and never subscribe.

use async_trait::async_trait;
use lock_core::{ClientConfig, LockClient, WaitStrategy};
use lock_script::KeyLayout;

use super::{Harness, Kind};

/// A harness whose clients wait by polling: `Polling(h, WaitStrategy::poll())`
/// runs a suite against `h`'s store with every client's
/// [`ClientConfig::wait_strategy`] replaced. Checks that look at how a
/// waiter learns of an unlock ask the client's configuration
/// ([`super::subscribes`]).
pub struct Polling<H>(pub H, pub WaitStrategy);

impl<H> Polling<H> {
    /// `harness` with the default polling backoff (1 ms doubling to 128 ms).
    pub fn new(harness: H) -> Self {
        Self(harness, WaitStrategy::poll())
    }
}

#[async_trait]
impl<H: Harness> Harness for Polling<H> {
    fn kind(&self) -> Kind {
        self.0.kind()
    }
    async fn client(&self, config: ClientConfig) -> LockClient {
        self.0.client(config.wait_strategy(self.1)).await
    }
    fn layout(&self) -> KeyLayout {
        self.0.layout()
    }
    async fn set_string(&self, key: &str, value: &str) {
        self.0.set_string(key, value).await;
    }
    async fn get_string(&self, key: &str) -> Option<String> {
        self.0.get_string(key).await
    }
    async fn hash(&self, key: &str) -> Vec<(String, i64)> {
        self.0.hash(key).await
    }
    async fn hset(&self, key: &str, field: &str, value: i64, pexpire_ms: Option<u64>) {
        self.0.hset(key, field, value, pexpire_ms).await;
    }
    async fn pttl(&self, key: &str) -> i64 {
        self.0.pttl(key).await
    }
    async fn del(&self, key: &str) -> bool {
        self.0.del(key).await
    }
    async fn keys(&self) -> Vec<String> {
        self.0.keys().await
    }
    async fn publish(&self, channel: &str, message: &str) {
        self.0.publish(channel, message).await;
    }
    async fn subscribers(&self, channel: &str) -> usize {
        self.0.subscribers(channel).await
    }
    async fn list(&self, key: &str) -> Vec<String> {
        self.0.list(key).await
    }
    async fn enqueue(&self, key: &str, zkey: &str, score: i64, value: &str) {
        self.0.enqueue(key, zkey, score, value).await;
    }
    async fn zscore(&self, key: &str, member: &str) -> Option<i64> {
        self.0.zscore(key, member).await
    }
    async fn now_ms(&self) -> i64 {
        self.0.now_ms().await
    }
}
