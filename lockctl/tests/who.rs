//! `lockctl status` names who holds a lock: the host, pid and service of
//! the holder's client, from the record every client of ours keeps.

use crate::common;

use common::*;
use lock_redis::{ClientConfig, RedisConfig};
use lock_testkit::fixtures::RedisServer;
use serde_json::json;

/// A client of this test process, named `payroll`, holds `held` while
/// `lockctl status` looks, text and JSON.
#[test]
fn status_shows_the_host_pid_and_service_of_a_holder() {
    let server = RedisServer::start();
    let url = server.url();
    // The client lives on its own thread, whose runtime runs its record
    // task while this thread runs lockctl.
    let (info_tx, info_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    let holder_url = url.clone();
    let holder = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let redis = RedisConfig::new(holder_url);
            let config = ClientConfig::default().service_name("payroll");
            let client = lock_redis::connect(redis, config).await?;
            let guard = client.lock("held")?.lock().await?;
            info_tx.send(client.client_info().clone()).unwrap();
            let _ = release_rx.await;
            guard.unlock().await?;
            client.close().await;
            Ok::<_, lock_redis::LockError>(())
        })
    });
    let info = info_rx.recv().expect("the holder started");
    wait_until("the client's record", PATIENCE, || {
        status_json(&url, &["held"])["holders"][0]["client"] != json!(null)
    });

    let status = status_json(&url, &["held"]);
    let who = &status["holders"][0]["client"];
    assert_eq!(who["host"], info.host.as_str(), "{status}");
    assert_eq!(who["pid"], std::process::id(), "{status}");
    assert_eq!(who["service"], "payroll", "{status}");
    assert_eq!(who["started_ms"], info.started_ms, "{status}");
    assert_eq!(who["version"], info.version.as_str(), "{status}");

    let human = String::from_utf8(run(&url, &["status", "held"]).stdout).unwrap();
    assert!(
        human.contains(&format!(
            "client: service payroll on {}, pid {}",
            info.host,
            std::process::id()
        )),
        "{human}"
    );

    release_tx.send(()).unwrap();
    holder.join().unwrap().unwrap();
    // Closed: the record is gone with it.
    let keys = strings(&server, &["KEYS", "*lock_redis_clients*"]);
    assert!(keys.is_empty(), "{keys:?}");
}

/// `lockctl --service NAME run` names its own client so: status of the
/// lock it holds shows that service, and `lockctl` as the executable.
#[test]
fn a_lockctl_holder_shows_its_service() {
    let server = RedisServer::start();
    let url = server.url();
    let holder = Holder::start(&url, &["--service", "nightly-report"], &["job"]);
    wait_until("the holder's record", PATIENCE, || {
        status_json(&url, &["job"])["holders"][0]["client"] != json!(null)
    });
    let who = status_json(&url, &["job"])["holders"][0]["client"].clone();
    assert_eq!(who["service"], "nightly-report", "{who}");
    assert_eq!(who["executable"], "lockctl", "{who}");
    // `list --json` prints the same object per lock, and no client record
    // as a name of its own.
    let output = run(&url, &["list", "--json", "*"]);
    assert_eq!(code(output.status), 0, "{output:?}");
    let listed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let listed = listed.as_array().expect("a list");
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["holders"][0]["client"], who);
    let (status, _) = holder.finish();
    assert_eq!(code(status), 0);
}

/// A Redisson holder keeps no record: its field alone, `client` null.
#[test]
fn a_redisson_holder_shows_no_client() {
    let server = RedisServer::start();
    let url = server.url();
    let field = "6f0c9d1e-6b7a-4a44-9d0e-1c2b3a4d5e6f:81";
    server.cmd(&["HSET", "java", field, "1"]);
    let status = status_json(&url, &["java"]);
    assert_eq!(
        status["holders"],
        json!([{"field": field, "count": 1, "client": null}])
    );
}

#[test]
fn an_empty_or_over_long_service_is_refused() {
    for service in [String::new(), "s".repeat(129)] {
        let output = run_bare(&[
            "--url",
            "redis://127.0.0.1:1/",
            "--service",
            &service,
            "status",
            "x",
        ]);
        assert_eq!(code(output.status), 64, "{output:?}");
        let line = one_error_line(&output);
        assert!(line.starts_with("lockctl: bad --service: "), "{line}");
        assert!(line.contains("service_name"), "{line}");
    }
}
