#![doc = include_str!("../README.md")]
// Module map: `cli` parses, `connect` makes the client, `run`, `status` and
// `force_unlock` are the commands, `child` and `signals` serve `run`, and
// `exit` and `output` turn every outcome into one stderr line and a code.

mod child;
mod cli;
mod connect;
mod duration;
mod exit;
mod force_unlock;
mod output;
mod run;
mod signals;
mod status;

use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::time::Duration;

use cli::{Cli, Command};
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
    // One thread: a handful of requests and one child at a time.
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
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(dispatch(cli))));
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

async fn dispatch(cli: Cli) -> Result<u8, Failure> {
    match cli.command {
        Command::Run(args) => run::run(&cli.global, args).await,
        Command::Status(args) => status::run(&cli.global, args).await,
        Command::ForceUnlock(args) => force_unlock::run(&cli.global, args).await,
    }
}
