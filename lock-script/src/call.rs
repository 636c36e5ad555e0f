//! [`ScriptCall`]: one script invocation, as kinds hand it to a
//! [`crate::Transport`].

use redis::{Cmd, Script};

/// One script invocation: the script, its KEYS and its ARGV.
#[derive(Debug, Clone)]
pub struct ScriptCall<'a> {
    /// The script to run.
    pub script: &'a Script,
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
            script,
            keys,
            args,
            idempotent: false,
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

    /// The `EVALSHA` command of this call.
    pub fn evalsha(&self) -> Cmd {
        // Sized up front: a renewal call carries hundreds of keys, and a
        // command buffer growing by doubling would take up to twice their
        // size (issue 15: the memory a watchdog tick takes per lock).
        let words = 3 + self.keys.len() + self.args.len();
        let bytes = "EVALSHA".len()
            + self.script.get_hash().len()
            + 20
            + self
                .keys
                .iter()
                .chain(&self.args)
                .map(String::len)
                .sum::<usize>();
        let mut cmd = Cmd::with_capacity(words, bytes);
        cmd.arg("EVALSHA")
            .arg(self.script.get_hash())
            .arg(self.keys.len())
            .arg(&self.keys)
            .arg(&self.args);
        cmd
    }
}
