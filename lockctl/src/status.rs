//! `lockctl status`: one snapshot of whatever lock kind is stored under a
//! name, for people or as JSON.
//!
//! The kind is detected from what is stored ([`lock_redis::LockClient::describe`]):
//! a re-entrant or fair lock is shown here as before (holders, ttl, and with
//! `--fair` the queue); a lean lock, a read-write lock, a semaphore, a
//! count-down latch and anything else by the `status_kinds` module.

use std::time::Duration;

use lock_redis::{Description, FairLockInfo, LockInfo, LockName};
use serde::Serialize;

use crate::cli::{Global, StatusArgs};
use crate::exit::Failure;
use crate::who::{self, ClientJson, HolderJson};
use crate::{connect, duration, output, status_kinds};

/// What `status --json` prints for a lock (or nothing): one object, keys in
/// this order (`list --json` prints the same per lock).
#[derive(Debug, Serialize)]
pub(crate) struct Report<'a> {
    name: &'a str,
    /// `lock`, or `none` when nothing is stored under the name.
    kind: &'a str,
    locked: bool,
    holders: Vec<HolderJson<'a>>,
    /// Remaining time to live; `null` when free or without expiry.
    ttl_ms: Option<u64>,
    /// A fair lock's waiters, head first; `null` without `--fair`, which
    /// reads the queue (an empty list: read, nobody waiting).
    queue: Option<Vec<WaiterJson<'a>>>,
}

#[derive(Debug, Serialize)]
struct WaiterJson<'a> {
    field: &'a str,
    /// How long the waiter keeps its place unless it looks again, by the
    /// Redis server's clock at the read; 0 for one already due.
    timeout_ms: u64,
    /// The record of the waiter's client (see `who`); `null` when none.
    client: Option<ClientJson<'a>>,
}

/// Runs `lockctl status`; returns the exit code (0 whether or not the lock
/// is held; 65, after the description, when the key holds no lock kind).
pub(crate) async fn run(global: &Global, args: StatusArgs) -> Result<u8, Failure> {
    let name = LockName::new(&args.name).map_err(|e| Failure::lock("bad lock name", &e))?;
    let client = connect::client(global).await?;
    let described = client.describe(&name).await;
    let described = match described {
        Ok(d) => d,
        Err(e) => {
            client.close().await;
            return Err(e.into());
        }
    };
    // A lock's holders come from the description, which joined their
    // clients' records; with --fair the queue is read (and joined) too.
    let (kind, lock) = match described {
        Description::Free => ("none", LockInfo::default()),
        Description::Lock(lock) => ("lock", lock),
        other => {
            client.close().await;
            let text = if args.json {
                status_kinds::json(&name, &other)?
            } else {
                status_kinds::human(&name, &other)
            };
            output::stdout(&text);
            // Described, but not a lock of any kind: the documented exit
            // for "the key holds something that is not a lock".
            if let Description::Unknown { store_type } = &other {
                output::error(&format!(
                    "key {name:?} holds a {store_type}: not a lock, semaphore or latch"
                ));
                return Ok(crate::exit::DATA);
            }
            return Ok(0);
        }
    };
    let info = if args.fair {
        client.fair_lock(&name)?.info().await
    } else {
        Ok(FairLockInfo::new(lock, Vec::new()))
    };
    client.close().await;
    let info = info?;
    let text = if args.json {
        json(&name, kind, &info, args.fair)?
    } else {
        human(&name, &info, args.fair)
    };
    output::stdout(&text);
    Ok(0)
}

/// `queue_read`: whether the queue was read (`--fair`); when not, `queue`
/// is `null`, not a list that would say nobody waits.
fn json(
    name: &LockName,
    kind: &str,
    info: &FairLockInfo,
    queue_read: bool,
) -> Result<String, Failure> {
    status_kinds::to_json(&report(name, kind, info, queue_read))
}

/// The JSON object of a lock (`kind` `lock`) or of nothing (`none`); see
/// [`json`] for `queue_read`.
pub(crate) fn report<'a>(
    name: &'a LockName,
    kind: &'a str,
    info: &'a FairLockInfo,
    queue_read: bool,
) -> Report<'a> {
    let (queue, info) = (&info.queue, &info.lock);
    Report {
        name: name.as_str(),
        kind,
        locked: info.is_locked(),
        holders: info.holders.iter().map(HolderJson::of).collect(),
        ttl_ms: info.ttl.map(millis),
        queue: queue_read.then(|| {
            queue
                .iter()
                .map(|w| WaiterJson {
                    field: &w.field,
                    timeout_ms: millis(w.timeout),
                    client: who::client(w.client.as_ref()),
                })
                .collect()
        }),
    }
}

/// A few aligned `label: value` lines. Each waiter's time left is the
/// server's (this machine's clock plays no part).
fn human(name: &LockName, info: &FairLockInfo, fair: bool) -> String {
    let (queue, info) = (&info.queue, &info.lock);
    let mut lines = vec![("name", name.to_string())];
    if info.is_locked() {
        lines.push(("locked", "yes".to_owned()));
        for holder in &info.holders {
            let times = if holder.count == 1 { "once" } else { "times" };
            let count = if holder.count == 1 {
                String::new()
            } else {
                format!("{} ", holder.count)
            };
            lines.push(("holder", format!("{}  (held {count}{times})", holder.field)));
            if let Some(c) = &holder.client {
                lines.push(("client", who::line(c)));
            }
        }
        let ttl = info
            .ttl
            .map_or_else(|| "no expiry".to_owned(), duration::display);
        lines.push(("ttl", ttl));
    } else {
        lines.push(("locked", "no".to_owned()));
    }
    if fair {
        let waiting = match queue.len() {
            0 => "nobody waiting".to_owned(),
            1 => "1 waiting".to_owned(),
            n => format!("{n} waiting"),
        };
        lines.push(("queue", waiting));
    }
    let mut text = String::new();
    for (label, value) in lines {
        text.push_str(&format!("{:<8}{value}\n", format!("{label}:")));
    }
    for (place, waiter) in queue.iter().enumerate() {
        let deadline = if waiter.timeout.is_zero() {
            "overdue (evicted by the next write)".to_owned()
        } else {
            format!("deadline in {}", duration::display(waiter.timeout))
        };
        text.push_str(&format!("{:>6}. {}  {deadline}\n", place + 1, waiter.field));
        if let Some(c) = &waiter.client {
            text.push_str(&format!("        client: {}\n", who::line(c)));
        }
    }
    text
}

pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lock_redis::{Holder, LockInfo, QueuedWaiter};

    fn held() -> FairLockInfo {
        FairLockInfo::new(
            LockInfo::new(
                vec![Holder::new("c1:7", 2)],
                Some(Duration::from_millis(29_840)),
            ),
            vec![
                QueuedWaiter::new("c2:1", Duration::from_secs(5)),
                QueuedWaiter::new("c3:4", Duration::ZERO),
            ],
        )
    }

    #[test]
    fn json_has_every_key_in_order() {
        let name = LockName::new("job").unwrap();
        assert_eq!(
            json(&name, "lock", &held(), true).unwrap(),
            r#"{"name":"job","kind":"lock","locked":true,"holders":[{"field":"c1:7","count":2,"client":null}],"ttl_ms":29840,"queue":[{"field":"c2:1","timeout_ms":5000,"client":null},{"field":"c3:4","timeout_ms":0,"client":null}]}"#
                .to_owned()
                + "\n"
        );
        assert_eq!(
            json(&name, "none", &FairLockInfo::default(), true).unwrap(),
            "{\"name\":\"job\",\"kind\":\"none\",\"locked\":false,\"holders\":[],\"ttl_ms\":null,\"queue\":[]}\n"
        );
        // Not read (no --fair): null, not an empty queue.
        assert_eq!(
            json(&name, "none", &FairLockInfo::default(), false).unwrap(),
            "{\"name\":\"job\",\"kind\":\"none\",\"locked\":false,\"holders\":[],\"ttl_ms\":null,\"queue\":null}\n"
        );
    }

    #[test]
    fn human_lines_are_aligned() {
        let name = LockName::new("job").unwrap();
        assert_eq!(
            human(&name, &held(), true),
            "name:   job\n\
             locked: yes\n\
             holder: c1:7  (held 2 times)\n\
             ttl:    29.8s\n\
             queue:  2 waiting\n     \
             1. c2:1  deadline in 5.0s\n     \
             2. c3:4  overdue (evicted by the next write)\n"
        );
        assert_eq!(
            human(&name, &FairLockInfo::default(), false),
            "name:   job\nlocked: no\n"
        );
    }
}
