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

impl ScriptReply {
    /// The reply as the `redis` crate decodes it off the wire: an error
    /// reply (also one nested in an array, as `redis` treats it) is the
    /// [`redis::RedisError`] a real server's reply would give, code and
    /// kind included (`NOSCRIPT`, `WRONGTYPE`, ...).
    pub(crate) fn into_redis(self) -> redis::RedisResult<redis::Value> {
        self.into_value()?.extract_error()
    }

    fn into_value(self) -> redis::RedisResult<redis::Value> {
        use redis::Value;
        Ok(match self {
            ScriptReply::Nil => Value::Nil,
            ScriptReply::Int(n) => Value::Int(n),
            ScriptReply::Bulk(bytes) => Value::BulkString(bytes),
            ScriptReply::Status(status) if status == "OK" => Value::Okay,
            ScriptReply::Status(status) => Value::SimpleString(status),
            // Error replies are one line (the engine and the commands make
            // them so), which is all RESP needs.
            ScriptReply::Error(message) => {
                redis::parse_redis_value(format!("-{message}\r\n").as_bytes())?
            }
            ScriptReply::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(ScriptReply::into_value)
                    .collect::<redis::RedisResult<_>>()?,
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::{ErrorKind, ServerErrorKind, Value};

    #[test]
    fn replies_decode_as_off_the_wire() {
        let reply = ScriptReply::Array(vec![
            ScriptReply::Nil,
            ScriptReply::Int(3),
            ScriptReply::bulk("x"),
            ScriptReply::ok(),
            ScriptReply::Status("QUEUED".into()),
        ]);
        assert_eq!(
            reply.into_redis().unwrap(),
            Value::Array(vec![
                Value::Nil,
                Value::Int(3),
                Value::BulkString(b"x".to_vec()),
                Value::Okay,
                Value::SimpleString("QUEUED".into()),
            ])
        );
    }

    #[test]
    fn error_replies_keep_their_code() {
        let wrongtype = ScriptReply::Error("WRONGTYPE Operation against a key".into());
        assert_eq!(
            wrongtype.into_redis().unwrap_err().code(),
            Some("WRONGTYPE")
        );
        let noscript = ScriptReply::Error(crate::memory::scripts::NOSCRIPT.into());
        assert_eq!(
            noscript.into_redis().unwrap_err().kind(),
            ErrorKind::Server(ServerErrorKind::NoScript)
        );
        let nested = ScriptReply::Array(vec![ScriptReply::Error("ERR boom".into())]);
        assert!(nested.into_redis().is_err());
    }
}
