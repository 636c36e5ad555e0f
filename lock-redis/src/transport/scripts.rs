//! How scripts are run on a connection, for every transport: the script
//! runner.
//!
//! Keys and owner strings only ever travel in KEYS/ARGV, never in the
//! script text, so every kind's scripts are hashed once and run by SHA1
//! with `EVALSHA`. When the server does not know a script
//! (`NOSCRIPT`: restarted, failed over, or `SCRIPT FLUSH`ed) it is loaded with
//! `SCRIPT LOAD` and the call retried once; that is the only retry done below
//! the engine.

use lock_script::ScriptCall;
use redis::aio::ConnectionLike;
use redis::{ErrorKind, Pipeline, RedisResult, Script, ServerErrorKind, Value};

/// Whether `err` is the server's `NOSCRIPT` reply.
pub fn is_noscript(err: &redis::RedisError) -> bool {
    err.kind() == ErrorKind::Server(ServerErrorKind::NoScript)
}

/// Runs `call` on `conn` with `EVALSHA`; on `NOSCRIPT` loads the script and
/// retries once.
///
/// # Errors
/// The connection's error or the server's error reply (including the
/// script's own error replies, such as `WRONGTYPE`).
///
/// # Cancel safety
/// Dropping the future may leave the script run or not; the reply is lost.
pub async fn eval<C: ConnectionLike + Send>(
    conn: &mut C,
    call: &ScriptCall<'_>,
) -> RedisResult<Value> {
    let cmd = call.to_cmd();
    match cmd.query_async::<Value>(conn).await {
        Err(err) if is_noscript(&err) => {
            load_for(conn, call).await?;
            cmd.query_async(conn).await
        }
        other => other,
    }
}

/// Runs every call in one pipeline on `conn` and returns one result per
/// call, in order. Calls answered `NOSCRIPT` are retried once, pipelined
/// again, after loading their scripts.
///
/// # Errors
/// The outer error when the pipeline as a whole failed (connection lost,
/// timed out); the inner ones are the server's per-call error replies.
///
/// # Cancel safety
/// Dropping the future may leave any prefix of the calls run.
pub async fn eval_pipelined<C: ConnectionLike + Send>(
    conn: &mut C,
    calls: &[ScriptCall<'_>],
) -> RedisResult<Vec<RedisResult<Value>>> {
    if calls.is_empty() {
        return Ok(Vec::new());
    }
    let mut results = run_pipeline(conn, calls.iter()).await?;
    let missing: Vec<usize> = results
        .iter()
        .enumerate()
        .filter_map(|(i, r)| matches!(r, Err(e) if is_noscript(e)).then_some(i))
        .collect();
    if missing.is_empty() {
        return Ok(results);
    }
    let mut loaded: Vec<&str> = Vec::new();
    for &i in &missing {
        let Some(script) = calls[i].script() else {
            continue;
        };
        if !loaded.contains(&script.get_hash()) {
            load_for(conn, &calls[i]).await?;
            loaded.push(script.get_hash());
        }
    }
    let retried = run_pipeline(conn, missing.iter().map(|&i| &calls[i])).await?;
    for (i, result) in missing.into_iter().zip(retried) {
        results[i] = result;
    }
    Ok(results)
}

async fn run_pipeline<'c, 's: 'c, C: ConnectionLike + Send>(
    conn: &mut C,
    calls: impl Iterator<Item = &'c ScriptCall<'s>>,
) -> RedisResult<Vec<RedisResult<Value>>> {
    let mut pipe = Pipeline::new();
    pipe.ignore_errors();
    for call in calls {
        pipe.add_command(call.to_cmd());
    }
    pipe.query_async(conn).await
}

/// Runs `call` with `EVALSHA` and then `WAIT replicas timeout`, pipelined on
/// `conn` (so `WAIT` covers the script's writes); on `NOSCRIPT` loads the
/// script and sends both once more. Returns the script's reply and the
/// number of replicas that acknowledged.
///
/// # Errors
/// As [`eval`].
///
/// # Cancel safety
/// As [`eval`].
pub async fn eval_and_wait<C: ConnectionLike + Send>(
    conn: &mut C,
    call: &ScriptCall<'_>,
    replicas: u32,
    timeout: std::time::Duration,
) -> RedisResult<(Value, u32)> {
    let mut pipe = Pipeline::new();
    pipe.add_command(call.to_cmd())
        .cmd("WAIT")
        .arg(replicas)
        .arg(
            u64::try_from(timeout.as_millis())
                .unwrap_or(u64::MAX)
                .max(1),
        );
    match pipe.query_async::<(Value, u32)>(conn).await {
        Err(err) if is_noscript(&err) => {
            load_for(conn, call).await?;
            pipe.query_async(conn).await
        }
        other => other,
    }
}

/// Loads the script of `call`, answered `NOSCRIPT` (a plain command has
/// none, and is never answered so).
///
/// # Errors
/// As [`load`].
///
/// # Cancel safety
/// As [`load`].
pub async fn load_for<C: ConnectionLike + Send>(
    conn: &mut C,
    call: &ScriptCall<'_>,
) -> RedisResult<()> {
    match call.script() {
        Some(script) => {
            tracing::debug!(sha = script.get_hash(), "NOSCRIPT: loading the script");
            load(conn, script).await
        }
        None => Ok(()),
    }
}

/// Loads `script` into the server's script cache (`SCRIPT LOAD`).
///
/// # Errors
/// The connection's error or the server's error reply.
///
/// # Cancel safety
/// Dropping the future may leave the script loaded or not; either is fine.
pub async fn load<C: ConnectionLike + Send>(conn: &mut C, script: &Script) -> RedisResult<()> {
    script.load_async(conn).await.map(drop)
}
