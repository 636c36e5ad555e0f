//! [`ScriptCall`]: one script invocation, as kinds hand it to a
//! [`crate::Transport`].

use redis::{Cmd, Script};

/// What one call runs.
#[derive(Debug, Clone, Copy)]
pub enum Body<'a> {
    /// A script, run by `EVALSHA` (loaded when the server answers
    /// `NOSCRIPT`).
    Script(&'a Script),
    /// One plain command, sent as `<command> KEYS… ARGV…`: a step one
    /// command does atomically, without a script's cost on the server
    /// (the lean lock's `SET … NX PX … GET`: measured 8 µs of server time
    /// per lock/unlock pair less than the same step in a script).
    Command(&'static str),
}

/// One script invocation (or one plain command, [`Body::Command`]): what it
/// runs, its KEYS and its ARGV.
#[derive(Debug, Clone)]
pub struct ScriptCall<'a> {
    /// What to run.
    pub body: Body<'a>,
    /// `KEYS`. The first key names the call in errors (it is the lock key
    /// for every script but `renew`). All keys must live on one node (one
    /// slot on a cluster).
    pub keys: Vec<String>,
    /// `ARGV`.
    pub args: Vec<String>,
    /// Whether running the call twice has the effect of running it once
    /// and answers alike: a read, a renewal, or an acquire or release whose
    /// request record answers a repeat. Only such a call may be sent again
    /// by a transport after its connection broke with the outcome unknown;
    /// any other call (a release without a record, a force unlock) could
    /// count twice. `false` unless set with [`ScriptCall::idempotent`].
    pub idempotent: bool,
}

impl<'a> ScriptCall<'a> {
    /// A call of `script` with `keys` and `args`, not
    /// [idempotent](ScriptCall::idempotent).
    pub fn new(script: &'a Script, keys: Vec<String>, args: Vec<String>) -> Self {
        Self {
            body: Body::Script(script),
            keys,
            args,
            idempotent: false,
        }
    }

    /// A call of the plain command `command` with `keys`, then `args`, not
    /// [idempotent](ScriptCall::idempotent). Its keys must live on one node
    /// as a script's do; its first key names it in errors.
    pub fn command(command: &'static str, keys: Vec<String>, args: Vec<String>) -> Self {
        Self {
            body: Body::Command(command),
            keys,
            args,
            idempotent: false,
        }
    }

    /// The script it runs; `None` for a plain command (which the server
    /// never answers `NOSCRIPT`).
    pub fn script(&self) -> Option<&'a Script> {
        match self.body {
            Body::Script(script) => Some(script),
            Body::Command(_) => None,
        }
    }

    /// Sets [`ScriptCall::idempotent`](ScriptCall#structfield.idempotent).
    #[must_use]
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// The first key, or `""` for a call without keys.
    pub fn first_key(&self) -> &str {
        self.keys.first().map_or("", String::as_str)
    }

    /// The command that sends this call: `EVALSHA <sha> <number of keys>
    /// KEYS… ARGV…` for a script, `<command> KEYS… ARGV…` for a plain
    /// command.
    pub fn to_cmd(&self) -> Cmd {
        // Sized up front: a renewal call carries hundreds of keys, and a
        // command buffer growing by doubling would take up to twice their
        // size (issue 15: the memory a watchdog tick takes per lock).
        let words = 3 + self.keys.len() + self.args.len();
        // 60: the command word, a script's SHA-1 and the number of keys.
        let bytes = 60
            + self
                .keys
                .iter()
                .chain(&self.args)
                .map(String::len)
                .sum::<usize>();
        let mut cmd = Cmd::with_capacity(words, bytes);
        match self.body {
            Body::Script(script) => {
                cmd.arg("EVALSHA")
                    .arg(script.get_hash())
                    .arg(self.keys.len());
            }
            Body::Command(command) => {
                cmd.arg(command);
            }
        }
        cmd.arg(&self.keys).arg(&self.args);
        cmd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(cmd: &Cmd) -> Vec<String> {
        cmd.args_iter()
            .map(|arg| match arg {
                redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                _ => "<not a word>".to_owned(),
            })
            .collect()
    }

    #[test]
    fn a_script_goes_by_evalsha_and_a_command_as_itself() {
        let script = Script::new("return 1");
        let keys = vec!["k".to_owned()];
        let args = vec!["a".to_owned(), "b".to_owned()];
        let call = ScriptCall::new(&script, keys.clone(), args.clone());
        assert_eq!(
            words(&call.to_cmd()),
            ["EVALSHA", script.get_hash(), "1", "k", "a", "b"]
        );
        assert!(call.script().is_some());
        let call = ScriptCall::command("SET", keys, args);
        assert_eq!(words(&call.to_cmd()), ["SET", "k", "a", "b"]);
        assert!(call.script().is_none());
    }
}
