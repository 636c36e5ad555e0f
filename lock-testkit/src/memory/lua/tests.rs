//! The engine's Redis semantics; each expected text was taken from
//! redis-server 7.0.15 running the same script.

use std::time::Duration;

use super::engine::{sha1_hex, ScriptEngine};
use crate::memory::commands::{Ctx, Published};
use crate::memory::keyspace::Keyspace;
use crate::memory::reply::ScriptReply;

/// An engine, a keyspace and what was published.
struct Redis {
    engine: ScriptEngine,
    keys: Keyspace,
    now_us: i64,
    published: Vec<Published>,
}

impl Redis {
    fn new() -> Self {
        Self {
            engine: ScriptEngine::new().expect("engine"),
            keys: Keyspace::default(),
            now_us: 1_700_000_000_123_456,
            published: Vec::new(),
        }
    }

    fn eval_with(&mut self, script: &str, keys: &[&str], argv: &[&str]) -> ScriptReply {
        let bytes = |items: &[&str]| {
            items
                .iter()
                .map(|s| s.as_bytes().to_vec())
                .collect::<Vec<_>>()
        };
        let receivers = |_: &Published| 3;
        let mut cx = Ctx {
            keys: &mut self.keys,
            now_us: self.now_us,
            now: tokio::time::Instant::now(),
            published: Vec::new(),
            receivers: &receivers,
        };
        let reply = self
            .engine
            .eval(&mut cx, script.as_bytes(), &bytes(keys), &bytes(argv));
        self.published.extend(cx.published);
        reply
    }

    fn eval(&mut self, script: &str) -> ScriptReply {
        self.eval_with(script, &[], &[])
    }
}

fn bulk(s: &str) -> ScriptReply {
    ScriptReply::bulk(s)
}

fn int(n: i64) -> ScriptReply {
    ScriptReply::Int(n)
}

fn err(s: &str) -> ScriptReply {
    ScriptReply::Error(s.to_owned())
}

/// The error a script raising `message` on `line` gets.
fn raised(script: &str, message: &str, line: u32) -> ScriptReply {
    let sha = sha1_hex(script.as_bytes());
    err(&format!("{message} script: {sha}, on @user_script:{line}."))
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

#[test]
fn keys_and_argv() {
    let mut r = Redis::new();
    let s = "return #KEYS .. ' ' .. #ARGV .. ' ' .. KEYS[1] .. ARGV[2]";
    assert_eq!(
        r.eval_with(s, &["k1", "k2"], &["a1", "a2"]),
        bulk("2 2 k1a2")
    );
}

#[test]
fn call_raises_and_earlier_writes_stay() {
    let mut r = Redis::new();
    r.eval("redis.call('hset', 'h', 'f', 1)");
    let s = "redis.call('set', 'a', 1)\nreturn redis.call('incr', 'h')";
    assert_eq!(r.eval(s), raised(s, WRONGTYPE, 2));
    assert_eq!(r.eval("return redis.call('get', 'a')"), bulk("1"));
    let s = "local function f()\n return redis.call('incr', 'h')\nend\nreturn f()";
    assert_eq!(r.eval(s), raised(s, WRONGTYPE, 2));
}

#[test]
fn pcall_returns_the_error_table() {
    let mut r = Redis::new();
    r.eval("redis.call('hset', 'h', 'f', 1)");
    assert_eq!(r.eval("return redis.pcall('incr', 'h')"), err(WRONGTYPE));
    let s = "local t = redis.pcall('incr','h'); local out = {} \
             for k,v in pairs(t) do table.insert(out, tostring(k)..'='..tostring(v)) end \
             table.sort(out) return out";
    assert_eq!(
        r.eval(s),
        ScriptReply::Array(vec![
            bulk(&format!("err={WRONGTYPE}")),
            bulk("ignore_error_stats_update=true"),
        ])
    );
    // Redis 7.0's pcall gives the message of an {err=...} error; xpcall's
    // handler gets the table.
    let s = "local ok, e = pcall(redis.call, 'incr', 'h'); return {tostring(ok), type(e), e}";
    assert_eq!(
        r.eval(s),
        ScriptReply::Array(vec![bulk("false"), bulk("string"), bulk(WRONGTYPE)])
    );
    let s = "local ok, e = pcall(function() error({err='x'}) end); return {type(e), e}";
    assert_eq!(
        r.eval(s),
        ScriptReply::Array(vec![bulk("string"), bulk("x")])
    );
    let s = "local ok, e = xpcall(function() return redis.call('incr', 'h') end, \
             function(e) return type(e) end); return e";
    assert_eq!(r.eval(s), bulk("table"));
    assert_eq!(
        r.eval("return redis.pcall('foo')['err']"),
        bulk("ERR Unknown Redis command called from script")
    );
}

#[test]
fn library_errors() {
    let mut r = Redis::new();
    for (s, message) in [
        (
            "return redis.call('foo')",
            "ERR Unknown Redis command called from script",
        ),
        (
            "return redis.call('get')",
            "ERR Wrong number of args calling Redis command from script",
        ),
        (
            "return redis.call('get', 's', 'x')",
            "ERR Wrong number of args calling Redis command from script",
        ),
        (
            "return redis.call()",
            "ERR Please specify at least one argument for this redis lib call",
        ),
        (
            "return redis.call('get', {})",
            "ERR Lua redis lib command arguments must be strings or integers",
        ),
        (
            "return redis.call('set', 'n', true)",
            "ERR Lua redis lib command arguments must be strings or integers",
        ),
        (
            "return redis.log(redis.LOG_WARNING)",
            "ERR redis.log() requires two arguments or more.",
        ),
    ] {
        assert_eq!(r.eval(s), raised(s, message, 1), "{s}");
    }
}

#[test]
fn lua_errors_become_error_replies() {
    let mut r = Redis::new();
    for (s, message) in [
        (
            "return nil + 1",
            "ERR user_script:1: attempt to perform arithmetic on a nil value",
        ),
        ("error('boom')", "ERR user_script:1: boom"),
        ("error(123)", "ERR user_script:1: 123"),
        ("error({err='MY boom'})", "MY boom"),
        ("error('a\\nb')", "ERR user_script:1: a b"),
        (
            "return string.rep()",
            "ERR user_script:1: bad argument #1 to 'rep' (string expected, got no value)",
        ),
    ] {
        assert_eq!(r.eval(s), raised(s, message, 1), "{s}");
    }
    let sha = sha1_hex(b"error(nil)");
    assert_eq!(
        r.eval("error(nil)"),
        err(&format!("ERR nil script: {sha}, on @user_script:1."))
    );
    assert_eq!(
        r.eval("return 1 +"),
        err("ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'")
    );
}

#[test]
fn sandbox() {
    let mut r = Redis::new();
    for (s, message) in [
        (
            "x = 1",
            "ERR user_script:1: Attempt to modify a readonly table",
        ),
        (
            "string.foo = 1",
            "ERR user_script:1: Attempt to modify a readonly table",
        ),
        (
            "redis.call = nil",
            "ERR user_script:1: Attempt to modify a readonly table",
        ),
        (
            "KEYS = {}",
            "ERR user_script:1: Attempt to modify a readonly table",
        ),
        (
            "rawset(_G, 'x', 1)",
            "ERR Attempt to modify a readonly table",
        ),
        (
            "return y",
            "ERR user_script:1: Script attempted to access nonexistent global variable 'y'",
        ),
    ] {
        assert_eq!(r.eval(s), raised(s, message, 1), "{s}");
    }
    for name in [
        "os", "io", "require", "loadfile", "dofile", "print", "getfenv", "setfenv", "debug",
        "package", "module", "newproxy",
    ] {
        let s = format!("return type({name})");
        let message = format!(
            "ERR user_script:1: Script attempted to access nonexistent global variable '{name}'"
        );
        assert_eq!(r.eval(&s), raised(&s, &message, 1), "{name}");
    }
    assert_eq!(r.eval("return type(loadstring)"), bulk("function"));
    assert_eq!(r.eval("return loadstring('return 1+1')()"), int(2));
    let s = "return loadstring('x = 1')()";
    let sha = sha1_hex(s.as_bytes());
    assert_eq!(
        r.eval(s),
        err(&format!(
            "ERR [string \"x = 1\"]:1: Attempt to modify a readonly table script: {sha}, on x = 1:1."
        ))
    );
    assert_eq!(r.eval("return _VERSION"), bulk("Lua 5.1"));
    assert_eq!(r.eval("return ('x'):rep(3)"), bulk("xxx"));
    assert_eq!(
        r.eval("return coroutine.wrap(function() coroutine.yield(5) end)()"),
        int(5)
    );
}

#[test]
fn reply_conversion() {
    let mut r = Redis::new();
    assert_eq!(
        r.eval("return {1,2,nil,4}"),
        ScriptReply::Array(vec![int(1), int(2)])
    );
    assert_eq!(
        r.eval("return {1.9, -1.9, true, false, 'x', {ok='S'}}"),
        ScriptReply::Array(vec![
            int(1),
            int(-1),
            int(1),
            ScriptReply::Nil,
            bulk("x"),
            ScriptReply::Status("S".into()),
        ])
    );
    assert_eq!(
        r.eval("return {2^63, 0/0}"),
        ScriptReply::Array(vec![int(i64::MIN), int(i64::MIN)])
    );
    assert_eq!(
        r.eval(
            "return {{1,{2}}, {}, {a=1}, {ok=1}, {err=1}, {ok='x', err='y'}, {1,{err='inner'}}}"
        ),
        ScriptReply::Array(vec![
            ScriptReply::Array(vec![int(1), ScriptReply::Array(vec![int(2)])]),
            ScriptReply::Array(vec![]),
            ScriptReply::Array(vec![]),
            ScriptReply::Array(vec![]),
            ScriptReply::Array(vec![]),
            err("y"),
            ScriptReply::Array(vec![int(1), err("inner")]),
        ])
    );
    assert_eq!(r.eval("return nil"), ScriptReply::Nil);
    assert_eq!(r.eval("return"), ScriptReply::Nil);
    assert_eq!(r.eval("return function() end"), ScriptReply::Nil);
    assert_eq!(r.eval("return {err='multi\\nline'}"), err("multi line"));
    assert!(matches!(
        r.eval("local t = {} t[1] = t return t"),
        ScriptReply::Array(_)
    ));
}

#[test]
fn redis_to_lua_conversion() {
    let mut r = Redis::new();
    assert_eq!(
        r.eval("return type(redis.call('get','nokey'))"),
        bulk("boolean")
    );
    assert_eq!(r.eval("return redis.call('set','a','1')['ok']"), bulk("OK"));
    assert_eq!(
        r.eval("return redis.call('type','a')['ok']"),
        bulk("string")
    );
    assert_eq!(
        r.eval("return type(redis.call('set','a','1','nx'))"),
        bulk("boolean")
    );
    assert_eq!(r.eval("return redis.call('incr', 'n') + 1"), int(2));
    assert_eq!(
        r.eval("redis.call('set', 'f', 0.1) return redis.call('get', 'f')"),
        bulk("0.10000000000000001")
    );
    assert_eq!(
        r.eval("redis.call('set', 'f', 1700000000123) return redis.call('get', 'f')"),
        bulk("1700000000123")
    );
}

#[test]
fn error_and_status_replies() {
    let mut r = Redis::new();
    for (s, reply) in [
        ("return redis.error_reply('oops')", err("ERR oops")),
        (
            "return redis.error_reply('my oops here')",
            err("my oops here"),
        ),
        ("return redis.error_reply('-CODE msg')", err("CODE msg")),
        ("return redis.error_reply('x\\ny\\r\\n')", err("ERR x y")),
        (
            "return redis.error_reply(1)",
            err("ERR wrong number or type of arguments"),
        ),
        (
            "return redis.status_reply()",
            err("ERR wrong number or type of arguments"),
        ),
        ("return {err='plain'}", err("plain")),
        (
            "return redis.status_reply('FINE')",
            ScriptReply::Status("FINE".into()),
        ),
    ] {
        assert_eq!(r.eval(s), reply, "{s}");
    }
}

#[test]
fn sha1hex_and_constants() {
    let mut r = Redis::new();
    assert_eq!(
        r.eval("return redis.sha1hex('abc')"),
        bulk("a9993e364706816aba3e25717850c26c9cd0d89d")
    );
    assert_eq!(
        r.eval("return redis.sha1hex(12)"),
        bulk("7b52009b64fd0a2a49e6d8a939753077792b0554")
    );
    assert_eq!(
        r.eval("return redis.sha1hex({})"),
        bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709")
    );
    assert_eq!(
        r.eval("return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM}"),
        ScriptReply::Array(vec![bulk("7.0.15"), int(458_767)])
    );
    assert_eq!(
        r.eval("return tostring(redis.replicate_commands())"),
        bulk("true")
    );
}

#[tokio::test(start_paused = true)]
async fn time_and_expiry_follow_the_clock() {
    let mut r = Redis::new();
    assert_eq!(
        r.eval("return redis.call('time')"),
        ScriptReply::Array(vec![bulk("1700000000"), bulk("123456")])
    );
    r.eval("redis.call('set', 'k', 'v', 'px', 100)");
    tokio::time::advance(Duration::from_millis(40)).await;
    assert_eq!(r.eval("return redis.call('pttl', 'k')"), int(60));
    tokio::time::advance(Duration::from_millis(60)).await;
    assert_eq!(r.eval("return redis.call('exists', 'k')"), int(0));
}

#[test]
fn publish_is_collected_for_the_caller() {
    let mut r = Redis::new();
    let s = "return {redis.call('publish', KEYS[1], ARGV[1]), redis.call('spublish', KEYS[1], ARGV[1])}";
    assert_eq!(
        r.eval_with(s, &["ch"], &["0"]),
        ScriptReply::Array(vec![int(3), int(3)])
    );
    assert_eq!(r.published.len(), 2);
    assert_eq!(r.published[0].channel, b"ch");
    assert!(!r.published[0].sharded);
    assert!(r.published[1].sharded);
}

#[test]
fn scripts_are_compiled_once() {
    let mut r = Redis::new();
    for _ in 0..3 {
        assert_eq!(r.eval("return 1"), int(1));
    }
    assert!(format!("{:?}", r.engine).contains("compiled: 1"));
    // A failed compile is not cached, and does not break later runs.
    assert!(r.eval("return +").is_error());
    assert_eq!(r.eval("return 2"), int(2));
}
