#![doc = include_str!("../README.md")]
// Module map: `cli` parses, `connect` makes the client, `run`, `hold`,
// `status`, `list` and `force_unlock` (with `force_permits` for
// semaphores) are the commands, `keyspace` finds `list`'s names, `take`
// (connecting, acquiring, releasing) and `held` serve `run` and `hold`,
// `child`, `signals` and `supervise` (the process between `run` and its
// command) serve `run`, and `exit` and `output` turn every outcome into
// one stderr line and a code.

mod child;
mod cli;
mod connect;
mod duration;
mod exit;
mod force_permits;
mod force_unlock;
mod held;
mod hold;
mod keyspace;
mod list;
mod output;
mod run;
mod signals;
mod status;
mod status_kinds;
mod supervise;
mod take;
mod who;

use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::time::Duration;

use cli::{Command, Global};
use exit::Failure;

fn main() -> ExitCode {
    // A bug must still end as one line and exit 70, never as a backtrace.
    panic::set_hook(Box::new(|info| {
        output::error(&format!("internal error: {info}"));
    }));
    let cli = match cli::parse() {
        Ok(cli) => cli,
        Err(code) => return ExitCode::from(code),
    };
    let command = match cli.command {
        // Synchronous and single-threaded: it blocks every signal, which
        // covers the whole process only if it has one thread.
        Command::Supervise(args) => return ExitCode::from(supervise::run(&args)),
        // Needs no Redis and no runtime.
        Command::Completions(args) => {
            output::stdout(&cli::completions(args.shell));
            return ExitCode::SUCCESS;
        }
        command => command,
    };
    // One thread: a handful of requests and one child at a time. It must
    // stay so: `run` starts its command's supervisor from the task this
    // thread runs, and on Linux the supervisor's parent-death signal fires
    // when the thread that started it ends, not when the process does. The
    // main thread ends only with the process; a worker thread of a
    // multi-threaded runtime may end at any time and take the command with
    // it.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            output::error(&format!("cannot start the runtime: {e}"));
            return ExitCode::from(exit::SOFTWARE);
        }
    };
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        runtime.block_on(dispatch(&cli.global, command))
    }));
    let code = match outcome {
        Ok(Ok(code)) => code,
        Ok(Err(failure)) => {
            output::error(&failure.message);
            failure.code
        }
        // The hook has reported it.
        Err(_) => exit::SOFTWARE,
    };
    // Everything that matters was awaited; don't linger on stray tasks.
    runtime.shutdown_timeout(Duration::from_millis(100));
    ExitCode::from(code)
}

async fn dispatch(global: &Global, command: Command) -> Result<u8, Failure> {
    match command {
        Command::Run(args) => run::run(global, args).await,
        Command::Hold(args) => hold::run(global, args).await,
        Command::Status(args) => status::run(global, args).await,
        Command::List(args) => list::run(global, args).await,
        Command::ForceUnlock(args) => force_unlock::run(global, args).await,
        // Started before the runtime (see main); they would work here too.
        Command::Supervise(args) => Ok(supervise::run(&args)),
        Command::Completions(args) => {
            output::stdout(&cli::completions(args.shell));
            Ok(0)
        }
    }
}
