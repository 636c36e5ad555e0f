//! [`ClusterTransport`]: runs each lock script on the master owning its
//! slot, following redirects and riding out failovers.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::{self, BoxFuture, FutureExt};
use lock_core::backend::{Channel, Connection, NoticeSink};
use lock_core::{LockError, Result};
use lock_redis::replicas;
use lock_redis::transport::{scripts, ConnectionSet};
use lock_script::error::{from_redis, timed_out};
use lock_script::ScriptCall;
use lock_script::{ReplicaAcks, Transport};
use redis::{Pipeline, RedisResult, Value};
use tokio::sync::OnceCell;
use tokio::time::{sleep_until, timeout_at, Instant};

use crate::config::ClusterConfig;
use crate::nodes::Nodes;
use crate::pubsub::ShardPubSub;
use crate::redirect::{next_step, Next};
use crate::slot::key_slot;
use crate::topology::{Addr, SlotMap, Topology};
use lock_redis::transport::SubscriptionHandle;

/// First wait before sending again after `TRYAGAIN`, `CLUSTERDOWN` or an
/// unreachable master; doubled each time up to [`RETRY_BACKOFF_MAX`].
const RETRY_BACKOFF: Duration = Duration::from_millis(20);
const RETRY_BACKOFF_MAX: Duration = Duration::from_millis(250);

/// A [`Transport`] to a Redis Cluster; see the crate docs for what it
/// promises.
pub struct ClusterTransport {
    inner: Arc<Inner>,
    pubsub: SubscriptionHandle,
}

pub(crate) struct Inner {
    pub(crate) nodes: Nodes,
    pub(crate) topology: Topology,
    pub(crate) config: ClusterConfig,
    /// Whether notices use sharded pub/sub, once started: the slot map
    /// was read and the mode known (see `start`).
    pub(crate) started: OnceCell<bool>,
    /// Whether a kind was given the placeholder publish command (see
    /// `start`): only then are calls searched for it.
    pub(crate) undecided_handed_out: AtomicBool,
}

impl std::fmt::Debug for ClusterTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterTransport")
            .field("slots", &*self.inner.topology.map())
            .field("sharded", &self.inner.sharded())
            .finish_non_exhaustive()
    }
}

/// What one routed call sends.
enum Op<'a> {
    Eval(&'a ScriptCall<'a>),
    EvalWait(&'a ScriptCall<'a>, u32, Duration),
    /// Replica sync by the replicas connected now (`lock_redis::replicas`).
    EvalSynced(&'a ScriptCall<'a>, Duration),
}

impl Op<'_> {
    fn call(&self) -> &ScriptCall<'_> {
        match self {
            Op::Eval(call) | Op::EvalWait(call, _, _) | Op::EvalSynced(call, _) => call,
        }
    }
}

impl ClusterTransport {
    /// Connects: validates `config`, reads the slot map from the seeds,
    /// picks the pub/sub mode and starts the pub/sub side. Must be called
    /// inside a tokio runtime. With
    /// [`lazy_connect`](lock_redis::ConnectionOptions#structfield.lazy_connect)
    /// only the pub/sub side is started: the slot map and the mode are
    /// read on first use (see the crate docs, "Lazy start").
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for a bad configuration (before any
    /// I/O); unless lazy, [`LockError::Unauthorized`] for rejected
    /// credentials, and a retryable error when no seed answered within the
    /// command timeout, or the cluster does not serve every slot.
    ///
    /// # Cancel safety
    /// Dropping the future drops what it opened.
    pub async fn connect(config: ClusterConfig) -> Result<Self> {
        config.validate()?;
        let seeds = config
            .seeds
            .iter()
            .map(|url| Nodes::seed_addr(&config, url))
            .collect::<Result<Vec<_>>>()?;
        let inner = Arc::new(Inner {
            nodes: Nodes::new(&config)?,
            topology: Topology::new(seeds, config.connection.command_timeout),
            config: config.clone(),
            started: OnceCell::new(),
            undecided_handed_out: AtomicBool::new(false),
        });
        if !config.connection.lazy_connect {
            let deadline = Instant::now() + config.connection.command_timeout;
            let sharded = inner.start(deadline).await?;
            if !inner.topology.map().is_complete() {
                return Err(LockError::unavailable(
                    "the cluster does not serve every hash slot (CLUSTERDOWN)",
                    None,
                ));
            }
            inner.check_commands(sharded, deadline).await?;
        }
        let pubsub = ShardPubSub::spawn(inner.clone())?;
        Ok(Self { inner, pubsub })
    }

    /// The slot map as last read or corrected by a redirect.
    pub fn slot_map(&self) -> Arc<SlotMap> {
        self.inner.topology.map()
    }

    /// Whether unlock notices use sharded pub/sub (`false` while a lazily
    /// connected transport has not learnt the mode yet).
    pub fn is_sharded(&self) -> bool {
        self.inner.sharded() == Some(true)
    }

    /// Sends `cmd` as it is to the master at `addr` (one of
    /// [`SlotMap::masters`] in [`ClusterTransport::slot_map`]), over that
    /// master's connections: no routing by slot, no redirect followed, no
    /// retry, within [`ClusterConfig::command_timeout`]. For tools that
    /// look at each master's own keyspace, such as a `SCAN` on every
    /// master to list the locks (`lockctl list`); locks themselves go
    /// through [`Transport::eval`], which routes and follows redirects.
    ///
    /// ```no_run
    /// # async fn demo(transport: lock_redis_cluster::ClusterTransport) -> lock_redis_cluster::Result<()> {
    /// for master in transport.slot_map().masters() {
    ///     let reply = transport
    ///         .query_master(master, redis::cmd("SCAN").arg(0).arg("COUNT").arg(100))
    ///         .await?;
    ///     # let _ = reply;
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`LockError::Closed`] after [`Connection::close`]; a protocol error
    /// for an `addr` that is not `host:port`; a retryable error when the
    /// master cannot be reached or does not answer in time; the server's
    /// error reply (as [`Transport::eval`] maps them).
    ///
    /// # Cancel safety
    /// Dropping the future may leave the command run or not.
    pub async fn query_master(&self, addr: &str, cmd: &redis::Cmd) -> Result<Value> {
        let deadline = Instant::now() + self.inner.config.connection.command_timeout;
        self.inner
            .nodes
            .query(&Addr::from(addr), cmd, deadline)
            .await
    }

    /// The one slot of all keys of `call`.
    fn slot_of(call: &ScriptCall<'_>) -> Result<u16> {
        let mut slots = call.keys.iter().map(|k| key_slot(k));
        let first = slots.next().ok_or_else(|| {
            LockError::invalid("a script call without keys cannot be routed in a cluster")
        })?;
        if slots.any(|s| s != first) {
            return Err(LockError::invalid(format!(
                "the keys of {:?} fall in different hash slots; a lock name with braces must put its hash tag first, as in \"{{tag}}rest\" (see the crate docs)",
                call.first_key()
            )));
        }
        Ok(first)
    }
}

impl Inner {
    /// Whether the cluster runs Redis 7 or newer, by the `INFO` of every
    /// master that answers (all asked at once, each for a third of the
    /// command timeout at most): a master that is down while we connect
    /// must not keep us from starting, since its replica will take over.
    /// Only when no master answers are the seeds asked instead (a replica
    /// runs its master's version, as a cluster is upgraded node by node).
    ///
    /// # Errors
    /// The last node's error when no master and no seed answered.
    pub(crate) async fn all_masters_at_least_7(
        &self,
        map: &SlotMap,
        deadline: Instant,
    ) -> Result<bool> {
        let by = deadline.min(Instant::now() + self.config.connection.command_timeout / 3);
        let mut majors = self.major_versions(map.masters(), by).await;
        if !majors.iter().any(Result::is_ok) {
            let by = deadline.min(Instant::now() + self.config.connection.command_timeout / 3);
            majors = self.major_versions(self.topology.seeds(), by).await;
        }
        let mut last_error = None;
        let mut answered = false;
        for major in majors {
            match major {
                Ok(major) if major < 7 => return Ok(false),
                Ok(_) => answered = true,
                Err(e) => {
                    tracing::debug!(error = %e, "a cluster node did not tell its version");
                    last_error = Some(e);
                }
            }
        }
        match (answered, last_error) {
            (false, Some(e)) => Err(e),
            _ => Ok(true),
        }
    }

    /// The major Redis version of each of `addrs`, asked at once, by `by`.
    async fn major_versions(&self, addrs: &[Addr], by: Instant) -> Vec<Result<u32>> {
        future::join_all(addrs.iter().map(|addr| async move {
            let info = self
                .nodes
                .query(addr, redis::cmd("INFO").arg("server"), by)
                .await?;
            let text = match &info {
                Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                Value::VerbatimString { text, .. } => text.clone(),
                other => return Err(LockError::protocol(format!("INFO reply {other:?}"))),
            };
            Ok(text
                .lines()
                .find_map(|l| l.strip_prefix("redis_version:"))
                .and_then(|v| v.split('.').next()?.trim().parse::<u32>().ok())
                .unwrap_or(0))
        }))
        .await
    }

    /// Refreshes the topology in the background (after a failure that
    /// suggests it changed), without making the caller wait.
    pub(crate) fn refresh_soon(self: &Arc<Self>) {
        let inner = self.clone();
        tokio::spawn(async move {
            let seen = inner.topology.rounds();
            let deadline = Instant::now() + inner.config.connection.command_timeout;
            if let Err(e) = inner.topology.refresh(&inner.nodes, seen, deadline).await {
                tracing::debug!(error = %e, "background cluster topology refresh failed");
            }
        });
    }

    /// Runs `op` on the master of `slot`, following redirects (at most
    /// `max_redirects`) and waiting out `TRYAGAIN`, `CLUSTERDOWN` and
    /// unreachable masters until `deadline`.
    async fn route(
        self: &Arc<Self>,
        slot: u16,
        op: &Op<'_>,
        first_key: &str,
        deadline: Instant,
    ) -> Result<(Value, Option<ReplicaAcks>)> {
        let mut redirects = 0;
        let mut ask: Option<Addr> = None;
        let mut backoff = RETRY_BACKOFF;
        let mut last_error: Option<LockError> = None;
        let mut resend_broken = true;
        loop {
            if self.nodes.is_closed() {
                return Err(LockError::Closed);
            }
            let (addr, asking) = match ask.take() {
                Some(addr) => (addr, true),
                None => match self.topology.map().master_addr(slot) {
                    Some(addr) => (addr, false),
                    None => {
                        let seen = self.topology.rounds();
                        if let Err(e) = self.topology.refresh(&self.nodes, seen, deadline).await {
                            return Err(last_error.unwrap_or(e));
                        }
                        if self.topology.map().master_addr(slot).is_none() {
                            last_error = Some(LockError::unavailable(
                                format!("no master serves slot {slot} (CLUSTERDOWN)"),
                                None,
                            ));
                            self.pause(&mut backoff, deadline).await?;
                        }
                        continue;
                    }
                },
            };
            let set = self.nodes.get(&addr)?;
            let seen = self.topology.rounds();
            // `WAIT` blocks its connection: never one other calls share
            // (renewals above all; issue 37).
            let (plan, waits) = match op {
                Op::Eval(_) => (replicas::Plan::Alone, false),
                Op::EvalWait(..) => (replicas::Plan::Alone, true),
                Op::EvalSynced(..) => {
                    let plan = replicas::resolve(&set, deadline).await;
                    (plan, plan.waits())
                }
            };
            let got = if waits {
                set.get_for_wait(deadline).await
            } else {
                set.get(deadline).await
            };
            let mut lease = match got {
                Ok(lease) => lease,
                // Nothing was sent: the master is down or unreachable. Wait
                // for the cluster to promote a replica (or for the node to
                // come back) until the deadline.
                Err(e) if e.is_retryable() && !e.is_timeout() => {
                    tracing::debug!(%addr, error = %e, "cluster master unreachable");
                    last_error = Some(e);
                    let _ = self.topology.refresh(&self.nodes, seen, deadline).await;
                    self.pause(&mut backoff, deadline)
                        .await
                        .map_err(|t| last_error.take().unwrap_or(t))?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let extra = match op {
                Op::EvalWait(_, _, timeout) => *timeout,
                Op::EvalSynced(_, timeout) if waits => *timeout,
                Op::EvalSynced(..) | Op::Eval(_) => Duration::ZERO,
            };
            let result =
                timeout_at(deadline + extra, send(lease.conn(), op, asking, plan, &set)).await;
            let err = match result {
                Ok(Ok(reply)) => return Ok(reply),
                Ok(Err(err)) => err,
                Err(_) => {
                    set.report_no_reply(&lease);
                    self.refresh_soon();
                    return Err(timed_out(
                        "cluster script call",
                        self.config.connection.command_timeout,
                    ));
                }
            };
            match next_step(&err) {
                Next::Moved { slot: moved, addr } => {
                    redirects += 1;
                    self.topology.moved(moved, &addr);
                    self.refresh_soon();
                    if redirects > self.config.max_redirects {
                        return Err(too_many_redirects(first_key, &err));
                    }
                }
                Next::Ask { addr } => {
                    redirects += 1;
                    if redirects > self.config.max_redirects {
                        return Err(too_many_redirects(first_key, &err));
                    }
                    ask = Some(Arc::from(addr));
                }
                Next::Retry { refresh } => {
                    last_error = Some(from_redis(&err, first_key));
                    if refresh {
                        let _ = self.topology.refresh(&self.nodes, seen, deadline).await;
                    }
                    self.pause(&mut backoff, deadline)
                        .await
                        .map_err(|t| last_error.take().unwrap_or(t))?;
                }
                Next::Broken => {
                    set.report(&lease, &err);
                    self.refresh_soon();
                    // Once per call: the first call on a connection to a
                    // master that just died fails this way, and the next
                    // attempt (a new connection) finds out whether it is
                    // down and waits for the failover. Only an idempotent
                    // call is sent again (its record answers a repeated
                    // acquire or release with the first outcome); any other
                    // may have run, and a second run would count twice.
                    if op.call().idempotent && std::mem::take(&mut resend_broken) {
                        last_error = Some(from_redis(&err, first_key));
                        continue;
                    }
                    return Err(from_redis(&err, first_key));
                }
                Next::Fail => return Err(from_redis(&err, first_key)),
            }
        }
    }

    /// Sleeps `backoff` (then doubles it), or fails when that would pass
    /// `deadline`.
    async fn pause(&self, backoff: &mut Duration, deadline: Instant) -> Result<()> {
        let until = Instant::now() + *backoff;
        if until >= deadline {
            return Err(LockError::timeout(format!(
                "the cluster did not recover within the command timeout of {:?}",
                self.config.connection.command_timeout
            )));
        }
        sleep_until(until).await;
        *backoff = (*backoff * 2).min(RETRY_BACKOFF_MAX);
        Ok(())
    }
}

fn too_many_redirects(first_key: &str, err: &redis::RedisError) -> LockError {
    LockError::unavailable(
        format!("{first_key:?}: more redirects than max_redirects allows (last: {err})"),
        None,
    )
}

/// Sends `op` on `conn` (a connection of `set`), after `ASKING` when
/// `asking`; loads the script on `NOSCRIPT` and sends once more. `plan`
/// is what `set` knows of its replicas, for [`Op::EvalSynced`].
async fn send(
    conn: &mut redis::aio::MultiplexedConnection,
    op: &Op<'_>,
    asking: bool,
    plan: replicas::Plan,
    set: &ConnectionSet,
) -> RedisResult<(Value, Option<ReplicaAcks>)> {
    let (call, wait) = match op {
        Op::Eval(call) => (*call, None),
        Op::EvalWait(call, replicas, timeout) => (*call, Some((*replicas, *timeout))),
        Op::EvalSynced(call, timeout) if !asking => {
            let synced = replicas::eval_synced(conn, call, plan, *timeout).await?;
            synced.record(set);
            let acks = ReplicaAcks::new(synced.acked, synced.connected);
            return Ok((synced.value, Some(acks)));
        }
        // A slot being migrated (rare, brief): the replicas known of the
        // importing node are waited for; when none are known yet, none.
        Op::EvalSynced(call, timeout) => match plan {
            replicas::Plan::Wait(n) => (*call, Some((n, *timeout))),
            _ => (*call, None),
        },
    };
    let acks = |acked: Option<u32>| acked.map(|a| ReplicaAcks::new(a, wait.map_or(0, |w| w.0)));
    if !asking {
        // The common case: exactly the single-node path.
        return match wait {
            None => scripts::eval(conn, call).await.map(|v| (v, None)),
            Some((replicas, timeout)) => scripts::eval_and_wait(conn, call, replicas, timeout)
                .await
                .map(|(v, acked)| (v, acks(Some(acked)))),
        };
    }
    let pipe = asking_pipeline(call, wait);
    let result = match query_asking(conn, &pipe, wait.is_some()).await {
        Err(e) if scripts::is_noscript(&e) => {
            scripts::load_for(conn, call).await?;
            query_asking(conn, &pipe, wait.is_some()).await
        }
        other => other,
    };
    result.map(|(v, acked)| (v, acks(acked)))
}

fn asking_pipeline(call: &ScriptCall<'_>, wait: Option<(u32, Duration)>) -> Pipeline {
    let mut pipe = Pipeline::new();
    pipe.cmd("ASKING").ignore();
    pipe.add_command(call.to_cmd());
    if let Some((replicas, timeout)) = wait {
        pipe.cmd("WAIT").arg(replicas).arg(
            u64::try_from(timeout.as_millis())
                .unwrap_or(u64::MAX)
                .max(1),
        );
    }
    pipe
}

async fn query_asking(
    conn: &mut redis::aio::MultiplexedConnection,
    pipe: &Pipeline,
    waits: bool,
) -> RedisResult<(Value, Option<u32>)> {
    if waits {
        let (value, acked): (Value, u32) = pipe.query_async(conn).await?;
        Ok((value, Some(acked)))
    } else {
        let (value,): (Value,) = pipe.query_async(conn).await?;
        Ok((value, None))
    }
}

impl ClusterTransport {
    /// The one routed call behind `eval`, `eval_and_wait` and
    /// `eval_synced`, which differ only in what `op` makes of the call:
    /// routed by its slot within the command timeout, in the pub/sub mode
    /// the cluster was found to support.
    async fn route_one<'a>(
        &self,
        call: ScriptCall<'a>,
        op: impl for<'c> FnOnce(&'c ScriptCall<'a>) -> Op<'c>,
    ) -> Result<(Value, Option<ReplicaAcks>)> {
        let slot = Self::slot_of(&call)?;
        let deadline = Instant::now() + self.inner.config.connection.command_timeout;
        let sharded = self.inner.start(deadline).await?;
        let call = self.inner.decided(call, sharded);
        self.inner
            .route(slot, &op(&call), call.first_key(), deadline)
            .await
    }
}

#[async_trait]
impl Transport for ClusterTransport {
    async fn eval(&self, call: ScriptCall<'_>) -> Result<Value> {
        let (value, _) = self.route_one(call, |call| Op::Eval(call)).await?;
        Ok(value)
    }

    async fn eval_and_wait(
        &self,
        call: ScriptCall<'_>,
        replicas: u32,
        timeout: Duration,
    ) -> Result<(Value, u32)> {
        let (value, acks) = self
            .route_one(call, |call| Op::EvalWait(call, replicas, timeout))
            .await?;
        Ok((value, acks.map_or(0, |a| a.acked)))
    }

    async fn eval_synced(
        &self,
        call: ScriptCall<'_>,
        timeout: Duration,
    ) -> Result<(Value, ReplicaAcks)> {
        let (value, acks) = self
            .route_one(call, |call| Op::EvalSynced(call, timeout))
            .await?;
        Ok((value, acks.unwrap_or_default()))
    }

    /// Groups the calls by master and pipelines each group on one of its
    /// connections, all groups at once. Calls answered with a redirect or a
    /// transient cluster state are then sent again one by one through the
    /// routing of [`Transport::eval`].
    async fn eval_batch(&self, calls: Vec<ScriptCall<'_>>) -> Result<Vec<Result<Value>>> {
        if self.inner.nodes.is_closed() {
            return Err(LockError::Closed);
        }
        let deadline = Instant::now() + self.inner.config.connection.command_timeout;
        let sharded = match self.inner.start(deadline).await {
            Ok(sharded) => sharded,
            Err(e) => return Ok(vec![Err(e); calls.len()]),
        };
        let calls: Vec<ScriptCall<'_>> = calls
            .into_iter()
            .map(|call| self.inner.decided(call, sharded))
            .collect();
        let map = self.inner.topology.map();
        let mut out: Vec<Option<Result<Value>>> = vec![None; calls.len()];
        let mut groups: HashMap<Addr, Vec<usize>> = HashMap::new();
        let mut reroute = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            match Self::slot_of(call) {
                Err(e) => out[i] = Some(Err(e)),
                Ok(slot) => match map.master_addr(slot) {
                    Some(addr) => groups.entry(addr).or_default().push(i),
                    None => reroute.push(i),
                },
            }
        }
        let sends = groups.into_iter().map(|(addr, members)| {
            let calls = &calls;
            let inner = &self.inner;
            async move {
                let group: Vec<ScriptCall<'_>> =
                    members.iter().map(|&i| calls[i].clone()).collect();
                let result = async {
                    let set = inner.nodes.get(&addr)?;
                    let mut lease = set.get(deadline).await?;
                    match timeout_at(deadline, scripts::eval_pipelined(lease.conn(), &group)).await
                    {
                        Ok(Ok(results)) => Ok(results),
                        Ok(Err(e)) => {
                            set.report(&lease, &e);
                            Err(e)
                        }
                        Err(_) => {
                            set.report_no_reply(&lease);
                            Err(redis::RedisError::from(std::io::Error::from(
                                std::io::ErrorKind::TimedOut,
                            )))
                        }
                    }
                    .map_err(|e| match next_step(&e) {
                        Next::Broken => {
                            inner.refresh_soon();
                            from_redis(&e, "")
                        }
                        _ => from_redis(&e, ""),
                    })
                }
                .await;
                (members, result)
            }
        });
        for (members, result) in future::join_all(sends).await {
            match result {
                Ok(results) => {
                    for (i, r) in members.into_iter().zip(results) {
                        match r {
                            Ok(v) => out[i] = Some(Ok(v)),
                            Err(e) => match next_step(&e) {
                                Next::Fail | Next::Broken => {
                                    out[i] = Some(Err(from_redis(&e, calls[i].first_key())));
                                }
                                Next::Moved { slot, addr } => {
                                    self.inner.topology.moved(slot, &addr);
                                    reroute.push(i);
                                }
                                Next::Ask { .. } | Next::Retry { .. } => reroute.push(i),
                            },
                        }
                    }
                }
                // Unreachable master: the per-call routing waits for a
                // failover, within what is left of the deadline.
                Err(e) if e.is_retryable() && !e.is_timeout() => reroute.extend(members),
                Err(e) => {
                    for i in members {
                        out[i] = Some(Err(e.clone()));
                    }
                }
            }
        }
        let rerouted = future::join_all(reroute.iter().map(|&i| {
            let call = &calls[i];
            async move {
                let slot = Self::slot_of(call)?;
                self.inner
                    .route(slot, &Op::Eval(call), call.first_key(), deadline)
                    .await
                    .map(|(v, _)| v)
            }
        }))
        .await;
        for (i, r) in reroute.into_iter().zip(rerouted) {
            out[i] = Some(r);
        }
        Ok(out
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(LockError::protocol("a batched call got no result"))))
            .collect())
    }

    fn key_group(&self, key: &str) -> u32 {
        u32::from(key_slot(key))
    }

    /// The master serving the slot, by address (not by its place in the
    /// map, which a refresh may change: a lane must keep its id while the
    /// same master serves it). Slots no master serves share one lane.
    fn lane(&self, key_group: u32) -> u64 {
        let map = self.inner.topology.map();
        match u16::try_from(key_group)
            .ok()
            .and_then(|slot| map.master(slot))
        {
            Some(addr) => {
                let mut hasher = std::hash::DefaultHasher::new();
                std::hash::Hash::hash(addr, &mut hasher);
                std::hash::Hasher::finish(&hasher)
            }
            None => u64::MAX,
        }
    }

    /// `SPUBLISH` or `PUBLISH` by the pub/sub mode; a placeholder that
    /// the transport replaces while the mode is not known yet (see the
    /// crate docs, "Lazy start").
    fn publish_command(&self) -> &'static str {
        self.inner.publish_command()
    }
}

/// The engine's half of the transport: the sharded pub/sub's notices,
/// and closing.
#[async_trait]
impl Connection for ClusterTransport {
    fn set_notice_sink(&self, sink: Arc<dyn NoticeSink>) {
        self.pubsub.set_notice_sink(sink);
    }

    fn subscribe(&self, channel: &Channel) -> BoxFuture<'static, Result<()>> {
        if self.inner.nodes.is_closed() {
            return future::ready(Err(LockError::Closed)).boxed();
        }
        self.pubsub.subscribe(channel)
    }

    fn unsubscribe(&self, channel: &Channel) {
        self.pubsub.unsubscribe(channel);
    }

    /// [`ClusterConfig::command_timeout`]: one call, its redirects and
    /// waits for a failover included, ends by then (a replica wait comes
    /// on top: [`lock_script::ScriptEnv::command_timeout`]).
    fn command_timeout(&self) -> Option<Duration> {
        Some(self.inner.config.connection.command_timeout)
    }

    /// Closes every node's connections and the subscriber connections.
    ///
    /// # Cancel safety
    /// The transport is marked closed before the first await.
    async fn close(&self) {
        self.inner.nodes.close();
        self.pubsub.close().await;
    }
}
