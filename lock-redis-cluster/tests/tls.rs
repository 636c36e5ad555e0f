//! A `rediss://` cluster: the seeds, every node connection learnt from
//! `CLUSTER SLOTS` and the sharded pub/sub connections all speak TLS with
//! the configured CA and client certificate, on a cluster whose bus and
//! replication are TLS too; a certificate refused on either side is
//! [`LockError::Tls`](lock_redis_cluster::LockError::Tls).
#![cfg(feature = "tls")]

use std::time::{Duration, Instant};

use lock_redis_cluster::{ClientConfig, ClusterConfig, LockClient, PubSubMode, TlsOptions};
use lock_testkit::fixtures::{RedisCluster, TlsCerts};

fn config(cluster: &RedisCluster, tls: TlsOptions) -> ClusterConfig {
    ClusterConfig::new(cluster.tls_seed_urls())
        .tls(tls)
        .pubsub(PubSubMode::Sharded)
        .command_timeout(Duration::from_secs(3))
        .connect_timeout(Duration::from_secs(1))
}

fn with_client_cert(certs: &TlsCerts) -> TlsOptions {
    TlsOptions::new()
        .ca_pem(certs.ca_pem())
        .client_cert_pem(certs.client_cert_pem(), certs.client_key_pem())
}

async fn connect(config: ClusterConfig) -> lock_redis_cluster::Result<LockClient> {
    lock_redis_cluster::connect(config, ClientConfig::default()).await
}

/// Names whose slots lie on every master of a 3-master cluster (slots 0-5460,
/// 5461-10922 and 10923-16383).
fn names_on_every_master(cluster: &RedisCluster) -> Vec<String> {
    let mut names = Vec::new();
    let mut masters = Vec::new();
    for i in 0.. {
        let name = format!("tls:{i}");
        let master = cluster.master_of_slot(cluster.keyslot(&name));
        if !masters.contains(&master) {
            masters.push(master);
            names.push(name);
        }
        if masters.len() == 3 {
            return names;
        }
    }
    unreachable!("the loop returns once every master has a name")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutual_tls_cluster_serves_locks_and_wakes_waiters_by_sharded_pubsub() {
    let certs = TlsCerts::generate();
    let cluster = RedisCluster::builder().mtls(&certs).start();
    let holder = connect(config(&cluster, with_client_cert(&certs)))
        .await
        .unwrap();
    let waiter = connect(config(&cluster, with_client_cert(&certs)))
        .await
        .unwrap();
    for name in names_on_every_master(&cluster) {
        let guard = holder.fenced_lock(&name).unwrap().lock().await.unwrap();
        let lock = waiter.fenced_lock(&name).unwrap();
        let waiting = tokio::spawn(async move {
            let started = Instant::now();
            let got = lock.try_lock_for(Duration::from_secs(3)).await.unwrap();
            (got.map(|g| g.fencing_token()), started.elapsed())
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let first = guard.fencing_token();
        guard.unlock().await.unwrap();
        // Without the notice over the TLS subscriber connection the waiter
        // would sleep until the 30 s lease ran out.
        let (token, waited) = waiting.await.unwrap();
        assert_eq!(token, Some(first + 1), "{name}");
        assert!(
            waited < Duration::from_secs(2),
            "{name}: woken after {waited:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_cluster_refuses_foreign_certificates_clearly() {
    let certs = TlsCerts::generate();
    let other = TlsCerts::generate();
    let cluster = RedisCluster::builder()
        .mtls(&certs)
        .replicas_per_master(0)
        .start();
    let cases = [
        // The cluster's certificate is not signed by the CA we trust.
        (with_client_cert(&other), "not trusted"),
        // We present no client certificate.
        (
            TlsOptions::new().ca_pem(certs.ca_pem()),
            "refused the TLS client certificate",
        ),
    ];
    for (tls, says) in cases {
        let started = Instant::now();
        let err = connect(config(&cluster, tls)).await.unwrap_err();
        assert!(err.is_tls(), "{err:?}");
        assert!(!err.is_retryable(), "{err:?}");
        assert!(err.to_string().contains(says), "{err}");
        assert!(started.elapsed() < Duration::from_secs(3));
    }
    // TLS options on redis:// seeds are a configuration error.
    let plain = ClusterConfig::new(cluster.seed_urls()).tls(with_client_cert(&certs));
    assert!(plain.validate().unwrap_err().is_invalid_argument());
}
