//! Credentials asked for at every connect: [`CredentialsProvider`].
//!
//! Cloud services authenticate Redis clients with short-lived tokens used
//! as passwords: AWS ElastiCache and MemoryDB IAM tokens last 15 minutes,
//! Azure Entra ID tokens about an hour. A connection authenticates once,
//! when it is made, and a server does not end it when its token expires,
//! so what matters is that every *new* connection gets a token that is
//! valid now. The provider is therefore asked at every connect and
//! reconnect of every connection: the command connections, the pub/sub
//! connection, a Sentinel group's master lookups, and each node's
//! connections (command and pub/sub) in a cluster. A reconnect after the
//! token rotated uses the fresh one.
//!
//! Asking is bounded by the connect timeout, so a provider that fetches a
//! token over the network should cache it and refresh it ahead of its
//! expiry (an IAM token signed locally costs nothing, an Entra ID token is
//! fetched once an hour), rather than fetch one per connect.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use lock_core::{LockError, Result};
use redis::Client;
use tokio::time::{timeout_at, Instant};

/// A boxed error, what a [`CredentialsProvider`] fails with.
pub type CredentialsError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The user and password (or token) one connection authenticates with.
/// The password is never printed by `Debug`.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Credentials {
    /// The ACL user; `None` keeps the URL's user, if any (else Redis's
    /// `default` user).
    pub username: Option<String>,
    /// The password or token.
    pub password: String,
}

impl Credentials {
    /// `password` for the `default` user (or the URL's user).
    pub fn password(password: impl Into<String>) -> Self {
        Self {
            username: None,
            password: password.into(),
        }
    }

    /// `password` for the ACL user `username`.
    pub fn user(username: impl Into<String>, password: impl Into<String>) -> Self {
        Self {
            username: Some(username.into()),
            password: password.into(),
        }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"***")
            .finish()
    }
}

/// Gives the credentials of each new connection (see the
/// [module docs](self)). Set it with the `credentials` builder method of
/// any configuration
/// ([`ConnectionOptions::credentials`](crate::ConnectionOptions::credentials)).
///
/// An error fails the connect. Before the client's first connection (a
/// new client's `connect`, a lazy client's first call) that is
/// [`LockError::Unauthorized`] (the message says the provider failed):
/// the configuration may be wrong, and the caller can act on it. Once the
/// client has connected, a failed *re*connect is an outage
/// ([`LockError::Unavailable`], the provider's error in the message and as
/// the source; see [`crate::transport::ConnectionSet`]): the request never reached the
/// server, so waits ride it out and a release or a permit given back keeps
/// going in the background until the provider answers again, instead of
/// being lost over a provider failing for a moment. A provider should
/// still retry what it can itself, and keep handing out its last token
/// while that is still valid.
///
/// ```
/// use lock_redis::{async_trait, Credentials, CredentialsError, CredentialsProvider, RedisConfig};
///
/// /// Signs a fresh IAM token (valid 15 minutes) for each connection.
/// struct IamToken { user: String }
///
/// #[async_trait]
/// impl CredentialsProvider for IamToken {
///     async fn credentials(&self) -> Result<Credentials, CredentialsError> {
///         let token = sign_iam_auth_token(&self.user)?; // your AWS SDK call
///         Ok(Credentials::user(&self.user, token))
///     }
/// }
/// # fn sign_iam_auth_token(_: &str) -> Result<String, CredentialsError> { Ok("t".into()) }
///
/// let config = RedisConfig::new("rediss://my-cache.xxxxxx.cache.amazonaws.com:6379/")
///     .credentials(IamToken { user: "app".into() });
/// ```
#[async_trait]
pub trait CredentialsProvider: Send + Sync {
    /// The credentials for a connection about to be made.
    ///
    /// # Errors
    /// Whatever keeps the provider from giving credentials; the connect
    /// fails (see the trait's docs for how).
    async fn credentials(&self) -> std::result::Result<Credentials, CredentialsError>;
}

/// A provider that always gives the same credentials: what a password in
/// the URL amounts to, for code that wants a provider either way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticCredentials(pub Credentials);

#[async_trait]
impl CredentialsProvider for StaticCredentials {
    async fn credentials(&self) -> std::result::Result<Credentials, CredentialsError> {
        Ok(self.0.clone())
    }
}

/// Asks `provider`, by `deadline` (shared with the cluster transport).
///
/// # Errors
/// [`LockError::Unauthorized`] when the provider fails; a retryable
/// timeout when it did not answer by `deadline`.
#[doc(hidden)]
pub async fn fetch(
    provider: &Arc<dyn CredentialsProvider>,
    deadline: Instant,
) -> Result<Credentials> {
    match timeout_at(deadline, provider.credentials()).await {
        Ok(Ok(credentials)) => Ok(credentials),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "the credentials provider failed");
            Err(LockError::Unauthorized {
                message: format!("the credentials provider failed: {e}"),
            })
        }
        Err(_) => Err(LockError::timeout(
            "the credentials provider did not answer within the connect timeout",
        )),
    }
}

/// `client` with `credentials` instead of its own (its address, database,
/// protocol and TLS settings kept). Shared with the cluster transport.
///
/// # Errors
/// [`LockError::InvalidArgument`] when redis-rs refuses the result.
#[doc(hidden)]
pub fn apply(client: &Client, credentials: &Credentials) -> Result<Client> {
    let info = client.get_connection_info().clone();
    let mut redis = info
        .redis_settings()
        .clone()
        .set_password(&credentials.password);
    if let Some(user) = &credentials.username {
        redis = redis.set_username(user);
    }
    Client::open(info.set_redis_settings(redis))
        .map_err(|e| LockError::invalid(format!("invalid redis configuration: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    struct Failing;

    #[async_trait]
    impl CredentialsProvider for Failing {
        async fn credentials(&self) -> std::result::Result<Credentials, CredentialsError> {
            Err("token service unreachable".into())
        }
    }

    struct Never;

    #[async_trait]
    impl CredentialsProvider for Never {
        async fn credentials(&self) -> std::result::Result<Credentials, CredentialsError> {
            futures::future::pending().await
        }
    }

    #[tokio::test]
    async fn a_failing_provider_is_unauthorized() {
        let provider: Arc<dyn CredentialsProvider> = Arc::new(Failing);
        let e = fetch(&provider, Instant::now() + Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(e.is_unauthorized() && !e.is_retryable(), "{e:?}");
        assert!(e.to_string().contains("token service unreachable"), "{e}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_provider_that_never_answers_times_out() {
        let provider: Arc<dyn CredentialsProvider> = Arc::new(Never);
        let e = fetch(&provider, Instant::now() + Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(e.is_timeout(), "{e:?}");
    }

    #[test]
    fn credentials_replace_the_urls_and_keep_the_rest() {
        let client = Client::open("redis://old:pw@127.0.0.1:6390/3?protocol=resp3").unwrap();
        let fresh = apply(&client, &Credentials::user("app", "token")).unwrap();
        let info = fresh.get_connection_info();
        assert_eq!(info.redis_settings().username(), Some("app"));
        assert_eq!(info.redis_settings().password(), Some("token"));
        assert_eq!(info.redis_settings().db(), 3);
        assert_eq!(
            info.redis_settings().protocol(),
            redis::ProtocolVersion::RESP3
        );
        assert_eq!(info.addr().to_string(), "127.0.0.1:6390");
        let kept_user = apply(&client, &Credentials::password("t2")).unwrap();
        let settings = kept_user.get_connection_info().redis_settings().clone();
        assert_eq!(
            (settings.username(), settings.password()),
            (Some("old"), Some("t2"))
        );
    }

    #[test]
    fn passwords_are_not_printed() {
        let shown = format!("{:?}", StaticCredentials(Credentials::user("u", "hunter2")));
        assert!(!shown.contains("hunter2") && shown.contains('u'), "{shown}");
    }
}
