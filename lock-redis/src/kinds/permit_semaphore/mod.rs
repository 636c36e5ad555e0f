//! The expirable-permit semaphore's script set: Redisson 4.x's
//! `RPermitExpirableSemaphore` layout.
//!
//! | item | on Redis |
//! | --- | --- |
//! | free permits | string `<name>` (as the semaphore's) |
//! | leases | sorted set `{<name>}:timeout`: member = the permit id as 16 raw bytes, score = lease end in epoch ms (`922337203685477`: no lease) |
//! | channel | `redisson_sc:{<name>}` (shared with the semaphore), payload = the new count |
//! | release / add / set / try_set request record | `redisson_unlock_latch:{<name>}:<request-id>` |
//!
//! Every script but `set.lua` reclaims expired permits first (`leases.lua`;
//! setting the total needs no reclaim: it leaves the total as it is). Permit ids
//! travel as 32 hex characters in ARGV and become raw bytes inside the
//! scripts, so no transport has to carry binary arguments. Lease ends are
//! scored by the server's clock (`TIME`); Redisson scores them with its
//! caller's clock, so a Java client's clock skew against the server
//! lengthens or shortens its own permits' leases by that skew.

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use lock_core::backend::{Channel, LeaseRenewal, LeaseTarget, RequestId, Wake};
use lock_core::{LockName, Result};
use lock_script::compose;
use lock_script::error::bad_reply;
use lock_script::{ScriptCall, ScriptEnv};
use redis::{Script, Value};

use super::semaphore::{change_reply, int_reply, try_set, PermitRequest, COUNT_LUA, TRY_SET};

mod handle;
mod permit;
mod request;
mod take;
pub use handle::PermitExpirableSemaphore;
pub use permit::ExpirablePermitGuard;
pub use request::{
    LeaseOutcome, LeaseRelease, LeaseRequest, LeasesRelease, LeasesRequest, PermitCounts, PermitId,
    PermitLease,
};
pub use take::PermitTake;

/// The helpers of the expirable-permit scripts (`leases.lua`).
pub const LEASES_LUA: &str = include_str!("leases.lua");

/// Takes a permit under an id (`acquire.lua`).
pub static ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| compose(&[COUNT_LUA, LEASES_LUA], include_str!("acquire.lua")));
/// Gives back permits by id, all or none (`release.lua`).
pub static RELEASE: LazyLock<Script> =
    LazyLock::new(|| compose(&[COUNT_LUA, LEASES_LUA], include_str!("release.lua")));
/// Sets a taken permit's lease (`update_lease.lua`).
pub static UPDATE_LEASE: LazyLock<Script> =
    LazyLock::new(|| compose(&[COUNT_LUA, LEASES_LUA], include_str!("update_lease.lua")));
/// Adds or removes free permits (`add.lua`).
pub static ADD: LazyLock<Script> =
    LazyLock::new(|| compose(&[COUNT_LUA, LEASES_LUA], include_str!("add.lua")));
/// Extends many taken permits' leases, never shortening one (`renew.lua`).
pub static RENEW: LazyLock<Script> =
    LazyLock::new(|| compose(&[COUNT_LUA, LEASES_LUA], include_str!("renew.lua")));
/// Sets the total of free and taken permits (`set.lua`).
pub static SET: LazyLock<Script> =
    LazyLock::new(|| compose(&[COUNT_LUA, LEASES_LUA], include_str!("set.lua")));
/// Reads the free and the taken permits (`counts.lua`).
pub static COUNTS: LazyLock<Script> =
    LazyLock::new(|| compose(&[COUNT_LUA, LEASES_LUA], include_str!("counts.lua")));
/// Reads a permit's remaining lease (`lease_time.lua`).
pub static LEASE_TIME: LazyLock<Script> =
    LazyLock::new(|| compose(&[COUNT_LUA, LEASES_LUA], include_str!("lease_time.lua")));
/// Reads the free permits (`available.lua`).
pub static AVAILABLE: LazyLock<Script> =
    LazyLock::new(|| compose(&[COUNT_LUA, LEASES_LUA], include_str!("available.lua")));

/// The expirable-permit semaphore kind
/// ([`crate::LockClient::permit_expirable_semaphore`]).
#[derive(Debug, Clone)]
pub struct PermitSemaphore {
    env: ScriptEnv,
}

impl PermitSemaphore {
    /// The kind over `env`.
    pub fn new(env: ScriptEnv) -> Self {
        Self { env }
    }

    /// Every script of the kind, for preloading.
    pub fn scripts() -> Vec<&'static Script> {
        vec![
            &TRY_SET,
            &ACQUIRE,
            &RELEASE,
            &UPDATE_LEASE,
            &RENEW,
            &ADD,
            &AVAILABLE,
            &SET,
            &COUNTS,
            &LEASE_TIME,
        ]
    }

    /// Runs `release.lua`: every id or none; the notice carries `payload`
    /// ("count" or "given", see the script). Returns how many were given
    /// back.
    async fn release_ids(
        &self,
        name: &LockName,
        request_id: &str,
        deadline_ms: u64,
        payload: &str,
        ids: &[PermitId],
    ) -> Result<u64> {
        let mut args = vec![
            self.env.publish_command(),
            deadline_ms.to_string(),
            payload.to_owned(),
        ];
        args.extend(ids.iter().map(PermitId::to_string));
        let call =
            ScriptCall::new(&RELEASE, self.recorded_keys(name, request_id), args).idempotent(true);
        let n = int_reply("release", &self.env.eval(call).await?)?;
        u64::try_from(n).map_err(|_| bad_reply("release", &Value::Int(n)))
    }

    /// Runs `acquire.lua`: every id, one lease.
    async fn acquire(
        &self,
        name: &LockName,
        ids: &[PermitId],
        lease_ms: Option<u64>,
    ) -> Result<LeaseOutcome> {
        let mut args = vec![lease_arg(lease_ms), self.env.publish_command()];
        args.extend(ids.iter().map(PermitId::to_string));
        let call = ScriptCall::new(&ACQUIRE, self.keys(name), args).idempotent(true);
        let reply = self.env.eval(call).await?;
        let Value::Array(items) = &reply else {
            return Err(bad_reply("acquire", &reply));
        };
        match items.as_slice() {
            [Value::Int(1), Value::Int(0)] => Ok(LeaseOutcome::Acquired),
            [Value::Int(0), Value::Int(wait)] => Ok(LeaseOutcome::Busy {
                retry_in: u64::try_from(*wait).ok().map(Duration::from_millis),
            }),
            _ => Err(bad_reply("acquire", &reply)),
        }
    }

    /// The kind's keys, then the request's unlock record.
    fn recorded_keys(&self, name: &LockName, request_id: &str) -> Vec<String> {
        let mut keys = self.keys(name);
        keys.push(self.env.layout().unlock_record(name, request_id));
        keys
    }

    /// A change of the count that tells waiters (`add.lua`, `set.lua`
    /// take the same keys and arguments), recorded by the request's id.
    fn announced_change(&self, script: &'static Script, req: &PermitRequest) -> ScriptCall<'_> {
        ScriptCall::new(
            script,
            self.recorded_keys(&req.name, &req.request_id.to_string()),
            vec![
                req.permits.to_string(),
                self.env.publish_command(),
                req.deadline_ms.to_string(),
            ],
        )
        .idempotent(true)
    }

    fn keys(&self, name: &LockName) -> Vec<String> {
        let layout = self.env.layout();
        vec![
            layout.lock_key(name),
            layout.permit_leases_key(name),
            layout.semaphore_channel(name),
        ]
    }
}

fn lease_arg(lease_ms: Option<u64>) -> String {
    lease_ms.unwrap_or(0).to_string()
}

impl PermitSemaphore {
    /// Runs the semaphore's `try_set.lua` (Redisson shares it too).
    ///
    /// # Errors
    /// [`lock_core::LockError::WrongType`] for a key that holds no count
    /// (left untouched); retryable errors as described in
    /// [`lock_script::error`].
    ///
    /// # Cancel safety
    /// Dropping the future may leave the semaphore created or not.
    pub async fn try_set_permits(&self, req: &PermitRequest) -> Result<bool> {
        try_set(&self.env, req, None).await
    }

    /// Runs `set.lua`.
    ///
    /// # Errors
    /// As [`PermitSemaphore::add_permits`].
    ///
    /// # Cancel safety
    /// Repeat the request (same id) to learn its first outcome.
    pub async fn set_permits(&self, req: &PermitRequest) -> Result<()> {
        let call = self.announced_change(&SET, req);
        change_reply("set", &self.env.eval(call).await?, &req.name, req.permits).map(drop)
    }

    /// Runs `counts.lua`.
    ///
    /// # Errors
    /// As [`PermitSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// Safe to drop: it only reclaims expired permits besides reading.
    pub async fn counts(&self, name: &LockName) -> Result<PermitCounts> {
        let call = ScriptCall::new(&COUNTS, self.keys(name), vec![self.env.publish_command()])
            .idempotent(true);
        let reply = self.env.eval(call).await?;
        match &reply {
            Value::Array(items) => match items.as_slice() {
                [Value::Int(exists @ (0 | 1)), Value::Int(free), Value::Int(taken)] => {
                    Ok(PermitCounts::new(*exists == 1, *free, *taken))
                }
                _ => Err(bad_reply("counts", &reply)),
            },
            _ => Err(bad_reply("counts", &reply)),
        }
    }

    /// Runs `lease_time.lua`.
    ///
    /// # Errors
    /// As [`PermitSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// As [`PermitSemaphore::counts`].
    pub async fn lease_time(&self, name: &LockName, id: PermitId) -> Result<PermitLease> {
        let call = ScriptCall::new(
            &LEASE_TIME,
            self.keys(name),
            vec![id.to_string(), self.env.publish_command()],
        )
        .idempotent(true);
        match int_reply("lease_time", &self.env.eval(call).await?)? {
            -2 => Ok(PermitLease::NotTaken),
            -1 => Ok(PermitLease::Unlimited),
            ms if ms > 0 => Ok(PermitLease::Ends(Duration::from_millis(ms.unsigned_abs()))),
            n => Err(bad_reply("lease_time", &Value::Int(n))),
        }
    }

    /// Runs `acquire.lua` with every id.
    ///
    /// # Errors
    /// As [`PermitSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// Repeat the request (same permit ids) to learn its outcome.
    pub async fn try_acquire_many(&self, req: &LeasesRequest) -> Result<LeaseOutcome> {
        self.acquire(&req.name, &req.ids, req.lease_ms).await
    }

    /// Runs `release.lua` with every id; the notice carries how many were
    /// given back, as Redisson's `tryRelease(List)`'s does.
    ///
    /// # Errors
    /// As [`PermitSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// Repeat the request (same id) to learn its first outcome.
    pub async fn release_many(&self, req: &LeasesRelease) -> Result<u64> {
        let request_id = req.request_id.to_string();
        self.release_ids(&req.name, &request_id, req.deadline_ms, "given", &req.ids)
            .await
    }

    /// Runs `add.lua`.
    ///
    /// # Errors
    /// As [`PermitSemaphore::try_set_permits`];
    /// [`lock_core::LockError::InvalidArgument`] past the bound.
    ///
    /// # Cancel safety
    /// Repeat the request (same id) to learn its first outcome.
    pub async fn add_permits(&self, req: &PermitRequest) -> Result<()> {
        let call = self.announced_change(&ADD, req);
        change_reply("add", &self.env.eval(call).await?, &req.name, req.permits).map(drop)
    }

    /// Runs `available.lua`.
    ///
    /// # Errors
    /// As [`PermitSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// Safe to drop: it only reclaims expired permits besides reading.
    pub async fn available_permits(&self, name: &LockName) -> Result<i64> {
        let call = ScriptCall::new(
            &AVAILABLE,
            self.keys(name),
            vec![self.env.publish_command()],
        )
        .idempotent(true);
        int_reply("available", &self.env.eval(call).await?)
    }

    /// Runs `acquire.lua`.
    ///
    /// # Errors
    /// As [`PermitSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// Repeat the request (same permit id) to learn its outcome.
    pub async fn try_acquire(&self, req: &LeaseRequest) -> Result<LeaseOutcome> {
        self.acquire(&req.name, &[req.id], req.lease_ms).await
    }

    /// Runs `release.lua` with one id; the notice carries the new count, as
    /// Redisson's `tryRelease(id)`'s does.
    ///
    /// # Errors
    /// As [`PermitSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// Repeat the request (same id) to learn its first outcome.
    pub async fn release(&self, req: &LeaseRelease) -> Result<bool> {
        let request_id = req.request_id.to_string();
        let n = self
            .release_ids(&req.name, &request_id, req.deadline_ms, "count", &[req.id])
            .await?;
        match n {
            1 => Ok(true),
            0 => Ok(false),
            n => Err(bad_reply(
                "release",
                &Value::Int(i64::try_from(n).unwrap_or(i64::MAX)),
            )),
        }
    }

    /// Runs `update_lease.lua`.
    ///
    /// # Errors
    /// As [`PermitSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// Idempotent: repeat it.
    pub async fn update_lease(
        &self,
        name: &LockName,
        id: PermitId,
        lease_ms: Option<u64>,
    ) -> Result<bool> {
        let call = ScriptCall::new(
            &UPDATE_LEASE,
            self.keys(name),
            vec![
                id.to_string(),
                lease_arg(lease_ms),
                self.env.publish_command(),
            ],
        )
        .idempotent(true);
        Ok(int_reply("update_lease", &self.env.eval(call).await?)? == 1)
    }

    /// `redisson_sc:{<name>}`, as the semaphore's.
    pub fn channel(&self, name: &LockName) -> Channel {
        Channel::new(self.env.layout().semaphore_channel(name))
    }

    /// The payload is the new count: wakes up to that many waiters.
    pub fn wake(&self, payload: &[u8]) -> Option<Wake> {
        super::semaphore::wake(payload)
    }
}

#[async_trait]
impl LeaseRenewal for PermitSemaphore {
    /// Runs `renew.lua` in batches ([`ScriptEnv::renew_with`]).
    ///
    /// # Errors
    /// A whole-call error when no connection could be had; otherwise
    /// per-target errors for the chunks that failed.
    ///
    /// # Cancel safety
    /// Dropping the future may leave any subset extended: harmless.
    async fn renew(&self, targets: &[LeaseTarget], lease_ms: u64) -> Result<Vec<Result<bool>>> {
        self.env
            .renew_with(&RENEW, targets, lease_ms, |t| {
                (
                    self.keys(&t.name),
                    vec![t.id.to_string(), self.env.publish_command()],
                )
            })
            .await
    }

    /// The lane of the node serving the semaphore
    /// ([`ScriptEnv::renew_lane`]).
    fn renew_lane(&self, target: &LeaseTarget) -> u64 {
        self.env.renew_lane(&target.name)
    }

    /// [`PermitSemaphore::release`]: the client's close gives back its
    /// guards' permits with it.
    async fn release(
        &self,
        target: &LeaseTarget,
        request_id: RequestId,
        deadline_ms: u64,
    ) -> Result<bool> {
        let req = LeaseRelease {
            name: target.name.clone(),
            id: target.id.into(),
            request_id,
            deadline_ms,
        };
        PermitSemaphore::release(self, &req).await
    }

    fn kind_name(&self) -> &'static str {
        "permit_semaphore"
    }
}

/// The expirable-permit semaphore's registry entry
/// ([`crate::LockClient::permit_expirable_semaphore`]).
pub const ENTRY: super::KindEntry = super::KindEntry::new(
    "permit_semaphore",
    "semaphores",
    |env| std::sync::Arc::new(PermitSemaphore::new(env.clone())),
    PermitSemaphore::scripts,
);

impl super::Kinds {
    /// The expirable-permit semaphore.
    pub fn permit_semaphore(&self) -> std::sync::Arc<PermitSemaphore> {
        self.bound(ENTRY.name, PermitSemaphore::new)
    }
}
