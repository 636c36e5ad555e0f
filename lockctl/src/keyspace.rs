//! The keys under the global options' server, read with `SCAN` (never
//! `KEYS`: each call looks at about [`SCAN_COUNT`] keys, so a large
//! keyspace is walked in steps that never block the server), for `list`.
//!
//! One server (`--url`, `--sentinel`) is scanned through a read-only
//! script (`scan.lua`) on the client's own connection, which brings TLS,
//! credentials and Sentinel's failover with it; a cluster's masters one
//! after another, each with a `SCAN` of its own
//! ([`ClusterTransport::query_master`]): a cluster has no keyspace-wide
//! scan. The client that describes the names is built over the same
//! transport, so one connection serves both.

use std::sync::{Arc, LazyLock};

use lock_redis::redis::{self, Script, Value};
use lock_redis::{LockClient, LockError};
use lock_redis::{ScriptCall, ScriptEnv};
use lock_redis_cluster::ClusterTransport;

use crate::cli::Global;
use crate::connect::{self, Target, CLUSTER};
use crate::exit::{Failure, USAGE};

/// Keys one `SCAN` call looks at (its `COUNT`): a few milliseconds of the
/// server's time, and few round trips for a large keyspace.
const SCAN_COUNT: u32 = 1000;

/// One `SCAN` step on one server (`scan.lua`).
static SCAN: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scan.lua")));

/// Where the keys are.
pub(crate) enum Keyspace {
    /// One server, named for errors: scanned through `scan.lua`.
    One { env: ScriptEnv, server: String },
    /// A cluster: each master scanned on its own.
    Cluster(Arc<ClusterTransport>),
}

/// Connects to what the global options name: the client to describe names
/// with, and the keyspace to find them in.
///
/// # Errors
/// As [`connect::client`]; exit 64 with `--slot-checking-proxy`, whose
/// proxy hides the cluster's masters behind one address.
pub(crate) async fn open(global: &Global) -> Result<(LockClient, Keyspace), Failure> {
    let config = connect::client_config(global, lock_redis::ClientConfig::default())?;
    match connect::target(global)? {
        Target::Node { redis, server } => {
            if redis.slot_checking_proxy {
                return Err(Failure::new(
                    USAGE,
                    "list scans every master, and a slot-checking proxy shows one address for \
                     them all: use --cluster with the cluster's nodes instead",
                ));
            }
            let env = lock_redis::connect_env(&redis)
                .await
                .map_err(|e| connect::unreachable_or(&server, &e))?;
            config
                .validate_for(env.command_timeout())
                .map_err(Failure::from)?;
            let client = lock_redis::LockClient::new(env.clone(), config)?;
            Ok((client, Keyspace::One { env, server }))
        }
        Target::Cluster(cluster) => {
            let layout = cluster.layout();
            let sync = cluster.connection.replica_sync;
            let transport = Arc::new(
                ClusterTransport::connect(cluster)
                    .await
                    .map_err(|e| connect::unreachable_or(CLUSTER, &e))?,
            );
            let env = ScriptEnv::new(transport.clone(), layout).with_replica_sync(sync);
            config
                .validate_for(env.command_timeout())
                .map_err(Failure::from)?;
            let client = lock_redis::LockClient::new(env, config)?;
            Ok((client, Keyspace::Cluster(transport)))
        }
    }
}

/// A walk over the keys matching one glob, page by page: every key that is
/// there from its start to its end is seen (on a cluster, on the masters
/// as the slot map named them at its start), some possibly twice, as
/// `SCAN` promises.
pub(crate) struct Scan<'a> {
    keyspace: &'a Keyspace,
    pattern: String,
    /// The servers left to scan (the one server's name, or masters'
    /// addresses); the first is being scanned.
    servers: Vec<String>,
    cursor: String,
}

impl<'a> Scan<'a> {
    /// A walk over the keys matching `pattern` (a Redis glob, e.g.
    /// `app:job*`).
    pub(crate) fn new(keyspace: &'a Keyspace, pattern: String) -> Self {
        let servers = match keyspace {
            Keyspace::One { server, .. } => vec![server.clone()],
            Keyspace::Cluster(transport) => transport
                .slot_map()
                .masters()
                .iter()
                .map(|addr| addr.to_string())
                .collect(),
        };
        Self {
            keyspace,
            pattern,
            servers,
            cursor: "0".to_owned(),
        }
    }

    /// The next page of keys (possibly empty: `SCAN` may return none
    /// before it is done); `None` once every server was scanned.
    ///
    /// # Errors
    /// Exit 69 when a server does not answer (naming it), 70 for a reply
    /// that is not `SCAN`'s.
    pub(crate) async fn next_page(&mut self) -> Result<Option<Vec<String>>, Failure> {
        let Some(server) = self.servers.first() else {
            return Ok(None);
        };
        let reply = match self.keyspace {
            Keyspace::One { env, .. } => {
                let args = vec![
                    self.cursor.clone(),
                    self.pattern.clone(),
                    SCAN_COUNT.to_string(),
                ];
                env.eval(ScriptCall::new(&SCAN, Vec::new(), args).idempotent(true))
                    .await
                    .map_err(|e| Failure::lock(&format!("SCAN on {server}"), &e))?
            }
            Keyspace::Cluster(transport) => {
                let mut cmd = redis::cmd("SCAN");
                cmd.arg(&self.cursor)
                    .arg("MATCH")
                    .arg(&self.pattern)
                    .arg("COUNT")
                    .arg(SCAN_COUNT);
                transport
                    .query_master(server, &cmd)
                    .await
                    .map_err(|e| Failure::lock(&format!("SCAN on the master at {server}"), &e))?
            }
        };
        let (cursor, keys) = page(&reply)
            .ok_or_else(|| Failure::from(LockError::protocol(format!("SCAN replied {reply:?}"))))?;
        if cursor == "0" {
            self.servers.remove(0);
        }
        self.cursor = cursor;
        Ok(Some(keys))
    }
}

/// `[cursor, [key, …]]`, keys that are not UTF-8 left out (no lock name
/// is).
fn page(reply: &Value) -> Option<(String, Vec<String>)> {
    let Value::Array(parts) = reply else {
        return None;
    };
    let [cursor, Value::Array(keys)] = parts.as_slice() else {
        return None;
    };
    let cursor = match cursor {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok()?,
        Value::Int(n) => n.to_string(),
        _ => return None,
    };
    let keys = keys
        .iter()
        .filter_map(|key| match key {
            Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
            _ => None,
        })
        .collect();
    Some((cursor, keys))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn a_scan_reply_is_a_cursor_and_keys() {
        let reply = Value::Array(vec![
            bulk("17"),
            Value::Array(vec![bulk("a"), Value::BulkString(vec![0xff]), bulk("b")]),
        ]);
        assert_eq!(
            page(&reply),
            Some(("17".into(), vec!["a".into(), "b".into()]))
        );
        assert_eq!(page(&Value::Int(0)), None);
        assert_eq!(page(&Value::Array(vec![bulk("0")])), None);
    }
}
