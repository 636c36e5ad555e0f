//! The semaphore's script set: Redisson 4.x's `RSemaphore` layout.
//!
//! | item | on Redis |
//! | --- | --- |
//! | free permits | string `<name>` (decimal; negative after permits were removed while taken) |
//! | channel | `redisson_sc:{<name>}`, payload = the new count after every increase |
//! | acquire / drain request record (ours) | `redisson_lock_latch:{<name>}:<request-id>` |
//! | release / add / try_set request record | `redisson_unlock_latch:{<name>}:<request-id>` |
//!
//! One Lua script per operation in this folder (each file's header gives
//! its KEYS, ARGV and replies), each after the shared `common.lua` (the
//! request record) and `count.lua` (reading a count, the bound [`MAX_PERMITS`]).
//! The expirable-permit semaphore (`../permit_semaphore`) shares
//! `count.lua`, `try_set.lua` and the channel.

use std::sync::LazyLock;

use lock_core::backend::{Channel, CountingStore, Look, Wake};
use lock_core::{LockError, LockName, Result};
use lock_script::compose;
use lock_script::error::bad_reply;
use lock_script::{ScriptCall, ScriptEnv};
use redis::{Script, Value};

mod handle;
mod permits;
pub use handle::{PermitGuard, Semaphore};
pub use permits::{check_change, check_permits, PermitRequest, MAX_PERMITS};

/// The helpers of every semaphore script (`count.lua`).
pub const COUNT_LUA: &str = include_str!("count.lua");

/// Creates a semaphore unless it exists (`try_set.lua`).
pub static TRY_SET: LazyLock<Script> =
    LazyLock::new(|| compose(&[COUNT_LUA], include_str!("try_set.lua")));
/// Takes n permits if free (`acquire.lua`).
pub static ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| compose(&[COUNT_LUA], include_str!("acquire.lua")));
/// Gives back n permits (`release.lua`).
pub static RELEASE: LazyLock<Script> =
    LazyLock::new(|| compose(&[COUNT_LUA], include_str!("release.lua")));
/// Adds or removes permits (`add.lua`).
pub static ADD: LazyLock<Script> = LazyLock::new(|| compose(&[COUNT_LUA], include_str!("add.lua")));
/// Takes every free permit (`drain.lua`).
pub static DRAIN: LazyLock<Script> =
    LazyLock::new(|| compose(&[COUNT_LUA], include_str!("drain.lua")));
/// Reads the free permits (`available.lua`).
pub static AVAILABLE: LazyLock<Script> =
    LazyLock::new(|| compose(&[COUNT_LUA], include_str!("available.lua")));

/// The semaphore kind's store operations (its handle is [`Semaphore`],
/// from [`crate::LockClient::semaphore`]).
#[derive(Debug, Clone)]
pub struct SemaphoreStore {
    env: ScriptEnv,
}

impl SemaphoreStore {
    /// The semaphore kind over `env`.
    pub fn new(env: ScriptEnv) -> Self {
        Self { env }
    }

    /// Every script of the kind, for preloading.
    pub fn scripts() -> Vec<&'static Script> {
        vec![&TRY_SET, &ACQUIRE, &RELEASE, &ADD, &DRAIN, &AVAILABLE]
    }

    /// A change of the count that tells waiters (`add.lua` and
    /// `release.lua` take the same keys and first arguments): recorded by
    /// the request's id, so a retry learns the first outcome.
    fn announced_change(&self, script: &'static Script, req: &PermitRequest) -> ScriptCall<'_> {
        let layout = self.env.layout();
        ScriptCall::new(
            script,
            vec![
                layout.lock_key(&req.name),
                layout.semaphore_channel(&req.name),
                layout.unlock_record(&req.name, &req.request_id.to_string()),
            ],
            vec![
                req.permits.to_string(),
                self.env.publish_command(),
                req.deadline_ms.to_string(),
            ],
        )
        .idempotent(true)
    }
}

/// Runs `try_set.lua` (both semaphore kinds): creates the count unless it
/// exists, recorded by the request id so that a retry answers the first
/// reply.
pub(crate) async fn try_set(
    env: &ScriptEnv,
    req: &PermitRequest,
    ttl_ms: Option<u64>,
) -> Result<bool> {
    let layout = env.layout();
    let call = ScriptCall::new(
        &TRY_SET,
        vec![
            layout.lock_key(&req.name),
            layout.semaphore_channel(&req.name),
            layout.unlock_record(&req.name, &req.request_id.to_string()),
        ],
        vec![
            req.permits.to_string(),
            env.publish_command(),
            ttl_ms.unwrap_or(0).to_string(),
            req.deadline_ms.to_string(),
        ],
    )
    .idempotent(true);
    match int_reply("try_set", &env.eval(call).await?)? {
        1 => Ok(true),
        0 => Ok(false),
        n => Err(bad_reply("try_set", &Value::Int(n))),
    }
}

/// A reply that is one integer.
pub(crate) fn int_reply(script: &str, reply: &Value) -> Result<i64> {
    match reply {
        Value::Int(n) => Ok(*n),
        other => Err(bad_reply(script, other)),
    }
}

/// `{1, count}` → the new count; `{0, count}` → the change would pass
/// [`MAX_PERMITS`] (nothing written).
pub(crate) fn change_reply(
    script: &str,
    reply: &Value,
    name: &LockName,
    delta: i64,
) -> Result<i64> {
    let bad = || bad_reply(script, reply);
    let Value::Array(items) = reply else {
        return Err(bad());
    };
    match items.as_slice() {
        [Value::Int(1), Value::Int(count)] => Ok(*count),
        [Value::Int(0), Value::Int(count)] => Err(LockError::invalid(format!(
            "semaphore {name:?}: changing its {count} permits by {delta} would pass ±{MAX_PERMITS}"
        ))),
        _ => Err(bad()),
    }
}

/// A message on `redisson_sc:{<name>}`: the new count, which wakes up to
/// that many waiters of each client (none for a count ≤ 0), as a Java
/// waiter wakes up to that many of its own.
pub(crate) fn wake(payload: &[u8]) -> Option<Wake> {
    let count: i64 = std::str::from_utf8(payload).ok()?.trim().parse().ok()?;
    Some(Wake::Up(u64::try_from(count).unwrap_or(0)))
}

impl SemaphoreStore {
    /// Runs `try_set.lua`.
    ///
    /// # Errors
    /// [`LockError::WrongType`] for a key that holds no count (left
    /// untouched); retryable errors as described in [`lock_script::error`].
    ///
    /// # Cancel safety
    /// Dropping the future may leave the semaphore created or not.
    pub async fn try_set_permits(&self, req: &PermitRequest, ttl_ms: Option<u64>) -> Result<bool> {
        try_set(&self.env, req, ttl_ms).await
    }

    /// Runs `add.lua`.
    ///
    /// # Errors
    /// As [`SemaphoreStore::try_set_permits`];
    /// [`LockError::InvalidArgument`] past [`MAX_PERMITS`].
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
    /// As [`SemaphoreStore::try_set_permits`].
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    pub async fn available_permits(&self, name: &LockName) -> Result<i64> {
        let call = ScriptCall::new(&AVAILABLE, vec![self.env.layout().lock_key(name)], vec![])
            .idempotent(true);
        int_reply("available", &self.env.eval(call).await?)
    }

    /// Runs `acquire.lua`.
    ///
    /// # Errors
    /// As [`SemaphoreStore::try_set_permits`].
    ///
    /// # Cancel safety
    /// Repeat the request (same id) to learn its first outcome.
    pub async fn try_acquire(&self, req: &PermitRequest) -> Result<bool> {
        let layout = self.env.layout();
        let call = ScriptCall::new(
            &ACQUIRE,
            vec![
                layout.lock_key(&req.name),
                layout.acquire_record(&req.name, &req.request_id.to_string()),
            ],
            vec![req.permits.to_string(), req.deadline_ms.to_string()],
        )
        .idempotent(true);
        Ok(int_reply("acquire", &self.env.eval(call).await?)? == 1)
    }

    /// Runs `release.lua`.
    ///
    /// # Errors
    /// As [`SemaphoreStore::add_permits`].
    ///
    /// # Cancel safety
    /// Repeat the request (same id) to learn its first outcome.
    pub async fn release(&self, req: &PermitRequest) -> Result<()> {
        let mut call = self.announced_change(&RELEASE, req);
        call.args.push("0".to_owned());
        change_reply(
            "release",
            &self.env.eval(call).await?,
            &req.name,
            req.permits,
        )
        .map(drop)
    }

    /// Runs `release.lua`, only if the semaphore exists.
    ///
    /// # Errors
    /// As [`SemaphoreStore::add_permits`].
    ///
    /// # Cancel safety
    /// Repeat the request (same id) to learn its first outcome.
    pub async fn release_if_exists(&self, req: &PermitRequest) -> Result<bool> {
        let mut call = self.announced_change(&RELEASE, req);
        call.args.push("1".to_owned());
        let reply = self.env.eval(call).await?;
        if let Value::Array(items) = &reply
            && let [Value::Int(2), Value::Int(0)] = items.as_slice()
        {
            return Ok(false);
        }
        change_reply("release_if_exists", &reply, &req.name, req.permits).map(|_| true)
    }

    /// Runs `drain.lua`.
    ///
    /// # Errors
    /// As [`SemaphoreStore::try_set_permits`].
    ///
    /// # Cancel safety
    /// Repeat the request (same id) to learn its first outcome.
    pub async fn drain_permits(&self, req: &PermitRequest) -> Result<i64> {
        let layout = self.env.layout();
        let call = ScriptCall::new(
            &DRAIN,
            vec![
                layout.lock_key(&req.name),
                layout.acquire_record(&req.name, &req.request_id.to_string()),
            ],
            vec![req.deadline_ms.to_string()],
        )
        .idempotent(true);
        int_reply("drain", &self.env.eval(call).await?)
    }

    /// `redisson_sc:{<name>}`.
    pub fn channel(&self, name: &LockName) -> Channel {
        Channel::new(self.env.layout().semaphore_channel(name))
    }

    /// The payload is the new count: wakes up to that many waiters.
    pub fn wake(&self, payload: &[u8]) -> Option<Wake> {
        wake(payload)
    }
}

/// The semaphore's registry entry ([`crate::LockClient::semaphore`]).
pub const ENTRY: super::KindEntry = super::KindEntry::new(
    "semaphore",
    "semaphores",
    |env| std::sync::Arc::new(SemaphoreStore::new(env.clone())),
    SemaphoreStore::scripts,
);

impl super::Kinds {
    /// The semaphore.
    pub fn semaphore(&self) -> std::sync::Arc<SemaphoreStore> {
        self.bound(ENTRY.name, SemaphoreStore::new)
    }
}

/// The engine's counter takes and gives back a plain semaphore's permits
/// through these: a take is "if free ≥ n, take n" (`acquire.lua`), and
/// it is undone by giving the n back as a new request (`release.lua`).
impl CountingStore for SemaphoreStore {
    type Take = PermitRequest;
    type Got = ();
    type GiveBack = PermitRequest;
    type Given = ();

    fn kind_name(&self) -> &'static str {
        "semaphore"
    }

    fn channel(&self, name: &LockName) -> Channel {
        SemaphoreStore::channel(self, name)
    }

    fn wake(&self, payload: &[u8]) -> Option<Wake> {
        wake(payload)
    }

    async fn try_take(&self, req: &PermitRequest) -> Result<Look<()>> {
        // No lease runs out here: only a notice tells when to look again.
        Ok(if self.try_acquire(req).await? {
            Look::Got(())
        } else {
            Look::Busy(None)
        })
    }

    fn undo(&self, req: &PermitRequest, _got: &(), deadline_ms: u64) -> Option<PermitRequest> {
        Some(PermitRequest::new(
            req.name.clone(),
            req.permits,
            deadline_ms,
        ))
    }

    async fn give_back(&self, req: &PermitRequest) -> Result<()> {
        self.release(req).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_is_the_number_of_waiters_to_wake() {
        assert_eq!(wake(b"3"), Some(Wake::Up(3)));
        assert_eq!(wake(b"0"), Some(Wake::Up(0)));
        assert_eq!(wake(b"-2"), Some(Wake::Up(0)));
        assert_eq!(wake(b"x"), None);
    }
}
