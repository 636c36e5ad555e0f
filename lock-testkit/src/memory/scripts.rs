//! The store's script cache, as Redis keeps it: `SCRIPT LOAD` stores a
//! source under its SHA1, `EVALSHA` runs what is stored (or answers
//! `NOSCRIPT`), `SCRIPT FLUSH` forgets everything. The Lua engine itself is
//! made by the first script run.

use std::collections::HashMap;

use super::commands::Ctx;
use super::lua::{sha1_hex, ScriptEngine};
use super::reply::ScriptReply;

/// Redis's reply to `EVALSHA` of a script it does not hold.
pub(crate) const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

/// Loaded scripts by SHA1, and the engine that runs them.
#[derive(Debug, Default)]
pub(crate) struct Scripts {
    loaded: HashMap<String, Vec<u8>>,
    engine: Option<ScriptEngine>,
}

impl Scripts {
    /// `SCRIPT LOAD`: stores `source`, returns its SHA1.
    pub(crate) fn load(&mut self, source: &[u8]) -> String {
        let sha = sha1_hex(source);
        self.loaded.insert(sha.clone(), source.to_vec());
        sha
    }

    /// `SCRIPT FLUSH`.
    pub(crate) fn flush(&mut self) {
        self.loaded.clear();
    }

    /// `EVALSHA`: runs the script stored under `sha` on `cx`.
    pub(crate) fn eval_sha(
        &mut self,
        cx: &mut Ctx<'_>,
        sha: &str,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
    ) -> ScriptReply {
        // Redis looks SHA1s up case-insensitively; ours are lower case.
        let Some(source) = self.loaded.get(&sha.to_ascii_lowercase()) else {
            return ScriptReply::Error(NOSCRIPT.to_owned());
        };
        match engine(&mut self.engine) {
            Ok(engine) => engine.eval(cx, source, keys, argv),
            Err(reply) => reply,
        }
    }

    /// `EVAL`: runs `source` on `cx`. Redis 7.0 keeps it in the cache too,
    /// so a later `EVALSHA` finds it.
    pub(crate) fn eval(
        &mut self,
        cx: &mut Ctx<'_>,
        source: &[u8],
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
    ) -> ScriptReply {
        let sha = self.load(source);
        self.eval_sha(cx, &sha, keys, argv)
    }
}

/// The engine, made on first use.
fn engine(engine: &mut Option<ScriptEngine>) -> Result<&mut ScriptEngine, ScriptReply> {
    match engine {
        Some(engine) => Ok(engine),
        None => match ScriptEngine::new() {
            Ok(made) => Ok(engine.insert(made)),
            Err(e) => Err(ScriptReply::Error(format!(
                "ERR in-memory script engine unavailable: {e}"
            ))),
        },
    }
}
