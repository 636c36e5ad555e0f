//! The record a [`crate::LockClient`] keeps of itself on the store (host,
//! process id, service name, start time, the permits its guards hold), so
//! that `describe` and `lockctl status` can say who holds what. The
//! layout and the reading side are `lock_script::clients`.
//!
//! One task per client writes the record when the client starts and again
//! every third of the watchdog timeout (as the watchdog renews locks), with
//! a time to live of the whole watchdog timeout: a client that dies without
//! closing loses its record within that, as it loses its locks. Each write
//! answers the store's clock, which the engine's estimate of it follows
//! (so a client whose clock runs ahead dates its requests, and sizes their
//! records, by the store's clock within one write of starting). A write
//! that failed for a passing reason (a lazy-connect client before its
//! server is up, an outage) is tried again within a second; one refused
//! (an ACL without the records' keys) at the next period, logged once. The task holds the engine only weakly:
//! it ends at its next tick once nothing (no client clone, no guard) holds
//! the engine, and at once when the client closes, whose close removes the
//! record after the last release and before the connections close.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lock_core::backend::Engine;
use lock_core::ClientInfo;
use lock_script::clients::ClientRecords;
use lock_script::ScriptEnv;
use tokio::task::AbortHandle;
use uuid::Uuid;

/// How soon a failed write is tried again (at most; never later than the
/// next regular refresh).
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// One client's record and the task that keeps it.
#[derive(Debug)]
pub(crate) struct Registration {
    id: Uuid,
    info: ClientInfo,
    records: ClientRecords,
    task: AbortHandle,
}

impl Registration {
    /// Starts keeping `engine`'s record over `env`.
    pub(crate) fn start(engine: &Engine, env: ScriptEnv) -> Self {
        let config = engine.config();
        let info = this_process(config.service_name.clone());
        let records = ClientRecords::new(env);
        let refresher = Refresher {
            engine: engine.downgrade(),
            id: engine.id(),
            info: info.clone(),
            records: records.clone(),
            period: config.watchdog_timeout / 3,
            ttl_ms: u64::try_from(config.watchdog_timeout.as_millis()).unwrap_or(u64::MAX),
        };
        let task = tokio::spawn(refresher.run()).abort_handle();
        Self {
            id: engine.id(),
            info,
            records,
            task,
        }
    }

    /// What the record says of this client.
    pub(crate) fn info(&self) -> &ClientInfo {
        &self.info
    }

    /// Stops refreshing and removes the record; a failure is logged (the
    /// record then runs out by itself).
    pub(crate) async fn remove(&self) {
        self.task.abort();
        if let Err(error) = self.records.remove(self.id).await {
            tracing::warn!(%error, client = %self.id, "could not remove the client record; it expires within the watchdog timeout");
        }
    }
}

struct Refresher {
    engine: lock_core::backend::WeakEngine,
    id: Uuid,
    info: ClientInfo,
    records: ClientRecords,
    period: Duration,
    ttl_ms: u64,
}

impl Refresher {
    async fn run(self) {
        // Refusals are told once: a user whose ACL leaves out the records'
        // keys has working locks and no records, and a log full of it
        // would hide everything else.
        let mut refused_before = false;
        loop {
            // The engine is held only while reading its permits, never
            // across a write or a sleep.
            let permits: Vec<String> = match self.engine.upgrade() {
                Some(engine) if !engine.is_closed() => engine
                    .permits()
                    .targets()
                    .iter()
                    .map(|target| target.id.to_string())
                    .collect(),
                _ => return,
            };
            let sent = tokio::time::Instant::now();
            let next = match self
                .records
                .write(self.id, &self.info, &permits, self.ttl_ms)
                .await
            {
                Ok(store_ms) => {
                    // The write read the store's clock: requests are dated
                    // by it, also when this client's clock runs ahead.
                    if let Some(engine) = self.engine.upgrade() {
                        engine.observe_store_time(store_ms, sent.elapsed());
                    }
                    self.period
                }
                Err(error) if error.is_retryable() => {
                    tracing::debug!(%error, client = %self.id, "client record not written; trying again");
                    self.period.min(RETRY_AFTER)
                }
                Err(error) => {
                    if !std::mem::replace(&mut refused_before, true) {
                        tracing::warn!(%error, client = %self.id, "client record refused (an ACL without its keys?); locks work, but tools cannot name this client");
                    }
                    self.period
                }
            };
            tokio::time::sleep(next).await;
        }
    }
}

/// This process as a record describes it.
fn this_process(service: Option<String>) -> ClientInfo {
    let started_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let executable = std::env::current_exe()
        .ok()
        .and_then(|path| Some(path.file_name()?.to_string_lossy().into_owned()));
    ClientInfo::new(
        host_name(),
        std::process::id(),
        started_ms,
        env!("CARGO_PKG_VERSION"),
    )
    .with_service(service)
    .with_executable(executable)
}

/// The host's name without a system call (this crate has no unsafe code
/// and no dependency for it): the kernel's on Linux, else what the
/// environment says (containers set `HOSTNAME`, Windows `COMPUTERNAME`).
fn host_name() -> String {
    let from_file = ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok());
    let from_env = || {
        ["HOSTNAME", "COMPUTERNAME"]
            .iter()
            .find_map(|var| std::env::var(var).ok())
    };
    from_file
        .or_else(from_env)
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_names_itself() {
        let info = this_process(Some("svc".into()));
        assert_eq!(info.pid, std::process::id());
        assert_eq!(info.service.as_deref(), Some("svc"));
        assert!(!info.host.is_empty() && !info.host.contains('\n'));
        assert!(info.started_ms > 0);
        assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
    }
}
