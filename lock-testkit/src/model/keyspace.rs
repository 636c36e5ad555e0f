//! Keyspace snapshots: every key's type, value and time to live, read the
//! same way from either store and compared with a tolerance on times.

use super::{Ids, Store};
use crate::memory::ScriptReply;

/// Reads every key in `KEYS` (type, value, PTTL) and the server clock, in
/// one script so that both are read at one instant: `{now_ms, {{type,
/// {items}, pttl}, ...}}`. Values: a string's text, a hash's fields and
/// values (in the store's order), a list's items, a sorted set's members
/// and scores.
pub const DUMP: &str = "
local out = {}
for i, key in ipairs(KEYS) do
    local kind = redis.call('type', key)['ok']
    local value = {}
    if kind == 'string' then value = {redis.call('get', key)}
    elseif kind == 'hash' then value = redis.call('hgetall', key)
    elseif kind == 'list' then value = redis.call('lrange', key, 0, -1)
    elseif kind == 'zset' then value = redis.call('zrange', key, 0, -1, 'withscores')
    end
    out[i] = {kind, value, redis.call('pttl', key)}
end
local t = redis.call('time')
return {tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), out}";

/// How far two times of a snapshot (times to live, scores that are epoch
/// milliseconds) may differ beyond the real run's lag: the two clocks are
/// read at different points of a script, and rounded to milliseconds.
pub const TOLERANCE_MS: i64 = 5;

/// A sorted-set score this close to the store's clock is a time (a lease
/// end, a waiter's deadline): compared relative to the clock. Farther ones
/// (Redisson's "no lease" score, small numbers) are compared as written.
const TIME_WINDOW_MS: f64 = 1e10;

/// The keyspace after a step, as both worlds can be compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyspace(pub Vec<Entry>);

/// One key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The key, with request ids replaced by their labels ([`Ids::label`]).
    pub key: String,
    /// Its type (`string`, `hash`, `list`, `zset`).
    pub kind: String,
    /// Its value (see [`DUMP`]); a sorted set's members and scores by
    /// member.
    pub value: Vec<Item>,
    /// Its time to live in milliseconds; `None` when it has none.
    pub ttl: Option<i64>,
}

/// One item of a value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Item {
    /// Bytes, shown with non-ASCII bytes escaped.
    Text(String),
    /// A sorted-set score that is an epoch time: milliseconds from the
    /// store's clock when the snapshot was read.
    Time(i64),
}

impl Keyspace {
    /// Reads `store`'s keyspace, naming request ids by `ids`.
    ///
    /// # Panics
    /// When the store answers [`DUMP`] with something else than its shape.
    pub async fn read(store: &dyn Store, ids: &Ids) -> Self {
        // Client records name each client by its random id and start
        // time: no two stores agree on them, and they are no kind's state.
        let mut keys = store.keys().await;
        keys.retain(|key| !lock_script::clients::is_client_key(key));
        let names: Vec<&str> = keys.iter().map(String::as_str).collect();
        let reply = store.eval(DUMP, &names, &[]).await;
        let ScriptReply::Array(parts) = &reply else {
            panic!("a keyspace snapshot: {reply:?}")
        };
        let [ScriptReply::Int(now), ScriptReply::Array(entries)] = parts.as_slice() else {
            panic!("a keyspace snapshot: {reply:?}")
        };
        let mut entries: Vec<Entry> = keys
            .iter()
            .zip(entries)
            .map(|(key, entry)| Entry::parse(ids.label(key), entry, *now))
            .collect();
        // Sorted by label: the ids they replace sort differently.
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        Self(entries)
    }

    /// Whether `other` holds the same keys with the same types and values,
    /// times within `tolerance_ms`.
    pub fn agrees(&self, other: &Self, tolerance_ms: i64) -> bool {
        let close = |a: i64, b: i64| (a - b).abs() <= tolerance_ms;
        self.0.len() == other.0.len()
            && self.0.iter().zip(&other.0).all(|(a, b)| {
                a.key == b.key
                    && a.kind == b.kind
                    && a.value.len() == b.value.len()
                    && a.value.iter().zip(&b.value).all(|pair| match pair {
                        (Item::Time(x), Item::Time(y)) => close(*x, *y),
                        (x, y) => x == y,
                    })
                    && match (a.ttl, b.ttl) {
                        (Some(x), Some(y)) => close(x, y),
                        (x, y) => x == y,
                    }
            })
    }
}

impl Entry {
    fn parse(key: String, reply: &ScriptReply, now: i64) -> Self {
        let ScriptReply::Array(parts) = reply else {
            panic!("a key's snapshot: {reply:?}")
        };
        let [ScriptReply::Bulk(kind), ScriptReply::Array(items), ScriptReply::Int(pttl)] =
            parts.as_slice()
        else {
            panic!("a key's snapshot: {reply:?}")
        };
        let kind = String::from_utf8_lossy(kind).into_owned();
        let mut value: Vec<Item> = items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let ScriptReply::Bulk(bytes) = item else {
                    panic!("an item of {key}: {item:?}")
                };
                let score = (kind == "zset" && i % 2 == 1)
                    .then(|| std::str::from_utf8(bytes).ok()?.parse::<f64>().ok())
                    .flatten();
                match score {
                    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
                    Some(s) if s.fract() == 0.0 && (s - now as f64).abs() < TIME_WINDOW_MS => {
                        Item::Time(s as i64 - now)
                    }
                    _ => Item::Text(bytes.escape_ascii().to_string()),
                }
            })
            .collect();
        if kind == "zset" {
            // By member: a sorted set's order follows from its members and
            // scores, and two times equal in the model may be a millisecond
            // apart in real time, which orders their members differently.
            let mut pairs: Vec<[Item; 2]> = value
                .chunks(2)
                .map(|pair| [pair[0].clone(), pair[1].clone()])
                .collect();
            pairs.sort_by(|a, b| a[0].cmp(&b[0]));
            value = pairs.into_iter().flatten().collect();
        }
        // A request record lives until its request's deadline, which the
        // model dates by the wall clock: in the paused world that clock
        // stands still while the store's advances, so records' times to
        // live differ between the worlds by the time the sequence let pass.
        // Only whether a record has one is compared.
        let record =
            key.starts_with("redisson_lock_latch:") || key.starts_with("redisson_unlock_latch:");
        let ttl = match *pttl {
            -1 => None,
            _ if record => Some(0),
            pttl => Some(pttl),
        };
        Self {
            key,
            kind,
            value,
            ttl,
        }
    }
}
