//! `lock-bench`: how close the lock library gets to the physical limit, the
//! Redis round trip.
//!
//! Each workload (see `workloads`) runs against one server; every figure is
//! also given as a ratio to a baseline measured in the same run, because
//! absolute numbers depend on the machine. See the crate's README for the
//! workloads, their goals and how to run it.
// A command-line tool: its results go to stdout.
#![allow(clippy::print_stdout)]

#[cfg(feature = "count-alloc")]
mod alloc_count;
mod cli;
mod cluster;
mod goals;
mod latency;
mod locker;
mod report;
mod rss;
mod server;
mod summary;
mod target;
mod workloads;

use std::io::Read as _;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use lock_testkit::fixtures::RedisServer;

use crate::cluster::ClusterSource;
use crate::report::Report;
use crate::summary::RunInfo;
use crate::workloads::Bench;

/// The longest a single `lock()` of a lock that is about to be free, or an
/// `unlock()`, may take before the bench calls it a library bug.
pub(crate) const LOCK_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest closing a lock client may take.
pub(crate) const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

fn main() -> Result<()> {
    let args = cli::Args::parse();
    if let Some(file) = &args.markdown_from {
        return print_markdown_from(file);
    }
    let load_start = summary::load_average();
    // Started before the runtime and dropped (killed) after it. A
    // throw-away cluster, when one is needed, is started by the workloads
    // (see `cluster::Cluster::set_up`), so that its idle nodes do not share
    // the machine with the standalone workloads.
    let (url, _server) = match &args.url {
        Some(url) => (url.clone(), None),
        None => {
            let server = RedisServer::start();
            (server.url(), Some(server))
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;

    let cluster = if args.cluster.is_empty() {
        ClusterSource::Throwaway {
            replicas: args.cluster_replicas,
        }
    } else {
        ClusterSource::Given(args.cluster.clone())
    };
    let mut bench = Bench::new(url, args.quick, cluster)?;
    bench.progress(&format!(
        "{} run against {}",
        if args.quick { "quick" } else { "full" },
        args.url.as_deref().unwrap_or("a throw-away redis-server")
    ));
    let mut reports: Vec<Report> = Vec::new();
    let json = args.json;
    let outcome = runtime.block_on(workloads::run_all(&mut bench, &args.only, &mut |r| {
        if json {
            println!("{}", r.to_json());
        }
        reports.push(r.clone());
    }));
    runtime.shutdown_timeout(Duration::from_secs(5));
    let info = RunInfo {
        load_start,
        load_end: summary::load_average(),
    };
    if json {
        println!("{}", summary::to_json(&reports, &info));
    } else if !reports.is_empty() {
        println!("{}", summary::full_markdown(&reports, &info));
    }
    outcome
}

/// `--markdown-from FILE`: the Markdown of a saved `--json` run.
fn print_markdown_from(file: &Path) -> Result<()> {
    let text = if file == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read stdin")?;
        text
    } else {
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?
    };
    let (reports, info) = summary::read_json_lines(&text)
        .with_context(|| format!("{} is not lock-bench --json output", file.display()))?;
    println!("{}", summary::full_markdown(&reports, &info));
    Ok(())
}
