//! The functions of the `redis` library that are written in Rust: they
//! are C functions to Lua, as in Redis, so a script's `return
//! redis.log(...)` is not a tail call that would lose the script's frame
//! (and the line an error is reported on). `call` and `pcall` are set per
//! run by the engine, the rest once here.

use mlua::{Lua, MultiValue, Table, Value};

use super::engine::sha1_hex;

/// Raises `error` (a Lua value, normally an `{err=...}` table) from a Rust
/// function. Rust can only raise an opaque value, so the table is left in
/// `internals.raised`, where the sandbox's error handler and its
/// pcall/xpcall pick it up (`sandbox.lua`).
pub(super) fn raise<T>(internals: &Table, error: Value) -> mlua::Result<T> {
    internals.raw_set("raised", error)?;
    Err(mlua::Error::runtime("redis library error"))
}

/// Raises `{err = "ERR " .. message}`, as Redis's `luaPushError` then
/// `luaError` do.
fn raise_err<T>(lua: &Lua, internals: &Table, message: &str) -> mlua::Result<T> {
    let t = lua.create_table()?;
    t.raw_set("err", format!("ERR {message}"))?;
    raise(internals, Value::Table(t))
}

/// Installs sha1hex, log, setresp and set_repl into `library`.
pub(super) fn install(lua: &Lua, internals: &Table, library: &Table) -> mlua::Result<()> {
    let inner = internals.clone();
    let sha1hex = lua.create_function(move |lua, args: MultiValue| {
        if args.len() != 1 {
            return raise_err(lua, &inner, "wrong number of arguments");
        }
        let text = match &args[0] {
            v @ (Value::String(_) | Value::Integer(_) | Value::Number(_)) => lua
                .coerce_string(v.clone())?
                .map(|s| s.as_bytes().to_vec())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        Ok(sha1_hex(&text))
    })?;
    library.raw_set("sha1hex", sha1hex)?;

    // Logging goes nowhere: the store has no log file.
    let inner = internals.clone();
    let log = lua.create_function(move |lua, args: MultiValue| {
        if args.len() < 2 {
            return raise_err(lua, &inner, "redis.log() requires two arguments or more.");
        }
        Ok(())
    })?;
    library.raw_set("log", log)?;

    let inner = internals.clone();
    let setresp = lua.create_function(move |lua, args: MultiValue| {
        if args.len() != 1 {
            return raise_err(lua, &inner, "redis.setresp() requires one argument.");
        }
        match &args[0] {
            Value::Integer(2) => Ok(()),
            Value::Number(n) if *n == 2.0 => Ok(()),
            _ => raise_err(
                lua,
                &inner,
                "the in-memory engine models RESP2 replies only",
            ),
        }
    })?;
    library.raw_set("setresp", setresp)?;

    // Replication does not exist here; Redis 7 always replicates effects.
    let inner = internals.clone();
    let set_repl = lua.create_function(move |lua, args: MultiValue| {
        if args.len() != 1 {
            return raise_err(lua, &inner, "redis.set_repl() requires one argument.");
        }
        Ok(())
    })?;
    library.raw_set("set_repl", set_repl)?;
    Ok(())
}
