//! `lockctl force-unlock`: delete a lock whoever holds it.

use lock_core::LockName;

use crate::cli::{ForceUnlockArgs, Global};
use crate::exit::Failure;
use crate::{connect, output};

/// Runs `lockctl force-unlock`; returns the exit code: 0 whether or not the
/// lock existed, like `rm -f`, because either way it is free now, which is
/// what was asked. The printed line says which it was.
pub(crate) async fn run(global: &Global, args: ForceUnlockArgs) -> Result<u8, Failure> {
    let name = LockName::new(&args.name).map_err(|e| Failure::lock("bad lock name", &e))?;
    let client = connect::client(global).await?;
    let existed = if args.fair {
        client.fair_lock(&name)?.force_unlock().await
    } else {
        client.lock(&name)?.force_unlock().await
    };
    client.close().await;
    let line = if existed? {
        format!("{name}: unlocked (it was held; waiters were woken)\n")
    } else {
        format!("{name}: was not locked; nothing to do\n")
    };
    output::stdout(&line);
    Ok(0)
}
