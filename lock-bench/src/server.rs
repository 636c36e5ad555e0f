//! Plain `redis` connections to the server under test, and its command
//! statistics (`CONFIG RESETSTAT` / `INFO commandstats`).

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};
use redis::aio::MultiplexedConnection;
use redis::{ConnectionAddr, IntoConnectionInfo};

/// Every raw connection gives up on a reply after this long, so the bench
/// never hangs on a frozen server.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Commands the bench itself sends to measure; left out of every count.
const MEASUREMENT_COMMANDS: [&str; 2] = ["info", "config|resetstat"];

/// The server under test, reached with plain `redis` (no lock library).
#[derive(Clone)]
pub(crate) struct Server {
    client: redis::Client,
}

impl Server {
    pub(crate) fn new(url: &str) -> Result<Self> {
        let client = redis::Client::open(url).with_context(|| format!("bad redis URL {url:?}"))?;
        Ok(Self { client })
    }

    /// The server at `addr` (`host:port`), reached with the credentials
    /// and settings of `url`: how a cluster's nodes are reached from one
    /// seed URL.
    pub(crate) fn at(url: &str, addr: &str) -> Result<Self> {
        let (host, port) = addr
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
            .with_context(|| format!("bad node address {addr:?}"))?;
        let info = url
            .into_connection_info()
            .with_context(|| format!("bad redis URL {url:?}"))?
            .set_addr(ConnectionAddr::Tcp(host.to_owned(), port));
        let client = redis::Client::open(info).context("bad node connection info")?;
        Ok(Self { client })
    }

    /// A new multiplexed connection with bounded connect and reply times.
    pub(crate) async fn connect(&self) -> Result<MultiplexedConnection> {
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT));
        self.client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .context("cannot connect to the redis server")
    }

    /// A new pub/sub connection.
    pub(crate) async fn pubsub(&self) -> Result<redis::aio::PubSub> {
        tokio::time::timeout(CONNECT_TIMEOUT, self.client.get_async_pubsub())
            .await
            .context("connecting a pub/sub connection timed out")?
            .context("cannot open a pub/sub connection")
    }

    /// `CONFIG RESETSTAT`: zeroes the command statistics.
    pub(crate) async fn reset_stats(&self) -> Result<()> {
        let mut conn = self.connect().await?;
        redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async::<()>(&mut conn)
            .await
            .context("CONFIG RESETSTAT failed")
    }

    /// `INFO commandstats`, parsed.
    pub(crate) async fn command_stats(&self) -> Result<CommandStats> {
        let mut conn = self.connect().await?;
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut conn)
            .await
            .context("INFO commandstats failed")?;
        Ok(CommandStats::parse(&info))
    }
}

/// Calls per command since the last `CONFIG RESETSTAT`, and the server
/// time they took. Commands run by scripts (`redis.call`) count too, as
/// Redis counts them (and their time is also in the script's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CommandStats(BTreeMap<String, Calls>);

/// One command's line of `INFO commandstats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Calls {
    calls: u64,
    usec: u64,
}

impl CommandStats {
    /// Parses lines like `cmdstat_evalsha:calls=12,usec=30,…`.
    pub(crate) fn parse(info: &str) -> Self {
        let mut stats = BTreeMap::new();
        for line in info.lines() {
            let Some(rest) = line.trim().strip_prefix("cmdstat_") else {
                continue;
            };
            let Some((name, fields)) = rest.split_once(':') else {
                continue;
            };
            let field = |key: &str| {
                fields
                    .split(',')
                    .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
                    .and_then(|n| n.parse().ok())
            };
            if let Some(calls) = field("calls") {
                let usec = field("usec").unwrap_or(0);
                stats.insert(name.to_ascii_lowercase(), Calls { calls, usec });
            }
        }
        Self(stats)
    }

    /// Adds `other`'s calls to these: the statistics of several servers
    /// (a cluster's masters) as one.
    pub(crate) fn merge(&mut self, other: &CommandStats) {
        for (name, n) in &other.0 {
            let mine = self.0.entry(name.clone()).or_default();
            mine.calls += n.calls;
            mine.usec += n.usec;
        }
    }

    /// Calls of one command (lower case, subcommands as `config|get`).
    pub(crate) fn calls(&self, command: &str) -> u64 {
        self.0.get(command).map_or(0, |c| c.calls)
    }

    /// Server time in microseconds spent in one command; for `evalsha`,
    /// the whole time of the scripts it ran.
    pub(crate) fn usec(&self, command: &str) -> u64 {
        self.0.get(command).map_or(0, |c| c.usec)
    }

    /// Server time in microseconds spent in the listed commands (a
    /// subcommand counts for its command, as in [`CommandStats::sum_of`]).
    pub(crate) fn usec_of(&self, commands: &[&str]) -> u64 {
        self.listed(commands).map(|n| n.usec).sum()
    }

    /// The lines of the listed commands.
    fn listed<'a>(&'a self, commands: &'a [&str]) -> impl Iterator<Item = &'a Calls> {
        self.0
            .iter()
            .filter(|(name, _)| {
                let base = name.split('|').next().unwrap_or(name);
                commands.contains(&base)
            })
            .map(|(_, n)| n)
    }

    /// Calls of every command but the bench's own measurement commands.
    pub(crate) fn total(&self) -> u64 {
        self.0
            .iter()
            .filter(|(name, _)| !MEASUREMENT_COMMANDS.contains(&name.as_str()))
            .map(|(_, n)| n.calls)
            .sum()
    }

    /// Calls of the listed commands (a subcommand counts for its command:
    /// `script` covers `script|load`).
    pub(crate) fn sum_of(&self, commands: &[&str]) -> u64 {
        self.listed(commands).map(|n| n.calls).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "# Commandstats\r\n\
        cmdstat_get:calls=1,usec=1,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n\
        cmdstat_config|resetstat:calls=1,usec=56,usec_per_call=56.00,rejected_calls=0,failed_calls=0\r\n\
        cmdstat_evalsha:calls=40,usec=91,usec_per_call=2.27,rejected_calls=0,failed_calls=0\r\n\
        cmdstat_script|load:calls=2,usec=91,usec_per_call=45.5,rejected_calls=0,failed_calls=0\r\n\
        cmdstat_info:calls=3,usec=14,usec_per_call=4.6,rejected_calls=0,failed_calls=0\r\n";

    #[test]
    fn parses_and_sums_command_stats() {
        let s = CommandStats::parse(INFO);
        assert_eq!(s.calls("evalsha"), 40);
        assert_eq!(s.calls("script|load"), 2);
        assert_eq!(s.calls("ping"), 0);
        // info and config|resetstat are the bench's own.
        assert_eq!(s.total(), 43);
        assert_eq!(s.sum_of(&["evalsha", "script"]), 42);
        assert_eq!(s.usec("evalsha"), 91);
        assert_eq!(s.usec("ping"), 0);
        assert_eq!(s.usec_of(&["evalsha", "script", "get"]), 183);
        assert_eq!(s.usec_of(&["ping"]), 0);

        let mut both = CommandStats::parse("cmdstat_evalsha:calls=2,usec=1\r\n");
        both.merge(&s);
        assert_eq!(both.calls("evalsha"), 42);
        assert_eq!(both.usec("evalsha"), 92);
        assert_eq!(both.calls("get"), 1);
    }

    #[test]
    fn a_node_is_reached_with_the_seed_credentials() {
        let s = Server::at("redis://u:p@127.0.0.1:7000/", "10.0.0.9:7005").unwrap();
        let info = s.client.get_connection_info();
        assert_eq!(
            info.addr(),
            &ConnectionAddr::Tcp("10.0.0.9".to_owned(), 7005)
        );
        assert_eq!(info.redis_settings().username(), Some("u"));
        assert_eq!(info.redis_settings().password(), Some("p"));
        assert!(Server::at("redis://127.0.0.1:7000/", "no-port").is_err());
    }
}
