//! Redis's conversions between Lua values and replies (the "Conversion
//! between Lua and Redis data types" of the Redis Lua API reference,
//! RESP2):
//!
//! | Redis reply  | Lua                      | back to Redis            |
//! |--------------|--------------------------|--------------------------|
//! | integer      | number                   | number → integer, truncated |
//! | bulk string  | string                   | string → bulk string     |
//! | array        | table (array part)       | table → array, up to the first nil |
//! | status       | table `{ok=...}`         | `{ok=...}` → status      |
//! | error        | table `{err=...}`        | `{err=...}` → error      |
//! | nil          | false                    | false, nil → nil; true → 1 |
//!
//! Command arguments go the other way: strings as they are, numbers as
//! `%.17g`, anything else refused.

use mlua::{Lua, MultiValue, Table, Value};

use crate::memory::commands::number::{format_double, truncate_to_int};
use crate::memory::reply::ScriptReply;

/// How deep a returned table may nest before the conversion gives up (a
/// table that contains itself would otherwise never end).
const MAX_DEPTH: usize = 1000;

/// The arguments of `redis.call(...)` as command arguments, or the error
/// Redis raises for them.
pub(super) fn command_args(args: MultiValue) -> Result<Vec<Vec<u8>>, &'static str> {
    if args.is_empty() {
        return Err("ERR Please specify at least one argument for this redis lib call");
    }
    args.iter()
        .map(|arg| match arg {
            Value::String(s) => Ok(s.as_bytes().to_vec()),
            Value::Integer(i) => Ok(format_double(*i as f64).into_bytes()),
            Value::Number(n) => Ok(format_double(*n).into_bytes()),
            _ => Err("ERR Lua redis lib command arguments must be strings or integers"),
        })
        .collect()
}

/// A reply as the Lua value `redis.call` returns.
pub(super) fn reply_to_lua(lua: &Lua, reply: &ScriptReply) -> mlua::Result<Value> {
    Ok(match reply {
        ScriptReply::Nil => Value::Boolean(false),
        ScriptReply::Int(i) => Value::Number(*i as f64),
        ScriptReply::Bulk(bytes) => Value::String(lua.create_string(bytes)?),
        ScriptReply::Status(s) => {
            let t = lua.create_table()?;
            t.raw_set("ok", s.as_str())?;
            Value::Table(t)
        }
        ScriptReply::Error(e) => {
            let t = lua.create_table()?;
            t.raw_set("err", e.as_str())?;
            Value::Table(t)
        }
        ScriptReply::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, reply_to_lua(lua, item)?)?;
            }
            Value::Table(t)
        }
    })
}

/// An error text as Redis writes it on the wire: no CR or LF inside, none
/// at the ends.
pub(super) fn one_line(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    text.trim_matches(['\r', '\n']).replace(['\r', '\n'], " ")
}

/// A script's return value as the reply `EVAL` sends.
pub(super) fn lua_to_reply(value: &Value) -> ScriptReply {
    to_reply(value, 0)
}

fn to_reply(value: &Value, depth: usize) -> ScriptReply {
    match value {
        Value::Boolean(true) => ScriptReply::Int(1),
        Value::Integer(i) => ScriptReply::Int(*i),
        Value::Number(n) => ScriptReply::Int(truncate_to_int(*n)),
        Value::String(s) => ScriptReply::Bulk(s.as_bytes().to_vec()),
        Value::Table(_) if depth >= MAX_DEPTH => {
            ScriptReply::Error("ERR reached lua stack limit".to_owned())
        }
        Value::Table(t) => table_to_reply(t, depth),
        _ => ScriptReply::Nil,
    }
}

fn table_to_reply(t: &Table, depth: usize) -> ScriptReply {
    if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
        return ScriptReply::Error(one_line(&e.as_bytes()));
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
        let status = String::from_utf8_lossy(&s.as_bytes()).replace(['\r', '\n'], " ");
        return ScriptReply::Status(status);
    }
    let mut items = Vec::new();
    for i in 1.. {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(item) => items.push(to_reply(&item, depth + 1)),
        }
    }
    ScriptReply::Array(items)
}
