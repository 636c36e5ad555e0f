//! `rediss://`: accepted only with the `tls` feature; with it, locks and
//! unlock notices work over TLS with a custom CA and client certificates,
//! and a certificate refused on either side is a typed error
//! ([`lock_redis::LockError::Tls`]), not "unreachable" and not a panic.

#[cfg(feature = "tls")]
mod with_tls {
    use std::time::{Duration, Instant};

    use lock_redis::{ClientConfig, LockClient, LockError, RedisConfig, TlsOptions};
    use lock_testkit::fixtures::{RedisServer, TlsCerts};

    /// TLS handshakes cost more CPU than the shared tests' short timeout
    /// allows on a loaded 2-core machine.
    const TIMEOUT: Duration = Duration::from_secs(2);

    fn config(server: &RedisServer, tls: TlsOptions) -> RedisConfig {
        RedisConfig::new(server.tls_url())
            .tls(tls)
            .command_timeout(TIMEOUT)
            .connect_timeout(TIMEOUT)
    }

    fn trusting(certs: &TlsCerts) -> TlsOptions {
        TlsOptions::new().ca_pem(certs.ca_pem())
    }

    fn with_client_cert(certs: &TlsCerts) -> TlsOptions {
        trusting(certs).client_cert_pem(certs.client_cert_pem(), certs.client_key_pem())
    }

    async fn connect(config: RedisConfig) -> lock_redis::Result<LockClient> {
        lock_redis::connect(config, ClientConfig::default()).await
    }

    /// A waiter on one client is woken by the other's unlock notice, which
    /// travels over the TLS pub/sub connection: without it the waiter would
    /// sleep until the 30 s lease ran out.
    async fn hand_over(holder: &LockClient, waiter: &LockClient) {
        let guard = holder.lock("tls:job").unwrap().lock().await.unwrap();
        let lock = waiter.lock("tls:job").unwrap();
        let waiting = tokio::spawn(async move {
            let started = Instant::now();
            let got = lock.try_lock_for(Duration::from_secs(3)).await.unwrap();
            (got.is_some(), started.elapsed())
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        guard.unlock().await.unwrap();
        let (got, waited) = waiting.await.unwrap();
        assert!(got, "the waiter did not get the lock");
        assert!(
            waited < Duration::from_secs(2),
            "woken only after {waited:?}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn locks_and_notices_work_over_tls_with_a_custom_ca() {
        let certs = TlsCerts::generate();
        let server = RedisServer::builder().tls(&certs).start();
        let a = connect(config(&server, trusting(&certs))).await.unwrap();
        let b = connect(config(&server, trusting(&certs))).await.unwrap();
        hand_over(&a, &b).await;
        let fenced = a.fenced_lock("tls:fenced").unwrap().lock().await.unwrap();
        assert_eq!(fenced.fencing_token(), 1);
        fenced.unlock().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn mutual_tls_works_with_the_client_certificate() {
        let certs = TlsCerts::generate();
        let server = RedisServer::builder().mtls(&certs).start();
        let a = connect(config(&server, with_client_cert(&certs)))
            .await
            .unwrap();
        let b = connect(config(&server, with_client_cert(&certs)))
            .await
            .unwrap();
        hand_over(&a, &b).await;
    }

    fn assert_refused_quickly(err: &LockError, started: Instant, says: &str) {
        assert!(err.is_tls(), "{err:?}");
        assert!(!err.is_retryable(), "{err:?}");
        assert!(err.to_string().contains(says), "{err}");
        assert!(started.elapsed() < TIMEOUT, "{:?}", started.elapsed());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_server_requiring_a_client_certificate_refuses_none_clearly() {
        let certs = TlsCerts::generate();
        let server = RedisServer::builder().mtls(&certs).start();
        let started = Instant::now();
        let err = connect(config(&server, trusting(&certs)))
            .await
            .unwrap_err();
        assert_refused_quickly(&err, started, "refused the TLS client certificate");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_certificate_of_another_ca_is_refused_clearly() {
        let certs = TlsCerts::generate();
        let other = TlsCerts::generate();
        let server = RedisServer::builder().mtls(&certs).start();
        let tls = trusting(&certs).client_cert_pem(other.client_cert_pem(), other.client_key_pem());
        let started = Instant::now();
        let err = connect(config(&server, tls)).await.unwrap_err();
        assert_refused_quickly(&err, started, "refused the TLS client certificate");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_server_certificate_of_another_ca_is_refused_clearly() {
        let certs = TlsCerts::generate();
        let other = TlsCerts::generate();
        let server = RedisServer::builder().tls(&certs).start();
        for tls in [trusting(&other), TlsOptions::new()] {
            // Another CA, or the system's roots, which know no test CA.
            let started = Instant::now();
            let err = connect(config(&server, tls)).await.unwrap_err();
            assert_refused_quickly(&err, started, "certificate is not trusted");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tls_spoken_to_a_plain_server_fails_cleanly() {
        let server = RedisServer::start();
        let config = RedisConfig::new(format!("rediss://127.0.0.1:{}/", server.port()))
            .command_timeout(TIMEOUT)
            .connect_timeout(TIMEOUT);
        assert!(config.validate().is_ok());
        let started = Instant::now();
        let err = lock_redis::connect_env(&config).await.unwrap_err();
        assert!(err.is_retryable(), "{err:?}");
        assert!(started.elapsed() < TIMEOUT * 3);
    }

    #[test]
    fn bad_tls_options_are_refused_before_any_io() {
        let certs = TlsCerts::generate();
        let rediss = "rediss://127.0.0.1:1/";
        let cases = [
            (
                RedisConfig::new("redis://127.0.0.1:1/").tls(trusting(&certs)),
                "rediss://",
            ),
            (
                RedisConfig::new(rediss).tls(TlsOptions::new().ca_pem(b"not a pem".to_vec())),
                "CA",
            ),
            (
                RedisConfig::new(rediss).tls(
                    TlsOptions::new().client_cert_pem(certs.client_cert_pem(), b"nope".to_vec()),
                ),
                "key",
            ),
            (
                RedisConfig::new(rediss).tls({
                    let mut tls = with_client_cert(&certs);
                    tls.client_key_pem = None;
                    tls
                }),
                "needs its key",
            ),
        ];
        for (config, says) in cases {
            let err = config.validate().unwrap_err();
            assert!(err.is_invalid_argument(), "{err:?}");
            assert!(err.to_string().contains(says), "{err} should say {says}");
        }
        assert!(!format!(
            "{:?}",
            RedisConfig::new(rediss).tls(with_client_cert(&certs))
        )
        .contains("PRIVATE KEY"));
    }

    #[test]
    fn options_read_from_files() {
        let certs = TlsCerts::generate();
        let tls = TlsOptions::from_files(
            Some(&certs.ca_path()),
            Some(&certs.client_cert_path()),
            Some(&certs.client_key_path()),
        )
        .unwrap();
        assert_eq!(tls, with_client_cert(&certs));
        let missing = certs.dir().join("missing.pem");
        let err = TlsOptions::from_files(Some(&missing), None, None).unwrap_err();
        assert!(
            err.is_invalid_argument() && err.to_string().contains("missing.pem"),
            "{err}"
        );
        let err = TlsOptions::from_files(None, Some(&certs.client_cert_path()), None).unwrap_err();
        assert!(err.is_invalid_argument(), "{err}");
    }
}

#[cfg(not(feature = "tls"))]
#[tokio::test]
async fn rediss_needs_the_tls_feature() {
    use lock_redis::RedisConfig;
    let err = lock_redis::connect_env(&RedisConfig::new("rediss://127.0.0.1:6379/"))
        .await
        .unwrap_err();
    assert!(err.is_invalid_argument(), "{err:?}");
    let tls = lock_redis::TlsOptions::new().ca_pem(b"x".to_vec());
    let err = RedisConfig::new("redis://127.0.0.1:6379/")
        .tls(tls)
        .validate()
        .unwrap_err();
    assert!(err.to_string().contains("`tls` feature"), "{err}");
}
