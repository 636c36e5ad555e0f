//! The Redis commands the kinds' Lua scripts call, run on the in-memory
//! [`Keyspace`] with Redis 7.0's argument parsing, reply shapes and error
//! texts (`WRONGTYPE ...`, `ERR value is not an integer or out of range`,
//! ...). As in Redis, a command parses all its arguments before it looks at
//! the key, and either does all its work or none of it.
//!
//! The table below is the whole command set; [`lookup`] finds a command by
//! name, case-insensitively, with its Redis arity (positive: exact argument
//! count, name included; negative: at least that many).

mod hashes;
mod keys;
mod lists;
pub(crate) mod number;
mod server;
mod strings;
mod zsets;

use std::time::Duration;

use tokio::time::Instant;

use super::keyspace::{Keyspace, WrongType};
use super::reply::ScriptReply;

/// A message a script published; the caller delivers it once the store's
/// lock is released.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Published {
    pub(crate) channel: Vec<u8>,
    pub(crate) message: Vec<u8>,
    /// `SPUBLISH` (shard channel) rather than `PUBLISH`.
    pub(crate) sharded: bool,
}

/// What a command runs against.
pub(crate) struct Ctx<'a> {
    pub(crate) keys: &'a mut Keyspace,
    /// The server clock, microseconds since the Unix epoch (`TIME`, and the
    /// base of `*EXPIREAT` and relative expiries)...
    pub(crate) now_us: i64,
    /// ... read at this instant: the two map expiry deadlines (instants) to
    /// and from the whole epoch milliseconds Redis keeps.
    pub(crate) now: Instant,
    /// Messages published so far by this script.
    pub(crate) published: Vec<Published>,
    /// How many receivers a published message reaches (`PUBLISH`'s reply).
    pub(crate) receivers: &'a dyn Fn(&Published) -> i64,
}

impl Ctx<'_> {
    /// The server clock in milliseconds since the Unix epoch.
    pub(crate) fn now_ms(&self) -> i64 {
        self.now_us.div_euclid(1000)
    }

    /// The instant of the epoch time `ms` (now when it has passed: the key
    /// is expired at once).
    pub(crate) fn deadline(&self, ms: i64) -> Instant {
        // In i128 microseconds: Redis takes deadlines up to i64::MAX ms.
        let ahead = (i128::from(ms) * 1000 - i128::from(self.now_us)).max(0);
        let ahead = Duration::new(
            u64::try_from(ahead / 1_000_000).unwrap_or(u64::MAX),
            u32::try_from(ahead % 1_000_000 * 1000).unwrap_or(0),
        );
        // Where an Instant cannot reach that far, the library's "forever"
        // (a century) is as good as never for a test.
        self.now
            .checked_add(ahead)
            .or_else(|| self.now.checked_add(lock_core::FOREVER))
            .unwrap_or(self.now)
    }

    /// The epoch time of `at`, in whole milliseconds: rounded to the
    /// nearest, so a deadline made by [`Ctx::deadline`] under an earlier
    /// reading of the clock maps back to the same millisecond.
    pub(crate) fn epoch_ms(&self, at: Instant) -> i64 {
        let micros = |d: Duration| i128::try_from(d.as_micros()).unwrap_or(i128::MAX);
        let offset = if at >= self.now {
            micros(at - self.now)
        } else {
            -micros(self.now - at)
        };
        let ms = (i128::from(self.now_us) + offset + 500).div_euclid(1000);
        i64::try_from(ms).unwrap_or(i64::MAX)
    }

    /// `PTTL`: -2 missing, -1 no expiry, else the milliseconds left, as
    /// Redis counts them (deadline minus now, in whole milliseconds).
    pub(crate) fn pttl(&mut self, key: &[u8]) -> i64 {
        match self.keys.expiry(key) {
            None => -2,
            Some(None) => -1,
            Some(Some(at)) => (self.epoch_ms(at) - self.now_ms()).max(0),
        }
    }
}

/// An error reply, as a command returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure(pub(crate) String);

impl Failure {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Failure(message.into())
    }

    pub(crate) fn syntax() -> Self {
        Failure::new("ERR syntax error")
    }

    pub(crate) fn not_integer() -> Self {
        Failure::new("ERR value is not an integer or out of range")
    }

    pub(crate) fn not_float() -> Self {
        Failure::new("ERR value is not a valid float")
    }

    pub(crate) fn arity(name: &str) -> Self {
        Failure(format!(
            "ERR wrong number of arguments for '{name}' command"
        ))
    }
}

impl From<WrongType> for Failure {
    fn from(WrongType: WrongType) -> Self {
        Failure::new("WRONGTYPE Operation against a key holding the wrong kind of value")
    }
}

pub(crate) type Outcome = Result<ScriptReply, Failure>;

/// One command: its lower-case name, Redis arity, and implementation. The
/// implementation gets every argument, the name first.
pub(crate) struct Command {
    pub(crate) name: &'static str,
    pub(crate) arity: i32,
    run: fn(&mut Ctx<'_>, &[Vec<u8>]) -> Outcome,
}

impl Command {
    /// Whether `argc` arguments (name included) fit the arity.
    pub(crate) fn accepts(&self, argc: usize) -> bool {
        let argc = i64::try_from(argc).unwrap_or(i64::MAX);
        let arity = i64::from(self.arity);
        if arity >= 0 {
            argc == arity
        } else {
            argc >= -arity
        }
    }

    /// Runs the command; an error is an error reply.
    pub(crate) fn run(&self, cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> ScriptReply {
        (self.run)(cx, args).unwrap_or_else(|Failure(message)| ScriptReply::Error(message))
    }
}

macro_rules! commands {
    ($($name:literal $arity:literal $run:path;)*) => {
        const COMMANDS: &[Command] = &[$(Command { name: $name, arity: $arity, run: $run },)*];
    };
}

commands! {
    "get" 2 strings::get;
    "set" -3 strings::set;
    "incr" 2 strings::incr;
    "incrby" 3 strings::incrby;
    "decr" 2 strings::decr;
    "decrby" 3 strings::decrby;
    "mget" -2 strings::mget;
    "del" -2 keys::del;
    "exists" -2 keys::exists;
    "type" 2 keys::type_;
    "pexpire" -3 keys::pexpire;
    "pexpireat" -3 keys::pexpireat;
    "expire" -3 keys::expire;
    "expireat" -3 keys::expireat;
    "pttl" 2 keys::pttl;
    "ttl" 2 keys::ttl;
    "persist" 2 keys::persist;
    "hget" 3 hashes::hget;
    "hset" -4 hashes::hset;
    "hsetnx" 4 hashes::hsetnx;
    "hdel" -3 hashes::hdel;
    "hexists" 3 hashes::hexists;
    "hincrby" 4 hashes::hincrby;
    "hgetall" 2 hashes::hgetall;
    "hlen" 2 hashes::hlen;
    "hkeys" 2 hashes::hkeys;
    "hvals" 2 hashes::hvals;
    "lindex" 3 lists::lindex;
    "lpos" -3 lists::lpos;
    "lpop" -2 lists::lpop;
    "rpush" -3 lists::rpush;
    "lpush" -3 lists::lpush;
    "lrem" 4 lists::lrem;
    "lrange" 4 lists::lrange;
    "llen" 2 lists::llen;
    "zscore" 3 zsets::zscore;
    "zadd" -4 zsets::zadd;
    "zrem" -3 zsets::zrem;
    "zrange" -4 zsets::zrange;
    "zrangebyscore" -4 zsets::zrangebyscore;
    "zincrby" 4 zsets::zincrby;
    "zcard" 2 zsets::zcard;
    "zcount" 4 zsets::zcount;
    "zremrangebyscore" 4 zsets::zremrangebyscore;
    "time" 1 server::time;
    "publish" 3 server::publish;
    "spublish" 3 server::spublish;
    "ping" -1 server::ping;
    "echo" 2 server::echo;
}

/// The command called `name` (any case).
pub(crate) fn lookup(name: &[u8]) -> Option<&'static Command> {
    COMMANDS
        .iter()
        .find(|c| c.name.as_bytes().eq_ignore_ascii_case(name))
}

// ---- argument parsing shared by the command groups ----

/// An integer argument, parsed as Redis parses integers.
pub(crate) fn int_arg(arg: &[u8]) -> Result<i64, Failure> {
    number::parse_int(arg).ok_or_else(Failure::not_integer)
}

/// A float argument, parsed as Redis parses doubles.
pub(crate) fn float_arg(arg: &[u8]) -> Result<f64, Failure> {
    number::parse_double(arg).ok_or_else(Failure::not_float)
}

/// Whether `arg` is the option `name` (any case).
pub(crate) fn is_opt(arg: &[u8], name: &str) -> bool {
    arg.eq_ignore_ascii_case(name.as_bytes())
}

#[cfg(test)]
pub(crate) mod testing {
    //! Runs commands on a keyspace the way a script does, for the unit
    //! tests of each group.

    use super::*;

    /// A keyspace, a fixed clock, and what was published.
    pub(crate) struct Bench {
        pub(crate) keys: Keyspace,
        pub(crate) now_us: i64,
        pub(crate) published: Vec<Published>,
    }

    impl Default for Bench {
        fn default() -> Self {
            Self {
                keys: Keyspace::default(),
                now_us: 1_700_000_000_123_456,
                published: Vec::new(),
            }
        }
    }

    impl Bench {
        /// Runs `cmd` (space-separated words) and returns its reply.
        pub(crate) fn run(&mut self, cmd: &str) -> ScriptReply {
            let args: Vec<Vec<u8>> = cmd.split(' ').map(|w| w.as_bytes().to_vec()).collect();
            self.run_args(&args)
        }

        pub(crate) fn run_args(&mut self, args: &[Vec<u8>]) -> ScriptReply {
            let command = lookup(&args[0]).expect("known command");
            assert!(command.accepts(args.len()), "arity of {cmd:?}", cmd = args);
            let receivers = |_: &Published| 2;
            let mut cx = Ctx {
                keys: &mut self.keys,
                now_us: self.now_us,
                now: Instant::now(),
                published: Vec::new(),
                receivers: &receivers,
            };
            let reply = command.run(&mut cx, args);
            self.published.extend(cx.published);
            reply
        }
    }

    pub(crate) fn int(n: i64) -> ScriptReply {
        ScriptReply::Int(n)
    }

    pub(crate) fn bulk(s: &str) -> ScriptReply {
        ScriptReply::bulk(s)
    }

    pub(crate) fn err(s: &str) -> ScriptReply {
        ScriptReply::Error(s.to_owned())
    }

    pub(crate) fn array(items: &[&str]) -> ScriptReply {
        ScriptReply::Array(items.iter().map(|s| bulk(s)).collect())
    }

    pub(crate) const WRONGTYPE: &str =
        "WRONGTYPE Operation against a key holding the wrong kind of value";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_ignores_case_and_checks_arity() {
        let get = lookup(b"GeT").unwrap();
        assert!(get.accepts(2));
        assert!(!get.accepts(3));
        let set = lookup(b"set").unwrap();
        assert!(!set.accepts(2));
        assert!(set.accepts(7));
        assert!(lookup(b"flushall").is_none());
    }
}
