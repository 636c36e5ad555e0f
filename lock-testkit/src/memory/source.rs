//! The source of a [`redis::Script`]: what its `SCRIPT LOAD` carries.
//!
//! A `Script` keeps its source to itself; the only way it hands the source
//! out is the `SCRIPT LOAD` command it sends to a connection. So the
//! in-memory transport, answering `NOSCRIPT` as Redis does, loads a script
//! into the store the way a Redis client does: through a connection (here
//! [`LoadCapture`], which takes the command instead of sending it).

use redis::{Arg, Cmd, ConnectionLike, RedisResult, Script, Value};

use super::lua::sha1_hex;

/// The source `script` would send with `SCRIPT LOAD`.
pub(crate) fn script_source(script: &Script) -> RedisResult<Vec<u8>> {
    let mut capture = LoadCapture(None);
    script.load(&mut capture)?;
    capture
        .0
        .ok_or_else(|| unexpected("SCRIPT LOAD sent no source"))
}

/// A connection that takes one `SCRIPT LOAD <source>` and answers it as
/// Redis does (the source's SHA1), sending nothing anywhere.
struct LoadCapture(Option<Vec<u8>>);

fn unexpected(what: &'static str) -> redis::RedisError {
    redis::RedisError::from((redis::ErrorKind::Client, what))
}

impl ConnectionLike for LoadCapture {
    fn req_command(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        let args: Vec<&[u8]> = cmd
            .args_iter()
            .filter_map(|arg| match arg {
                Arg::Simple(bytes) => Some(bytes),
                _ => None,
            })
            .collect();
        match args.as_slice() {
            [script, load, source]
                if script.eq_ignore_ascii_case(b"SCRIPT") && load.eq_ignore_ascii_case(b"LOAD") =>
            {
                self.0 = Some(source.to_vec());
                Ok(Value::BulkString(sha1_hex(source).into_bytes()))
            }
            _ => Err(unexpected("only SCRIPT LOAD is captured")),
        }
    }

    fn req_packed_command(&mut self, _cmd: &[u8]) -> RedisResult<Value> {
        Err(unexpected("only SCRIPT LOAD is captured"))
    }

    fn req_packed_commands(
        &mut self,
        _cmd: &[u8],
        _offset: usize,
        _count: usize,
    ) -> RedisResult<Vec<Value>> {
        Err(unexpected("only SCRIPT LOAD is captured"))
    }

    fn get_db(&self) -> i64 {
        0
    }

    fn check_connection(&mut self) -> bool {
        true
    }

    fn is_open(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scripts_source_is_what_its_load_sends() {
        let script = Script::new("return redis.call('ping')");
        let source = script_source(&script).unwrap();
        assert_eq!(source, b"return redis.call('ping')");
        assert_eq!(sha1_hex(&source), script.get_hash());
    }
}
