//! Who holds a lock.
//!
//! An [`Owner`] is a (client id, owner id) pair, written
//! `"<client-uuid>:<owner-id>"` ([`Owner::field`]): the format Java lock
//! clients use too (where the owner id is a thread id), so Java and Rust
//! holders are told apart the same way.
//!
//! Async tasks hop threads and two futures joined in one task must still
//! exclude each other, so ownership is explicit: each plain acquisition takes
//! a fresh owner id. Re-entering is asked for by acquiring again *as* an
//! owner ([`crate::Lock::lock_as`]), or by running code inside an owner scope
//! ([`Owner::scope`]), the async analogue of per-thread reentrancy.

use std::fmt;
use std::future::Future;

use uuid::Uuid;

tokio::task_local! {
    static SCOPE_OWNER: Owner;
}

/// The identity of a lock holder: the client that made it and a number unique
/// within that client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owner {
    client_id: Uuid,
    owner_id: u64,
}

impl Owner {
    /// Builds an owner from its parts. Most code gets owners from a client
    /// ([`crate::backend::Engine::new_owner`]) or a guard ([`crate::Guard::owner`]).
    pub fn new(client_id: Uuid, owner_id: u64) -> Self {
        Self {
            client_id,
            owner_id,
        }
    }

    /// The client id part (a UUID v4 made when the client was created).
    pub fn client_id(&self) -> Uuid {
        self.client_id
    }

    /// The number unique within the client.
    pub fn owner_id(&self) -> u64 {
        self.owner_id
    }

    /// The owner as stored in the lock hash: `"<client-uuid>:<owner-id>"`.
    ///
    /// ```
    /// # use lock_core::Owner;
    /// let o = Owner::new(uuid::Uuid::nil(), 7);
    /// assert_eq!(o.field(), "00000000-0000-0000-0000-000000000000:7");
    /// ```
    pub fn field(&self) -> String {
        // Built by hand: every acquire and release sends it, and the
        // formatting machinery cost more than the copying (perf of a W1
        // loop). The same text as `Display`.
        let mut uuid = Uuid::encode_buffer();
        let uuid = self.client_id.hyphenated().encode_lower(&mut uuid);
        let mut id = itoa::Buffer::new();
        [uuid, ":", id.format(self.owner_id)].concat()
    }

    /// Parses a holder field written by us or by a Java client. Returns `None` for
    /// fields of another shape.
    pub fn parse_field(field: &str) -> Option<Self> {
        let (uuid, id) = field.rsplit_once(':')?;
        Some(Self::new(Uuid::parse_str(uuid).ok()?, id.parse().ok()?))
    }

    /// Runs `fut` with `self` as the scope owner: plain acquisitions made
    /// inside it, on locks of the client that made this owner, re-enter as
    /// this owner instead of taking a fresh one.
    ///
    /// ```
    /// # use lock_core::Owner;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let o = Owner::new(uuid::Uuid::new_v4(), 1);
    /// let seen = o.scope(async { Owner::current() }).await;
    /// assert_eq!(seen, Some(o));
    /// # }
    /// ```
    pub async fn scope<F: Future>(self, fut: F) -> F::Output {
        SCOPE_OWNER.scope(self, fut).await
    }

    /// The owner of the innermost enclosing [`Owner::scope`], if any.
    pub fn current() -> Option<Owner> {
        SCOPE_OWNER.try_with(|o| *o).ok()
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.client_id.hyphenated(), self.owner_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_round_trips() {
        let o = Owner::new(Uuid::new_v4(), u64::MAX);
        assert_eq!(Owner::parse_field(&o.field()), Some(o));
    }

    #[test]
    fn field_is_the_display_text() {
        for id in [0, 1, 9, 10, 99, 100, 12_345, u64::MAX - 1, u64::MAX] {
            let o = Owner::new(Uuid::new_v4(), id);
            assert_eq!(o.field(), o.to_string());
        }
    }

    #[test]
    fn field_is_lower_case_hyphenated() {
        let o = Owner::new(Uuid::new_v4(), 3);
        let f = o.field();
        assert_eq!(f, f.to_lowercase());
        assert_eq!(f.len(), 36 + 2);
    }

    #[test]
    fn foreign_fields_do_not_parse() {
        assert_eq!(Owner::parse_field("no-colon"), None);
        assert_eq!(Owner::parse_field("not-a-uuid:1"), None);
        assert_eq!(
            Owner::parse_field("00000000-0000-0000-0000-000000000000:x"),
            None
        );
    }

    #[tokio::test]
    async fn no_scope_means_no_owner() {
        assert_eq!(Owner::current(), None);
    }
}
