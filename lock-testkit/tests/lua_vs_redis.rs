//! The in-memory Lua engine against redis-server: the kinds' real scripts,
//! a set of scripts probing Redis's scripting semantics, and random
//! sequences of plain commands run through `EVAL` on both, comparing
//! replies and the resulting keyspaces (key, type, value; times within a
//! tolerance, since the two clocks are read a few milliseconds apart).

use std::sync::LazyLock;
use std::time::Duration;

use lock_script::compose_lua;
use lock_testkit::fixtures::redis::{self, ConnectionLike, Value};
use lock_testkit::fixtures::{script_reply, RedisServer};
use lock_testkit::memory::ScriptReply;
use lock_testkit::InMemoryServer;
use proptest::prelude::*;

/// A kind's script as it builds it: [`compose_lua`] over the kind's helper
/// files and the script's file, the text Redis gets.
macro_rules! script {
    ($name:ident = [$($helper:literal),*] $file:literal) => {
        static $name: LazyLock<String> = LazyLock::new(|| {
            compose_lua(&[$(include_str!($helper)),*], include_str!($file))
        });
    };
}

script!(ACQUIRE = [] "../../lock-redis/src/kinds/reentrant/acquire.lua");
script!(RELEASE = [] "../../lock-redis/src/kinds/reentrant/release.lua");
script!(RENEW = [] "../../lock-script/src/scripts/renew.lua");
script!(FORCE_UNLOCK = [] "../../lock-redis/src/kinds/reentrant/force_unlock.lua");
script!(INSPECT = [] "../../lock-redis/src/kinds/reentrant/inspect.lua");

script!(RW_READ_ACQUIRE = [] "../../lock-redis/src/kinds/rwlock/read_acquire.lua");
script!(RW_READ_RELEASE = [] "../../lock-redis/src/kinds/rwlock/read_release.lua");
script!(RW_READ_RENEW = [] "../../lock-redis/src/kinds/rwlock/read_renew.lua");
script!(RW_WRITE_ACQUIRE = [] "../../lock-redis/src/kinds/rwlock/write_acquire.lua");
script!(RW_WRITE_RELEASE = [] "../../lock-redis/src/kinds/rwlock/write_release.lua");
script!(RW_WRITE_LEAVE = [] "../../lock-redis/src/kinds/rwlock/write_leave.lua");
script!(RW_FORCE_UNLOCK = [] "../../lock-redis/src/kinds/rwlock/force_unlock.lua");

script!(FAIR_ACQUIRE = ["../../lock-fair/src/scripts/prelude.lua"] "../../lock-fair/src/scripts/acquire.lua");
script!(FAIR_RELEASE = ["../../lock-fair/src/scripts/prelude.lua"] "../../lock-fair/src/scripts/release.lua");
script!(FAIR_LEAVE = ["../../lock-fair/src/scripts/prelude.lua"] "../../lock-fair/src/scripts/leave_queue.lua");
script!(FAIR_FORCE_UNLOCK = ["../../lock-fair/src/scripts/prelude.lua"] "../../lock-fair/src/scripts/force_unlock.lua");
script!(FAIR_INSPECT = ["../../lock-fair/src/scripts/prelude.lua"] "../../lock-fair/src/scripts/inspect.lua");

script!(LATCH_SET = ["../../lock-redis/src/kinds/latch/counter.lua"] "../../lock-redis/src/kinds/latch/try_set_count.lua");
script!(LATCH_DOWN = ["../../lock-redis/src/kinds/latch/counter.lua"] "../../lock-redis/src/kinds/latch/count_down.lua");
script!(LATCH_COUNT = ["../../lock-redis/src/kinds/latch/counter.lua"] "../../lock-redis/src/kinds/latch/count.lua");
script!(LATCH_DELETE = ["../../lock-redis/src/kinds/latch/counter.lua"] "../../lock-redis/src/kinds/latch/delete.lua");
const DESCRIBE: &str = include_str!("../../lock-redis/src/client/describe/describe.lua");

/// Reads one key the same way on both sides: type, value, PTTL.
const DUMP: &str = "
local kind = redis.call('type', KEYS[1])['ok']
local value = false
if kind == 'string' then value = redis.call('get', KEYS[1])
elseif kind == 'hash' then value = redis.call('hgetall', KEYS[1])
elseif kind == 'list' then value = redis.call('lrange', KEYS[1], 0, -1)
elseif kind == 'zset' then value = redis.call('zrange', KEYS[1], 0, -1, 'withscores')
end
return {kind, value, redis.call('pttl', KEYS[1])}";

/// Times (PTTLs, deadlines, epoch milliseconds) differ between the two
/// sides by the time between the two calls.
const TOLERANCE_MS: i64 = 250;

/// One redis-server and one in-memory store, run side by side.
struct Pair {
    redis: RedisServer,
    conn: redis::Connection,
    memory: InMemoryServer,
}

impl Pair {
    fn new() -> Self {
        let redis = RedisServer::start();
        let conn = redis.client().get_connection().expect("connect");
        Self {
            redis,
            conn,
            memory: InMemoryServer::new(),
        }
    }

    /// Empties both sides.
    fn reset(&mut self) {
        self.redis.cmd(&["FLUSHALL"]);
        self.memory = InMemoryServer::new();
    }

    fn redis_eval(&mut self, script: &str, keys: &[&str], args: &[&str]) -> ScriptReply {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(script).arg(keys.len()).arg(keys).arg(args);
        let value = self
            .conn
            .req_command(&cmd)
            .unwrap_or_else(|e| panic!("EVAL on redis-server: {e}"));
        script_reply(value)
    }

    /// Runs `script` on both sides; panics unless the replies agree.
    fn eval(&mut self, script: &str, keys: &[&str], args: &[&str]) -> ScriptReply {
        let expected = self.redis_eval(script, keys, args);
        let actual = self.memory.eval(script, keys, args);
        // TTL rounds to whole seconds at the half second: the two sides read
        // their clocks a moment apart, so on a loaded machine one may read
        // just past the rounding point. PTTL and deadlines have
        // TOLERANCE_MS for the same reason.
        let ttl_seconds = args.first().is_some_and(|c| c.eq_ignore_ascii_case("ttl"));
        let agree = match (&expected, &actual) {
            (ScriptReply::Int(x), ScriptReply::Int(y)) if ttl_seconds && *x >= 0 && *y >= 0 => {
                (x - y).abs() <= 1
            }
            _ => same(&expected, &actual),
        };
        assert!(
            agree,
            "script {:.60?} KEYS {keys:?} ARGV {args:?}\n redis: {expected:?}\nmemory: {actual:?}",
            script.trim_start()
        );
        actual
    }

    /// Panics unless both sides hold the same keys with the same types,
    /// values and (within tolerance) time to live.
    fn same_keyspace(&mut self) {
        let Value::Array(keys) = self.redis.cmd(&["KEYS", "*"]) else {
            panic!("KEYS * is an array")
        };
        let mut redis_keys: Vec<String> = keys
            .into_iter()
            .map(|k| match k {
                Value::BulkString(b) => String::from_utf8(b).expect("utf-8 key"),
                other => panic!("key {other:?}"),
            })
            .collect();
        redis_keys.sort();
        assert_eq!(redis_keys, self.memory.keys(), "the same keys");
        for key in &redis_keys {
            self.eval(DUMP, &[key], &[]);
        }
    }
}

/// Equal, except that numbers that look like times (>= 1000, as integers
/// or as bulk strings) may differ by [`TOLERANCE_MS`].
fn same(a: &ScriptReply, b: &ScriptReply) -> bool {
    let close =
        |x: i64, y: i64| x == y || (x >= 1000 && y >= 1000 && (x - y).abs() <= TOLERANCE_MS);
    let number = |bytes: &[u8]| std::str::from_utf8(bytes).ok()?.parse::<f64>().ok();
    match (a, b) {
        (ScriptReply::Int(x), ScriptReply::Int(y)) => close(*x, *y),
        (ScriptReply::Bulk(x), ScriptReply::Bulk(y)) => {
            x == y
                || matches!((number(x), number(y)), (Some(p), Some(q))
                    if p.fract() == 0.0 && q.fract() == 0.0 && close(p as i64, q as i64))
        }
        (ScriptReply::Array(x), ScriptReply::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        _ => a == b,
    }
}

// ---- the kinds' scripts ----

struct Reentrant<'a> {
    lock: &'a str,
    acquire_record: &'a str,
    token: &'a str,
    unlock_record: &'a str,
    channel: &'a str,
}

const R: Reentrant<'static> = Reentrant {
    lock: "job",
    acquire_record: "redisson_lock_latch:{job}:r",
    token: "redisson_lock_token:{job}",
    unlock_record: "redisson_unlock_latch:{job}:r",
    channel: "redisson_lock__channel:{job}",
};

const A: &str = "a0a0a0a0-0000-0000-0000-000000000000:1";
const B: &str = "b0b0b0b0-0000-0000-0000-000000000000:7";
const C: &str = "c0c0c0c0-0000-0000-0000-000000000000:3";

/// A request's record (kept until past its deadline, so it outlives the
/// lock it was about).
fn is_record(key: &str) -> bool {
    key.starts_with("redisson_lock_latch:") || key.starts_with("redisson_unlock_latch:")
}

/// A request deadline an hour away, so that every request here may run (a
/// script refuses one past its deadline).
fn deadline() -> String {
    lock_testkit::conformance::request_deadline().to_string()
}

/// A request id used once, for calls that the scripts would otherwise
/// answer from an earlier call's record.
fn fresh_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    format!(
        "fresh-{}",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

fn acquire(p: &mut Pair, owner: &str, fenced: &str, request: &str) -> ScriptReply {
    let record = format!("{}{request}", R.acquire_record);
    p.eval(
        &ACQUIRE,
        &[R.lock, &record, R.token],
        &["30000", owner, fenced, &deadline()],
    )
}

fn release(p: &mut Pair, owner: &str, request: &str) -> ScriptReply {
    let record = format!("{}{request}", R.unlock_record);
    p.eval(
        &RELEASE,
        &[R.lock, R.channel, &record],
        &["0", "30000", owner, "PUBLISH", &deadline()],
    )
}

#[test]
fn reentrant_scripts_agree_with_redis() {
    let mut p = Pair::new();
    let one = |n| ScriptReply::Array(vec![ScriptReply::Int(1), ScriptReply::Int(n)]);
    // Acquire, a repeated request, re-entry, held by another.
    assert_eq!(acquire(&mut p, A, "1", "1"), one(1));
    assert_eq!(acquire(&mut p, A, "1", "1"), one(1));
    assert_eq!(acquire(&mut p, A, "1", "2"), one(2));
    acquire(&mut p, B, "0", "3");
    p.same_keyspace();
    // Inspect, renew.
    p.eval(&INSPECT, &[R.lock], &[]);
    p.eval(&RENEW, &[R.lock, "missing"], &["60000", A, A]);
    p.eval(&RENEW, &[R.lock], &["60000", B]);
    p.same_keyspace();
    // Release: one hold, a repeated request, not the holder, the last hold.
    assert_eq!(release(&mut p, A, "u1"), ScriptReply::Int(0));
    assert_eq!(release(&mut p, A, "u1"), ScriptReply::Int(0));
    assert_eq!(release(&mut p, B, "u2"), ScriptReply::Nil);
    assert_eq!(release(&mut p, A, "u3"), ScriptReply::Int(1));
    p.same_keyspace();
    // Force unlock.
    acquire(&mut p, B, "0", "4");
    p.eval(&FORCE_UNLOCK, &[R.lock, R.channel], &["0", "PUBLISH"]);
    p.eval(&FORCE_UNLOCK, &[R.lock, R.channel], &["0", "SPUBLISH"]);
    p.same_keyspace();
    // A value of another type at the lock key: errors, nothing written.
    p.redis.cmd(&["SET", R.lock, "not a lock"]);
    p.memory.set_string(R.lock, "not a lock");
    assert!(acquire(&mut p, A, "1", "5").is_error());
    assert!(release(&mut p, A, "u4").is_error());
    p.eval(&INSPECT, &[R.lock], &[]);
    p.eval(&FORCE_UNLOCK, &[R.lock, R.channel], &["0", "PUBLISH"]);
    p.eval(&RENEW, &[R.lock], &["60000", A]);
    p.same_keyspace();
}

#[test]
fn latch_scripts_agree_with_redis() {
    let mut p = Pair::new();
    let (key, channel) = ("batch", "redisson_countdownlatch__channel__{batch}");
    let req = |id: &str| format!("redisson_unlock_latch:{{batch}}:{id}");
    let set = |p: &mut Pair, n: &str, id: &str| {
        p.eval(
            &LATCH_SET,
            &[key, channel, &req(id)],
            &["1", n, "PUBLISH", &deadline()],
        )
    };
    let down = |p: &mut Pair, id: &str| {
        p.eval(
            &LATCH_DOWN,
            &[key, channel, &req(id)],
            &["0", "PUBLISH", &deadline()],
        )
    };
    let delete = |p: &mut Pair, id: &str| {
        p.eval(
            &LATCH_DELETE,
            &[key, channel, &req(id)],
            &["1", "SPUBLISH", &deadline()],
        )
    };
    // A count-down replies the count left as text (exact past 2^53).
    let count = |n: &str| ScriptReply::Bulk(n.as_bytes().to_vec());
    // Set, refused while set, repeated; count down, repeated, to zero and
    // past it; count; delete of nothing, of a count, repeated.
    assert_eq!(set(&mut p, "2", "s1"), ScriptReply::Int(1));
    assert_eq!(set(&mut p, "5", "s2"), ScriptReply::Int(0));
    assert_eq!(set(&mut p, "2", "s1"), ScriptReply::Int(1));
    p.eval(&LATCH_COUNT, &[key], &[]);
    assert_eq!(down(&mut p, "d1"), count("1"));
    assert_eq!(down(&mut p, "d1"), count("1"));
    p.same_keyspace();
    assert_eq!(down(&mut p, "d2"), count("0"));
    assert_eq!(down(&mut p, "d3"), count("0"));
    p.eval(&LATCH_COUNT, &[key], &[]);
    p.same_keyspace();
    assert_eq!(delete(&mut p, "x1"), ScriptReply::Int(0));
    set(&mut p, "3", "s3");
    assert_eq!(delete(&mut p, "x2"), ScriptReply::Int(1));
    assert_eq!(delete(&mut p, "x2"), ScriptReply::Int(1));
    p.same_keyspace();
    // The 64-bit range's ends: exact at the top; at the bottom, open.
    set(&mut p, "9223372036854775807", "m1");
    assert_eq!(down(&mut p, "m2"), count("9223372036854775806"));
    p.eval(&LATCH_COUNT, &[key], &[]);
    p.same_keyspace();
    p.reset();
    p.redis.cmd(&["SET", key, "-9223372036854775808"]);
    p.memory.set_string(key, "-9223372036854775808");
    assert_eq!(down(&mut p, "m3"), count("0"));
    p.same_keyspace();
    // Other values at the key (past the 64-bit range included):
    // WRONGTYPE, nothing written.
    for (cmd, value) in [
        ("SET", "abc"),
        ("SET", "007"),
        ("SET", "-3"),
        ("SET", "9223372036854775808"),
        ("SET", "-9223372036854775809"),
        ("RPUSH", "x"),
    ] {
        p.reset();
        p.redis.cmd(&[cmd, key, value]);
        if cmd == "SET" {
            p.memory.set_string(key, value);
        } else {
            p.memory.eval(
                "return redis.call('rpush', KEYS[1], ARGV[1])",
                &[key],
                &[value],
            );
        }
        p.eval(&LATCH_COUNT, &[key], &[]);
        set(&mut p, "1", "w1");
        down(&mut p, "w2");
        delete(&mut p, "w3");
        p.same_keyspace();
    }
}

#[test]
fn describe_script_agrees_with_redis() {
    let mut p = Pair::new();
    let both = |p: &mut Pair, script: &str, keys: &[&str], args: &[&str]| {
        p.eval(script, keys, args);
    };
    both(
        &mut p,
        "redis.call('hset', KEYS[1], 'mode', 'read', ARGV[1], 2)",
        &["rw"],
        &[A],
    );
    both(
        &mut p,
        "redis.call('hset', KEYS[1], ARGV[1], 1)",
        &["lock"],
        &[B],
    );
    both(&mut p, "redis.call('set', KEYS[1], '3')", &["count"], &[]);
    both(&mut p, "redis.call('rpush', KEYS[1], 'x')", &["list"], &[]);
    both(
        &mut p,
        "local t = redis.call('time'); local now = t[1] * 1000 + math.floor(t[2] / 1000)
         redis.call('set', KEYS[1], '2')
         redis.call('zadd', KEYS[2], now + 60000, 'live-permit-0001')
         redis.call('zadd', KEYS[2], now - 60000, 'dead-permit-0001')
         redis.call('zadd', KEYS[2], 922337203685477, 'forever-permit01')",
        &["sem", "{sem}:timeout"],
        &[],
    );
    for name in ["rw", "lock", "count", "list", "sem", "missing"] {
        let leases = format!("{{{name}}}:timeout");
        p.eval(DESCRIBE, &[name, &leases], &["1"]);
        p.eval(DESCRIBE, &[name, name], &["0"]);
    }
    p.same_keyspace();
}

const RW_LOCK: &str = "cfg";
const RW_CHANNEL: &str = "redisson_rwlock:{cfg}";
const RW_WRITERS: &str = "redisson_rwlock_writers:{cfg}";

fn rw_hold_prefix(owner: &str) -> String {
    format!("{{cfg}}:{owner}:rwlock_timeout")
}

fn rw_read(p: &mut Pair, owner: &str, lease: &str, request: &str) -> ScriptReply {
    let (record, prefix) = (
        format!("{}{request}", R.acquire_record),
        rw_hold_prefix(owner),
    );
    let writer = format!("{owner}:write");
    p.eval(
        &RW_READ_ACQUIRE,
        &[RW_LOCK, &prefix, &record, RW_WRITERS],
        &[lease, owner, &writer, &deadline()],
    )
}

fn rw_read_release(p: &mut Pair, owner: &str, request: &str) -> ScriptReply {
    let (record, prefix) = (
        format!("{}{request}", R.unlock_record),
        rw_hold_prefix(owner),
    );
    p.eval(
        &RW_READ_RELEASE,
        &[RW_LOCK, RW_CHANNEL, &prefix, "{cfg}", &record],
        &["0", owner, "PUBLISH", &deadline()],
    )
}

fn rw_write(p: &mut Pair, owner: &str, queue_ms: &str, request: &str) -> ScriptReply {
    let record = format!("{}{request}", R.acquire_record);
    let writer = format!("{owner}:write");
    p.eval(
        &RW_WRITE_ACQUIRE,
        &[RW_LOCK, &record, RW_WRITERS],
        &["30000", &writer, owner, &deadline(), queue_ms],
    )
}

fn rw_write_release(p: &mut Pair, owner: &str, request: &str) -> ScriptReply {
    let record = format!("{}{request}", R.unlock_record);
    let writer = format!("{owner}:write");
    p.eval(
        &RW_WRITE_RELEASE,
        &[RW_LOCK, RW_CHANNEL, &record],
        &["1", "30000", &writer, "PUBLISH", &deadline()],
    )
}

#[test]
fn rwlock_scripts_agree_with_redis() {
    let mut p = Pair::new();
    let taken = ScriptReply::Array(vec![ScriptReply::Int(1), ScriptReply::Int(0)]);
    // Readers with different leases, re-entry, a repeated request.
    assert_eq!(rw_read(&mut p, A, "20000", "1"), taken);
    assert_eq!(rw_read(&mut p, A, "20000", "1"), taken);
    assert_eq!(rw_read(&mut p, A, "5000", "2"), taken);
    assert_eq!(rw_read(&mut p, B, "10000", "3"), taken);
    p.same_keyspace();
    // A writer waits (and is listed), holding new readers off.
    assert!(!rw_write(&mut p, C, "5000", "4").is_error());
    assert_ne!(rw_read(&mut p, C, "10000", "5"), taken);
    assert_eq!(rw_read(&mut p, A, "10000", "6"), taken);
    // A reader cannot upgrade.
    assert!(rw_write(&mut p, A, "5000", "7").is_error());
    assert!(rw_write(&mut p, A, "5000", "7").is_error());
    p.same_keyspace();
    // Renewal, then releases: the soonest-ending hold goes first.
    let (pa, pb) = (rw_hold_prefix(A), rw_hold_prefix(B));
    p.eval(
        &RW_READ_RENEW,
        &[RW_LOCK, &pa, RW_LOCK, &pb],
        &["15000", A, B],
    );
    assert_eq!(rw_read_release(&mut p, A, "u1"), ScriptReply::Int(0));
    assert_eq!(rw_read_release(&mut p, A, "u1"), ScriptReply::Int(0));
    assert_eq!(rw_read_release(&mut p, C, "u2"), ScriptReply::Nil);
    p.same_keyspace();
    // The writer gives up; readers may come again.
    let writer = format!("{C}:write");
    p.eval(
        &RW_WRITE_LEAVE,
        &[RW_LOCK, RW_WRITERS, RW_CHANNEL],
        &[&writer, "PUBLISH"],
    );
    assert_eq!(rw_read(&mut p, C, "10000", "8"), taken);
    for (owner, request) in [(A, "u3"), (A, "u4"), (B, "u5"), (C, "u6")] {
        rw_read_release(&mut p, owner, request);
    }
    p.same_keyspace();
    // Write, downgrade, release; force unlock per mode.
    assert_eq!(rw_write(&mut p, A, "0", "9"), taken);
    assert_eq!(rw_write(&mut p, A, "0", "10"), taken);
    assert_eq!(rw_read(&mut p, A, "10000", "11"), taken);
    assert_eq!(rw_write_release(&mut p, A, "u7"), ScriptReply::Int(0));
    assert_eq!(rw_write_release(&mut p, A, "u8"), ScriptReply::Int(1));
    assert_eq!(rw_write_release(&mut p, A, "u9"), ScriptReply::Nil);
    p.same_keyspace();
    p.eval(
        &RW_FORCE_UNLOCK,
        &[RW_LOCK, RW_CHANNEL],
        &["write", "1", "PUBLISH"],
    );
    p.eval(
        &RW_FORCE_UNLOCK,
        &[RW_LOCK, RW_CHANNEL],
        &["read", "0", "PUBLISH"],
    );
    p.same_keyspace();
    // A value of another type at the lock key: errors, nothing written.
    p.redis.cmd(&["SET", RW_LOCK, "not a lock"]);
    p.memory.set_string(RW_LOCK, "not a lock");
    assert!(rw_read(&mut p, A, "10000", "12").is_error());
    assert!(rw_write(&mut p, A, "5000", "13").is_error());
    assert!(rw_read_release(&mut p, A, "u10").is_error());
    assert!(rw_write_release(&mut p, A, "u11").is_error());
    p.eval(
        &RW_FORCE_UNLOCK,
        &[RW_LOCK, RW_CHANNEL],
        &["read", "0", "PUBLISH"],
    );
    p.eval(&RW_READ_RENEW, &[RW_LOCK, &pa], &["15000", A]);
    p.same_keyspace();
}

struct Fair<'a> {
    queue: &'a str,
    timeouts: &'a str,
    handoff: &'a str,
}

const F: Fair<'static> = Fair {
    queue: "redisson_lock_queue:{job}",
    timeouts: "redisson_lock_timeout:{job}",
    handoff: "redisson_lock_handoff:{job}",
};

/// A fenced fair attempt (no handoff).
fn fair_acquire(p: &mut Pair, owner: &str, queue_ms: &str) -> ScriptReply {
    fair_attempt(p, owner, queue_ms, "1", "0")
}

/// An unfenced fair attempt of the wait with `ticket` ("0": none).
fn fair_wait(p: &mut Pair, owner: &str, queue_ms: &str, ticket: &str) -> ScriptReply {
    fair_attempt(p, owner, queue_ms, "0", ticket)
}

fn fair_attempt(
    p: &mut Pair,
    owner: &str,
    queue_ms: &str,
    fenced: &str,
    ticket: &str,
) -> ScriptReply {
    p.eval(
        &FAIR_ACQUIRE,
        &[
            R.lock,
            &format!("{}{}", R.acquire_record, fresh_id()),
            R.token,
            F.queue,
            F.timeouts,
            R.channel,
            F.handoff,
        ],
        &[
            "30000",
            owner,
            fenced,
            &deadline(),
            queue_ms,
            "0",
            "PUBLISH",
            ticket,
        ],
    )
}

fn fair_release(p: &mut Pair, owner: &str) -> ScriptReply {
    p.eval(
        &FAIR_RELEASE,
        &[
            R.lock,
            R.channel,
            &format!("{}{}", R.unlock_record, fresh_id()),
            F.queue,
            F.timeouts,
            F.handoff,
        ],
        &["0", "30000", owner, "PUBLISH", &deadline()],
    )
}

fn fair_leave(p: &mut Pair, owner: &str, ticket: &str) -> ScriptReply {
    p.eval(
        &FAIR_LEAVE,
        &[R.lock, R.channel, F.queue, F.timeouts, F.handoff],
        &[owner, "PUBLISH", ticket],
    )
}

#[test]
fn fair_scripts_agree_with_redis() {
    let mut p = Pair::new();
    // A holds; B and C queue in order.
    fair_acquire(&mut p, A, "30000");
    fair_acquire(&mut p, B, "30000");
    fair_acquire(&mut p, C, "60000");
    fair_acquire(&mut p, B, "40000");
    p.eval(&FAIR_INSPECT, &[R.lock, F.queue, F.timeouts], &[]);
    p.same_keyspace();
    // A releases: the head (B) is told; C may not jump the queue.
    assert_eq!(fair_release(&mut p, A), ScriptReply::Int(1));
    fair_acquire(&mut p, C, "60000");
    fair_acquire(&mut p, B, "30000");
    fair_acquire(&mut p, B, "30000");
    p.same_keyspace();
    // C gives up; renewal of the fair lock is the reentrant script's.
    fair_leave(&mut p, C, "0");
    p.eval(&RENEW, &[R.lock], &["60000", B]);
    // A waiter with a deadline about to pass is evicted by the next call.
    fair_acquire(&mut p, C, "1");
    std::thread::sleep(Duration::from_millis(20));
    fair_acquire(&mut p, A, "30000");
    p.eval(&FAIR_INSPECT, &[R.lock, F.queue, F.timeouts], &[]);
    p.same_keyspace();
    // Force unlock tells the head; the queue stays.
    p.eval(
        &FAIR_FORCE_UNLOCK,
        &[R.lock, R.channel, F.queue, F.timeouts, F.handoff],
        &["0", "PUBLISH"],
    );
    fair_release(&mut p, B);
    fair_leave(&mut p, A, "0");
    p.same_keyspace();
    assert!(
        p.memory.keys().iter().all(|k| k == R.token || is_record(k)),
        "{:?}",
        p.memory.keys()
    );
}

/// The direct handoff's paths: a grant, a grant taken by a later attempt
/// of its wait, re-entry by another call, and a grant given back by a wait
/// that leaves (handed on to the next head).
#[test]
fn handoff_scripts_agree_with_redis() {
    let mut p = Pair::new();
    fair_acquire(&mut p, A, "30000");
    fair_wait(&mut p, B, "30000", "11");
    fair_wait(&mut p, C, "30000", "22");
    p.same_keyspace();
    // A's release grants the lock to B (the head): B holds it, C waits.
    assert_eq!(fair_release(&mut p, A), ScriptReply::Int(1));
    p.same_keyspace();
    // B's next attempt of the same wait takes the grant: one hold.
    fair_wait(&mut p, B, "30000", "11");
    // Another call of B enters again.
    fair_wait(&mut p, B, "0", "0");
    p.same_keyspace();
    fair_release(&mut p, B);
    fair_release(&mut p, B);
    // C was granted the lock by B's last release, and gives it back by
    // leaving: the lock is free, the queue empty.
    p.same_keyspace();
    fair_leave(&mut p, C, "22");
    p.same_keyspace();
    assert!(
        p.memory.keys().iter().all(|k| k == R.token || is_record(k)),
        "{:?}",
        p.memory.keys()
    );
}

// ---- scripting semantics ----

/// Scripts whose replies (errors included, with their `script: <sha1>, on
/// @user_script:<line>.` suffix) must be identical.
const SEMANTICS: &[&str] = &[
    "return redis.call('incr', KEYS[1])",
    "local function f()\n return redis.call('incr', KEYS[1])\nend\nreturn f()",
    "return redis.pcall('incr', KEYS[1])",
    "local ok, e = pcall(redis.call, 'incr', KEYS[1]); return {tostring(ok), type(e), e}",
    "local ok, e = pcall(function() error({err='x'}) end); return {type(e), e}",
    "local ok, e = xpcall(function() return redis.call('incr', KEYS[1]) end, function(e) return type(e) end); return e",
    "local ok, e = pcall(redis.call, 'foo'); return {type(e), e}",
    "return redis.call('foo')",
    "return redis.pcall('foo')",
    "return redis.call('get')",
    "return redis.call()",
    "return redis.call('get', {})",
    "return redis.call('set', 'n', true)",
    "return nil + 1",
    "return 1 +",
    "x = 1",
    "return y",
    "error('boom')",
    "error(nil)",
    "error(123)",
    "error({err='MY boom'})",
    "error('a\\nb')",
    "string.foo = 1",
    "rawset(_G, 'x', 1)",
    "return loadstring('x = 1')()",
    "return os",
    "return require",
    "return redis.error_reply('oops')",
    "return redis.error_reply('my oops here')",
    "return redis.error_reply('x\\ny\\r\\n')",
    "return redis.error_reply(1)",
    "return redis.status_reply('FINE')",
    "return {err='plain'}",
    "return {err='multi\\nline'}",
    "return {1,2,nil,4}",
    "return {1.9, -1.9, true, false, 'x', {ok='S'}}",
    "return {2^63, 0/0, 1e300, -2^63}",
    "return {{1,{2}}, {}, {a=1}, {ok=1}, {err=1}, {ok='x', err='y'}, {1,{err='inner'}}}",
    "local out = {} for _, n in ipairs({1e20, 3.0, -0.0, 1/0, -1/0, 0.1, 1e-5, 2^70, 1e16, 1e17, 123456789012345678}) do redis.call('set','n', n); table.insert(out, redis.call('get','n')) end return out",
    "return redis.sha1hex('abc')",
    "return redis.log(redis.LOG_WARNING)",
    "return #KEYS .. ' ' .. #ARGV .. ' ' .. KEYS[1] .. ARGV[2]",
    "return string.rep('x', 3)",
    "return string.rep()",
    "return {type(redis.call('get', 'nokey')), redis.call('set', 'a', '1')['ok'], redis.call('type', 'a')['ok']}",
    // The out-of-memory probe (common.lua's refuse_if_out_of_memory): a
    // ZADD XX of the member '' neither creates the key nor adds the member.
    "return {redis.call('zadd', 'probe-none', 'xx', 0, ''), redis.call('exists', 'probe-none'), \
     redis.call('zadd', 'probe-z', 1, 'a'), redis.call('zadd', 'probe-z', 'xx', 0, ''), \
     redis.call('zrange', 'probe-z', 0, -1, 'withscores')}",
    // Shaped like Redisson's read-write lock and semaphore scripts.
    "redis.call('hset', 'rw', 'mode', 'write'); redis.call('hset', 'rw', ARGV[1] .. ':write', 1); \
     redis.call('hincrby', 'rw', ARGV[1] .. ':write', 1); redis.call('pexpire', 'rw', 30000); \
     return {redis.call('hget', 'rw', 'mode'), redis.call('hlen', 'rw'), redis.call('hkeys', 'rw'), \
     redis.call('hvals', 'rw'), redis.call('hdel', 'rw', 'mode'), redis.call('pttl', 'rw')}",
    "redis.call('zadd', 'sem', 100, 'p1'); redis.call('zadd', 'sem', 200, 'p2'); \
     redis.call('zadd', 'sem', 300, 'p3'); \
     local expired = redis.call('zrangebyscore', 'sem', 0, 250, 'limit', 0, -1); \
     local removed = redis.call('zrem', 'sem', unpack(expired)); \
     redis.call('incrby', 'permits', removed); \
     return {removed, redis.call('zcount', 'sem', 0, '+inf'), redis.call('zrange', 'sem', 0, 0, 'WITHSCORES'), \
     redis.call('zincrby', 'sem', -tonumber('50'), 'p3'), redis.call('get', 'permits'), \
     math.max(tonumber(redis.call('zscore', 'sem', 'p3')), 10)}",
];

#[test]
fn scripting_semantics_agree_with_redis() {
    let mut p = Pair::new();
    for script in SEMANTICS {
        p.redis.cmd(&["HSET", "h", "f", "1"]);
        p.memory.eval(
            "redis.call('hset', 'h', 'f', '1')",
            &[] as &[&str],
            &[] as &[&str],
        );
        p.eval(script, &["h", "k2"], &["a1", "a2"]);
    }
    p.same_keyspace();
}

// ---- random sequences of plain commands ----

fn word() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "a",
        "b",
        "c",
        "f",
        "g",
        "1",
        "-2",
        "0",
        "10",
        "x",
        "0.5",
        "2.5",
        "-inf",
        "+inf",
        "(1",
        "9223372036854775807",
        "01",
    ])
}

/// Words that make a command, arity-correct most of the time; times long
/// enough that nothing expires while a case runs.
fn command() -> impl Strategy<Value = Vec<&'static str>> {
    let key = || prop::sample::select(vec!["a", "b", "c"]);
    let words = || prop::collection::vec(word(), 0..4);
    let ttl = || prop::sample::select(vec!["10000", "20000", "-1", "0", "x"]);
    prop_oneof![
        (key(), word()).prop_map(|(k, v)| vec!["set", k, v]),
        (
            key(),
            word(),
            prop::sample::select(vec!["nx", "xx", "get", "keepttl", "px", "ex"]),
            ttl()
        )
            .prop_map(|(k, v, o, t)| vec!["set", k, v, o, t]),
        key().prop_map(|k| vec!["get", k]),
        (key(), key()).prop_map(|(k, j)| vec!["mget", k, j]),
        key().prop_map(|k| vec!["incr", k]),
        key().prop_map(|k| vec!["decr", k]),
        (key(), word()).prop_map(|(k, n)| vec!["incrby", k, n]),
        (key(), word()).prop_map(|(k, n)| vec!["decrby", k, n]),
        (key(), key()).prop_map(|(k, j)| vec!["del", k, j]),
        (key(), key()).prop_map(|(k, j)| vec!["exists", k, j, k]),
        key().prop_map(|k| vec!["type", k]),
        (key(), ttl(), words()).prop_map(|(k, t, mut w)| {
            let mut c = vec!["pexpire", k, t];
            w.truncate(1);
            c.extend(w.iter().map(|_| "nx"));
            c
        }),
        (key(), prop::sample::select(vec!["xx", "nx"]))
            .prop_map(|(k, o)| vec!["expire", k, "30", o]),
        // GT and LT compare deadlines: absolute ones, so the answer does not
        // depend on when each side reads its clock.
        (
            key(),
            prop::sample::select(vec![
                "1000",
                "4102444800000",
                "4102444900000",
                "9223372036854775807",
            ]),
            prop::sample::select(vec!["gt", "lt", "nx", "xx"]),
            prop::bool::ANY,
        )
            .prop_map(|(k, t, o, plain)| {
                let mut c = vec!["pexpireat", k, t];
                if !plain {
                    c.push(o);
                }
                c
            }),
        key().prop_map(|k| vec!["pttl", k]),
        key().prop_map(|k| vec!["ttl", k]),
        key().prop_map(|k| vec!["persist", k]),
        (key(), word(), word()).prop_map(|(k, f, v)| vec!["hset", k, f, v]),
        (key(), word(), word()).prop_map(|(k, f, v)| vec!["hsetnx", k, f, v]),
        (key(), word()).prop_map(|(k, f)| vec!["hget", k, f]),
        (key(), word()).prop_map(|(k, f)| vec!["hdel", k, f]),
        (key(), word()).prop_map(|(k, f)| vec!["hexists", k, f]),
        (key(), word(), word()).prop_map(|(k, f, n)| vec!["hincrby", k, f, n]),
        (
            key(),
            prop::sample::select(vec!["hgetall", "hlen", "hkeys", "hvals", "llen", "zcard"])
        )
            .prop_map(|(k, c)| vec![c, k]),
        (key(), word()).prop_map(|(k, i)| vec!["lindex", k, i]),
        key().prop_map(|k| vec!["lpop", k]),
        (key(), word()).prop_map(|(k, n)| vec!["lpop", k, n]),
        (key(), word(), word()).prop_map(|(k, v, w)| vec!["rpush", k, v, w]),
        (key(), word()).prop_map(|(k, v)| vec!["lpush", k, v]),
        (key(), word(), word()).prop_map(|(k, n, v)| vec!["lrem", k, n, v]),
        (key(), word(), word()).prop_map(|(k, s, e)| vec!["lrange", k, s, e]),
        (key(), word(), word()).prop_map(|(k, s, m)| vec!["zadd", k, s, m]),
        (
            key(),
            prop::sample::select(vec!["nx", "xx", "gt", "lt", "ch", "incr"]),
            word(),
            word()
        )
            .prop_map(|(k, o, s, m)| vec!["zadd", k, o, s, m]),
        (key(), word()).prop_map(|(k, m)| vec!["zscore", k, m]),
        (key(), word(), word()).prop_map(|(k, m, n)| vec!["zrem", k, m, n]),
        (key(), word(), word()).prop_map(|(k, n, m)| vec!["zincrby", k, n, m]),
        (key(), word(), word(), words()).prop_map(|(k, s, e, w)| {
            let mut c = vec!["zrange", k, s, e];
            c.extend(w.iter().map(|x| match *x {
                "a" => "withscores",
                "b" => "rev",
                "c" => "byscore",
                other => other,
            }));
            c
        }),
        (
            key(),
            word(),
            word(),
            prop::bool::ANY,
            prop::option::of((word(), word()))
        )
            .prop_map(|(k, min, max, ws, limit)| {
                let mut c = vec!["zrangebyscore", k, min, max];
                if ws {
                    c.push("withscores");
                }
                if let Some((o, n)) = limit {
                    c.extend(["limit", o, n]);
                }
                c
            }),
        (key(), word(), word()).prop_map(|(k, min, max)| vec!["zcount", k, min, max]),
        (key(), word(), word()).prop_map(|(k, min, max)| vec!["zremrangebyscore", k, min, max]),
        (key(), word()).prop_map(|(k, m)| vec!["publish", k, m]),
        words().prop_map(|w| {
            let mut c = vec!["ping"];
            c.extend(w);
            c
        }),
    ]
}

/// Runs each command through `redis.pcall` (errors come back as replies)
/// or `redis.call` (errors are raised, with the script's location).
const PCALL: &str = "return redis.pcall(unpack(ARGV))";
const CALL: &str = "return redis.call(unpack(ARGV))";

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn random_commands_agree_with_redis(
        commands in prop::collection::vec((command(), prop::bool::weighted(0.2)), 1..40)
    ) {
        PAIR.with(|pair| {
            let mut p = pair.borrow_mut();
            p.reset();
            for (command, raise) in &commands {
                let script = if *raise { CALL } else { PCALL };
                p.eval(script, &[], command);
            }
            p.same_keyspace();
        });
    }
}

thread_local! {
    /// One redis-server for all the cases of the property test.
    static PAIR: std::cell::RefCell<Pair> = std::cell::RefCell::new(Pair::new());
}
