//! `lockctl status` of the kinds that are not plain locks: a lean lock, a
//! read-write lock, a semaphore or count-down latch (one integer: the two
//! share a layout), a permit-expirable semaphore, and a value no lock kind
//! stores.
//!
//! JSON objects start with `name` and `kind` (`lean_lock`,
//! `read_write_lock`, `semaphore_or_latch`, `unknown`), then the kind's own
//! keys, in the order
//! of the structs below: always the same keys for one kind, so a script
//! reads each key of a kind without first checking it is there.
//!
//! A permit-expirable semaphore is a `semaphore_or_latch` too, with its
//! leased `permits`: once no permit is leased, Redis drops the sorted set
//! of leases and what is left is one integer, which nothing tells apart
//! from a plain semaphore's or a latch's. Were it a kind of its own, its
//! `kind` and keys would change whenever its last holder left.
//!
//! A lean lock is any text that is not an integer, read as its holder's
//! token: ours (`<client-uuid>:<owner-id>`, a lock's hash field) or
//! another library's (go-redsync, redis-py, rslock write random text).
//! Its holder is shown as a lock's is, with a hold count of 1 (it is not
//! re-entrant), so a script reads `holders` of either kind the same way.

use lock_redis::{
    CounterInfo, Description, ExpirableSemaphoreInfo, Holder, LockInfo, LockName, ReadWriteInfo,
    ReadWriteMode,
};
use serde::Serialize;

use crate::duration;
use crate::exit::Failure;
use crate::status::millis;
use crate::who::{self, ClientJson, HolderJson};

#[derive(Debug, Serialize)]
pub(crate) struct RwJson<'a> {
    name: &'a str,
    kind: &'static str,
    locked: bool,
    /// `read` or `write`.
    mode: &'static str,
    writer: Option<HolderJson<'a>>,
    readers: Vec<HolderJson<'a>>,
    ttl_ms: Option<u64>,
}

/// A lean lock: `locked` is always true (a free one is nothing, `none`),
/// `holders` its one token; the keys of a lock's object but `queue`.
#[derive(Debug, Serialize)]
pub(crate) struct LeanJson<'a> {
    name: &'a str,
    kind: &'static str,
    locked: bool,
    holders: Vec<HolderJson<'a>>,
    ttl_ms: Option<u64>,
}

#[derive(Debug, Serialize)]
pub(crate) struct CounterJson<'a> {
    name: &'a str,
    kind: &'static str,
    /// A semaphore's available permits, or a latch's count.
    value: i64,
    /// The integer's time to live; `null` without expiry, and `null` while
    /// permits are leased (the description of a semaphore with leases does
    /// not carry it).
    ttl_ms: Option<u64>,
    /// The leased permits of a permit-expirable semaphore (live ones only);
    /// empty for anything else, and for one with no permit leased.
    permits: Vec<PermitJson<'a>>,
}

#[derive(Debug, Serialize)]
struct PermitJson<'a> {
    id: &'a str,
    /// How long the lease still ran at the read, by the Redis server's
    /// clock; `null` for a permit without a lease.
    lease_time_ms: Option<u64>,
    /// The record of the client whose guard holds it (see `who`); `null`
    /// when not found.
    client: Option<ClientJson<'a>>,
}

#[derive(Debug, Serialize)]
pub(crate) struct UnknownJson<'a> {
    name: &'a str,
    kind: &'static str,
    store_type: &'a str,
}

/// The `kind` of one integer under the name, with or without leases.
const COUNTER: &str = "semaphore_or_latch";

/// `value` as one line of JSON.
pub(crate) fn to_json(value: &impl Serialize) -> Result<String, Failure> {
    let mut text = serde_json::to_string(value)
        .map_err(|e| Failure::new(crate::exit::SOFTWARE, format!("cannot write JSON: {e}")))?;
    text.push('\n');
    Ok(text)
}

fn holder(h: &Holder) -> HolderJson<'_> {
    HolderJson::of(h)
}

fn mode(mode: ReadWriteMode) -> &'static str {
    match mode {
        ReadWriteMode::Write => "write",
        _ => "read",
    }
}

/// The JSON object of a description other than a lock's, as one line.
pub(crate) fn json(name: &LockName, d: &Description) -> Result<String, Failure> {
    to_json(&object(name, d)?)
}

/// The JSON object of one of these kinds (`list --json` prints it too).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum KindJson<'a> {
    Lean(LeanJson<'a>),
    ReadWrite(RwJson<'a>),
    Counter(CounterJson<'a>),
    Unknown(UnknownJson<'a>),
}

/// The JSON object of a description other than a lock's.
///
/// # Errors
/// Exit 70 for a description this build has no view of.
pub(crate) fn object<'a>(name: &'a LockName, d: &'a Description) -> Result<KindJson<'a>, Failure> {
    let name = name.as_str();
    Ok(match d {
        Description::LeanLock(lean) => KindJson::Lean(LeanJson {
            name,
            kind: "lean_lock",
            locked: lean.is_locked(),
            holders: lean.holders.iter().map(holder).collect(),
            ttl_ms: lean.ttl.map(millis),
        }),
        Description::ReadWriteLock(rw) => KindJson::ReadWrite(RwJson {
            name,
            kind: "read_write_lock",
            locked: rw.writer.is_some() || !rw.readers.is_empty(),
            mode: mode(rw.mode),
            writer: rw.writer.as_ref().map(holder),
            readers: rw.readers.iter().map(holder).collect(),
            ttl_ms: rw.ttl.map(millis),
        }),
        Description::SemaphoreOrLatch(c) => KindJson::Counter(CounterJson {
            name,
            kind: COUNTER,
            value: c.value,
            ttl_ms: c.ttl.map(millis),
            permits: Vec::new(),
        }),
        Description::PermitExpirableSemaphore(s) => KindJson::Counter(CounterJson {
            name,
            kind: COUNTER,
            value: s.available,
            ttl_ms: None,
            permits: s
                .permits
                .iter()
                .map(|p| PermitJson {
                    id: &p.id,
                    lease_time_ms: p.lease_time.map(millis),
                    client: who::client(p.client.as_ref()),
                })
                .collect(),
        }),
        Description::Unknown { store_type } => KindJson::Unknown(UnknownJson {
            name,
            kind: "unknown",
            store_type,
        }),
        other => {
            return Err(Failure::new(
                crate::exit::SOFTWARE,
                format!("no status view for {other:?}"),
            ))
        }
    })
}

/// Aligned `label: value` lines of a description other than a lock's.
/// A lease's time left is the server's (this machine's clock plays no
/// part).
pub(crate) fn human(name: &LockName, d: &Description) -> String {
    let mut lines = vec![("name", name.to_string())];
    match d {
        Description::LeanLock(lean) => lean_lock(&mut lines, lean),
        Description::ReadWriteLock(rw) => read_write(&mut lines, rw),
        Description::SemaphoreOrLatch(c) => counter(&mut lines, c, name),
        Description::PermitExpirableSemaphore(s) => expirable(&mut lines, s),
        Description::Unknown { store_type } => {
            lines.push(("kind", "none of the lock kinds".to_owned()));
            lines.push((
                "type",
                format!("{store_type} (not a lock, semaphore or latch)"),
            ));
        }
        other => lines.push(("kind", format!("{other:?}"))),
    }
    let mut text = String::new();
    for (label, value) in lines {
        text.push_str(&format!("{:<11}{value}\n", format!("{label}:")));
    }
    text
}

fn held(count: u64) -> String {
    if count == 1 {
        "held once".to_owned()
    } else {
        format!("held {count} times")
    }
}

fn ttl(lines: &mut Vec<(&'static str, String)>, ttl: Option<std::time::Duration>) {
    lines.push((
        "ttl",
        ttl.map_or_else(|| "no expiry".to_owned(), duration::display),
    ));
}

fn lean_lock(lines: &mut Vec<(&'static str, String)>, lean: &LockInfo) {
    lines.push(("kind", "lean lock".to_owned()));
    lines.push((
        "locked",
        if lean.is_locked() { "yes" } else { "no" }.to_owned(),
    ));
    for h in &lean.holders {
        // Another library's token is no owner of ours: say whose it may
        // be, so nobody looks for it among our clients.
        let whose = if h.owner().is_some() {
            held(h.count)
        } else {
            "another library's token: go-redsync, redis-py, rslock, …".to_owned()
        };
        lines.push(("holder", format!("{}  ({whose})", h.field)));
        client_line(lines, h);
    }
    ttl(lines, lean.ttl);
}

fn read_write(lines: &mut Vec<(&'static str, String)>, rw: &ReadWriteInfo) {
    lines.push(("kind", "read-write lock".to_owned()));
    lines.push(("mode", mode(rw.mode).to_owned()));
    match &rw.writer {
        Some(w) => {
            lines.push(("writer", format!("{}  ({})", w.field, held(w.count))));
            client_line(lines, w);
        }
        None => lines.push(("writer", "none".to_owned())),
    }
    if rw.readers.is_empty() {
        lines.push(("readers", "none".to_owned()));
    }
    for r in &rw.readers {
        lines.push(("reader", format!("{}  ({})", r.field, held(r.count))));
        client_line(lines, r);
    }
    ttl(lines, rw.ttl);
}

fn counter(lines: &mut Vec<(&'static str, String)>, c: &CounterInfo, name: &LockName) {
    lines.push(("kind", "semaphore or count-down latch".to_owned()));
    lines.push(("value", c.value.to_string()));
    lines.push(("semaphore", format!("{} permits available", c.value)));
    lines.push((
        "latch",
        format!(
            "count {} (a latch lives at key {name:?} itself; it is open when nothing is there)",
            c.value.max(0)
        ),
    ));
    ttl(lines, c.ttl);
}

fn expirable(lines: &mut Vec<(&'static str, String)>, s: &ExpirableSemaphoreInfo) {
    lines.push(("kind", "permit-expirable semaphore".to_owned()));
    lines.push(("available", format!("{} permits", s.available)));
    lines.push(("leased", format!("{} live permits", s.permits.len())));
    for p in &s.permits {
        let lease = match p.lease_time {
            None => "no lease".to_owned(),
            Some(left) => format!("lease ends in {}", duration::display(left)),
        };
        lines.push(("permit", format!("{}  ({lease})", p.id)));
        if let Some(c) = &p.client {
            lines.push(("client", who::line(c)));
        }
    }
}

/// The `client:` line under a holder whose client's record was found.
fn client_line(lines: &mut Vec<(&'static str, String)>, h: &Holder) {
    if let Some(c) = &h.client {
        lines.push(("client", who::line(c)));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use lock_redis::LeasedPermit;

    use super::*;

    fn name() -> LockName {
        LockName::new("job").unwrap()
    }

    #[test]
    fn read_write_lock() {
        let d = Description::ReadWriteLock(ReadWriteInfo::new(
            ReadWriteMode::Read,
            None,
            vec![Holder::new("c1:1", 2), Holder::new("c2:4", 1)],
            Some(Duration::from_millis(1500)),
        ));
        assert_eq!(
            json(&name(), &d).unwrap(),
            "{\"name\":\"job\",\"kind\":\"read_write_lock\",\"locked\":true,\"mode\":\"read\",\"writer\":null,\"readers\":[{\"field\":\"c1:1\",\"count\":2,\"client\":null},{\"field\":\"c2:4\",\"count\":1,\"client\":null}],\"ttl_ms\":1500}\n"
        );
        assert_eq!(
            human(&name(), &d),
            "name:      job\n\
             kind:      read-write lock\n\
             mode:      read\n\
             writer:    none\n\
             reader:    c1:1  (held 2 times)\n\
             reader:    c2:4  (held once)\n\
             ttl:       1.5s\n"
        );
    }

    #[test]
    fn lean_lock_of_ours_and_of_another_library() {
        let owner = "6f0c2a1e-1c2d-4e5f-9d41-0123456789ab:3";
        let ours = Description::LeanLock(LockInfo::new(
            vec![Holder::new(owner, 1)],
            Some(Duration::from_millis(29_840)),
        ));
        assert_eq!(
            json(&name(), &ours).unwrap(),
            format!("{{\"name\":\"job\",\"kind\":\"lean_lock\",\"locked\":true,\"holders\":[{{\"field\":\"{owner}\",\"count\":1,\"client\":null}}],\"ttl_ms\":29840}}\n")
        );
        assert_eq!(
            human(&name(), &ours),
            format!(
                "name:      job\n\
                 kind:      lean lock\n\
                 locked:    yes\n\
                 holder:    {owner}  (held once)\n\
                 ttl:       29.8s\n"
            )
        );
        let theirs = Description::LeanLock(LockInfo::new(vec![Holder::new("qE3vVx0p", 1)], None));
        assert_eq!(
            json(&name(), &theirs).unwrap(),
            "{\"name\":\"job\",\"kind\":\"lean_lock\",\"locked\":true,\"holders\":[{\"field\":\"qE3vVx0p\",\"count\":1,\"client\":null}],\"ttl_ms\":null}\n"
        );
        let text = human(&name(), &theirs);
        assert!(
            text.contains("holder:    qE3vVx0p  (another library's token: go-redsync, redis-py, rslock, …)\nttl:       no expiry\n"),
            "{text}"
        );
    }

    #[test]
    fn counter_and_expirable_semaphore_and_unknown() {
        let c = Description::SemaphoreOrLatch(CounterInfo::new(3, None));
        assert_eq!(
            json(&name(), &c).unwrap(),
            "{\"name\":\"job\",\"kind\":\"semaphore_or_latch\",\"value\":3,\"ttl_ms\":null,\"permits\":[]}\n"
        );
        assert!(human(&name(), &c).contains("latch:     count 3 (a latch lives at key \"job\""));
        let s = Description::PermitExpirableSemaphore(ExpirableSemaphoreInfo::new(
            1,
            vec![
                LeasedPermit::new("ab".repeat(16), Some(Duration::from_secs(3))),
                LeasedPermit::new("cd".repeat(16), None),
            ],
        ));
        let id = "ab".repeat(16);
        assert_eq!(
            json(&name(), &s).unwrap(),
            format!("{{\"name\":\"job\",\"kind\":\"semaphore_or_latch\",\"value\":1,\"ttl_ms\":null,\"permits\":[{{\"id\":\"{id}\",\"lease_time_ms\":3000,\"client\":null}},{{\"id\":\"{}\",\"lease_time_ms\":null,\"client\":null}}]}}\n", "cd".repeat(16))
        );
        let text = human(&name(), &s);
        assert!(
            text.contains(&format!("permit:    {id}  (lease ends in 3.0s)\n")),
            "{text}"
        );
        let u = Description::Unknown {
            store_type: "list".into(),
        };
        assert_eq!(
            json(&name(), &u).unwrap(),
            "{\"name\":\"job\",\"kind\":\"unknown\",\"store_type\":\"list\"}\n"
        );
    }
}
