//! [`ScriptReply`]: what a Redis command or a Lua script answers, in
//! RESP2's shapes.

/// A reply as Redis sends it (RESP2): what a command run by `redis.call`
/// returns, and what `EVAL` answers once a script's Lua value has been
/// converted by Redis's rules.
///
/// Null bulk strings and null arrays are both [`ScriptReply::Nil`], as
/// they are both `false` in Lua.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScriptReply {
    /// A null reply.
    Nil,
    /// An integer reply.
    Int(i64),
    /// A bulk string.
    Bulk(Vec<u8>),
    /// A status reply such as `OK`, without its `+`.
    Status(String),
    /// An error reply without its `-`: the code, a space, the message
    /// (`"WRONGTYPE Operation against a key holding the wrong kind of
    /// value"`).
    Error(String),
    /// An array of replies.
    Array(Vec<ScriptReply>),
}

impl ScriptReply {
    /// Whether this is an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, ScriptReply::Error(_))
    }

    /// The `OK` status.
    pub(crate) fn ok() -> Self {
        ScriptReply::Status("OK".to_owned())
    }

    /// A bulk string from anything byte-like.
    pub(crate) fn bulk(bytes: impl AsRef<[u8]>) -> Self {
        ScriptReply::Bulk(bytes.as_ref().to_vec())
    }

    /// A bulk string, or nil.
    pub(crate) fn bulk_or_nil(bytes: Option<impl AsRef<[u8]>>) -> Self {
        bytes.map_or(ScriptReply::Nil, Self::bulk)
    }

    /// An integer reply from a count.
    pub(crate) fn count(n: usize) -> Self {
        ScriptReply::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}
