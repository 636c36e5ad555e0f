//! A model of the part of a Redis keyspace the lock scripts touch: strings,
//! hashes and sorted-set-free expiry, with Redis's reply conventions.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

/// A stored value. Hash values are integers (hold counts): a hash with a
/// text value, such as the `mode` field of a Redisson read-write lock, cannot
/// be stored here; tests of such hashes run on a real server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Str(String),
    Hash(BTreeMap<String, i64>),
    List(VecDeque<String>),
    ZSet(HashMap<String, i64>),
}

#[derive(Debug, Clone)]
struct Entry {
    value: Value,
    expires_at: Option<Instant>,
}

/// Redis's answer when a command meets a value of another type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WrongType;

/// Keys with lazy expiry, as Redis does it on access.
#[derive(Debug, Default)]
pub(crate) struct Keyspace {
    entries: HashMap<String, Entry>,
}

impl Keyspace {
    fn live(&mut self, key: &str) -> Option<&mut Entry> {
        let expired = self
            .entries
            .get(key)
            .and_then(|e| e.expires_at)
            .is_some_and(|at| at <= Instant::now());
        if expired {
            self.entries.remove(key);
        }
        self.entries.get_mut(key)
    }

    pub(crate) fn exists(&mut self, key: &str) -> bool {
        self.live(key).is_some()
    }

    /// `TYPE`: "none", "string" or "hash".
    pub(crate) fn type_of(&mut self, key: &str) -> &'static str {
        match self.live(key).map(|e| &e.value) {
            None => "none",
            Some(Value::Str(_)) => "string",
            Some(Value::Hash(_)) => "hash",
            Some(Value::List(_)) => "list",
            Some(Value::ZSet(_)) => "zset",
        }
    }

    pub(crate) fn get(&mut self, key: &str) -> Result<Option<String>, WrongType> {
        match self.live(key).map(|e| &e.value) {
            None => Ok(None),
            Some(Value::Str(s)) => Ok(Some(s.clone())),
            Some(_) => Err(WrongType),
        }
    }

    /// `SET key value [PX ms]`.
    pub(crate) fn set(&mut self, key: &str, value: String, px: Option<u64>) {
        let expires_at = px.map(|ms| Instant::now() + Duration::from_millis(ms));
        self.entries.insert(
            key.to_owned(),
            Entry {
                value: Value::Str(value),
                expires_at,
            },
        );
    }

    pub(crate) fn incr(&mut self, key: &str) -> Result<i64, WrongType> {
        let next = match self.get(key)? {
            None => 1,
            Some(s) => s.parse::<i64>().map_err(|_| WrongType)? + 1,
        };
        let expires_at = self.live(key).and_then(|e| e.expires_at);
        self.entries.insert(
            key.to_owned(),
            Entry {
                value: Value::Str(next.to_string()),
                expires_at,
            },
        );
        Ok(next)
    }

    fn hash(
        &mut self,
        key: &str,
        create: bool,
    ) -> Result<Option<&mut BTreeMap<String, i64>>, WrongType> {
        self.typed(
            key,
            create,
            || Value::Hash(BTreeMap::new()),
            |v| match v {
                Value::Hash(h) => Some(h),
                _ => None,
            },
        )
    }

    pub(crate) fn hexists(&mut self, key: &str, field: &str) -> Result<bool, WrongType> {
        Ok(self
            .hash(key, false)?
            .is_some_and(|h| h.contains_key(field)))
    }

    /// `HGET`: the field's count, `None` when the key or field is missing.
    pub(crate) fn hget(&mut self, key: &str, field: &str) -> Result<Option<i64>, WrongType> {
        Ok(self.hash(key, false)?.and_then(|h| h.get(field).copied()))
    }

    pub(crate) fn hincrby(&mut self, key: &str, field: &str, by: i64) -> Result<i64, WrongType> {
        let hash = self.hash(key, true)?.ok_or(WrongType)?;
        let count = hash.entry(field.to_owned()).or_insert(0);
        *count += by;
        Ok(*count)
    }

    pub(crate) fn hgetall(&mut self, key: &str) -> Result<Vec<(String, i64)>, WrongType> {
        Ok(self
            .hash(key, false)?
            .map(|h| h.iter().map(|(f, c)| (f.clone(), *c)).collect())
            .unwrap_or_default())
    }

    /// `PEXPIRE`; returns whether the key existed.
    pub(crate) fn pexpire(&mut self, key: &str, ms: u64) -> bool {
        match self.live(key) {
            Some(e) => {
                e.expires_at = Some(Instant::now() + Duration::from_millis(ms));
                true
            }
            None => false,
        }
    }

    /// `PTTL`: -2 missing, -1 no expiry, else remaining milliseconds.
    pub(crate) fn pttl(&mut self, key: &str) -> i64 {
        match self.live(key) {
            None => -2,
            Some(Entry {
                expires_at: None, ..
            }) => -1,
            Some(Entry {
                expires_at: Some(at),
                ..
            }) => at.saturating_duration_since(Instant::now()).as_millis() as i64,
        }
    }

    /// `DEL`; returns whether the key existed.
    pub(crate) fn del(&mut self, key: &str) -> bool {
        self.live(key).is_some() && self.entries.remove(key).is_some()
    }

    /// Every live key.
    pub(crate) fn keys(&mut self) -> Vec<String> {
        let now = Instant::now();
        self.entries
            .retain(|_, e| e.expires_at.is_none_or(|at| at > now));
        let mut keys: Vec<String> = self.entries.keys().cloned().collect();
        keys.sort();
        keys
    }

    fn list(
        &mut self,
        key: &str,
        create: bool,
    ) -> Result<Option<&mut VecDeque<String>>, WrongType> {
        self.typed(
            key,
            create,
            || Value::List(VecDeque::new()),
            |v| match v {
                Value::List(l) => Some(l),
                _ => None,
            },
        )
    }

    /// The value at `key` as the type `pick` accepts (made with `empty`
    /// first when missing and `create`); a value of another type is
    /// [`WrongType`].
    fn typed<T>(
        &mut self,
        key: &str,
        create: bool,
        empty: impl FnOnce() -> Value,
        pick: impl FnOnce(&mut Value) -> Option<&mut T>,
    ) -> Result<Option<&mut T>, WrongType> {
        if create && self.live(key).is_none() {
            self.entries.insert(
                key.to_owned(),
                Entry {
                    value: empty(),
                    expires_at: None,
                },
            );
        }
        match self.live(key) {
            None => Ok(None),
            Some(entry) => pick(&mut entry.value).map(Some).ok_or(WrongType),
        }
    }

    /// Drops `key` if it is an empty list or sorted set, as Redis does.
    fn drop_if_empty(&mut self, key: &str) {
        let empty = match self.live(key).map(|e| &e.value) {
            Some(Value::List(l)) => l.is_empty(),
            Some(Value::ZSet(z)) => z.is_empty(),
            _ => false,
        };
        if empty {
            self.entries.remove(key);
        }
    }

    /// `LINDEX key 0`.
    pub(crate) fn list_head(&mut self, key: &str) -> Result<Option<String>, WrongType> {
        Ok(self.list(key, false)?.and_then(|l| l.front().cloned()))
    }

    /// `LRANGE key 0 -1`.
    pub(crate) fn list_all(&mut self, key: &str) -> Result<Vec<String>, WrongType> {
        Ok(self
            .list(key, false)?
            .map(|l| l.iter().cloned().collect())
            .unwrap_or_default())
    }

    /// `LPOP key`.
    pub(crate) fn lpop(&mut self, key: &str) -> Result<Option<String>, WrongType> {
        let head = self.list(key, false)?.and_then(VecDeque::pop_front);
        self.drop_if_empty(key);
        Ok(head)
    }

    /// `RPUSH key value`.
    pub(crate) fn rpush(&mut self, key: &str, value: &str) -> Result<(), WrongType> {
        if let Some(l) = self.list(key, true)? {
            l.push_back(value.to_owned());
        }
        Ok(())
    }

    /// `LREM key 0 value`.
    pub(crate) fn lrem(&mut self, key: &str, value: &str) -> Result<(), WrongType> {
        if let Some(l) = self.list(key, false)? {
            l.retain(|v| v != value);
        }
        self.drop_if_empty(key);
        Ok(())
    }

    fn zset(
        &mut self,
        key: &str,
        create: bool,
    ) -> Result<Option<&mut HashMap<String, i64>>, WrongType> {
        self.typed(
            key,
            create,
            || Value::ZSet(HashMap::new()),
            |v| match v {
                Value::ZSet(z) => Some(z),
                _ => None,
            },
        )
    }

    /// `ZSCORE key member`.
    pub(crate) fn zscore(&mut self, key: &str, member: &str) -> Result<Option<i64>, WrongType> {
        Ok(self.zset(key, false)?.and_then(|z| z.get(member).copied()))
    }

    /// `ZADD key score member`.
    pub(crate) fn zadd(&mut self, key: &str, score: i64, member: &str) -> Result<(), WrongType> {
        if let Some(z) = self.zset(key, true)? {
            z.insert(member.to_owned(), score);
        }
        Ok(())
    }

    /// `ZREM key member`.
    pub(crate) fn zrem(&mut self, key: &str, member: &str) -> Result<(), WrongType> {
        if let Some(z) = self.zset(key, false)? {
            z.remove(member);
        }
        self.drop_if_empty(key);
        Ok(())
    }

    /// Writes a hash field directly (`HSET`), as another client would.
    pub(crate) fn hset(&mut self, key: &str, field: &str, value: i64) -> Result<(), WrongType> {
        self.hincrby(key, field, 0)?;
        if let Some(h) = self.hash(key, false)? {
            h.insert(field.to_owned(), value);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn keys_expire_lazily() {
        let mut ks = Keyspace::default();
        ks.set("a", "1".into(), Some(100));
        assert_eq!(ks.pttl("a"), 100);
        tokio::time::advance(Duration::from_millis(40)).await;
        assert_eq!(ks.pttl("a"), 60);
        tokio::time::advance(Duration::from_millis(60)).await;
        assert_eq!(ks.pttl("a"), -2);
        assert!(!ks.exists("a"));
    }

    #[test]
    fn hash_commands_refuse_strings() {
        let mut ks = Keyspace::default();
        ks.set("s", "v".into(), None);
        assert_eq!(ks.hexists("s", "f"), Err(WrongType));
        assert_eq!(ks.hincrby("s", "f", 1), Err(WrongType));
        assert_eq!(ks.get("s"), Ok(Some("v".into())));
        assert_eq!(ks.type_of("s"), "string");
        assert_eq!(ks.pttl("s"), -1);
    }

    #[test]
    fn hincrby_creates_and_counts() {
        let mut ks = Keyspace::default();
        assert_eq!(ks.hincrby("h", "f", 1), Ok(1));
        assert_eq!(ks.hincrby("h", "f", 1), Ok(2));
        assert_eq!(ks.hincrby("h", "f", -2), Ok(0));
        assert_eq!(ks.hgetall("h").unwrap(), vec![("f".into(), 0)]);
        assert!(ks.del("h"));
        assert!(!ks.del("h"));
    }

    #[test]
    fn incr_counts_from_one() {
        let mut ks = Keyspace::default();
        assert_eq!(ks.incr("c"), Ok(1));
        assert_eq!(ks.incr("c"), Ok(2));
        ks.hset("h", "f", 1).unwrap();
        assert_eq!(ks.incr("h"), Err(WrongType));
    }
}
