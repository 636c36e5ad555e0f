//! The count-down latch's script set: Redisson 4.x's `RCountDownLatch`
//! layout.
//!
//! | item | on Redis |
//! | --- | --- |
//! | count | string `<prefix><name>` = the count, no expiry; deleted when it reaches ≤ 0 |
//! | channel | `redisson_countdownlatch__channel__{<prefix><name>}`: braces always, even around a name with its own |
//! | messages | `0`: the count reached zero (waiters return); `1`: a count was set or the latch deleted (waiters read the count again) |
//! | request record (ours; Redisson's name for request records) | `redisson_unlock_latch:{<prefix><name>}:<request-id>` → the first reply of a set, count-down or delete, so a retried one writes once |
//!
//! One Lua script per operation in this folder (each file's header gives
//! its KEYS, ARGV and replies), each after `counter.lua`, which refuses a
//! value of another kind at the key before anything is written.
//!
//! Because the channel always wraps the whole name in braces, a name with
//! its own hash tag puts the channel in another hash slot than the key; on
//! a cluster the scripts, which publish on that channel, cannot run there.
//! [`Latch`] refuses such a name when the handle is made
//! ([`Latch::check_name`]), asking the transport which keys may share
//! a call ([`lock_script::Transport::key_group`]), so the transport needs
//! to know nothing about latches.

use std::sync::LazyLock;

use lock_core::backend::{Channel, CountingStore, Look, Wake};
use lock_core::{LockError, LockName, Result};
use lock_script::error::bad_reply;
use lock_script::{compose, ScriptCall, ScriptEnv};
use redis::{Script, Value};

mod handle;
mod request;
pub use handle::{CountDownLatch, MAX_COUNT};
pub use request::LatchRequest;

/// The check every latch script starts with (`counter.lua`).
const COUNTER_LUA: &str = include_str!("counter.lua");

/// Sets the count of an absent latch (`try_set_count.lua`).
pub static TRY_SET_COUNT: LazyLock<Script> =
    LazyLock::new(|| compose(&[COUNTER_LUA], include_str!("try_set_count.lua")));
/// Takes one off the count (`count_down.lua`).
pub static COUNT_DOWN: LazyLock<Script> =
    LazyLock::new(|| compose(&[COUNTER_LUA], include_str!("count_down.lua")));
/// Reads the count (`count.lua`).
pub static COUNT: LazyLock<Script> =
    LazyLock::new(|| compose(&[COUNTER_LUA], include_str!("count.lua")));
/// Deletes the latch (`delete.lua`).
pub static DELETE: LazyLock<Script> =
    LazyLock::new(|| compose(&[COUNTER_LUA], include_str!("delete.lua")));

/// Published when a count-down reaches zero: every waiter returns.
pub const ZERO_COUNT_MESSAGE: &str = "0";
/// Published when a count is set or the latch deleted: waiters read the
/// count again.
pub const NEW_COUNT_MESSAGE: &str = "1";

/// The count-down latch kind, reached with
/// [`crate::LockClient::count_down_latch`].
#[derive(Debug, Clone)]
pub struct Latch {
    env: ScriptEnv,
}

impl Latch {
    /// The latch kind over `env`.
    pub fn new(env: ScriptEnv) -> Self {
        Self { env }
    }

    /// Every script of the kind, for preloading.
    pub fn scripts() -> Vec<&'static Script> {
        vec![&TRY_SET_COUNT, &COUNT_DOWN, &COUNT, &DELETE]
    }

    fn key(&self, name: &LockName) -> String {
        self.env.layout().lock_key(name)
    }

    fn channel_name(&self, name: &LockName) -> String {
        self.env.layout().latch_channel(name)
    }

    /// KEYS of every write: the key, the channel, the request record.
    fn write_keys(&self, req: &LatchRequest) -> Vec<String> {
        let id = req.request_id.to_string();
        vec![
            self.key(&req.name),
            self.channel_name(&req.name),
            self.env.layout().unlock_record(&req.name, &id),
        ]
    }
}

impl Latch {
    /// Refuses a name whose key, channel and request record would not share
    /// one [`key_group`](lock_script::Transport::key_group) (one hash slot
    /// on a cluster): a name with its own hash tag, or with a `}` that
    /// Redisson's brace-wrapped channel turns into one. Any name works on
    /// one node and in memory.
    pub fn check_name(&self, name: &LockName) -> Result<()> {
        let transport = self.env.transport();
        let key = self.key(name);
        let group = transport.key_group(&key);
        let channel = self.channel_name(name);
        let request_record = self.env.layout().unlock_record(name, "0");
        if transport.key_group(&channel) == group && transport.key_group(&request_record) == group {
            return Ok(());
        }
        Err(LockError::invalid(format!(
            "count-down latch {name:?} cannot work on this deployment: its key {key:?} and its \
             channel {channel:?} fall in different hash slots (the channel always wraps the whole \
             name in braces, as Redisson does, so a name with its own hash tag, or with braces, \
             splits them); use a name without braces"
        )))
    }

    /// Runs `try_set_count.lua`; publishes `1` when it set the count. A
    /// repeat of the request (same id) answers its first outcome.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for 0 or a count above `i64::MAX`;
    /// [`LockError::WrongType`] for another value at the key (untouched);
    /// retryable errors as described in [`lock_script::error`].
    ///
    /// # Cancel safety
    /// Dropping the future may leave the count set or not; repeat the
    /// request to learn which.
    pub async fn try_set_count(&self, req: &LatchRequest, count: u64) -> Result<bool> {
        if count == 0 || count > MAX_COUNT {
            return Err(LockError::invalid(format!(
                "a latch count must be between 1 and {}, not {count}",
                MAX_COUNT
            )));
        }
        let call = ScriptCall::new(
            &TRY_SET_COUNT,
            self.write_keys(req),
            vec![
                NEW_COUNT_MESSAGE.to_owned(),
                count.to_string(),
                self.env.publish_command(),
                req.deadline_ms.to_string(),
            ],
        )
        .idempotent(true);
        flag("try_set_count", &self.env.eval(call).await?)
    }

    /// Runs `count_down.lua`; publishes `0` when the count reaches zero.
    ///
    /// # Errors
    /// As [`Latch::try_set_count`], but for the
    /// count checks.
    ///
    /// # Cancel safety
    /// Dropping the future may leave the count-down done or not; repeat
    /// the request (same id, within its record ttl) to learn its outcome
    /// without counting twice.
    pub async fn count_down(&self, req: &LatchRequest) -> Result<u64> {
        let call = ScriptCall::new(
            &COUNT_DOWN,
            self.write_keys(req),
            vec![
                ZERO_COUNT_MESSAGE.to_owned(),
                self.env.publish_command(),
                req.deadline_ms.to_string(),
            ],
        )
        .idempotent(true);
        // The count comes back as text: the script's Lua numbers are
        // doubles, exact only up to 2^53 (see count_down.lua).
        match self.env.eval(call).await? {
            Value::BulkString(bytes) => std::str::from_utf8(&bytes)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or_else(|| bad_reply("count_down", &Value::BulkString(bytes))),
            other => Err(bad_reply("count_down", &other)),
        }
    }

    /// Runs `count.lua`.
    ///
    /// # Errors
    /// As [`Latch::count_down`].
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    pub async fn count(&self, name: &LockName) -> Result<u64> {
        let call = ScriptCall::new(&COUNT, vec![self.key(name)], vec![]).idempotent(true);
        match self.env.eval(call).await? {
            Value::Nil => Ok(0),
            Value::BulkString(bytes) => std::str::from_utf8(&bytes)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
                // A count below zero (written by another client) is open.
                .map(|n| u64::try_from(n).unwrap_or(0))
                .ok_or_else(|| LockError::WrongType {
                    key: self.key(name),
                }),
            other => Err(bad_reply("count", &other)),
        }
    }

    /// Runs `delete.lua`; publishes `1` when it deleted the latch. A repeat
    /// of the request (same id) answers its first outcome.
    ///
    /// # Errors
    /// As [`Latch::count_down`].
    ///
    /// # Cancel safety
    /// Dropping the future may leave the latch deleted or not.
    pub async fn delete(&self, req: &LatchRequest) -> Result<bool> {
        let call = ScriptCall::new(
            &DELETE,
            self.write_keys(req),
            vec![
                NEW_COUNT_MESSAGE.to_owned(),
                self.env.publish_command(),
                req.deadline_ms.to_string(),
            ],
        )
        .idempotent(true);
        flag("delete", &self.env.eval(call).await?)
    }

    /// The channel its waiters listen on.
    pub fn channel(&self, name: &LockName) -> Channel {
        Channel::new(self.channel_name(name))
    }

    /// Both messages wake every waiter: `0` (open) and `1` (look again).
    pub fn wake(&self, payload: &[u8]) -> Option<Wake> {
        match payload {
            b"0" | b"1" => Some(Wake::All),
            _ => None,
        }
    }
}

fn flag(what: &str, reply: &Value) -> Result<bool> {
    match reply {
        Value::Int(1) => Ok(true),
        Value::Int(0) => Ok(false),
        other => Err(bad_reply(what, other)),
    }
}

/// The count-down latch's registry entry
/// ([`crate::LockClient::count_down_latch`]).
pub const ENTRY: super::KindEntry = super::KindEntry::new(
    "latch",
    "latch",
    |env| std::sync::Arc::new(Latch::new(env.clone())),
    Latch::scripts,
);

impl super::Kinds {
    /// The count-down latch.
    pub fn latch(&self) -> std::sync::Arc<Latch> {
        self.bound(ENTRY.name, Latch::new)
    }
}

/// The engine's counter waits on a latch and counts it down through
/// these: a latch's waiters take nothing, so a "take" is the read that
/// finds it open (`count.lua` answering 0), undone by nothing; a
/// count-down is a give-back (`count_down.lua`), never lost to a
/// transient fault.
impl CountingStore for Latch {
    type Take = LockName;
    type Got = ();
    type GiveBack = LatchRequest;
    type Given = u64;

    fn kind_name(&self) -> &'static str {
        "latch"
    }

    fn channel(&self, name: &LockName) -> Channel {
        Latch::channel(self, name)
    }

    fn wake(&self, payload: &[u8]) -> Option<Wake> {
        Latch::wake(self, payload)
    }

    async fn try_take(&self, name: &LockName) -> Result<Look<()>> {
        Ok(if self.count(name).await? == 0 {
            Look::Got(())
        } else {
            Look::Busy(None)
        })
    }

    fn undo(&self, _name: &LockName, _got: &(), _deadline_ms: u64) -> Option<LatchRequest> {
        None
    }

    async fn give_back(&self, req: &LatchRequest) -> Result<u64> {
        self.count_down(req).await
    }
}
