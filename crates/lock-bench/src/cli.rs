//! The command line.

use clap::{Parser, ValueEnum};

/// How close the lock library gets to the Redis round trip.
///
/// Runs each workload against one Redis server and reports every figure
/// also as a ratio to a baseline measured in the same run (PING and raw
/// EVALSHA of the lock scripts), since absolute numbers depend on the
/// machine. Progress goes to stderr.
#[derive(Debug, Parser)]
#[command(name = "lock-bench", version)]
pub(crate) struct Args {
    /// The server to use, e.g. redis://127.0.0.1:6379/. Use a dedicated
    /// server: the bench resets its command statistics (CONFIG RESETSTAT).
    /// Without it, a throw-away redis-server is started on a free loopback
    /// port.
    #[arg(long)]
    pub(crate) url: Option<String>,

    /// Run every workload briefly (well under a minute in all), e.g. as a
    /// CI smoke test. The figures are then rough.
    #[arg(long)]
    pub(crate) quick: bool,

    /// Print one JSON object per line per workload (and implementation) on
    /// stdout, and nothing else, instead of the Markdown table.
    #[arg(long)]
    pub(crate) json: bool,

    /// Run only these workloads (comma-separated). The baseline always runs:
    /// every ratio refers to it.
    #[arg(long, value_delimiter = ',', ignore_case = true)]
    pub(crate) only: Vec<Workload>,
}

/// A workload that `--only` can select.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Workload {
    /// PING and raw EVALSHA round trips (always run).
    Baseline,
    /// Uncontended lock/unlock pairs.
    W1,
    /// Eight tasks contending for one lock.
    W2,
    /// Handoff latency between tasks on one lock.
    W2h,
    /// 32 tasks on 1 024 locks.
    W3,
    /// Watchdog renewal of many held locks.
    W4,
    /// Thousands of waiters on one lock.
    W5,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_takes_a_comma_list_in_any_case() {
        let a = Args::try_parse_from(["lock-bench", "--only", "w1,W2H,w5", "--quick"]).unwrap();
        assert_eq!(a.only, [Workload::W1, Workload::W2h, Workload::W5]);
        assert!(a.quick && !a.json && a.url.is_none());
        assert!(Args::try_parse_from(["lock-bench", "--only", "W9"]).is_err());
    }
}
