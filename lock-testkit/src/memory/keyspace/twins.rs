//! The narrow API the Rust twins of the Lua scripts (`scripts.rs`) and the
//! server's raw accessors use: string keys, integer hash values and
//! integer scores, over the byte/string model of [`Keyspace`].

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use super::{Keyspace, Value, WrongType};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn int(bytes: &[u8]) -> Option<i64> {
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

impl Keyspace {
    pub(crate) fn exists(&mut self, key: &str) -> bool {
        self.value(key.as_bytes()).is_some()
    }

    /// `TYPE`: "none", "string", "hash", "list" or "zset".
    pub(crate) fn type_of(&mut self, key: &str) -> &'static str {
        self.kind_of(key.as_bytes())
    }

    pub(crate) fn get(&mut self, key: &str) -> Result<Option<String>, WrongType> {
        Ok(self.string_at(key.as_bytes())?.map(|s| text(s)))
    }

    /// `SET key value [PX ms]`.
    pub(crate) fn set(&mut self, key: &str, value: String, px: Option<u64>) {
        let expires_at = px.map(|ms| Instant::now() + Duration::from_millis(ms));
        self.put(key.as_bytes(), Value::Str(value.into_bytes()), expires_at);
    }

    /// `INCR`; a value that is not an integer is refused like a wrong type.
    pub(crate) fn incr(&mut self, key: &str) -> Result<i64, WrongType> {
        let next = match self.string_at(key.as_bytes())? {
            None => 1,
            Some(s) => int(s).ok_or(WrongType)?.checked_add(1).ok_or(WrongType)?,
        };
        match self.string_at(key.as_bytes())? {
            Some(s) => *s = next.to_string().into_bytes(),
            None => self.put(
                key.as_bytes(),
                Value::Str(next.to_string().into_bytes()),
                None,
            ),
        }
        Ok(next)
    }

    pub(crate) fn hexists(&mut self, key: &str, field: &str) -> Result<bool, WrongType> {
        Ok(self
            .hash_at(key.as_bytes(), false)?
            .is_some_and(|h| h.get(field.as_bytes()).is_some()))
    }

    /// `HGET` read as a count: `None` when the key or field is missing (a
    /// value that is not an integer reads as 0, like `HGETALL` here).
    pub(crate) fn hget(&mut self, key: &str, field: &str) -> Result<Option<i64>, WrongType> {
        Ok(self
            .hash_at(key.as_bytes(), false)?
            .and_then(|h| h.get(field.as_bytes()).map(|v| int(v).unwrap_or(0))))
    }

    /// `HINCRBY`; a field that is not an integer is refused like a wrong
    /// type.
    pub(crate) fn hincrby(&mut self, key: &str, field: &str, by: i64) -> Result<i64, WrongType> {
        let hash = self.hash_at(key.as_bytes(), true)?.ok_or(WrongType)?;
        let old = match hash.get(field.as_bytes()) {
            None => 0,
            Some(v) => int(v).ok_or(WrongType)?,
        };
        let new = old.checked_add(by).ok_or(WrongType)?;
        hash.insert(field.as_bytes(), new.to_string().into_bytes());
        Ok(new)
    }

    /// `HGETALL`, fields sorted, values read as integers (0 when not one).
    pub(crate) fn hgetall(&mut self, key: &str) -> Result<Vec<(String, i64)>, WrongType> {
        let mut fields: Vec<(String, i64)> = self
            .hash_at(key.as_bytes(), false)?
            .map(|h| {
                h.iter()
                    .map(|(f, v)| (text(f), int(v).unwrap_or(0)))
                    .collect()
            })
            .unwrap_or_default();
        fields.sort();
        Ok(fields)
    }

    /// `PEXPIRE`; returns whether the key existed.
    pub(crate) fn pexpire(&mut self, key: &str, ms: u64) -> bool {
        let at = Instant::now() + Duration::from_millis(ms);
        self.set_expiry(key.as_bytes(), Some(at))
    }

    /// `PTTL`: -2 missing, -1 no expiry, else remaining milliseconds.
    pub(crate) fn pttl(&mut self, key: &str) -> i64 {
        self.remaining_ms(key.as_bytes())
    }

    /// `DEL`; returns whether the key existed.
    pub(crate) fn del(&mut self, key: &str) -> bool {
        self.remove_key(key.as_bytes())
    }

    /// Every live key, sorted.
    pub(crate) fn keys(&mut self) -> Vec<String> {
        self.live_keys().iter().map(|k| text(k)).collect()
    }

    /// `LINDEX key 0`.
    pub(crate) fn list_head(&mut self, key: &str) -> Result<Option<String>, WrongType> {
        Ok(self
            .list_at(key.as_bytes(), false)?
            .and_then(|l| l.front().map(|v| text(v))))
    }

    /// `LRANGE key 0 -1`.
    pub(crate) fn list_all(&mut self, key: &str) -> Result<Vec<String>, WrongType> {
        Ok(self
            .list_at(key.as_bytes(), false)?
            .map(|l| l.iter().map(|v| text(v)).collect())
            .unwrap_or_default())
    }

    /// `LPOP key`.
    pub(crate) fn lpop(&mut self, key: &str) -> Result<Option<String>, WrongType> {
        let head = self
            .list_at(key.as_bytes(), false)?
            .and_then(VecDeque::pop_front);
        self.drop_if_empty(key.as_bytes());
        Ok(head.map(|v| text(&v)))
    }

    /// `RPUSH key value`.
    pub(crate) fn rpush(&mut self, key: &str, value: &str) -> Result<(), WrongType> {
        if let Some(l) = self.list_at(key.as_bytes(), true)? {
            l.push_back(value.as_bytes().to_vec());
        }
        Ok(())
    }

    /// `LREM key 0 value`.
    pub(crate) fn lrem(&mut self, key: &str, value: &str) -> Result<(), WrongType> {
        if let Some(l) = self.list_at(key.as_bytes(), false)? {
            l.retain(|v| v != value.as_bytes());
        }
        self.drop_if_empty(key.as_bytes());
        Ok(())
    }

    /// `ZSCORE key member`, the score truncated to an integer.
    pub(crate) fn zscore(&mut self, key: &str, member: &str) -> Result<Option<i64>, WrongType> {
        Ok(self
            .zset_at(key.as_bytes(), false)?
            .and_then(|z| z.score(member.as_bytes()))
            .map(|s| s as i64))
    }

    /// `ZADD key score member`.
    pub(crate) fn zadd(&mut self, key: &str, score: i64, member: &str) -> Result<(), WrongType> {
        if let Some(z) = self.zset_at(key.as_bytes(), true)? {
            z.insert(member.as_bytes(), score as f64);
        }
        Ok(())
    }

    /// `ZREM key member`.
    pub(crate) fn zrem(&mut self, key: &str, member: &str) -> Result<(), WrongType> {
        if let Some(z) = self.zset_at(key.as_bytes(), false)? {
            z.remove(member.as_bytes());
        }
        self.drop_if_empty(key.as_bytes());
        Ok(())
    }

    /// Writes a hash field directly (`HSET`), as another client would.
    pub(crate) fn hset(&mut self, key: &str, field: &str, value: i64) -> Result<(), WrongType> {
        if let Some(h) = self.hash_at(key.as_bytes(), true)? {
            h.insert(field.as_bytes(), value.to_string().into_bytes());
        }
        Ok(())
    }
}
