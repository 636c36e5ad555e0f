//! [`Describer`]: what is stored under a name, read with one kind-neutral
//! script (`describe.lua`) and told apart by Redisson's layouts
//! (the layouts of `docs/redis-layout.md`), for [`crate::LockClient::describe`].
//!
//! | stored under `<name>` | described as |
//! | --- | --- |
//! | nothing (and no live permit leases) | [`Description::Free`] |
//! | a hash with a `mode` field (`read`/`write`) | [`Description::ReadWriteLock`]: the field `<owner>:write` is the writer, other `<owner>` fields readers |
//! | any other hash | [`Description::Lock`]: its counted fields (as the lock's inspection reads them) |
//! | an integer, with a sorted set `{<name>}:timeout` beside it | [`Description::PermitExpirableSemaphore`] (free permits, live leases) |
//! | an integer alone | [`Description::SemaphoreOrLatch`]: a semaphore's free permits and a latch's count look alike |
//! | anything else | [`Description::Unknown`] with its Redis type |
//!
//! Read-write locks and semaphores are read from their layouts here
//! directly, so this needs none of their kinds' code; the names (the lock
//! key, the permit leases' set) come from [`lock_script::KeyLayout`], as
//! the kinds' own do.
//!
//! Each holder, reader, writer and leased permit then gets the record of
//! its client, when that client keeps one (`lock_script::clients`: ours
//! do; Redisson's and other libraries' holders keep their raw field and
//! no record). A permit's holder may show up one record refresh late.

use std::sync::LazyLock;
use std::time::Duration;

use lock_core::{Holder, LockInfo, LockName, Result};
use lock_script::clients::ClientRecords;
use lock_script::error::bad_reply;
use lock_script::{ScriptCall, ScriptEnv};
use redis::{Script, Value};

mod info;
mod join;
pub use info::{
    CounterInfo, Description, ExpirableSemaphoreInfo, LeasedPermit, ReadWriteInfo, ReadWriteMode,
};

/// Reads what is stored under a name (`describe.lua`).
pub static DESCRIBE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("describe.lua")));

/// A permit lease score meaning "no lease" (Redisson's).
const NO_LEASE: f64 = 922_337_203_685_477.0;

/// The writer's field suffix in a read-write lock hash.
const WRITE_SUFFIX: &str = ":write";

/// Reads any name's layout; registered on every client
/// ([`crate::kinds::Kinds`]).
#[derive(Debug, Clone)]
pub struct Describer {
    env: ScriptEnv,
    records: ClientRecords,
}

impl Describer {
    /// A reader over `env`.
    pub fn new(env: ScriptEnv) -> Self {
        Self {
            records: ClientRecords::new(env.clone()),
            env,
        }
    }

    /// Its script, for preloading.
    pub fn scripts() -> Vec<&'static Script> {
        vec![&DESCRIBE]
    }
}

impl Describer {
    /// Runs `describe.lua` and reads its reply by the table in the module
    /// docs.
    ///
    /// # Errors
    /// Retryable errors as described in [`lock_script::error`];
    /// [`lock_core::LockError::Protocol`] for a reply of another shape.
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    pub async fn describe(&self, name: &LockName) -> Result<Description> {
        let layout = self.env.layout();
        let key = layout.lock_key(name);
        let leases = layout.permit_leases_key(name);
        let transport = self.env.transport();
        // A name whose lease set lies in another cluster slot (a `}`
        // without `{`) cannot be a permit-expirable semaphore there: its
        // scripts could not run. Read the key alone then.
        let (leases, read_leases) = if transport.key_group(&leases) == transport.key_group(&key) {
            (leases, "1")
        } else {
            (key.clone(), "0")
        };
        let call = ScriptCall::new(&DESCRIBE, vec![key, leases], vec![read_leases.to_owned()])
            .idempotent(true);
        let reply = self.env.eval(call).await?;
        let mut description = decode(&reply).ok_or_else(|| bad_reply("describe", &reply))?;
        join::join(&self.records, &mut description).await;
        Ok(description)
    }
}

fn decode(reply: &Value) -> Option<Description> {
    let Value::Array(items) = reply else {
        return None;
    };
    let [kind, value, pttl, leases, Value::Int(now)] = items.as_slice() else {
        return None;
    };
    let ttl = match pttl {
        Value::Int(ms) => u64::try_from(*ms).ok().map(Duration::from_millis),
        _ => return None,
    };
    let leases = match leases {
        Value::Nil => None,
        Value::Array(flat) => Some(permits(flat, *now)?),
        _ => return None,
    };
    Some(match (text(kind)?.as_str(), value) {
        ("hash", Value::Array(flat)) => hash(flat, ttl)?,
        ("string", value) => {
            // Any bytes: another library's lean-lock token may be binary
            // (rslock writes random bytes), shown as lossy text.
            let stored = match value {
                Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                other => text(other)?,
            };
            let counter = stored.parse::<i64>().ok();
            match (counter, leases) {
                (Some(available), Some(permits)) => Description::PermitExpirableSemaphore(
                    ExpirableSemaphoreInfo::new(available, permits),
                ),
                (Some(value), None) => Description::SemaphoreOrLatch(CounterInfo::new(value, ttl)),
                (None, _) => {
                    Description::LeanLock(LockInfo::new(vec![Holder::new(stored, 1)], ttl))
                }
            }
        }
        ("none", _) => match leases {
            Some(permits) if !permits.is_empty() => {
                Description::PermitExpirableSemaphore(ExpirableSemaphoreInfo::new(0, permits))
            }
            _ => Description::Free,
        },
        (other, _) => Description::Unknown {
            store_type: other.to_owned(),
        },
    })
}

/// A lock hash: a read-write lock when it has a `mode` field, else a lock.
fn hash(flat: &[Value], ttl: Option<Duration>) -> Option<Description> {
    let pairs = flat
        .chunks(2)
        .map(|pair| match pair {
            [field, value] => Some((text(field)?, text(value)?)),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    let mode = pairs
        .iter()
        .find(|(field, _)| field == "mode")
        .map(|(_, value)| value.as_str());
    let mut writer = None;
    let mut counted = Vec::new();
    for (field, value) in &pairs {
        // Fields that are not counts (`mode`) are skipped, as the lock's
        // own inspection does.
        let Ok(count) = value.parse::<u64>() else {
            continue;
        };
        match field.strip_suffix(WRITE_SUFFIX) {
            Some(owner) if mode.is_some() => {
                writer = Some(Holder::new(owner.to_owned(), count));
            }
            _ => counted.push(Holder::new(field.clone(), count)),
        }
    }
    Some(match mode {
        Some(mode) => {
            let mode = if mode == "write" {
                ReadWriteMode::Write
            } else {
                ReadWriteMode::Read
            };
            Description::ReadWriteLock(ReadWriteInfo::new(mode, writer, counted, ttl))
        }
        None => Description::Lock(LockInfo::new(counted, ttl)),
    })
}

/// Live leases: (16 raw bytes, expiry score) pairs; each lease's time left
/// is its end less the server's clock `now` (epoch milliseconds).
fn permits(flat: &[Value], now: i64) -> Option<Vec<LeasedPermit>> {
    flat.chunks(2)
        .map(|pair| {
            let [Value::BulkString(id), score] = pair else {
                return None;
            };
            let score: f64 = text(score)?.parse().ok()?;
            let left = (score < NO_LEASE).then(|| {
                // Whole milliseconds, as stored; zero once due.
                let left = (score as i64).saturating_sub(now);
                Duration::from_millis(u64::try_from(left).unwrap_or(0))
            });
            Some(LeasedPermit::new(hex(id), left))
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(n) => Some(n.to_string()),
        Value::Double(d) => Some(d.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    /// The server's clock in the replies.
    const NOW: i64 = 1_700_000_000_000;

    fn reply(kind: &str, value: Value, pttl: i64, leases: Value) -> Value {
        Value::Array(vec![
            bulk(kind),
            value,
            Value::Int(pttl),
            leases,
            Value::Int(NOW),
        ])
    }

    #[test]
    fn a_hash_with_mode_is_a_read_write_lock() {
        let flat = Value::Array(
            ["mode", "read", "c1:1", "2", "c2:3:write", "1", "c2:3", "1"]
                .map(bulk)
                .to_vec(),
        );
        let Some(Description::ReadWriteLock(rw)) = decode(&reply("hash", flat, 900, Value::Nil))
        else {
            panic!()
        };
        assert_eq!(rw.mode, ReadWriteMode::Read);
        assert_eq!(rw.writer.unwrap().field, "c2:3");
        let readers: Vec<_> = rw.readers.iter().map(|h| (&*h.field, h.count)).collect();
        assert_eq!(readers, [("c1:1", 2), ("c2:3", 1)]);
        assert_eq!(rw.ttl, Some(Duration::from_millis(900)));
    }

    #[test]
    fn other_hashes_are_locks_and_strings_counters_or_lean_locks() {
        let flat = Value::Array(["c1:1", "1"].map(bulk).to_vec());
        assert!(matches!(
            decode(&reply("hash", flat, -1, Value::Nil)),
            Some(Description::Lock(info)) if info.holders.len() == 1 && info.ttl.is_none()
        ));
        assert_eq!(
            decode(&reply("string", bulk("-2"), -1, Value::Nil)),
            Some(Description::SemaphoreOrLatch(CounterInfo::new(-2, None)))
        );
        assert!(matches!(
            decode(&reply("string", Value::BulkString(vec![0xff, 0xfe, b'x']), 900, Value::Nil)),
            Some(Description::LeanLock(info)) if info.holders[0].field == "\u{fffd}\u{fffd}x"
        ));
        assert!(matches!(
            decode(&reply("string", bulk("c1:1"), 900, Value::Nil)),
            Some(Description::LeanLock(info))
                if info.holders[0].field == "c1:1" && info.holders[0].count == 1
                    && info.ttl == Some(Duration::from_millis(900))
        ));
        assert_eq!(
            decode(&reply("list", Value::Nil, -1, Value::Nil)),
            Some(Description::Unknown {
                store_type: "list".into()
            })
        );
        assert_eq!(
            decode(&reply("none", Value::Nil, -2, Value::Array(vec![]))),
            Some(Description::Free)
        );
        assert_eq!(decode(&Value::Int(1)), None);
    }

    #[test]
    fn leases_are_hex_ids_with_time_left() {
        let id = Value::BulkString(vec![0xab; 16]);
        let leases = Value::Array(vec![
            id.clone(),
            bulk("1700000004000"),
            id,
            bulk("922337203685477"),
        ]);
        let Some(Description::PermitExpirableSemaphore(s)) =
            decode(&reply("string", bulk("3"), -1, leases))
        else {
            panic!()
        };
        assert_eq!(s.available, 3);
        assert_eq!(s.permits[0].id, "ab".repeat(16));
        assert_eq!(s.permits[0].lease_time, Some(Duration::from_secs(4)));
        assert_eq!(s.permits[1].lease_time, None);
        // Without the server's clock, times left cannot be told.
        let old = Value::Array(vec![bulk("none"), Value::Nil, Value::Int(-2), Value::Nil]);
        assert_eq!(decode(&old), None);
    }
}
