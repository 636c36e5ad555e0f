//! [`ScriptEnv`]: what every kind's script set runs with — the transport,
//! the key layout, and the replica sync — and the steps they share.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use lock_core::backend::{
    AcquireOutcome, AcquireRequest, Connection, ExclusiveKind, ReleaseRequest, RenewTarget,
};
use lock_core::{LockError, LockName, Result};
use redis::Value;

use crate::call::ScriptCall;
use crate::layout::KeyLayout;
use crate::replies;
use crate::scripts::RENEW;
use crate::transport::Transport;

/// At most this many locks are renewed by one script call; a bigger batch is
/// split into calls that are pipelined together.
pub const RENEW_CHUNK: usize = 500;

/// At most this many renewal calls ([`RENEW_CHUNK`] locks each) are
/// pipelined at once; a bigger batch is sent in windows, one after the
/// other. A window's requests, their encoding and their replies are the
/// memory a renewal takes per lock, so one holds at most 8 000 locks' worth,
/// at the cost of one round trip per window. (The watchdog hands a kind
/// smaller slices of one [lane](Transport::lane) itself, so its calls are
/// one window each.)
pub const RENEW_WINDOW: usize = 16;

/// Wait for replicas after taking a lock, so that a lock reported taken
/// survives the failover of its master to one of them. Releases and
/// renewals never wait. Applies to every kind on every deployment.
///
/// Two rules:
///
/// * [`ReplicaSync::connected`] (the default, with
///   [`ReplicaSync::DEFAULT_TIMEOUT`]; `replicas` is 0): Redisson's
///   `checkLockSyncedSlaves`. The acquisition waits for the replicas its
///   master has connected now, and fails only when none of them
///   acknowledged while at least one is connected. A master without
///   replicas (and the in-memory store) is sent no `WAIT`; the count is
///   learned from `INFO replication`, pipelined with an acquisition about
///   once a second, and a server that refuses `INFO` or `WAIT` to the user
///   counts as having no replicas.
/// * [`ReplicaSync::new`]`(n, timeout)`: at least `n` replicas must
///   acknowledge; `WAIT` is then required (checked at connect).
///
/// When the rule is not met in time, the hold just taken is given back and
/// the acquisition fails with [`LockError::NotReplicated`]. The `WAIT` goes
/// on a connection of its own, so it delays nothing but its own
/// acquisition (renewals and releases never queue behind it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
#[non_exhaustive]
pub struct ReplicaSync {
    /// How many replicas must acknowledge the write; 0 for the rule of
    /// [`ReplicaSync::connected`] (in files: leave it out).
    #[cfg_attr(feature = "serde", serde(default))]
    pub replicas: u32,
    /// How long to wait for them (`WAIT`'s timeout).
    #[cfg_attr(
        feature = "serde",
        serde(with = "humantime_serde", default = "default_timeout")
    )]
    pub timeout: Duration,
}

#[cfg(feature = "serde")]
fn default_timeout() -> Duration {
    ReplicaSync::DEFAULT_TIMEOUT
}

impl ReplicaSync {
    /// The default `WAIT` timeout: 1 s, Redisson's `slavesSyncTimeout`. A
    /// live replica acknowledges within its round trip (well under a
    /// millisecond on a LAN, milliseconds across zones), so the timeout
    /// only bites when a replica is stopped or cut off; then it bounds what
    /// each acquisition waits before failing, and adds to the longest call
    /// (3 s command timeout + 1 s), far below the 30 s lease.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);

    /// Wait for `replicas` replicas, at most `timeout`.
    pub fn new(replicas: u32, timeout: Duration) -> Self {
        Self { replicas, timeout }
    }

    /// Wait for the replicas connected now, at most `timeout`; fail only
    /// when none acknowledged while one or more are connected (Redisson's
    /// rule, the default).
    pub fn connected(timeout: Duration) -> Self {
        Self {
            replicas: 0,
            timeout,
        }
    }

    /// Whether this is the rule of [`ReplicaSync::connected`].
    pub fn is_connected_rule(&self) -> bool {
        self.replicas == 0
    }

    /// Checks the option without any I/O.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] (naming `replica_sync`) for a zero
    /// timeout.
    pub fn validate(&self) -> Result<()> {
        if self.timeout.is_zero() {
            return Err(LockError::invalid(
                "replica_sync needs a timeout above zero",
            ));
        }
        Ok(())
    }
}

impl Default for ReplicaSync {
    /// [`ReplicaSync::connected`] with [`ReplicaSync::DEFAULT_TIMEOUT`].
    fn default() -> Self {
        Self::connected(Self::DEFAULT_TIMEOUT)
    }
}

/// The transport, key layout and replica sync one client's kinds share.
/// Cheap to clone.
#[derive(Clone)]
pub struct ScriptEnv {
    transport: Arc<dyn Transport>,
    layout: KeyLayout,
    replica_sync: Option<ReplicaSync>,
}

impl std::fmt::Debug for ScriptEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptEnv")
            .field("layout", &self.layout)
            .field("publish_command", &self.transport.publish_command())
            .field("replica_sync", &self.replica_sync)
            .finish()
    }
}

impl ScriptEnv {
    /// Kinds over `transport` with key names from `layout`, without replica
    /// sync.
    pub fn new(transport: Arc<dyn Transport>, layout: KeyLayout) -> Self {
        Self {
            transport,
            layout,
            replica_sync: None,
        }
    }

    /// Sets (or clears) the replica sync of every acquisition.
    #[must_use]
    pub fn with_replica_sync(mut self, sync: Option<ReplicaSync>) -> Self {
        self.replica_sync = sync;
        self
    }

    /// The key layout.
    pub fn layout(&self) -> &KeyLayout {
        &self.layout
    }

    /// The transport.
    pub fn transport(&self) -> &Arc<dyn Transport> {
        &self.transport
    }

    /// The transport as the engine's connection (the same `Arc`: a
    /// transport *is* a [`Connection`]): what a client gives
    /// [`lock_core::backend::Engine::new`]. Its
    /// [command timeout](Connection::command_timeout) is the transport's
    /// alone; a client checks its configuration against
    /// [`ScriptEnv::command_timeout`] (replica wait included) first.
    pub fn connection(&self) -> Arc<dyn Connection> {
        Arc::clone(&self.transport) as Arc<dyn Connection>
    }

    /// The replica sync, when configured.
    pub fn replica_sync(&self) -> Option<ReplicaSync> {
        self.replica_sync
    }

    /// The command the scripts publish with (see
    /// [`Transport::publish_command`]).
    pub fn publish_command(&self) -> String {
        self.transport.publish_command().to_owned()
    }

    /// The longest one call takes: the transport's command timeout, plus
    /// the replica wait when configured (an acquisition waits for its
    /// replicas after its script ran). What a client validates its
    /// [`lock_core::ClientConfig`] against
    /// ([`lock_core::ClientConfig::validate_for`]).
    pub fn command_timeout(&self) -> Option<Duration> {
        let replica_wait = self
            .replica_sync
            .map_or(Duration::ZERO, |sync| sync.timeout);
        Some(
            self.transport
                .command_timeout()?
                .saturating_add(replica_wait),
        )
    }

    /// Runs one script.
    ///
    /// # Errors
    /// As [`Transport::eval`].
    ///
    /// # Cancel safety
    /// As [`Transport::eval`].
    pub async fn eval(&self, call: ScriptCall<'_>) -> Result<Value> {
        self.transport.eval(call).await
    }

    /// Runs `call`, an acquisition of `req` by `kind` whose reply has the
    /// shape of [`replies::acquire`], with the replica sync if configured:
    /// a hold that too few replicas acknowledged is given back through
    /// `kind` and reported as [`LockError::NotReplicated`]. Should giving it
    /// back fail too, it stays until its lease runs out (the watchdog does
    /// not renew a hold the caller never got).
    ///
    /// # Errors
    /// As [`Transport::eval`]; [`LockError::NotReplicated`].
    ///
    /// # Cancel safety
    /// As [`Transport::eval`].
    pub async fn acquire(
        &self,
        kind: &dyn ExclusiveKind,
        call: ScriptCall<'_>,
        req: &AcquireRequest,
    ) -> Result<AcquireOutcome> {
        self.acquire_decoded(kind, call, req, replies::acquire)
            .await
    }

    /// [`ScriptEnv::acquire`] for a call whose reply `decode` reads (a
    /// plain command's, [`ScriptCall::command`]).
    ///
    /// # Errors
    /// As [`ScriptEnv::acquire`], and `decode`'s.
    ///
    /// # Cancel safety
    /// As [`Transport::eval`].
    pub async fn acquire_decoded(
        &self,
        kind: &dyn ExclusiveKind,
        call: ScriptCall<'_>,
        req: &AcquireRequest,
        decode: fn(&Value) -> Result<AcquireOutcome>,
    ) -> Result<AcquireOutcome> {
        let Some(sync) = self.replica_sync else {
            return decode(&self.transport.eval(call).await?);
        };
        let (outcome, acked, wanted) = if sync.is_connected_rule() {
            let (reply, acks) = self.transport.eval_synced(call, sync.timeout).await?;
            // Redisson's rule: one acknowledgement suffices, and none is
            // needed from a master without replicas.
            let wanted = u32::from(acks.connected > 0);
            (decode(&reply)?, acks.acked, wanted)
        } else {
            let (reply, acked) = self
                .transport
                .eval_and_wait(call, sync.replicas, sync.timeout)
                .await?;
            (decode(&reply)?, acked, sync.replicas)
        };
        if acked >= wanted || !matches!(outcome, AcquireOutcome::Acquired { .. }) {
            return Ok(outcome);
        }
        let undo = ReleaseRequest::new(req.name.clone(), req.owner, req.lease_ms, req.deadline_ms)
            .private_owner(req.private_owner);
        if let Err(e) = kind.release(&undo).await {
            tracing::warn!(lock = %req.name, error = %e, "could not give back an unreplicated hold; it lasts until its lease runs out");
        }
        Err(LockError::NotReplicated {
            name: req.name.to_string(),
            wanted,
            acked,
        })
    }

    /// Extends the lease of every target its owner still holds, with the
    /// shared `renew.lua`, on chunks of at most [`RENEW_CHUNK`] locks (never
    /// mixing [`Transport::key_group`]s), pipelined [`RENEW_WINDOW`] calls at
    /// a time: the [`ExclusiveKind::renew`] of every kind that keeps its
    /// holds in a lock hash.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for a zero lease; a whole-call error
    /// when no connection could be had; otherwise per-target errors for the
    /// chunks that failed or timed out.
    ///
    /// # Cancel safety
    /// Dropping the future may leave any subset of the leases extended,
    /// which is harmless.
    pub async fn renew(&self, targets: &[RenewTarget], lease_ms: u64) -> Result<Vec<Result<bool>>> {
        self.renew_with(&RENEW, targets, lease_ms, |t| {
            (vec![self.layout.lock_key(&t.name)], vec![t.owner.field()])
        })
        .await
    }

    /// The [lane](Transport::lane) serving `name`'s keys now (every key of
    /// one name shares its key group): the
    /// [`ExclusiveKind::renew_lane`] (and
    /// [`lock_core::backend::LeaseRenewal::renew_lane`]) of every kind, so
    /// the watchdog renews the holds of one node apart from the others.
    pub fn renew_lane(&self, name: &LockName) -> u64 {
        let group = self.transport.key_group(&self.layout.lock_key(name));
        self.transport.lane(group)
    }

    /// The batch renewal of [`ScriptEnv::renew`] with another script:
    /// `keys_args(target)` gives each target's KEYS and ARGV, the first
    /// key deciding its [`Transport::key_group`]; a call's KEYS and ARGV are
    /// its targets' in order, after one ARGV, the lease. `script` replies
    /// one integer per target, 1 renewed or 0 not held (as `renew.lua`):
    /// the renewal of kinds whose holds are more than a hash field (a
    /// read-write lock's read holds) or are no lock at all (a leased
    /// permit, whose target is a semaphore and a permit id).
    ///
    /// Lanes are the caller's: the watchdog, the one caller, groups holds
    /// by [lane](Transport::lane) (through the kinds'
    /// [`ExclusiveKind::renew_lane`]) and hands each lane to its own call,
    /// all lanes at once, so a lane whose node does not answer delays no
    /// other lane. Here the targets are only split by key group (a call's
    /// keys must share one cluster slot), chunked and sent window after
    /// window. A window that reaches nothing ends the call: its later
    /// chunks get the window's error unsent, since each would wait out the
    /// command timeout on the same node. (Targets of several lanes in one
    /// call are still all renewed, the transport pipelining per node; only
    /// a dead node's window then holds back the later windows.)
    ///
    /// # Errors
    /// As [`ScriptEnv::renew`].
    ///
    /// # Cancel safety
    /// As [`ScriptEnv::renew`].
    pub async fn renew_with<T, F>(
        &self,
        script: &redis::Script,
        targets: &[T],
        lease_ms: u64,
        keys_args: F,
    ) -> Result<Vec<Result<bool>>>
    where
        T: Sync,
        F: Fn(&T) -> (Vec<String>, Vec<String>) + Send + Sync,
    {
        if targets.is_empty() {
            return Ok(Vec::new());
        }
        check_lease(lease_ms)?;
        // Keys of different groups (cluster slots) never share a call. Only
        // the indices are kept: each target's KEYS and ARGV are made again
        // when its window is sent, so a renewal holds the strings of one
        // window at a time, not of every lock at once.
        let mut groups: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (i, target) in targets.iter().enumerate() {
            let (keys, _) = keys_args(target);
            let first = keys.first().map_or("", String::as_str);
            groups
                .entry(self.transport.key_group(first))
                .or_default()
                .push(i);
        }
        let chunks: Vec<&[usize]> = groups
            .values()
            .flat_map(|indices| indices.chunks(RENEW_CHUNK))
            .collect();
        let lease = lease_ms.to_string();
        let mut out: Vec<Result<bool>> = vec![Ok(false); targets.len()];
        let mut sent = false;
        let mut windows = chunks.chunks(RENEW_WINDOW);
        for window in windows.by_ref() {
            let calls = window
                .iter()
                .map(|chunk| {
                    let mut keys = Vec::with_capacity(chunk.len());
                    let mut args = Vec::with_capacity(chunk.len() + 1);
                    args.push(lease.clone());
                    for &i in *chunk {
                        let (k, a) = keys_args(&targets[i]);
                        keys.extend(k);
                        args.extend(a);
                    }
                    // A renewal only ever extends a lease: repeating it is
                    // harmless.
                    ScriptCall::new(script, keys, args).idempotent(true)
                })
                .collect();
            let results = match self.transport.eval_batch(calls).await {
                Ok(results) if results.len() == window.len() => {
                    sent = true;
                    results
                }
                Ok(results) => {
                    sent = true;
                    let e = LockError::protocol(format!(
                        "renew: {} replies to {} calls",
                        results.len(),
                        window.len()
                    ));
                    window.iter().map(|_| Err(e.clone())).collect()
                }
                // Nothing of the call was sent: the whole call failed.
                Err(e) if !sent => return Err(e),
                Err(e) => window.iter().map(|_| Err(e.clone())).collect(),
            };
            let mut last_error = None;
            let mut answered = false;
            for (result, chunk) in results.into_iter().zip(window) {
                match result.and_then(|reply| replies::renew(&reply, chunk.len())) {
                    Ok(renewed) => {
                        answered = true;
                        for (&i, ok) in chunk.iter().zip(renewed) {
                            out[i] = Ok(ok);
                        }
                    }
                    Err(e) => {
                        for &i in *chunk {
                            out[i] = Err(e.clone());
                        }
                        last_error = Some(e);
                    }
                }
            }
            if let (false, Some(e)) = (answered, last_error) {
                // The node answered none of it: the rest would only wait
                // out the same timeout, and are retried by the caller.
                for &i in windows.flatten().copied().flatten() {
                    out[i] = Err(e.clone());
                }
                break;
            }
        }
        Ok(out)
    }
}

/// Rejects a zero lease before any I/O (every lock script needs a lease of
/// at least 1 ms).
///
/// # Errors
/// [`LockError::InvalidArgument`] for `0`.
pub fn check_lease(lease_ms: u64) -> Result<()> {
    if lease_ms == 0 {
        Err(LockError::invalid("lease must be at least 1 ms"))
    } else {
        Ok(())
    }
}
