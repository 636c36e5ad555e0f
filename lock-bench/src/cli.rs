//! The command line.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

use crate::target::Kind;

/// How close the lock library gets to the Redis round trip.
///
/// Runs each workload against one Redis server (the cluster variants against
/// a Redis Cluster) and reports every figure also as a ratio to a baseline
/// measured in the same run (PING and raw EVALSHA of the lock scripts),
/// since absolute numbers depend on the machine. Progress goes to stderr.
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
    /// stdout, then one line summing up every goal (`"workload": "goals"`),
    /// and nothing else, instead of the Markdown tables.
    #[arg(long)]
    pub(crate) json: bool,

    /// The Redis Cluster for W1-cluster, W2H-cluster and W3-cluster: seed
    /// URLs (comma-separated), e.g. redis://127.0.0.1:7000/. Use a
    /// dedicated cluster whose slots do not move during the run: the bench
    /// resets the masters' command statistics. Without it, a throw-away
    /// local cluster (3 masters, each with --cluster-replicas replicas) is
    /// started when a cluster workload runs.
    #[arg(long, value_delimiter = ',', value_name = "URL")]
    pub(crate) cluster: Vec<String>,

    /// Replicas per master of the throw-away cluster (not with --cluster).
    /// 0 shows what replication costs when replicas share the machine.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub(crate) cluster_replicas: usize,

    /// Run only these workloads (comma-separated). The baseline always runs:
    /// every ratio refers to it (and the cluster baseline with a cluster
    /// workload).
    #[arg(long, value_delimiter = ',', ignore_case = true)]
    pub(crate) only: Vec<Workload>,

    /// Run nothing: read the JSON lines of an earlier `--json` run from
    /// FILE (`-` for stdin) and print the Markdown tables that run would
    /// have printed, goals summary included.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["url", "quick", "json", "cluster", "only"]
    )]
    pub(crate) markdown_from: Option<PathBuf>,
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
    /// W1 with a RedLock over 3 and 5 masters, against 1.
    W1Redlock,
    /// W2H with a RedLock over 3 masters, against 1.
    W2hRedlock,
    /// W1 on a master with one replica: replica sync by default against off.
    W1Replica,
    /// 16 tasks on a semaphore with 4 permits.
    S1,
    /// 32 readers and one writer on one read-write lock.
    Rw1,
    /// W1 with the fair lock.
    W1Fair,
    /// W2H with the fair lock.
    W2hFair,
    /// W3 with the fair lock.
    W3Fair,
    /// W1 with the fair lock with direct handoff.
    W1Handoff,
    /// W2H with the fair lock with direct handoff.
    W2hHandoff,
    /// W3 with the fair lock with direct handoff.
    W3Handoff,
    /// W1 with the lean lock.
    W1Lean,
    /// W2H with the lean lock.
    W2hLean,
    /// W3 with the lean lock.
    W3Lean,
    /// W1 on a Redis Cluster.
    W1Cluster,
    /// W2H on a Redis Cluster.
    W2hCluster,
    /// W3 on a Redis Cluster.
    W3Cluster,
    /// 1 000 waiters on one count-down latch, released by one count-down.
    Latch,
}

impl Workload {
    /// The workloads that run with every [`Kind`] of lock.
    pub(crate) const PER_KIND: [Workload; 3] = [Self::W1, Self::W2h, Self::W3];

    /// This workload (one of [`Workload::PER_KIND`]) with the `kind` lock:
    /// `W1.of(Fair)` is `W1Fair`. Any other workload is itself.
    pub(crate) fn of(self, kind: Kind) -> Self {
        match (self, kind) {
            (Self::W1, Kind::Fair) => Self::W1Fair,
            (Self::W2h, Kind::Fair) => Self::W2hFair,
            (Self::W3, Kind::Fair) => Self::W3Fair,
            (Self::W1, Kind::Handoff) => Self::W1Handoff,
            (Self::W2h, Kind::Handoff) => Self::W2hHandoff,
            (Self::W3, Kind::Handoff) => Self::W3Handoff,
            (Self::W1, Kind::Lean) => Self::W1Lean,
            (Self::W2h, Kind::Lean) => Self::W2hLean,
            (Self::W3, Kind::Lean) => Self::W3Lean,
            (Self::W1, Kind::Cluster) => Self::W1Cluster,
            (Self::W2h, Kind::Cluster) => Self::W2hCluster,
            (Self::W3, Kind::Cluster) => Self::W3Cluster,
            (w, _) => w,
        }
    }

    /// Its name in reports and progress: `W2H-fair`.
    pub(crate) fn label(self) -> String {
        let base = match self {
            Self::Baseline => "baseline",
            Self::W1 | Self::W1Fair | Self::W1Handoff | Self::W1Lean | Self::W1Cluster => "W1",
            Self::W2 => "W2",
            Self::W2h | Self::W2hFair | Self::W2hHandoff | Self::W2hLean | Self::W2hCluster => {
                "W2H"
            }
            Self::W3 | Self::W3Fair | Self::W3Handoff | Self::W3Lean | Self::W3Cluster => "W3",
            Self::W4 => "W4",
            Self::W5 => "W5",
            Self::Latch => "latch",
            Self::W1Redlock => "W1-redlock",
            Self::W2hRedlock => "W2H-redlock",
            Self::W1Replica => "W1-replica",
            Self::S1 => "S1",
            Self::Rw1 => "RW1",
        };
        let kind = match self {
            Self::W1Fair | Self::W2hFair | Self::W3Fair => Kind::Fair,
            Self::W1Handoff | Self::W2hHandoff | Self::W3Handoff => Kind::Handoff,
            Self::W1Lean | Self::W2hLean | Self::W3Lean => Kind::Lean,
            Self::W1Cluster | Self::W2hCluster | Self::W3Cluster => Kind::Cluster,
            _ => Kind::Reentrant,
        };
        kind.workload(base)
    }
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

    #[test]
    fn rw1_is_selectable_by_its_report_name() {
        let a = Args::try_parse_from(["lock-bench", "--only", "RW1"]).unwrap();
        assert_eq!(a.only, [Workload::Rw1]);
        assert_eq!(Workload::Rw1.label(), "RW1");
    }

    #[test]
    fn the_redlock_workloads_are_selectable_by_their_report_names() {
        let a = Args::try_parse_from(["lock-bench", "--only", "W1-redlock,w2h-REDLOCK"]).unwrap();
        assert_eq!(a.only, [Workload::W1Redlock, Workload::W2hRedlock]);
        assert_eq!(Workload::W2hRedlock.label(), "W2H-redlock");
        assert_eq!(Workload::W2hRedlock.of(Kind::Fair), Workload::W2hRedlock);
    }

    #[test]
    fn variants_are_selectable_by_their_report_names() {
        let a =
            Args::try_parse_from(["lock-bench", "--only", "W1-fair,W2H-cluster,w3-FAIR"]).unwrap();
        assert_eq!(
            a.only,
            [Workload::W1Fair, Workload::W2hCluster, Workload::W3Fair]
        );
        for w in a.only {
            assert!(Workload::from_str(&w.label(), true).is_ok(), "{w:?}");
        }
        assert_eq!(Workload::W2h.of(Kind::Fair).label(), "W2H-fair");
        assert_eq!(Workload::W2h.of(Kind::Handoff).label(), "W2H-handoff");
        assert_eq!(Workload::W3.of(Kind::Cluster).label(), "W3-cluster");
        assert_eq!(Workload::W1.of(Kind::Lean).label(), "W1-lean");
        assert_eq!(Workload::W4.of(Kind::Fair), Workload::W4);
    }

    #[test]
    fn markdown_from_runs_nothing_else() {
        let a = Args::try_parse_from(["lock-bench", "--markdown-from", "run.jsonl"]).unwrap();
        assert_eq!(a.markdown_from, Some(PathBuf::from("run.jsonl")));
        for other in [["--json"], ["--quick"]] {
            let mut argv = vec!["lock-bench", "--markdown-from", "run.jsonl"];
            argv.extend(other);
            assert!(Args::try_parse_from(argv).is_err(), "{other:?}");
        }
    }

    #[test]
    fn cluster_takes_comma_separated_seeds() {
        let a = Args::try_parse_from([
            "lock-bench",
            "--cluster",
            "redis://127.0.0.1:7000/,redis://127.0.0.1:7001/",
        ])
        .unwrap();
        assert_eq!(a.cluster.len(), 2);
        assert_eq!(a.cluster_replicas, 1);
    }
}
