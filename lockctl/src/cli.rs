//! The command line: flags, subcommands, help texts, and how clap's own
//! errors become exit code 64.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand};
use lock_redis::PermitId;

use crate::{duration, exit, output};

/// The server used when neither `--url` nor `$REDIS_URL` says otherwise.
pub(crate) const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// The hidden subcommand `run` re-executes lockctl with to supervise its
/// command (see `supervise.rs`).
pub(crate) const SUPERVISE: &str = "__supervise";

/// In numeric order (a test checks).
const EXIT_CODES: &str = "\
Exit codes:
  0       success (run: the command's own code is passed through)
  64      usage: bad flag, duration, URL or lock name; run --permits N
          found a semaphore of another size (see --set-permits); fewer
          than 3 --redlock servers (see --allow-few-masters)
  65      the key holds something that is not a lock (or not the kind
          an option needs); force-unlock --permit ID: no such permit taken
  69      Redis unreachable, not answering, or out of memory (--redlock:
          too many servers down for a majority)
  70      internal error
  75      run, hold: lock not acquired within --wait (or N with -E N)
  76      run: lock lost while the command ran (the command was stopped);
          hold: lock lost while held
  77      Redis refused the credentials (user, password) or a permission
          (ACL), or a TLS certificate was refused (server's or ours)
  78      Redis does not know a command the lock needs (disabled or
          renamed with rename-command)
  126/127 run: command not executable / not found
  128+N   run: the command died by signal N";

/// Run commands under a Redis lock shared with the lock library (and
/// Redisson), look at a lock, or break one.
#[derive(Debug, Parser)]
#[command(name = "lockctl", version, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: Global,

    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Options every command takes: where the locks are. Global: they go
/// before or after the subcommand (`lockctl --url U run …` or `lockctl run
/// … --url U`), though never after `--`, which starts the command. Under a
/// heading of their own, so a subcommand's help does not interleave them
/// with its own options.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options (before or after the subcommand)")]
pub(crate) struct Global {
    /// The Redis server, e.g. redis://user@host:6379/0 (user, port and
    /// database are optional), rediss://… for TLS. The password comes from
    /// $REDIS_PASSWORD (the URL's own wins; $REDIS_USERNAME names the
    /// user when the URL names none): there is no flag for it, as flags
    /// show in `ps`.
    #[arg(
        long,
        global = true,
        env = "REDIS_URL",
        // The URL may hold a password: never echo it in --help.
        hide_env_values = true,
        default_value = DEFAULT_URL
    )]
    pub(crate) url: String,

    /// A Redis Cluster instead of one server: one or more of its nodes,
    /// comma-separated (redis://host:7000,redis://host:7001). Overrides
    /// --url.
    #[arg(long, global = true, value_name = "URL[,URL…]", value_delimiter = ',')]
    pub(crate) cluster: Vec<String>,

    /// TLS (rediss:// URLs): trust the CA certificates in this PEM file
    /// instead of the system's roots.
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) tls_ca: Option<PathBuf>,

    /// TLS: present this client certificate (PEM; with --tls-key), for
    /// servers that require one (mutual TLS).
    #[arg(long, global = true, value_name = "FILE", requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,

    /// TLS: the private key of --tls-cert (PEM).
    #[arg(long, global = true, value_name = "FILE", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,

    /// Redis Sentinel instead of one server: one or more sentinels,
    /// comma-separated (redis://host:26379,redis://host2:26379), with
    /// --master. The master they name is used, and followed across
    /// failovers. Overrides --url.
    #[arg(
        long,
        global = true,
        value_name = "URL[,URL…]",
        value_delimiter = ',',
        requires = "master",
        conflicts_with = "cluster"
    )]
    pub(crate) sentinel: Vec<String>,

    /// The name the sentinels monitor the master under (with --sentinel).
    #[arg(long, global = true, value_name = "NAME", requires = "sentinel")]
    pub(crate) master: Option<String>,

    /// The server at --url is a proxy in front of a Redis Cluster that
    /// refuses commands whose keys span hash slots (CROSSSLOT): calls that
    /// touch many locks are split by slot.
    #[arg(long, global = true, conflicts_with_all = ["cluster", "sentinel"])]
    pub(crate) slot_checking_proxy: bool,

    /// Wait until N replicas have each lock lockctl takes (Redis WAIT, for
    /// at most --replica-sync-timeout), so a lock it reports taken survives
    /// its master's failover to one of them. An acquisition too few
    /// replicas confirmed is given back and counts as not taken (exit 75).
    /// Without it, each acquisition waits for the replicas its master has
    /// connected and fails only when none confirmed (Redisson's rule; no
    /// WAIT on a master without replicas). With --url, --sentinel,
    /// --cluster and --redlock.
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) replica_sync: Option<u32>,

    /// Never wait for replicas (faster on a master with replicas, but a lock
    /// taken just before a failover may be taken again on the promoted
    /// replica).
    #[arg(long, global = true, conflicts_with = "replica_sync")]
    pub(crate) no_replica_sync: bool,

    /// How long an acquisition waits for its replicas.
    #[arg(
        long,
        global = true,
        value_name = "DUR",
        default_value = "1s",
        value_parser = duration::parse,
        conflicts_with = "no_replica_sync"
    )]
    pub(crate) replica_sync_timeout: Duration,

    /// Prefix put before every lock name to make its key (as the library's
    /// `RedisConfig::key_prefix`).
    #[arg(long, global = true, value_name = "P", default_value = "")]
    pub(crate) prefix: String,

    /// The lease of a lock taken without --lease; the watchdog renews it
    /// every third of this while the command runs, so a lockctl that dies
    /// frees its lock within this long.
    #[arg(long, global = true, value_name = "DUR", default_value = "30s", value_parser = duration::parse)]
    pub(crate) watchdog_timeout: Duration,

    /// The service name this lockctl's client shows beside the locks,
    /// waits and permits it holds (`status` of them names it, with host
    /// and pid), e.g. the cron job it guards. Default: none (host, pid and
    /// `lockctl` are still shown).
    #[arg(long, global = true, value_name = "NAME", env = "LOCKCTL_SERVICE")]
    pub(crate) service: Option<String>,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Take the lock, run CMD while holding it, release it when CMD exits
    ///
    /// CMD is `-- CMD [ARG…]`, or `-c STRING` for /bin/sh -c STRING.
    /// CMD runs with LOCK_NAME set to the lock's name (and LOCK_TOKEN to the
    /// fencing token with --fenced). Without --lease the watchdog keeps the
    /// lock while CMD runs; with --lease the lock is held for at most that
    /// long.
    ///
    /// CMD runs in a process group of its own, and everything below applies
    /// to the whole group: CMD and its children (unless they leave it, as
    /// with setsid). That group is not the terminal's foreground group:
    /// lockctl passes Ctrl-C and Ctrl-Z on to it, but a CMD that reads from
    /// the terminal is stopped (SIGTTIN); give it its input by redirection.
    ///
    /// What happens to CMD, and to the lock, when:
    ///   CMD exits (the          what it left running is killed (SIGKILL),
    ///   normal end)             the lock released; lockctl exits with CMD's
    ///                           status (128+N if CMD died by signal N)
    ///   the lock is lost        (deleted, force-unlocked, expired, lease
    ///                           over) SIGTERM, then SIGKILL by the lease's
    ///                           end (loss is seen a grace of up to 2 s, a
    ///                           quarter of the lease at most, before it);
    ///                           lockctl exits 76 at once
    ///   lockctl gets SIGINT,    passed on (followed by SIGCONT); lockctl
    ///   SIGTERM or SIGHUP       waits for CMD, releases the lock and exits
    ///                           with CMD's status
    ///   lockctl gets SIGTSTP    CMD is stopped with lockctl and continued
    ///   (Ctrl-Z)                with it; the lock may expire meanwhile
    ///   lockctl fails           SIGKILL; the lock is released or expires
    ///   lockctl is SIGKILLed    Linux: SIGKILL at once (a parent-death
    ///   (kill -9, OOM killer)   signal), before the lock expires within
    ///                           --watchdog-timeout (or --lease). Other
    ///                           systems have no such signal: CMD runs on,
    ///                           orphaned and unguarded
    ///   lockctl is SIGSTOPped   nothing: a paused lockctl cannot police
    ///                           CMD. Nobody renews the lock; once it
    ///                           expires, another holder may enter beside
    ///                           CMD. Only fencing tokens protect the
    ///                           resource then (--fenced, LOCK_TOKEN).
    ///                           Continued, lockctl finds the lock lost at
    ///                           its next renewal and stops CMD (exit 76)
    // Verbatim: the table needs its line breaks (and then the summary line
    // its missing full stop, like the other commands' summaries).
    #[command(after_help = EXIT_CODES, verbatim_doc_comment)]
    Run(RunArgs),

    /// Take the lock and keep it until told to let go
    ///
    /// For shell scripts that hold a lock around several steps (a coproc),
    /// or for a person at a terminal. Once the lock is held, prints one
    /// line on stdout, `held NAME`, or with --fenced `held NAME TOKEN`, and
    /// keeps the lock (the watchdog renews it) until stdin reaches its end
    /// (its writer closed it) or lockctl gets SIGINT, SIGTERM or SIGHUP;
    /// then releases it and exits 0. What comes on stdin is read and
    /// ignored; a terminal is not read at all (Ctrl-C lets go there).
    ///
    /// Mind stdin: from /dev/null (as for `lockctl hold NAME &` in a
    /// script) the lock is let go at once. Keep a pipe open instead, e.g.
    /// `coproc lockctl hold NAME`, and close it (or kill lockctl) to let go.
    ///
    /// Lost while held (deleted, force-unlocked, expired, --lease over):
    /// says so on stderr and exits 76 at once. Not acquired within --wait:
    /// exit 75 (or -E N), with no line on stdout.
    #[command(after_help = EXIT_CODES)]
    Hold(HoldArgs),

    /// Show whether the lock is held, by whom, for how long.
    ///
    /// Shows each holder (a lock's hash field, a lean lock's token) with its
    /// hold count, the remaining time to live, and with --fair the queue of
    /// waiters, head first, with each one's eviction deadline. Exits 0
    /// whether or not the lock is held.
    #[command(after_help = EXIT_CODES)]
    Status(StatusArgs),

    /// List the locks, lean locks, read-write locks, semaphores and latches
    /// by name.
    ///
    /// Every name matching PATTERN (a Redis glob, default `*`; matched
    /// without --prefix) under which one of them is stored, once each:
    /// the keys that serve them (fair-lock queues, fencing counters,
    /// request records, leases, read holds: `redisson_…:…`, `{NAME}:…`)
    /// are not listed. One line each, sorted by name: its kind (as status
    /// --json names it), how many hold it (a plain semaphore's holders are
    /// not recorded: -), its time to live (-: no expiry, or not known), and
    /// a semaphore's free permits or a latch's count. Keys are found with
    /// SCAN, a bounded step at a time (never KEYS), on every master of a
    /// cluster. Kinds are told apart by layout, as status does: an integer
    /// something else stored shows as a semaphore_or_latch, other text as
    /// a lean_lock.
    #[command(after_help = EXIT_CODES)]
    List(ListArgs),

    /// Delete the lock whoever holds it and wake the next waiter.
    ///
    /// The kind is read from what is stored: a reentrant lock, a lean lock
    /// (any text that is not an integer, whoever wrote it), a read-write
    /// lock, or a fair lock (one with waiters queued, or with --fair), each
    /// unlocked and its waiters told on that kind's own channel. A
    /// semaphore is reset with --permits N, or one permit of an
    /// expirable-permit semaphore released with --permit ID (its waiters
    /// told on the semaphore's channel); without them, a semaphore, a
    /// latch or another value is left untouched (exit 65).
    ///
    /// Prints whether the lock existed and exits 0 either way, like `rm -f`:
    /// the lock is free afterwards, which is what was asked. The holder
    /// learns of it at its next renewal (a `lockctl run` holder then stops
    /// its command and exits 76; one with --lease only when its lease
    /// ends).
    #[command(name = "force-unlock", after_help = EXIT_CODES)]
    ForceUnlock(ForceUnlockArgs),

    /// Print a shell completion script for lockctl.
    ///
    /// E.g. `lockctl completions bash > /etc/bash_completion.d/lockctl`,
    /// `lockctl completions zsh > "${fpath[1]}/_lockctl"`, or
    /// `lockctl completions fish > ~/.config/fish/completions/lockctl.fish`.
    Completions(CompletionsArgs),

    /// Internal to `run`: starts and guards its command.
    #[command(name = SUPERVISE, hide = true)]
    Supervise(SuperviseArgs),
}

/// `lockctl run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) lock: LockArgs,

    /// Run this shell command line instead of `-- CMD`: /bin/sh -c STRING
    /// (flock's -c). It sees LOCK_NAME and LOCK_TOKEN like CMD does.
    #[arg(
        short = 'c',
        long = "command",
        value_name = "STRING",
        conflicts_with = "cmd"
    )]
    pub(crate) shell: Option<OsString>,

    /// The command to run and its arguments, after `--` (or -c STRING).
    #[arg(last = true, required_unless_present = "shell", value_name = "CMD")]
    pub(crate) cmd: Vec<OsString>,
}

/// `lockctl hold`.
#[derive(Debug, Args)]
pub(crate) struct HoldArgs {
    #[command(flatten)]
    pub(crate) lock: LockArgs,
}

/// What `run` and `hold` take, and how: the lock (or permit), the wait,
/// the lease, the token, and the code for "not acquired".
#[derive(Debug, Args)]
pub(crate) struct LockArgs {
    /// The lock's name.
    pub(crate) name: String,

    /// Use the fair (first come, first served) lock.
    #[arg(long, conflicts_with_all = ["read", "write"])]
    pub(crate) fair: bool,

    /// Take the lean lock NAME instead: the redis.io single-instance
    /// pattern (one string key holding the holder's token, SET NX PX),
    /// which go-redsync, redis-py's Lock, node-redlock and rslock keep, so
    /// their holders of NAME and this one exclude each other. Not
    /// re-entrant. With --redlock, a RedLock of lean locks.
    #[arg(long, conflicts_with_all = ["fair", "read", "write", "permits"])]
    pub(crate) lean: bool,

    /// Take the read side of the read-write lock NAME (Redisson's
    /// RReadWriteLock): shared with other --read holders, excluded by a
    /// --write one.
    #[arg(long, conflicts_with_all = ["write", "fenced", "redlock", "permits"])]
    pub(crate) read: bool,

    /// Take the write side of the read-write lock NAME: excludes every
    /// --read and --write holder of NAME.
    #[arg(long, conflicts_with_all = ["fenced", "redlock", "permits"])]
    pub(crate) write: bool,

    /// Give up after waiting this long (exit 75); 0s tries once. Default:
    /// wait as long as it takes. The wait covers connecting too: a Redis
    /// that is restarting or failing over is waited for until it runs out
    /// (exit 69 if it never answers); without --wait an unreachable Redis
    /// fails at once.
    #[arg(long, value_name = "DUR", value_parser = duration::parse)]
    pub(crate) wait: Option<Duration>,

    /// Hold the lock for at most this long, without renewal; when the
    /// lease ends it is lost (exit 76): run stops CMD if it still runs.
    #[arg(long, value_name = "DUR", value_parser = duration::parse)]
    pub(crate) lease: Option<Duration>,

    /// Get a fencing token (strictly larger than any before for this name):
    /// run passes it to CMD as LOCK_TOKEN, hold prints it.
    #[arg(long)]
    pub(crate) fenced: bool,

    /// Take a RedLock instead: the lock on each of these independent Redis
    /// servers (comma-separated, at least 3), held once a majority is, lost
    /// (exit 76) when fewer than a majority hold it. A minority of them
    /// may be down, at the start too (each is connected on first use); a
    /// majority down exits 69. Overrides --url and --cluster.
    #[arg(
        long,
        value_name = "URL,URL,…",
        value_delimiter = ',',
        conflicts_with_all = ["fair", "fenced"]
    )]
    pub(crate) redlock: Vec<String>,

    /// Accept a --redlock of 1 or 2 servers: with 2, losing either one
    /// loses the lock (a majority of 2 is both), so it tolerates no fault;
    /// with 1 it is a plain lock.
    #[arg(long, requires = "redlock")]
    pub(crate) allow_few_masters: bool,

    /// Allow up to N holders at once instead of one: take a permit of the
    /// expirable-permit semaphore NAME, created with N permits if absent
    /// (like `consul lock -n N`). An existing semaphore must have N
    /// permits, free and taken, else exit 64 naming both counts (as consul
    /// refuses a conflicting -n), unless --set-permits.
    /// The permit is leased and renewed like the lock, so a lockctl that
    /// dies gives it back within --watchdog-timeout.
    #[arg(long, value_name = "N", conflicts_with_all = ["fair", "fenced", "redlock"],
          value_parser = clap::value_parser!(u64).range(1..=2_147_483_647))]
    pub(crate) permits: Option<u64>,

    /// With --permits N: an existing semaphore of another size is changed
    /// to N permits, free and taken, instead of refused. Permits taken
    /// stay taken: the free count moves by the difference (below zero
    /// until enough come back, when N is below those taken).
    #[arg(long, requires = "permits")]
    pub(crate) set_permits: bool,

    /// Exit with N instead of 75 when the lock is not acquired (within
    /// --wait, or not confirmed by --replica-sync): flock's -E. N is 1 to
    /// 125 and none of lockctl's other codes (64, 65, 69, 70, 76, 77, 78), so
    /// that it still says "not acquired"; run's CMD, whose exit code is
    /// passed through, may of course exit with anything.
    #[arg(
        short = 'E',
        long,
        value_name = "N",
        default_value_t = exit::NOT_ACQUIRED,
        value_parser = conflict_exit_code
    )]
    pub(crate) conflict_exit_code: u8,
}

/// Parses `-E N`: a code that means nothing else (see
/// [`exit::is_free_for_conflicts`]).
fn conflict_exit_code(text: &str) -> Result<u8, String> {
    let code: u8 = text
        .parse()
        .map_err(|_| format!("{text:?} is not an exit code (1 to 125)"))?;
    if exit::is_free_for_conflicts(code) {
        Ok(code)
    } else {
        Err(format!(
            "{code} is taken: use 1 to 125, other than {}",
            exit::OTHER_MEANINGS.map(|c| c.to_string()).join(", ")
        ))
    }
}

/// The shell `run -c STRING` runs STRING with: POSIX's, at the path every
/// Unix has it.
pub(crate) const SHELL: &str = "/bin/sh";

impl RunArgs {
    /// The program and arguments to run: `CMD…`, or `/bin/sh -c STRING`.
    pub(crate) fn argv(&self) -> Vec<OsString> {
        match &self.shell {
            Some(line) => vec![SHELL.into(), "-c".into(), line.clone()],
            None => self.cmd.clone(),
        }
    }
}

/// `lockctl __supervise`, as `run` starts it.
#[derive(Debug, Args)]
pub(crate) struct SuperviseArgs {
    /// The pid of the `lockctl run` that started this supervisor.
    #[arg(long, value_name = "PID")]
    pub(crate) parent: i32,

    /// The command to run and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub(crate) cmd: Vec<OsString>,
}

/// `lockctl status`: whatever lock kind is stored under the name, detected
/// from what is stored (a lock, lean lock, read-write lock, semaphore or
/// latch).
#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// The name (of a lock, lean lock, read-write lock, semaphore or latch).
    pub(crate) name: String,

    /// Look at the fair lock (and show its queue).
    #[arg(long)]
    pub(crate) fair: bool,

    /// Print one JSON object, with the same keys every time for one
    /// "kind" (see the README for their meaning). A lock ("lock"), or
    /// nothing stored ("none"): {"name", "kind", "locked", "holders":
    /// [{"field", "count"}], "ttl_ms", "queue"}, where "queue" is
    /// [{"field", "timeout_ms"}] with --fair and null without (not read).
    /// "lean_lock" (text that is not an integer: the holder's token, ours
    /// or another library's): {"name", "kind", "locked", "holders":
    /// [{"field", "count"}], "ttl_ms"}.
    /// "read_write_lock": {"name", "kind", "locked", "mode", "writer",
    /// "readers", "ttl_ms"}. One integer, a semaphore (with leased permits
    /// or not) or a count-down latch, "semaphore_or_latch": {"name",
    /// "kind", "value", "ttl_ms", "permits": [{"id", "lease_time_ms"}]}.
    /// "unknown": {"name", "kind", "store_type"}.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `lockctl list`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Which names: a Redis glob (`*` any run of characters, `?` one,
    /// `[abc]` one of these, `\` quotes the next), matched against names
    /// without --prefix.
    #[arg(value_name = "PATTERN", default_value = "*")]
    pub(crate) pattern: String,

    /// Print one JSON array: for each name, the object `status --json
    /// NAME` prints (its "queue" null: not read), sorted by name.
    #[arg(long)]
    pub(crate) json: bool,

    /// List at most N names; when more match, say so on stderr (the N are
    /// the first found, in no particular order, then sorted).
    #[arg(long, value_name = "N", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub(crate) limit: u64,
}

/// `lockctl completions`.
#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete lockctl's flags and commands in.
    #[arg(value_name = "SHELL")]
    pub(crate) shell: clap_complete::Shell,
}

/// The completion script for `shell`, as text.
pub(crate) fn completions(shell: clap_complete::Shell) -> String {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut completed(), "lockctl", &mut script);
    String::from_utf8_lossy(&script).into_owned()
}

/// lockctl's interface without its hidden subcommand (`__supervise`),
/// which the generators would offer: they show hidden flags' absence but
/// not hidden subcommands'. A copy, as clap cannot remove a subcommand.
fn completed() -> clap::Command {
    use clap::CommandFactory as _;

    let full = Cli::command();
    let mut shown = clap::Command::new("lockctl")
        .version(env!("CARGO_PKG_VERSION"))
        .subcommand_required(true);
    if let Some(about) = full.get_about() {
        shown = shown.about(about.clone());
    }
    for arg in full.get_arguments() {
        shown = shown.arg(arg.clone());
    }
    for sub in full.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        shown = shown.subcommand(sub.clone());
    }
    shown
}

/// `lockctl force-unlock`.
#[derive(Debug, Args)]
pub(crate) struct ForceUnlockArgs {
    /// The lock's name.
    pub(crate) name: String,

    /// Unlock the fair lock (its queue is kept; its head is woken), even
    /// when nobody is queued.
    #[arg(long)]
    pub(crate) fair: bool,

    /// Reset the semaphore NAME to N free permits, whoever holds its
    /// permits, and wake its waiters. A plain semaphore's count is set to
    /// N (a holder that gives permits back later adds them on top); an
    /// expirable-permit semaphore's leased permits are all dropped (their
    /// holders lose them at their next renewal) and its total set to N.
    /// A count-down latch looks like a plain semaphore: this sets its
    /// count. Nothing stored: nothing is created.
    #[arg(long, value_name = "N", conflicts_with_all = ["fair", "permit"],
          value_parser = clap::value_parser!(u64).range(0..=2_147_483_647))]
    pub(crate) permits: Option<u64>,

    /// Release the permit ID (32 hex characters, as `status` lists it) of
    /// the expirable-permit semaphore NAME, and wake its waiters. A permit
    /// that is not taken (a wrong id, given back, expired) exits 65.
    #[arg(long, value_name = "ID", conflicts_with = "fair", value_parser = permit_id)]
    pub(crate) permit: Option<PermitId>,
}

/// Parses `--permit ID`.
fn permit_id(text: &str) -> Result<PermitId, String> {
    text.parse()
        .map_err(|e: lock_redis::LockError| e.to_string())
}

/// Parses the command line. `Err` carries the exit code when there is
/// nothing to run: 0 after printing help or the version, 64 after printing
/// a usage error as one line.
pub(crate) fn parse() -> Result<Cli, u8> {
    Cli::try_parse().map_err(|err| {
        if !err.use_stderr() {
            // --help or --version: not a failure.
            let _ = err.print();
            return 0;
        }
        if err.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            // Bare `lockctl`: the help (on stderr) says more than one line.
            let _ = err.print();
        } else {
            output::error(&usage_error(&err));
        }
        exit::USAGE
    })
}

/// clap's error and tips, without its usage block and help hint, on one
/// line, plus a pointer to --help.
fn usage_error(err: &clap::Error) -> String {
    let rendered = err.render().to_string();
    let mut blocks = rendered.split("\n\n");
    let mut message = blocks
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ")
        .to_owned();
    for tip in blocks.filter(|b| b.trim_start().starts_with("tip:")) {
        message.push_str("; ");
        message.push_str(tip.trim());
    }
    let flat: Vec<&str> = message.split_whitespace().collect();
    format!("{} (see lockctl --help)", flat.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    fn parse_from(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("lockctl").chain(args.iter().copied()))
    }

    #[test]
    fn the_interface_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_takes_everything_after_the_double_dash() {
        let cli = parse_from(&[
            "--prefix",
            "app:",
            "--watchdog-timeout",
            "1s",
            "run",
            "job",
            "--fair",
            "--wait",
            "250ms",
            "--lease",
            "5m",
            "--fenced",
            "--",
            "sh",
            "-c",
            "echo --wait",
        ])
        .unwrap();
        assert_eq!(cli.global.prefix, "app:");
        assert_eq!(cli.global.watchdog_timeout, Duration::from_secs(1));
        let Command::Run(run) = cli.command else {
            panic!("not run: {:?}", cli.command)
        };
        assert_eq!(run.lock.name, "job");
        assert!(run.lock.fair && run.lock.fenced);
        assert_eq!(run.lock.wait, Some(Duration::from_millis(250)));
        assert_eq!(run.lock.lease, Some(Duration::from_secs(300)));
        assert_eq!(run.cmd, ["sh", "-c", "echo --wait"]);
    }

    #[test]
    fn global_options_go_before_or_after_the_subcommand() {
        let before = parse_from(&[
            "--url",
            "redis://a:1",
            "--prefix",
            "p:",
            "--watchdog-timeout",
            "2s",
            "run",
            "job",
            "--",
            "true",
        ])
        .unwrap();
        let after = parse_from(&[
            "run",
            "job",
            "--url",
            "redis://a:1",
            "--prefix",
            "p:",
            "--watchdog-timeout",
            "2s",
            "--",
            "true",
        ])
        .unwrap();
        for cli in [&before, &after] {
            assert_eq!(cli.global.url, "redis://a:1");
            assert_eq!(cli.global.prefix, "p:");
            assert_eq!(cli.global.watchdog_timeout, Duration::from_secs(2));
        }
        // Split both ways: a default on one side does not undo the other.
        let split =
            parse_from(&["--url", "redis://a:1", "status", "job", "--prefix", "p:"]).unwrap();
        assert_eq!(split.global.url, "redis://a:1");
        assert_eq!(split.global.prefix, "p:");
        // After `--` it is the command's.
        let cli = parse_from(&["run", "job", "--", "echo", "--url", "x"]).unwrap();
        assert_ne!(cli.global.url, "x");
        let Command::Run(run) = cli.command else {
            panic!("not run")
        };
        assert_eq!(run.cmd, ["echo", "--url", "x"]);
        // Relations between global options hold on either side.
        let err = parse_from(&["run", "job", "--tls-cert", "c.pem", "--", "true"]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::MissingRequiredArgument);
    }

    #[test]
    fn run_takes_a_shell_string_or_a_command_but_not_both() {
        let Command::Run(run) = parse_from(&["run", "job", "-c", "echo a; echo b"])
            .unwrap()
            .command
        else {
            panic!("not run")
        };
        assert_eq!(run.argv(), [SHELL, "-c", "echo a; echo b"]);
        let Command::Run(run) = parse_from(&["run", "job", "--command=true"])
            .unwrap()
            .command
        else {
            panic!("not run")
        };
        assert_eq!(run.argv(), [SHELL, "-c", "true"]);
        let Command::Run(run) = parse_from(&["run", "job", "--", "ls", "-c"])
            .unwrap()
            .command
        else {
            panic!("not run")
        };
        assert_eq!(run.argv(), ["ls", "-c"]);
        let err = parse_from(&["run", "job", "-c", "true", "--", "true"]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ArgumentConflict);
        let err = parse_from(&["run", "job"]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::MissingRequiredArgument);
    }

    #[test]
    fn redlock_takes_a_list_and_excludes_fair_and_fenced() {
        let cli = parse_from(&[
            "run",
            "job",
            "--redlock",
            "redis://a,redis://b,redis://c",
            "--",
            "true",
        ])
        .unwrap();
        let Command::Run(run) = cli.command else {
            panic!("not run: {:?}", cli.command)
        };
        assert_eq!(run.lock.redlock, ["redis://a", "redis://b", "redis://c"]);
        for flag in ["--fair", "--fenced"] {
            let err = parse_from(&["run", "job", "--redlock", "redis://a", flag, "--", "true"])
                .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::ArgumentConflict, "{flag}");
        }
    }

    #[test]
    fn read_and_write_pick_a_side_and_exclude_the_other_lock_flavours() {
        let Command::Run(run) = parse_from(&["run", "cfg", "--read", "--", "true"])
            .unwrap()
            .command
        else {
            panic!("not run")
        };
        assert!(run.lock.read && !run.lock.write);
        for args in [
            &["run", "cfg", "--read", "--write", "--", "true"][..],
            &["run", "cfg", "--read", "--fair", "--", "true"],
            &["run", "cfg", "--write", "--fenced", "--", "true"],
        ] {
            assert!(parse_from(args).is_err(), "{args:?}");
        }
    }

    #[test]
    fn lean_picks_the_kind_and_goes_with_fenced_and_redlock() {
        let Command::Hold(hold) = parse_from(&["hold", "job", "--lean", "--fenced"])
            .unwrap()
            .command
        else {
            panic!("not hold")
        };
        assert!(hold.lock.lean && hold.lock.fenced);
        let Command::Run(run) = parse_from(&[
            "run",
            "job",
            "--lean",
            "--redlock",
            "redis://a,redis://b,redis://c",
            "--",
            "true",
        ])
        .unwrap()
        .command
        else {
            panic!("not run")
        };
        assert!(run.lock.lean && run.lock.redlock.len() == 3);
        for flag in [
            &["--fair"][..],
            &["--read"],
            &["--write"],
            &["--permits", "2"],
        ] {
            let args = [&["run", "job", "--lean"], flag, &["--", "true"]].concat();
            let err = parse_from(&args).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::ArgumentConflict, "{flag:?}");
        }
    }

    #[test]
    fn usage_errors_are_one_line() {
        for args in [
            &["run", "job"][..],
            &["run", "job", "--wait", "5x", "--", "true"],
            &["run", "job", "true"],
            &["--watchdog-timeout", "5", "status", "job"],
            &["frobnicate"],
        ] {
            let err = parse_from(args).unwrap_err();
            assert!(err.use_stderr(), "{args:?}");
            let line = usage_error(&err);
            assert!(!line.contains('\n'), "{args:?}: {line}");
            assert!(!line.starts_with("error"), "{args:?}: {line}");
            assert!(line.ends_with("(see lockctl --help)"), "{args:?}: {line}");
        }
        let err = parse_from(&["run", "job", "--wait", "5x", "--", "true"]).unwrap_err();
        assert!(usage_error(&err).contains("unknown unit"));
        let err = parse_from(&["stat", "job"]).unwrap_err();
        assert_eq!(
            usage_error(&err),
            "unrecognized subcommand 'stat'; tip: a similar subcommand exists: 'status' \
             (see lockctl --help)"
        );
    }

    #[test]
    fn completions_offer_every_subcommand_but_the_hidden_one() {
        let shown = completed();
        let names: Vec<&str> = shown
            .get_subcommands()
            .map(clap::Command::get_name)
            .collect();
        assert_eq!(
            names,
            [
                "run",
                "hold",
                "status",
                "list",
                "force-unlock",
                "completions"
            ]
        );
        assert_eq!(
            shown.get_arguments().count(),
            Cli::command().get_arguments().count()
        );
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
        ] {
            let script = completions(shell);
            assert!(script.contains("force-unlock"), "{shell}");
            assert!(script.contains("--watchdog-timeout"), "{shell}");
            assert!(script.contains("conflict-exit-code"), "{shell}");
            assert!(!script.contains(SUPERVISE), "{shell}");
        }
    }

    #[test]
    fn help_and_version_are_not_errors() {
        for args in [&["--help"][..], &["--version"], &["run", "--help"]] {
            assert!(!parse_from(args).unwrap_err().use_stderr(), "{args:?}");
        }
    }
}
