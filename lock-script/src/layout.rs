//! The on-Redis key layout, shared by every backend that models it.
//!
//! This is Redisson 4.x's layout, so a Java service using Redisson and a Rust
//! service using this library can share a lock:
//!
//! | item | name |
//! | --- | --- |
//! | lock hash | `<prefix><name>` |
//! | unlock channel | `redisson_lock__channel:{<prefix><name>}` |
//! | unlock request record | `redisson_unlock_latch:{<prefix><name>}:<request-id>` |
//! | acquire request record (ours) | `redisson_lock_latch:{<prefix><name>}:<request-id>` |
//! | fencing counter | `redisson_lock_token:{<prefix><name>}` |
//! | fair lock: queue, eviction deadlines | `redisson_lock_queue:{<prefix><name>}`, `redisson_lock_timeout:{<prefix><name>}` |
//! | handoff lock: waiters and grants (ours) | `redisson_lock_handoff:{<prefix><name>}` |
//! | fair waiter's own channel | `redisson_lock__channel:{<prefix><name>}:<owner>` |
//! | read-write lock: channel, waiting writers (ours) | `redisson_rwlock:{<prefix><name>}`, `redisson_rwlock_writers:{<prefix><name>}` |
//! | read-write lock: one read hold | `{<prefix><name>}:<owner>:rwlock_timeout:<n>` |
//! | semaphores: channel | `redisson_sc:{<prefix><name>}` |
//! | expirable-permit semaphore: leases | `{<prefix><name>}:timeout` |
//! | count-down latch: channel | `redisson_countdownlatch__channel__{<prefix><name>}` |
//!
//! The key prefix (empty by default) is applied to the name first; every
//! helper name derives from the prefixed name. When the prefixed name already
//! contains `{`, it is used as is instead of being wrapped in braces, as
//! Redisson does: the caller's own hash tag then decides the cluster slot, and
//! it is the same hash tag for every key of the lock. The latch's channel is
//! Redisson's one exception: always wrapped.
//!
//! This is the one home of the names: every kind's store operations and
//! the describe reader take them from here (and the in-memory backend gets
//! them as the scripts' KEYS), so tests that inspect keys read the same
//! names on every deployment.
//!
//! A request record keeps the first outcome of one request (by its request
//! id) so that the request sent again gets the same answer. Its key names end
//! in `_latch` because that is what Redisson 4.x calls its request records
//! (`redisson_unlock_latch`); the acquire record, which Redisson does not
//! keep, is named in the same style. Those names are on the wire and stay.

use lock_core::{LockName, Owner};

/// The message published on the unlock channel by an exclusive unlock: wakes
/// one waiter per client.
pub const UNLOCK_MESSAGE: &str = "0";
/// The message published by a read unlock: wakes every waiter.
pub const READ_UNLOCK_MESSAGE: &str = "1";

/// What an unlock message asks of the waiters on its channel: `0` wakes one
/// waiter per client, `1` every waiter; anything else is ignored.
pub fn wake(payload: &[u8]) -> Option<lock_core::backend::Wake> {
    match payload {
        b"0" => Some(lock_core::backend::Wake::One),
        b"1" => Some(lock_core::backend::Wake::All),
        _ => None,
    }
}

/// Maps lock names to the keys and channels of the layout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyLayout {
    prefix: String,
}

impl KeyLayout {
    /// A layout whose lock keys are `prefix + name`.
    pub fn with_prefix(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
        }
    }

    /// The configured prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `{<key>}`, or `<key>` when it has a `{` of its own: the lock key as
    /// the hash tag of the names Redisson builds around it (its
    /// `suffixName`; a read-write lock's hold keys, the permit leases).
    ///
    /// ```
    /// # use lock_script::KeyLayout; use lock_core::LockName;
    /// let l = KeyLayout::with_prefix("p:");
    /// assert_eq!(l.tagged_key(&LockName::new("rw").unwrap()), "{p:rw}");
    /// assert_eq!(l.tagged_key(&LockName::new("{t}rw").unwrap()), "p:{t}rw");
    /// ```
    pub fn tagged_key(&self, name: &LockName) -> String {
        let key = self.lock_key(name);
        if key.contains('{') {
            key
        } else {
            ["{", key.as_str(), "}"].concat()
        }
    }

    /// The key of the lock hash.
    ///
    /// ```
    /// # use lock_script::KeyLayout; use lock_core::LockName;
    /// let l = KeyLayout::with_prefix("app:");
    /// assert_eq!(l.lock_key(&LockName::new("job").unwrap()), "app:job");
    /// ```
    pub fn lock_key(&self, name: &LockName) -> String {
        [self.prefix.as_str(), name.as_str()].concat()
    }

    /// `"<helper>:{<key>}"`, or `"<helper>:<key>"` when the key has a `{`.
    fn helper(&self, helper: &str, name: &LockName) -> String {
        self.helper_with_id(helper, name, None)
    }

    /// [`KeyLayout::helper`], then `":<id>"` when there is an id. One
    /// allocation and no formatting: every acquire and release names three
    /// or four such keys (perf of a W1 loop showed `format!` here).
    fn helper_with_id(&self, helper: &str, name: &LockName, id: Option<&str>) -> String {
        let (prefix, name) = (self.prefix.as_str(), name.as_str());
        let (open, close) = if prefix.contains('{') || name.contains('{') {
            ("", "")
        } else {
            ("{", "}")
        };
        let (colon, id) = id.map_or(("", ""), |id| (":", id));
        [helper, ":", open, prefix, name, close, colon, id].concat()
    }

    /// The channel where unlocks of this lock are announced.
    ///
    /// ```
    /// # use lock_script::KeyLayout; use lock_core::LockName;
    /// let l = KeyLayout::default();
    /// assert_eq!(
    ///     l.channel(&LockName::new("job").unwrap()),
    ///     "redisson_lock__channel:{job}"
    /// );
    /// assert_eq!(
    ///     l.channel(&LockName::new("{user1}:job").unwrap()),
    ///     "redisson_lock__channel:{user1}:job"
    /// );
    /// ```
    pub fn channel(&self, name: &LockName) -> String {
        self.helper("redisson_lock__channel", name)
    }

    /// A fair-lock waiter's own channel: `"<channel>:<owner>"`.
    ///
    /// ```
    /// # use lock_script::KeyLayout; use lock_core::{LockName, Owner};
    /// let o = Owner::new(uuid::Uuid::nil(), 3);
    /// assert_eq!(
    ///     KeyLayout::default().waiter_channel(&LockName::new("job").unwrap(), &o),
    ///     "redisson_lock__channel:{job}:00000000-0000-0000-0000-000000000000:3"
    /// );
    /// ```
    pub fn waiter_channel(&self, name: &LockName, owner: &Owner) -> String {
        format!("{}:{owner}", self.channel(name))
    }

    /// The request record of one unlock: the key that keeps its outcome
    /// for its retry window (Redisson's `redisson_unlock_latch`).
    pub fn unlock_record(&self, name: &LockName, request_id: &str) -> String {
        self.helper_with_id("redisson_unlock_latch", name, Some(request_id))
    }

    /// The request record of one acquisition: the key that keeps its outcome
    /// for its retry window, so a retried acquire never counts a hold twice.
    pub fn acquire_record(&self, name: &LockName, request_id: &str) -> String {
        self.helper_with_id("redisson_lock_latch", name, Some(request_id))
    }

    /// The fencing-token counter (never expires, never reset).
    pub fn token_key(&self, name: &LockName) -> String {
        self.helper("redisson_lock_token", name)
    }

    /// The fair lock's queue of waiting owners.
    pub fn queue_key(&self, name: &LockName) -> String {
        self.helper("redisson_lock_queue", name)
    }

    /// The direct-handoff lock's hash of waiters that accept a handoff and
    /// of grants not yet seen, `redisson_lock_handoff:{<name>}` (ours:
    /// Redisson has no such key).
    pub fn handoff_key(&self, name: &LockName) -> String {
        self.helper("redisson_lock_handoff", name)
    }

    /// The fair lock's sorted set of waiter eviction deadlines.
    pub fn timeout_key(&self, name: &LockName) -> String {
        self.helper("redisson_lock_timeout", name)
    }

    /// The channel of both semaphore kinds, `redisson_sc:{<key>}`.
    ///
    /// ```
    /// # use lock_script::KeyLayout; use lock_core::LockName;
    /// let l = KeyLayout::with_prefix("p:");
    /// assert_eq!(l.semaphore_channel(&LockName::new("jobs").unwrap()), "redisson_sc:{p:jobs}");
    /// ```
    pub fn semaphore_channel(&self, name: &LockName) -> String {
        self.helper("redisson_sc", name)
    }

    /// The expirable-permit semaphore's sorted set of leases: Redisson's
    /// suffix name `{<key>}:timeout` (`<key>:timeout` when the key has a
    /// `{`).
    ///
    /// ```
    /// # use lock_script::KeyLayout; use lock_core::LockName;
    /// let l = KeyLayout::default();
    /// assert_eq!(l.permit_leases_key(&LockName::new("jobs").unwrap()), "{jobs}:timeout");
    /// assert_eq!(l.permit_leases_key(&LockName::new("{t}jobs").unwrap()), "{t}jobs:timeout");
    /// ```
    pub fn permit_leases_key(&self, name: &LockName) -> String {
        self.tagged_key(name) + ":timeout"
    }

    /// The read-write lock's channel, `redisson_rwlock:{<key>}`.
    ///
    /// ```
    /// # use lock_script::KeyLayout; use lock_core::LockName;
    /// let l = KeyLayout::default();
    /// assert_eq!(l.rwlock_channel(&LockName::new("cfg").unwrap()), "redisson_rwlock:{cfg}");
    /// ```
    pub fn rwlock_channel(&self, name: &LockName) -> String {
        self.helper("redisson_rwlock", name)
    }

    /// Our sorted set of a read-write lock's waiting writers,
    /// `redisson_rwlock_writers:{<key>}` (Redisson has no such key).
    pub fn rwlock_writers_key(&self, name: &LockName) -> String {
        self.helper("redisson_rwlock_writers", name)
    }

    /// The prefix of `owner`'s read hold keys on a read-write lock,
    /// `{<key>}:<owner>:rwlock_timeout` (hold n is this `:n`; Redisson's
    /// `getReadWriteTimeoutNamePrefix`).
    ///
    /// ```
    /// # use lock_script::KeyLayout; use lock_core::{LockName, Owner};
    /// let o = Owner::new(uuid::Uuid::nil(), 3);
    /// assert_eq!(
    ///     KeyLayout::default().rwlock_hold_key_prefix(&LockName::new("cfg").unwrap(), &o),
    ///     "{cfg}:00000000-0000-0000-0000-000000000000:3:rwlock_timeout"
    /// );
    /// ```
    pub fn rwlock_hold_key_prefix(&self, name: &LockName, owner: &Owner) -> String {
        [
            self.tagged_key(name).as_str(),
            ":",
            owner.field().as_str(),
            ":rwlock_timeout",
        ]
        .concat()
    }

    /// The count-down latch's channel, Redisson's
    /// `redisson_countdownlatch__channel__{<key>}`: braces even around a
    /// key with a hash tag of its own (so such a name cannot share a
    /// cluster slot with its channel; the latch refuses it there).
    ///
    /// ```
    /// # use lock_script::KeyLayout; use lock_core::LockName;
    /// let name = LockName::new("{tag}jobs").unwrap();
    /// assert_eq!(
    ///     KeyLayout::with_prefix("p:").latch_channel(&name),
    ///     "redisson_countdownlatch__channel__{p:{tag}jobs}"
    /// );
    /// ```
    pub fn latch_channel(&self, name: &LockName) -> String {
        [
            "redisson_countdownlatch__channel__{",
            self.lock_key(name).as_str(),
            "}",
        ]
        .concat()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> LockName {
        LockName::new(s).unwrap()
    }

    #[test]
    fn helper_names_wrap_the_name_in_braces() {
        let l = KeyLayout::default();
        assert_eq!(
            l.unlock_record(&n("a"), "r1"),
            "redisson_unlock_latch:{a}:r1"
        );
        assert_eq!(l.token_key(&n("a")), "redisson_lock_token:{a}");
        assert_eq!(l.queue_key(&n("a")), "redisson_lock_queue:{a}");
        assert_eq!(l.timeout_key(&n("a")), "redisson_lock_timeout:{a}");
        assert_eq!(l.handoff_key(&n("a")), "redisson_lock_handoff:{a}");
    }

    #[test]
    fn names_with_braces_are_used_as_is() {
        let l = KeyLayout::default();
        assert_eq!(l.token_key(&n("{t}x")), "redisson_lock_token:{t}x");
    }

    #[test]
    fn records_follow_the_same_rule_as_the_helpers() {
        let l = KeyLayout::with_prefix("p:");
        assert_eq!(
            l.acquire_record(&n("a"), "r1"),
            "redisson_lock_latch:{p:a}:r1"
        );
        assert_eq!(
            l.acquire_record(&n("{t}a"), "r1"),
            "redisson_lock_latch:p:{t}a:r1"
        );
        // A brace in the prefix is a hash tag too.
        let tagged = KeyLayout::with_prefix("{app}:");
        assert_eq!(
            tagged.unlock_record(&n("a"), "r2"),
            "redisson_unlock_latch:{app}:a:r2"
        );
        assert_eq!(tagged.channel(&n("a")), "redisson_lock__channel:{app}:a");
    }

    #[test]
    fn prefix_applies_before_helpers() {
        let l = KeyLayout::with_prefix("p:");
        assert_eq!(l.lock_key(&n("a")), "p:a");
        assert_eq!(l.channel(&n("a")), "redisson_lock__channel:{p:a}");
    }
}
