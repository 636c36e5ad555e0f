//! [`ScriptEngine`]: one Lua 5.1 state that runs scripts as `EVAL` does.

use std::cell::RefCell;
use std::collections::HashMap;

use mlua::chunk::ChunkMode;
use mlua::{Function, Lua, LuaOptions, MultiValue, StdLib, Table, Value};

use super::convert::{command_args, lua_to_reply, one_line, reply_to_lua};
use super::library::raise;
use crate::memory::commands::{self, Command, Ctx};
use crate::memory::reply::ScriptReply;

/// The chunk name of the sandbox's own code: frames from it are skipped
/// when an error is located, as Redis's C functions are.
const SANDBOX_CHUNK: &str = "=redis_sandbox";

/// A Lua state with Redis's sandbox, and the scripts compiled so far.
///
/// It lives in the store's state, behind the store's mutex, so one script
/// runs at a time and sees no other client's writes midway, as in Redis.
pub(crate) struct ScriptEngine {
    lua: Lua,
    /// The globals scripts read (KEYS and ARGV are set here per run).
    globals: Table,
    /// Shared with the sandbox code: `raised` (see `sandbox.lua`).
    internals: Table,
    /// The table behind `redis`: holds `call` and `pcall` while a script
    /// runs.
    library: Table,
    /// `run(f)`: calls `f` under Redis's error handler.
    run: Function,
    /// Compiled scripts and their SHA1s, by source: Redis caches them by
    /// SHA1, which comes to the same; keying by source spares hashing each
    /// run's source with SHA1 again (half a run's time in a debug build:
    /// 85 µs down to 45 µs for the reentrant acquire script).
    compiled: HashMap<Vec<u8>, (Function, String)>,
}

impl std::fmt::Debug for ScriptEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptEngine")
            .field("compiled", &self.compiled.len())
            .finish_non_exhaustive()
    }
}

/// The SHA1 of `source` in lower-case hex, as `SCRIPT LOAD` answers.
pub(crate) fn sha1_hex(source: &[u8]) -> String {
    sha1_smol::Sha1::from(source).digest().to_string()
}

impl ScriptEngine {
    /// A fresh Lua state with the base, table, string and math libraries,
    /// locked down as Redis locks its own down.
    ///
    /// # Errors
    /// When Lua cannot be set up (out of memory).
    pub(crate) fn new() -> mlua::Result<Self> {
        let lua = Lua::new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH,
            LuaOptions::default(),
        )?;
        let where_ = lua.create_function(|lua, ()| Ok(error_location(lua)))?;
        let (globals, internals, run): (Table, Table, Function) = lua
            .load(include_str!("sandbox.lua"))
            .set_name(SANDBOX_CHUNK)
            .call(where_)?;
        let library = internals.raw_get("lib")?;
        super::library::install(&lua, &internals, &library)?;
        Ok(Self {
            lua,
            globals,
            internals,
            library,
            run,
            compiled: HashMap::new(),
        })
    }

    /// Runs `source` with `keys` and `argv` as `EVAL` would, its commands
    /// acting on `cx`. Whatever happens in the script (a syntax error, a
    /// runtime error, a failed `redis.call`) is an error reply; writes made
    /// before an error stay, as in Redis.
    pub(crate) fn eval(
        &mut self,
        cx: &mut Ctx<'_>,
        source: &[u8],
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
    ) -> ScriptReply {
        let (function, sha) = match self.compiled.get(source) {
            Some(compiled) => compiled.clone(),
            None => match self.compile(source) {
                Ok(f) => {
                    let compiled = (f, sha1_hex(source));
                    self.compiled.insert(source.to_vec(), compiled.clone());
                    compiled
                }
                Err(reply) => return reply,
            },
        };
        self.call(cx, &function, &sha, keys, argv)
            .unwrap_or_else(|e| {
                ScriptReply::Error(one_line(
                    format!("ERR in-memory script engine: {e}").as_bytes(),
                ))
            })
    }

    fn compile(&self, source: &[u8]) -> Result<Function, ScriptReply> {
        self.lua
            .load(source)
            .set_name("@user_script")
            .set_mode(ChunkMode::Text)
            .into_function()
            .map_err(|e| {
                let message = match e {
                    mlua::Error::SyntaxError { message, .. } => message,
                    other => other.to_string(),
                };
                ScriptReply::Error(one_line(
                    format!("ERR Error compiling script (new function): {message}").as_bytes(),
                ))
            })
    }

    fn call(
        &self,
        cx: &mut Ctx<'_>,
        function: &Function,
        sha: &str,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
    ) -> mlua::Result<ScriptReply> {
        self.globals.raw_set("KEYS", self.strings(keys)?)?;
        self.globals.raw_set("ARGV", self.strings(argv)?)?;
        let cx = RefCell::new(cx);
        // A command never calls back into Lua, so the borrow cannot clash;
        // if it ever did, it would be an error reply, not a panic.
        let borrow = || {
            cx.try_borrow_mut()
                .map_err(|_| mlua::Error::RecursiveMutCallback)
        };
        let (ok, value) = self.lua.scope(|scope| {
            let call = scope.create_function(|lua, args: MultiValue| {
                let (value, failed) = dispatch(lua, &mut **borrow()?, args)?;
                if failed {
                    return raise(&self.internals, value);
                }
                Ok(value)
            })?;
            let pcall = scope.create_function(|lua, args: MultiValue| {
                Ok(dispatch(lua, &mut **borrow()?, args)?.0)
            })?;
            self.library.raw_set("call", call)?;
            self.library.raw_set("pcall", pcall)?;
            let result = self.run.call::<(bool, Value)>(function.clone());
            self.library.raw_set("call", Value::Nil)?;
            self.library.raw_set("pcall", Value::Nil)?;
            result
        })?;
        if ok {
            return Ok(lua_to_reply(&value));
        }
        Ok(ScriptReply::Error(script_error(&value, sha)))
    }

    fn strings(&self, items: &[Vec<u8>]) -> mlua::Result<Table> {
        let t = self.lua.create_table_with_capacity(items.len(), 0)?;
        for (i, item) in items.iter().enumerate() {
            t.raw_set(i + 1, self.lua.create_string(item)?)?;
        }
        Ok(t)
    }
}

/// Runs the command a `redis.call`/`redis.pcall` names: its reply as a Lua
/// value, and whether it is an error.
fn dispatch(lua: &Lua, cx: &mut Ctx<'_>, args: MultiValue) -> mlua::Result<(Value, bool)> {
    let (reply, from_command) = match command_args(args) {
        Err(message) => (ScriptReply::Error(message.to_owned()), false),
        Ok(args) => match find_command(&args) {
            Err(message) => (ScriptReply::Error(message.to_owned()), false),
            Ok(command) => (command.run(cx, &args), true),
        },
    };
    let value = reply_to_lua(lua, &reply)?;
    if let (true, Value::Table(t)) = (reply.is_error() && from_command, &value) {
        // Redis marks a command's own errors so that they are not counted
        // twice in its error statistics.
        t.raw_set("ignore_error_stats_update", true)?;
    }
    Ok((value, reply.is_error()))
}

/// The command `args` call, or the error Redis raises inside a script for
/// an unknown command or a wrong argument count.
fn find_command(args: &[Vec<u8>]) -> Result<&'static Command, &'static str> {
    let command =
        commands::lookup(&args[0]).ok_or("ERR Unknown Redis command called from script")?;
    if !command.accepts(args.len()) {
        return Err("ERR Wrong number of args calling Redis command from script");
    }
    Ok(command)
}

/// Where the script code that raised the error being handled is: the
/// innermost frame that is neither a C function nor the sandbox's own code
/// (level 0 is this function, level 1 the Lua error handler).
fn error_location(lua: &Lua) -> (Option<String>, Option<i64>) {
    for level in 2.. {
        let frame = lua.inspect_stack(level, |d| {
            let source = d.source();
            let skip = source.what == "C" || source.source.as_deref() == Some(SANDBOX_CHUNK);
            let line = d.current_line().and_then(|l| i64::try_from(l).ok());
            (skip, source.source.map(|s| s.into_owned()), line)
        });
        match frame {
            None => break,
            Some((true, _, _)) => continue,
            Some((false, source, line)) => return (source, line),
        }
    }
    (None, None)
}

/// The error reply of a script that raised `error` (the handler's table):
/// its message, then where it happened, as Redis 7.0 words it.
fn script_error(error: &Value, sha: &str) -> String {
    let Value::Table(t) = error else {
        return "ERR script error".to_owned();
    };
    let message = match t.raw_get::<Value>("err") {
        Ok(Value::String(s)) => s.as_bytes().to_vec(),
        _ => b"ERR script raised an error without a message".to_vec(),
    };
    let mut text = String::from_utf8_lossy(&message).into_owned();
    let source = t.raw_get::<Option<String>>("source").ok().flatten();
    let line = t.raw_get::<Option<i64>>("line").ok().flatten();
    if let (Some(source), Some(line)) = (source, line) {
        text.push_str(&format!(" script: {sha}, on {source}:{line}."));
    }
    one_line(text.as_bytes())
}
