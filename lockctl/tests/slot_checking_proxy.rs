//! `lockctl --slot-checking-proxy`: a single address that checks hash
//! slots (here a one-node cluster owning every slot) works as one server;
//! the flag makes no sense with --cluster or --sentinel (exit 64).

use crate::common;

use common::*;
use lock_testkit::fixtures::RedisServer;

#[test]
fn run_behind_a_slot_checking_server() {
    let server = RedisServer::start_one_node_cluster();
    let holder = Holder::start(&server.url(), &["--slot-checking-proxy"], &["proxied"]);
    assert_eq!(int(&server, &["HLEN", "proxied"]), 1);
    let (status, stderr) = holder.finish();
    assert_eq!(code(status), 0, "{stderr}");
    assert_eq!(int(&server, &["EXISTS", "proxied"]), 0);
}

#[test]
fn the_flag_is_for_one_address_only() {
    for other in [
        &["--cluster", "redis://127.0.0.1:1"][..],
        &["--sentinel", "redis://127.0.0.1:1", "--master", "m"][..],
    ] {
        let mut args = vec!["--slot-checking-proxy"];
        args.extend_from_slice(other);
        args.extend(["status", "x"]);
        let output = run("redis://127.0.0.1:1", &args);
        assert_eq!(code(output.status), 64, "{args:?}: {output:?}");
    }
}
