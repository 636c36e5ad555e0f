//! Rotating credentials (`CredentialsProvider`): the provider is asked at
//! every connect and reconnect, command and pub/sub connections alike, so
//! after the server's password rotates and the connections are killed the
//! client comes back with the fresh token; a provider that fails is
//! `LockError::Unauthorized`, at connect or (lazily) at the first call, and
//! an outage (`Unavailable`, ridden out, releases kept going) for a client
//! that connected before.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lock_redis::{
    async_trait, ClientConfig, ConnectionOptions, Credentials, CredentialsError,
    CredentialsProvider, LockClient, RedisConfig, StaticCredentials,
};
use lock_testkit::fixtures::RedisServer;

const TIMEOUT: Duration = Duration::from_secs(2);
const USER: &str = "rotating";

/// Hands out whatever token the test put in, counting the calls.
#[derive(Clone, Default)]
struct Rotating {
    token: Arc<Mutex<String>>,
    calls: Arc<AtomicUsize>,
}

impl Rotating {
    fn new(token: &str) -> Self {
        let provider = Self::default();
        provider.rotate(token);
        provider
    }

    fn rotate(&self, token: &str) {
        *self.token.lock().unwrap() = token.to_owned();
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl CredentialsProvider for Rotating {
    async fn credentials(&self) -> Result<Credentials, CredentialsError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(Credentials::user(USER, self.token.lock().unwrap().clone()))
    }
}

struct Broken;

#[async_trait]
impl CredentialsProvider for Broken {
    async fn credentials(&self) -> Result<Credentials, CredentialsError> {
        Err("the token service said no".into())
    }
}

/// The server, with `USER` allowed everything under `token`, and its
/// default user left open for the test's admin commands.
fn server_with_user(token: &str) -> RedisServer {
    let server = RedisServer::start();
    let password = format!(">{token}");
    server.cmd(&[
        "ACL", "SETUSER", USER, "reset", "on", &password, "~*", "&*", "+@all",
    ]);
    server
}

fn rotate_on_server(server: &RedisServer, token: &str) {
    let password = format!(">{token}");
    server.cmd(&["ACL", "SETUSER", USER, "resetpass", &password]);
}

/// Kills every connection of `USER`, command and pub/sub.
fn kill_user_connections(server: &RedisServer) {
    server.cmd(&["CLIENT", "KILL", "USER", USER]);
}

fn config(server: &RedisServer, provider: impl CredentialsProvider + 'static) -> RedisConfig {
    RedisConfig::new(server.url())
        .command_timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
        .credentials(provider)
}

async fn connect(config: RedisConfig) -> lock_redis::Result<LockClient> {
    lock_redis::connect(config, ClientConfig::default()).await
}

/// Holds `name` with `client` while another owner of the same client
/// waits for it over pub/sub, then releases: the waiter gets it by the
/// unlock notice (the lease is 30 s, far beyond the wait allowed here), so
/// the pub/sub connection is authenticated and subscribed.
async fn handoff(server: &RedisServer, client: &LockClient, name: &str) {
    let guard = client.lock(name).unwrap().lock().await.unwrap();
    let lock = client.lock(name).unwrap();
    // Another owner: every `lock()` takes the lock for a new one.
    let waiting = tokio::spawn(async move { lock.lock().await });
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let subscribed = tokio::time::timeout(Duration::from_secs(5), async {
        while numsub(server, &channel) == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(subscribed.is_ok(), "the waiter never subscribed");
    guard.unlock().await.unwrap();
    let taken = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the unlock notice wakes the waiter")
        .unwrap()
        .unwrap();
    taken.unlock().await.unwrap();
}

fn numsub(server: &RedisServer, channel: &str) -> i64 {
    use lock_testkit::fixtures::redis::Value;
    match server.cmd(&["PUBSUB", "NUMSUB", channel]) {
        Value::Array(reply) => match reply.get(1) {
            Some(Value::Int(n)) => *n,
            _ => 0,
        },
        _ => 0,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_rotation_the_client_reconnects_with_the_fresh_token() {
    let server = server_with_user("token-1");
    let provider = Rotating::new("token-1");
    let client = connect(config(&server, provider.clone())).await.unwrap();
    handoff(&server, &client, "rotating").await;
    let before = provider.calls();
    assert!(before >= 2, "a command and a pub/sub connection: {before}");

    rotate_on_server(&server, "token-2");
    provider.rotate("token-2");
    kill_user_connections(&server);
    handoff(&server, &client, "rotating").await;
    assert!(provider.calls() >= before + 2, "asked again at reconnect");
    client.close().await;
}

/// An established client whose reconnect is refused (the server rotated
/// the token before the provider did) is in an outage, not refused: the
/// request never reached the server. A try says so (retryable, the
/// refusal in the message and as the source), and a wait rides it until
/// the provider has the new token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_token_after_a_rotation_is_an_outage_the_waits_ride() {
    let server = server_with_user("token-1");
    let provider = Rotating::new("token-1");
    let client = connect(config(&server, provider.clone())).await.unwrap();
    let lock = client.lock("stale").unwrap();
    lock.lock().await.unwrap().unlock().await.unwrap();

    // The server moves on; the provider does not, yet.
    rotate_on_server(&server, "token-2");
    kill_user_connections(&server);
    let e = lock.try_lock().await.unwrap_err();
    assert!(e.is_unavailable() && e.is_retryable(), "{e:?}");
    assert!(e.to_string().contains("reconnecting"), "{e}");
    let cause = std::error::Error::source(&e).expect("the refusal is the source");
    assert!(
        cause.to_string().contains("refused the credentials"),
        "{cause}"
    );

    let waiting = tokio::spawn(async move { lock.lock().await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "the wait ended: {waiting:?}");
    provider.rotate("token-2");
    let guard = tokio::time::timeout(WITHIN, waiting)
        .await
        .expect("the wait ends once the provider has the token")
        .unwrap()
        .expect("and gets the lock");
    guard.unlock().await.unwrap();
    client.close().await;
}

/// Fails while told to, else gives `USER`'s token: a token service that is
/// down for a moment.
#[derive(Clone, Default)]
struct Flaky {
    failing: Arc<std::sync::atomic::AtomicBool>,
    token: Arc<Mutex<String>>,
}

impl Flaky {
    fn fail_for(&self, outage: Duration) {
        self.failing.store(true, Ordering::SeqCst);
        let failing = Arc::clone(&self.failing);
        tokio::spawn(async move {
            tokio::time::sleep(outage).await;
            failing.store(false, Ordering::SeqCst);
        });
    }
}

#[async_trait]
impl CredentialsProvider for Flaky {
    async fn credentials(&self) -> Result<Credentials, CredentialsError> {
        if self.failing.load(Ordering::SeqCst) {
            return Err("the token service is down".into());
        }
        Ok(Credentials::user(USER, self.token.lock().unwrap().clone()))
    }
}

/// Bounds "it did finish" generously: a loaded machine is slow, never this
/// slow.
const WITHIN: Duration = Duration::from_secs(20);

/// Polls `available` until it reads `want`, within [`WITHIN`].
async fn until_available(sem: &lock_redis::Semaphore, want: i64) {
    let reached = tokio::time::timeout(WITHIN, async {
        loop {
            if sem.available_permits().await.ok() == Some(want) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        reached.is_ok(),
        "never {want} permits free: {:?}",
        sem.available_permits().await
    );
}

/// Permits given back while the connections were killed and the provider
/// failed for half a second are free once it recovers (issue 37, item 2):
/// the reconnect failing proves the release never reached the server, so
/// it goes on in the background instead of ending with `Unauthorized`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_given_back_while_the_provider_fails_are_not_lost() {
    let server = server_with_user("token-1");
    let provider = Flaky::default();
    provider.token.lock().unwrap().push_str("token-1");
    let client = connect(config(&server, provider.clone())).await.unwrap();
    let sem = client.semaphore("flaky-provider").unwrap();
    assert!(sem.try_set_permits(2).await.unwrap());
    let released = sem.acquire().await.unwrap();
    let dropped = sem.acquire().await.unwrap();

    provider.fail_for(Duration::from_millis(500));
    kill_user_connections(&server);
    if let Err(e) = released.release().await {
        // It outlived the retry policy: it goes on in the background.
        assert!(e.is_retryable(), "{e:?}");
    }
    drop(dropped);
    until_available(&sem, 2).await;
    client.close().await;
}

/// A wait that meets the provider failing rides it out and gets the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_rides_out_a_failing_provider() {
    let server = server_with_user("token-1");
    let provider = Flaky::default();
    provider.token.lock().unwrap().push_str("token-1");
    let client = connect(config(&server, provider.clone())).await.unwrap();
    let lock = client.lock("flaky-wait").unwrap();
    lock.lock().await.unwrap().unlock().await.unwrap();

    provider.fail_for(Duration::from_secs(1));
    kill_user_connections(&server);
    let guard = tokio::time::timeout(WITHIN, lock.lock())
        .await
        .expect("the wait ends once the provider recovers")
        .expect("and gets the lock");
    guard.unlock().await.unwrap();
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_provider_is_unauthorized_at_connect_or_first_use() {
    let server = server_with_user("token-1");
    let e = connect(config(&server, Broken)).await.unwrap_err();
    assert!(e.is_unauthorized() && !e.is_retryable(), "{e:?}");
    assert!(e.to_string().contains("the token service said no"), "{e}");

    let lazy = connect(config(&server, Broken).lazy_connect(true))
        .await
        .unwrap();
    let e = lazy.lock("lazy").unwrap().try_lock().await.unwrap_err();
    assert!(e.is_unauthorized(), "{e:?}");
    lazy.close().await;
}

/// A static provider is what a password in the URL amounts to; the same
/// options serve any configuration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_credentials_in_shared_options() {
    let server = server_with_user("fixed");
    let shared = ConnectionOptions::new()
        .command_timeout(TIMEOUT)
        .credentials(StaticCredentials(Credentials::user(USER, "fixed")));
    let client = connect(RedisConfig::new(server.url()).connection(shared))
        .await
        .unwrap();
    let guard = client.lock("static").unwrap().lock().await.unwrap();
    // Its connection is the provider's user's, not the open default user's.
    let ours = format!("{:?}", server.cmd(&["CLIENT", "LIST"]));
    assert!(ours.contains("user=rotating"), "{ours}");
    guard.unlock().await.unwrap();
    client.close().await;
}

/// Sentinel: the provider's credentials are the master's, used to check
/// the master the sentinels name and for every connection to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_master_is_reached_with_the_providers_credentials() {
    use lock_testkit::fixtures::{SentinelGroup, SENTINEL_MASTER_NAME};

    let group =
        tokio::task::block_in_place(|| SentinelGroup::start_minimal_with_password("m4ster"));
    let base = RedisConfig::sentinel(group.sentinel_urls(), SENTINEL_MASTER_NAME)
        .command_timeout(TIMEOUT)
        .connect_timeout(TIMEOUT);
    let e = connect(base.clone()).await.unwrap_err();
    assert!(e.is_unauthorized(), "no credentials: {e:?}");
    let client = connect(base.credentials(StaticCredentials(Credentials::password("m4ster"))))
        .await
        .unwrap();
    let guard = client.lock("via-sentinel").unwrap().lock().await.unwrap();
    guard.unlock().await.unwrap();
    client.close().await;
}
