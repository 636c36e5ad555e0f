//! `lockctl list`: every lock, lean lock, read-write lock, semaphore and
//! latch whose name matches a glob, once each.
//!
//! The keys come from `SCAN` (see `keyspace`), with `MATCH` the key prefix
//! (glob characters quoted) and the pattern. A kind keeps helper keys
//! beside the key its name is stored under; those are dropped by their
//! names before anything is read:
//!
//! | helper key | of |
//! | --- | --- |
//! | `redisson_<word>:…` | fair-lock queue and deadlines (`redisson_lock_queue:{X}`, `redisson_lock_timeout:{X}`), fencing counter (`redisson_lock_token:{X}`), request records (`redisson_unlock_latch:{X}:<id>`, `redisson_lock_latch:{X}:<id>`), handoff entries, waiting writers: Redisson's helper names all start so |
//! | `{X}:timeout` | an expirable-permit semaphore's leases |
//! | `…:rwlock_timeout:<n>` | a read-write lock's read holds (`{X}:<owner>:rwlock_timeout:<n>`) |
//! | `{<prefix>lock_redis_clients}`, `{<prefix>lock_redis_clients}:<client-uuid>` | the clients' records of themselves (who holds what; shown beside holders, waiters and permits) |
//!
//! Each name left is described ([`lock_redis::LockClient::describe`], as
//! `status` does) and kept when a kind is stored there: not when the key
//! vanished meanwhile, holds another type, or is a hash with no hold count
//! (no lock: a held lock's hash always has one, a free one is deleted).
//! As `status` does, any text that is not an integer is read as a lean
//! lock's holder token, whoever wrote it.
//! A name whose own key is gone but whose helper keys remain (a semaphore
//! whose count was deleted while permits are leased) is not listed.

use std::collections::HashSet;

use futures::stream::{self, StreamExt as _};
use lock_redis::{Description, FairLockInfo, LockClient, LockName};
use serde::Serialize;

use crate::cli::{Global, ListArgs};
use crate::exit::Failure;
use crate::keyspace::{self, Keyspace, Scan};
use crate::{duration, output, status, status_kinds};

/// How many names are described at once: their reads are pipelined on the
/// one connection.
const DESCRIBES_IN_FLIGHT: usize = 16;

/// One name and what is stored there.
struct Item {
    name: LockName,
    shown: Shown,
}

/// What is stored, as `status` shows it: a lock through its own view (with
/// no queue: not read), the other kinds through theirs.
enum Shown {
    Lock(FairLockInfo),
    Other(Description),
}

/// Runs `lockctl list`; returns the exit code: 0, whether or not anything
/// matched, and also when `--limit` cut the list short (said on stderr).
pub(crate) async fn run(global: &Global, args: ListArgs) -> Result<u8, Failure> {
    let (client, keyspace) = keyspace::open(global).await?;
    let limit = usize::try_from(args.limit).unwrap_or(usize::MAX);
    let found = find(&client, &keyspace, &global.prefix, &args.pattern, limit).await;
    client.close().await;
    let (mut items, more) = found?;
    items.sort_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
    let text = if args.json {
        json(&items)?
    } else {
        human(&items)
    };
    output::stdout(&text);
    if more {
        output::error(&format!(
            "warning: more than {limit} names match; listed the first {limit} found \
             (narrow PATTERN or raise --limit)"
        ));
    }
    Ok(0)
}

/// Up to `limit` items, and whether more match.
async fn find(
    client: &LockClient,
    keyspace: &Keyspace,
    prefix: &str,
    pattern: &str,
    limit: usize,
) -> Result<(Vec<Item>, bool), Failure> {
    let mut scan = Scan::new(keyspace, format!("{}{pattern}", quote_glob(prefix)));
    // SCAN may return a key twice.
    let mut seen = HashSet::new();
    let mut items = Vec::new();
    while let Some(keys) = scan.next_page().await? {
        let names: Vec<LockName> = keys
            .iter()
            .filter_map(|key| name_of(key, prefix))
            .filter(|name| seen.insert(name.as_str().to_owned()))
            .collect();
        let mut described = stream::iter(names)
            .map(|name| async move {
                let described = client.describe(&name).await;
                (name, described)
            })
            .buffered(DESCRIBES_IN_FLIGHT);
        while let Some((name, described)) = described.next().await {
            let Some(shown) = shown(described?) else {
                continue;
            };
            if items.len() == limit {
                return Ok((items, true));
            }
            items.push(Item { name, shown });
        }
    }
    Ok((items, false))
}

/// `text` with Redis's glob characters quoted, to match as it is.
fn quote_glob(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted
}

/// The name `key` is stored under: the key without `prefix`, unless it is
/// a helper key (see the module docs) or no valid name.
fn name_of(key: &str, prefix: &str) -> Option<LockName> {
    if is_helper(key) {
        return None;
    }
    LockName::new(key.strip_prefix(prefix)?).ok()
}

fn is_helper(key: &str) -> bool {
    let redisson = key
        .strip_prefix("redisson_")
        .and_then(|rest| rest.split_once(':'))
        .is_some_and(|(word, _)| {
            !word.is_empty() && word.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
        });
    let read_hold = key
        .rsplit_once(":rwlock_timeout:")
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    let leases = key.starts_with('{') && key.ends_with("}:timeout");
    redisson || read_hold || leases || lock_redis::lock_script::clients::is_client_key(key)
}

/// What to show of a description; `None` for what is no lock kind.
fn shown(described: Description) -> Option<Shown> {
    match described {
        Description::Lock(info) if info.holders.is_empty() => None,
        Description::Lock(info) => Some(Shown::Lock(FairLockInfo::new(info, Vec::new()))),
        kind @ (Description::LeanLock(_)
        | Description::ReadWriteLock(_)
        | Description::SemaphoreOrLatch(_)
        | Description::PermitExpirableSemaphore(_)) => Some(Shown::Other(kind)),
        _ => None,
    }
}

/// One item of `list --json`: the object `status --json` prints.
#[derive(Serialize)]
#[serde(untagged)]
enum ItemJson<'a> {
    Lock(status::Report<'a>),
    Other(status_kinds::KindJson<'a>),
}

fn json(items: &[Item]) -> Result<String, Failure> {
    let objects = items
        .iter()
        .map(|item| match &item.shown {
            Shown::Lock(info) => Ok(ItemJson::Lock(status::report(
                &item.name, "lock", info, false,
            ))),
            Shown::Other(d) => status_kinds::object(&item.name, d).map(ItemJson::Other),
        })
        .collect::<Result<Vec<_>, _>>()?;
    status_kinds::to_json(&objects)
}

/// Aligned columns under a header; nothing at all when nothing matched.
fn human(items: &[Item]) -> String {
    const NONE: &str = "-";
    let rows: Vec<[String; 5]> = items
        .iter()
        .map(|item| {
            let ttl = |ttl: Option<std::time::Duration>| ttl.map_or(NONE.into(), duration::display);
            let (kind, holders, ttl, value) = match &item.shown {
                Shown::Lock(info) => (
                    "lock",
                    info.lock.holders.len().to_string(),
                    ttl(info.lock.ttl),
                    NONE.to_owned(),
                ),
                Shown::Other(Description::LeanLock(lean)) => (
                    "lean_lock",
                    lean.holders.len().to_string(),
                    ttl(lean.ttl),
                    NONE.to_owned(),
                ),
                Shown::Other(Description::ReadWriteLock(rw)) => {
                    let mut owners: Vec<&str> = rw.readers.iter().map(|r| &*r.field).collect();
                    owners.extend(rw.writer.as_ref().map(|w| &*w.field));
                    owners.sort_unstable();
                    owners.dedup();
                    (
                        "read_write_lock",
                        owners.len().to_string(),
                        ttl(rw.ttl),
                        NONE.to_owned(),
                    )
                }
                Shown::Other(Description::SemaphoreOrLatch(c)) => (
                    "semaphore_or_latch",
                    NONE.to_owned(),
                    ttl(c.ttl),
                    c.value.to_string(),
                ),
                Shown::Other(Description::PermitExpirableSemaphore(s)) => (
                    "semaphore_or_latch",
                    s.permits.len().to_string(),
                    NONE.to_owned(),
                    s.available.to_string(),
                ),
                // `shown` keeps no other kind.
                Shown::Other(_) => ("unknown", NONE.to_owned(), NONE.to_owned(), NONE.to_owned()),
            };
            [item.name.to_string(), kind.to_owned(), holders, ttl, value]
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let header = ["NAME", "KIND", "HOLDERS", "TTL", "VALUE"].map(str::to_owned);
    let mut widths = [0; 5];
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        text.push_str(cells.join("  ").trim_end());
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use lock_redis::{CounterInfo, Holder, LockInfo, ReadWriteInfo, ReadWriteMode};

    use super::*;

    #[test]
    fn helper_keys_are_not_names() {
        for key in [
            "redisson_lock_queue:{job}",
            "redisson_lock_timeout:{job}",
            "redisson_lock_token:{job}",
            "redisson_unlock_latch:{job}:5f0c",
            "redisson_lock_latch:{job}:5f0c",
            "redisson_rwlock_writers:{rw}",
            "{jobs}:timeout",
            "{rw}:6f0c2a1e-1c2d-4e5f-9d41-0123456789ab:1:rwlock_timeout:2",
            "{t}rw:6f0c2a1e-1c2d-4e5f-9d41-0123456789ab:1:rwlock_timeout:1",
            "{lock_redis_clients}",
            "{lock_redis_clients}:6f0c2a1e-1c2d-4e5f-9d41-0123456789ab",
        ] {
            assert!(name_of(key, "").is_none(), "{key}");
        }
        for key in [
            "job",
            "redisson",
            "redisson_x",
            "a:timeout",
            "rwlock_timeout:1x",
            "lock_redis_clients",
            "{lock_redis_clients}:x",
        ] {
            assert_eq!(name_of(key, "").unwrap().as_str(), key);
        }
        assert_eq!(name_of("app:job", "app:").unwrap().as_str(), "job");
        assert!(name_of("other:job", "app:").is_none());
        assert!(name_of("app:", "app:").is_none(), "an empty name");
    }

    #[test]
    fn prefixes_match_as_they_are() {
        assert_eq!(quote_glob("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
        assert_eq!(quote_glob("app:"), "app:");
    }

    #[test]
    fn a_hash_without_hold_counts_is_no_lock() {
        assert!(shown(Description::Lock(LockInfo::new(Vec::new(), None))).is_none());
        assert!(shown(Description::Free).is_none());
        assert!(shown(Description::Unknown {
            store_type: "list".into()
        })
        .is_none());
    }

    fn item(name: &str, shown: Shown) -> Item {
        Item {
            name: LockName::new(name).unwrap(),
            shown,
        }
    }

    fn holder(field: &str, count: u64) -> Holder {
        Holder::new(field, count)
    }

    #[test]
    fn one_aligned_line_per_item() {
        let items = [
            item(
                "backup",
                Shown::Lock(FairLockInfo::new(
                    LockInfo::new(vec![holder("c:1", 2)], Some(Duration::from_millis(29_800))),
                    Vec::new(),
                )),
            ),
            item(
                "catalog",
                Shown::Other(Description::ReadWriteLock(ReadWriteInfo::new(
                    ReadWriteMode::Read,
                    Some(holder("c:1", 1)),
                    vec![holder("c:1", 1), holder("d:2", 1)],
                    None,
                ))),
            ),
            item(
                "encode",
                Shown::Other(Description::SemaphoreOrLatch(CounterInfo::new(3, None))),
            ),
            item(
                "export",
                Shown::Other(Description::LeanLock(LockInfo::new(
                    vec![holder("qE3vVx0p", 1)],
                    Some(Duration::from_millis(9_500)),
                ))),
            ),
        ];
        assert_eq!(
            human(&items),
            "NAME     KIND                HOLDERS  TTL    VALUE\n\
             backup   lock                1        29.8s  -\n\
             catalog  read_write_lock     2        -      -\n\
             encode   semaphore_or_latch  -        -      3\n\
             export   lean_lock           1        9.5s   -\n"
        );
        assert_eq!(human(&[]), "");
        assert_eq!(
            json(&items[..1]).unwrap(),
            "[{\"name\":\"backup\",\"kind\":\"lock\",\"locked\":true,\"holders\":[{\"field\":\"c:1\",\"count\":2,\"client\":null}],\"ttl_ms\":29800,\"queue\":null}]\n"
        );
        assert_eq!(
            json(&items[3..]).unwrap(),
            "[{\"name\":\"export\",\"kind\":\"lean_lock\",\"locked\":true,\"holders\":[{\"field\":\"qE3vVx0p\",\"count\":1,\"client\":null}],\"ttl_ms\":9500}]\n"
        );
        assert_eq!(json(&[]).unwrap(), "[]\n");
    }
}
