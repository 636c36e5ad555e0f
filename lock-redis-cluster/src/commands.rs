//! The connect-time check that every master knows the commands the client
//! needs (see [`lock_redis::commands`]): one `COMMAND INFO` to each master,
//! all at once, so connecting costs one more round trip, not one per
//! master.

use futures::future;
use lock_core::Result;
use lock_script::error::from_redis;
use tokio::time::Instant;

use lock_redis::commands;

use crate::transport::Inner;

impl Inner {
    /// Checks every master of the slot map for the commands a cluster in
    /// pub/sub mode `sharded` needs, by `deadline`.
    ///
    /// # Errors
    /// [`lock_core::LockError::Unsupported`] naming a master (by address)
    /// that lacks a command, and each command it lacks; a master's error
    /// that is not retryable (refused credentials). A master that cannot
    /// be reached is skipped: connecting works in a partial outage.
    pub(crate) async fn check_commands(&self, sharded: bool, deadline: Instant) -> Result<()> {
        let needed = commands::cluster(sharded, self.config.connection.waits_required());
        let info = commands::command_info(&needed);
        let map = self.topology.map();
        let replies = future::join_all(map.masters().iter().map(|addr| {
            let (info, needed) = (&info, &needed);
            async move {
                let reply = self.nodes.query_raw(addr, info, deadline).await?;
                let server = format!("the master at {addr}");
                commands::judge(needed, reply, &server).map_err(|e| from_redis(&e, ""))?
            }
        }))
        .await;
        for reply in replies {
            match reply {
                // A master that is down (a partial outage, a failover under
                // way) must not keep the client from the others: its
                // commands are checked by nothing but its first call.
                Err(e) if e.is_retryable() => {
                    tracing::debug!(error = %e, "a master was not checked for the commands the client needs");
                }
                other => other?,
            }
        }
        Ok(())
    }
}
