//! A model of a Redis keyspace: byte-string keys holding strings, hashes,
//! lists or sorted sets, each with an optional expiry, with Redis's data
//! model (hash values are strings, sorted-set scores are doubles) so the
//! command layer ([`super::commands`]) can answer as Redis does.
//!
//! Expiry is lazy, as Redis does it on access: a key whose deadline has
//! passed is dropped when it is next looked at. Deadlines are
//! `tokio::time::Instant`s, so paused time drives them.

mod hash;
mod zset;

use std::collections::{HashMap, VecDeque};

use tokio::time::Instant;

pub(crate) use hash::Hash;
pub(crate) use zset::ZSet;

/// A stored value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Str(Vec<u8>),
    Hash(Hash),
    List(VecDeque<Vec<u8>>),
    ZSet(ZSet),
}

impl Value {
    /// The name `TYPE` answers.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Hash(_) => "hash",
            Value::List(_) => "list",
            Value::ZSet(_) => "zset",
        }
    }

    fn is_empty_collection(&self) -> bool {
        match self {
            Value::Str(_) => false,
            Value::Hash(h) => h.is_empty(),
            Value::List(l) => l.is_empty(),
            Value::ZSet(z) => z.is_empty(),
        }
    }
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
    entries: HashMap<Vec<u8>, Entry>,
}

impl Keyspace {
    fn live(&mut self, key: &[u8]) -> Option<&mut Entry> {
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

    /// The live value at `key`.
    pub(crate) fn value(&mut self, key: &[u8]) -> Option<&mut Value> {
        self.live(key).map(|e| &mut e.value)
    }

    /// `TYPE`: "none", or the value's type name.
    pub(crate) fn kind_of(&mut self, key: &[u8]) -> &'static str {
        self.value(key).map_or("none", |v| v.type_name())
    }

    /// Stores `value` at `key`, replacing any old value and its expiry.
    pub(crate) fn put(&mut self, key: &[u8], value: Value, expires_at: Option<Instant>) {
        self.entries
            .insert(key.to_vec(), Entry { value, expires_at });
    }

    /// Deletes `key`; returns whether it existed.
    pub(crate) fn remove_key(&mut self, key: &[u8]) -> bool {
        self.live(key).is_some() && self.entries.remove(key).is_some()
    }

    /// `None` when `key` is missing, else its deadline (`None`: persistent).
    pub(crate) fn expiry(&mut self, key: &[u8]) -> Option<Option<Instant>> {
        self.live(key).map(|e| e.expires_at)
    }

    /// Sets or clears `key`'s deadline; returns whether the key exists.
    pub(crate) fn set_expiry(&mut self, key: &[u8], at: Option<Instant>) -> bool {
        match self.live(key) {
            Some(e) => {
                e.expires_at = at;
                true
            }
            None => false,
        }
    }

    /// Every live key, sorted.
    pub(crate) fn live_keys(&mut self) -> Vec<Vec<u8>> {
        let now = Instant::now();
        self.entries
            .retain(|_, e| e.expires_at.is_none_or(|at| at > now));
        let mut keys: Vec<Vec<u8>> = self.entries.keys().cloned().collect();
        keys.sort();
        keys
    }

    /// Drops `key` if it holds an empty hash, list or sorted set: Redis
    /// never keeps an empty collection.
    pub(crate) fn drop_if_empty(&mut self, key: &[u8]) {
        if self.value(key).is_some_and(|v| v.is_empty_collection()) {
            self.entries.remove(key);
        }
    }

    /// The value at `key` as the type `pick` accepts (made with `empty`
    /// first when missing and `create`); a value of another type is
    /// [`WrongType`]. A collection made here and left empty must be
    /// dropped with [`Keyspace::drop_if_empty`].
    fn typed<T>(
        &mut self,
        key: &[u8],
        create: bool,
        empty: impl FnOnce() -> Value,
        pick: impl FnOnce(&mut Value) -> Option<&mut T>,
    ) -> Result<Option<&mut T>, WrongType> {
        if create && self.live(key).is_none() {
            self.put(key, empty(), None);
        }
        match self.live(key) {
            None => Ok(None),
            Some(entry) => pick(&mut entry.value).map(Some).ok_or(WrongType),
        }
    }

    /// The string at `key`.
    pub(crate) fn string_at(&mut self, key: &[u8]) -> Result<Option<&mut Vec<u8>>, WrongType> {
        self.typed(
            key,
            false,
            || Value::Str(Vec::new()),
            |v| match v {
                Value::Str(s) => Some(s),
                _ => None,
            },
        )
    }

    /// The hash at `key`; an empty one is made when missing and `create`.
    pub(crate) fn hash_at(
        &mut self,
        key: &[u8],
        create: bool,
    ) -> Result<Option<&mut Hash>, WrongType> {
        self.typed(
            key,
            create,
            || Value::Hash(Hash::default()),
            |v| match v {
                Value::Hash(h) => Some(h),
                _ => None,
            },
        )
    }

    /// The list at `key`; an empty one is made when missing and `create`.
    pub(crate) fn list_at(
        &mut self,
        key: &[u8],
        create: bool,
    ) -> Result<Option<&mut VecDeque<Vec<u8>>>, WrongType> {
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

    /// The sorted set at `key`; an empty one is made when missing and
    /// `create`.
    pub(crate) fn zset_at(
        &mut self,
        key: &[u8],
        create: bool,
    ) -> Result<Option<&mut ZSet>, WrongType> {
        self.typed(
            key,
            create,
            || Value::ZSet(ZSet::default()),
            |v| match v {
                Value::ZSet(z) => Some(z),
                _ => None,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn keys_expire_lazily() {
        let mut ks = Keyspace::default();
        let at = Instant::now() + Duration::from_millis(100);
        ks.put(b"a", Value::Str(b"1".to_vec()), Some(at));
        tokio::time::advance(Duration::from_millis(99)).await;
        assert_eq!(ks.expiry(b"a"), Some(Some(at)));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(ks.expiry(b"a"), None, "gone at its deadline");
        assert_eq!(ks.kind_of(b"a"), "none");
    }

    #[test]
    fn typed_access_refuses_other_types() {
        let mut ks = Keyspace::default();
        ks.put(b"s", Value::Str(b"v".to_vec()), None);
        assert_eq!(ks.hash_at(b"s", true), Err(WrongType));
        assert_eq!(ks.kind_of(b"s"), "string");
        assert_eq!(ks.expiry(b"s"), Some(None));
        assert!(ks.remove_key(b"s"));
        assert!(!ks.remove_key(b"s"));
    }

    #[test]
    fn hash_values_are_strings() {
        let mut ks = Keyspace::default();
        let h = ks.hash_at(b"rw", true).unwrap().unwrap();
        h.insert(b"mode", b"write".to_vec());
        assert_eq!(ks.kind_of(b"rw"), "hash");
        let h = ks.hash_at(b"rw", false).unwrap().unwrap();
        assert_eq!(h.get(b"mode"), Some(&b"write"[..]));
    }

    #[test]
    fn empty_collections_are_dropped() {
        let mut ks = Keyspace::default();
        ks.zset_at(b"z", true).unwrap();
        ks.drop_if_empty(b"z");
        assert_eq!(ks.kind_of(b"z"), "none");
        assert!(ks.live_keys().is_empty());
    }
}
