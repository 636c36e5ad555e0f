//! lockctl is built with TLS: `rediss://` with `--tls-ca`, `--tls-cert`
//! and `--tls-key`, on one server and on a cluster; a refused certificate
//! is exit 77 (one line), a missing or half-given TLS file exit 64.

use crate::common;

use std::path::Path;

use common::*;
use lock_testkit::fixtures::{RedisCluster, RedisServer, TlsCerts};

fn tls_flags<'a>(ca: &'a Path, cert: &'a Path, key: &'a Path) -> Vec<&'a str> {
    vec![
        "--tls-ca",
        ca.to_str().unwrap(),
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]
}

#[test]
fn run_and_status_over_mutual_tls() {
    let certs = TlsCerts::generate();
    let server = RedisServer::builder().mtls(&certs).start();
    let (ca, cert, key) = (
        certs.ca_path(),
        certs.client_cert_path(),
        certs.client_key_path(),
    );
    let flags = tls_flags(&ca, &cert, &key);
    let mut args = flags.clone();
    args.extend([
        "run",
        "tls-job",
        "--fenced",
        "--",
        "sh",
        "-c",
        "echo $LOCK_TOKEN",
    ]);
    let output = run(&server.tls_url(), &args);
    assert_eq!(code(output.status), 0, "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "1\n");

    let mut args = flags.clone();
    args.extend(["status", "tls-job", "--json"]);
    let output = run(&server.tls_url(), &args);
    assert_eq!(code(output.status), 0, "{output:?}");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["locked"], false, "{json}");
}

#[test]
fn refused_certificates_exit_77_with_one_clear_line() {
    let certs = TlsCerts::generate();
    let other = TlsCerts::generate();
    let server = RedisServer::builder().mtls(&certs).start();
    let (ca, cert, key) = (
        certs.ca_path(),
        certs.client_cert_path(),
        certs.client_key_path(),
    );
    let other_ca = other.ca_path();
    let cases = [
        // The server's certificate is not signed by the CA we trust.
        (tls_flags(&other_ca, &cert, &key), "not trusted"),
        // We present no client certificate.
        (
            vec!["--tls-ca", ca.to_str().unwrap()],
            "refused the TLS client certificate",
        ),
    ];
    for (flags, says) in cases {
        let mut args = flags;
        args.extend(["run", "job", "--", "true"]);
        let output = run(&server.tls_url(), &args);
        assert_eq!(code(output.status), 77, "{output:?}");
        let line = one_error_line(&output);
        assert!(line.contains(says), "{line}");
    }
}

#[test]
fn missing_or_half_given_tls_files_exit_64() {
    let certs = TlsCerts::generate();
    let missing = certs.dir().join("missing.pem");
    let (ca, cert) = (certs.ca_path(), certs.client_cert_path());
    let (tls, plain) = ("rediss://127.0.0.1:1/", "redis://127.0.0.1:1/");
    for (url, args, says) in [
        (
            tls,
            vec!["--tls-ca", missing.to_str().unwrap(), "status", "x"],
            "missing.pem",
        ),
        (
            tls,
            vec!["--tls-cert", cert.to_str().unwrap(), "status", "x"],
            "--tls-key",
        ),
        // TLS files for a plain URL.
        (
            plain,
            vec!["--tls-ca", ca.to_str().unwrap(), "status", "x"],
            "rediss://",
        ),
    ] {
        let output = run(url, &args);
        assert_eq!(code(output.status), 64, "{args:?}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{stderr}");
    }
}

#[test]
fn run_on_a_tls_cluster() {
    let certs = TlsCerts::generate();
    let cluster = RedisCluster::builder()
        .mtls(&certs)
        .replicas_per_master(0)
        .start();
    let seeds = cluster.tls_seed_urls()[..2].join(",");
    let (ca, cert, key) = (
        certs.ca_path(),
        certs.client_cert_path(),
        certs.client_key_path(),
    );
    let mut global = vec!["--cluster", seeds.as_str()];
    global.extend(tls_flags(&ca, &cert, &key));
    // --url points nowhere: --cluster overrides it.
    let nowhere = "redis://127.0.0.1:1";

    let dir = tempfile::tempdir().unwrap();
    let spawn = || contender(nowhere, &global, "tls-cluster-job", dir.path());
    let (a, b) = (spawn(), spawn());
    for proc in [a, b] {
        let (status, stderr) = proc.wait(PATIENCE);
        assert_eq!(code(status), 0, "{stderr}");
    }
    let log = std::fs::read_to_string(dir.path().join("f")).unwrap();
    assert_eq!(log, "start\nend\nstart\nend\n");

    let mut args = vec![
        "--cluster",
        seeds.as_str(),
        "--tls-ca",
        ca.to_str().unwrap(),
    ];
    args.extend(["status", "x"]);
    let output = run(nowhere, &args);
    assert_eq!(code(output.status), 77, "no client certificate: {output:?}");
    assert!(one_error_line(&output).contains("client certificate"));
}
