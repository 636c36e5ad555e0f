//! Client records: each lock client keeps a small record of itself (host,
//! process id, service name, start time, library version, and the ids of
//! the permits its guards hold) so that tools can say who holds a lock,
//! waits for one or holds a permit, not only which client id.
//!
//! # Layout
//! | key | what |
//! | --- | --- |
//! | `{<prefix>lock_redis_clients}:<client-uuid>` | hash: one client's record, with a time to live of a few refresh periods |
//! | `{<prefix>lock_redis_clients}` | sorted set: the registry, member = client id, score = when its record runs out (server ms) |
//!
//! Every record and the registry share one hash tag, so every script here
//! runs on one node of a cluster and declares every key it touches. No
//! Redisson name starts so; Redisson never reads these keys.
//!
//! # Promise
//! A live client's record is refreshed every watchdog period and outlives
//! it by a few; a client that closes deletes it; one that dies loses it
//! when its time to live runs out. A holder's or waiter's field names its
//! client id, so its record is read directly. A permit's id is random
//! (Redisson's layout), so a permit is found in the record of the client
//! that named it at its last refresh: a permit taken since shows its
//! client one refresh late. Finding permits reads every live record (the
//! registry, pruned at each write), so its cost grows with the number of
//! live clients, never with dead ones.
//!
//! Joining records is best effort: a record that cannot be read (a
//! transient error, a cluster slot whose master is down) leaves the
//! snapshot without it, and is logged; the snapshot itself never fails
//! for it.

use std::collections::HashMap;
use std::sync::LazyLock;

use lock_core::{ClientInfo, Holder, Owner, Result};
use redis::{Script, Value};
use uuid::Uuid;

use crate::error::bad_reply;
use crate::{KeyLayout, ScriptCall, ScriptEnv};

mod record;

use record::Record;

/// Writes a record and prunes the registry (`write.lua`).
pub static WRITE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("write.lua")));
/// Removes a record (`remove.lua`).
pub static REMOVE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("remove.lua")));
/// The live client ids (`live.lua`).
pub static LIVE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("live.lua")));
/// Reads records (`read.lua`).
pub static READ: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("read.lua")));

/// How many records one read asks for: bounds one call's size when every
/// live record is read.
const READ_CHUNK: usize = 256;

/// The registry key of every client under `layout`'s prefix: the word
/// every client key starts with after the prefix.
///
/// ```
/// # use lock_script::KeyLayout; use lock_script::clients::registry_key;
/// assert_eq!(registry_key(&KeyLayout::with_prefix("app:")), "{app:lock_redis_clients}");
/// ```
pub fn registry_key(layout: &KeyLayout) -> String {
    format!("{{{}lock_redis_clients}}", layout.prefix())
}

/// The record key of client `id`.
///
/// ```
/// # use lock_script::KeyLayout; use lock_script::clients::record_key;
/// let id = uuid::Uuid::nil();
/// assert_eq!(
///     record_key(&KeyLayout::default(), id),
///     "{lock_redis_clients}:00000000-0000-0000-0000-000000000000"
/// );
/// ```
pub fn record_key(layout: &KeyLayout, id: Uuid) -> String {
    format!("{}:{id}", registry_key(layout))
}

/// Whether `key` is a client record or the registry, under any prefix:
/// for tools that list locks by their keys (they are no lock).
///
/// ```
/// # use lock_script::clients::is_client_key;
/// assert!(is_client_key("{app:lock_redis_clients}"));
/// assert!(is_client_key("{lock_redis_clients}:6f0c9d1e-6b7a-4a44-9d0e-1c2b3a4d5e6f"));
/// assert!(!is_client_key("lock_redis_clients"));
/// assert!(!is_client_key("{job}:timeout"));
/// ```
pub fn is_client_key(key: &str) -> bool {
    const TAG_END: &str = "lock_redis_clients}";
    key.starts_with('{')
        && key.split_once(TAG_END).is_some_and(|(_, rest)| {
            rest.is_empty()
                || rest
                    .strip_prefix(':')
                    .is_some_and(|id| id.parse::<Uuid>().is_ok())
        })
}

/// The client records of one deployment (see the module docs).
#[derive(Debug, Clone)]
pub struct ClientRecords {
    env: ScriptEnv,
}

impl ClientRecords {
    /// The records under `env`'s key prefix.
    pub fn new(env: ScriptEnv) -> Self {
        Self { env }
    }

    /// Its scripts, for preloading.
    pub fn scripts() -> Vec<&'static Script> {
        vec![&WRITE, &REMOVE, &LIVE, &READ]
    }

    /// Writes client `id`'s record: `info`, and the ids of the `permits`
    /// its guards hold; it runs out after `ttl_ms` unless written again.
    /// Returns the store's clock as the write read it, in milliseconds
    /// since the Unix epoch (the client's estimate of that clock follows
    /// it: `lock_core::backend::Engine::observe_store_time`).
    ///
    /// # Errors
    /// Store errors; [`lock_core::LockError::Protocol`] for a reply that
    /// is not the store's time.
    ///
    /// # Cancel safety
    /// Each write replaces the record whole: safe to drop and repeat.
    pub async fn write(
        &self,
        id: Uuid,
        info: &ClientInfo,
        permits: &[String],
        ttl_ms: u64,
    ) -> Result<u64> {
        let layout = self.env.layout();
        let mut args = vec![id.to_string(), ttl_ms.to_string()];
        args.extend(record::encode(info, permits));
        let keys = vec![registry_key(layout), record_key(layout, id)];
        let call = ScriptCall::new(&WRITE, keys, args).idempotent(true);
        match self.env.eval(call).await? {
            redis::Value::Int(now_ms) => u64::try_from(now_ms).map_err(|_| {
                crate::error::bad_reply("client record write", &redis::Value::Int(now_ms))
            }),
            other => Err(crate::error::bad_reply("client record write", &other)),
        }
    }

    /// Removes client `id`'s record.
    ///
    /// # Errors
    /// Store errors.
    ///
    /// # Cancel safety
    /// Safe to drop and repeat.
    pub async fn remove(&self, id: Uuid) -> Result<()> {
        let layout = self.env.layout();
        let keys = vec![registry_key(layout), record_key(layout, id)];
        let call = ScriptCall::new(&REMOVE, keys, vec![id.to_string()]).idempotent(true);
        self.env.eval(call).await.map(drop)
    }

    /// The records of the clients named by these holder or waiter
    /// `fields` (those of the `<client-uuid>:<owner-id>` shape), best
    /// effort (see the module docs). Makes no call when no field has that
    /// shape.
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    pub async fn of_fields<'a>(&self, fields: impl IntoIterator<Item = &'a str>) -> Records {
        let mut ids: Vec<Uuid> = fields
            .into_iter()
            .filter_map(Owner::parse_field)
            .map(|owner| owner.client_id())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        best_effort(self.read(&ids).await)
    }

    /// Every live client's record, for finding the holders of permits,
    /// best effort (see the module docs).
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    pub async fn all(&self) -> Records {
        best_effort(self.read_all().await)
    }

    async fn read_all(&self) -> Result<Records> {
        let registry = registry_key(self.env.layout());
        let call = ScriptCall::new(&LIVE, vec![registry], vec![]).idempotent(true);
        let reply = self.env.eval(call).await?;
        let Value::Array(items) = &reply else {
            return Err(bad_reply("clients live", &reply));
        };
        let ids = items
            .iter()
            .map(|item| match item {
                Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse().ok(),
                _ => None,
            })
            .collect::<Option<Vec<Uuid>>>()
            .ok_or_else(|| bad_reply("clients live", &reply))?;
        self.read(&ids).await
    }

    async fn read(&self, ids: &[Uuid]) -> Result<Records> {
        let mut records = Records::default();
        for chunk in ids.chunks(READ_CHUNK) {
            let layout = self.env.layout();
            let keys = chunk.iter().map(|id| record_key(layout, *id)).collect();
            let call = ScriptCall::new(&READ, keys, vec![]).idempotent(true);
            let reply = self.env.eval(call).await?;
            let Value::Array(items) = &reply else {
                return Err(bad_reply("clients read", &reply));
            };
            if items.len() != chunk.len() {
                return Err(bad_reply("clients read", &reply));
            }
            for (id, item) in chunk.iter().zip(items) {
                if let Some(record) = record::decode(item) {
                    records.insert(*id, record);
                }
            }
        }
        Ok(records)
    }
}

fn best_effort(read: Result<Records>) -> Records {
    read.unwrap_or_else(|error| {
        tracing::warn!(%error, "client records could not be read; showing holders without them");
        Records::default()
    })
}

/// Client records read for one snapshot, to join to its holders, waiters
/// and permits.
#[derive(Debug, Clone, Default)]
pub struct Records {
    clients: HashMap<Uuid, ClientInfo>,
    permits: HashMap<String, Uuid>,
}

impl Records {
    fn insert(&mut self, id: Uuid, record: Record) {
        for permit in record.permits {
            self.permits.insert(permit, id);
        }
        self.clients.insert(id, record.info);
    }

    /// The record of the client a holder or waiter `field` names.
    pub fn of_field(&self, field: &str) -> Option<&ClientInfo> {
        self.clients.get(&Owner::parse_field(field)?.client_id())
    }

    /// The record of the client that named permit `id` (lower-case hex)
    /// as one of its own.
    pub fn of_permit(&self, id: &str) -> Option<&ClientInfo> {
        self.clients.get(self.permits.get(id)?)
    }

    /// Sets each holder's [`Holder::client`] from these records.
    pub fn join_holders<'a>(&self, holders: impl IntoIterator<Item = &'a mut Holder>) {
        for holder in holders {
            holder.client = self.of_field(&holder.field).cloned();
        }
    }

    /// Whether no record was read.
    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }
}
