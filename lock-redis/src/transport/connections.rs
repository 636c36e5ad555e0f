//! A small, fixed set of multiplexed connections to one server: hands out a
//! healthy connection cheaply. A building block for transports, reached as
//! [`crate::transport::ConnectionSet`] (the cluster transport keeps one set
//! per node).
//!
//! # How it works
//! The set has [`ConnectionOptions::pool_size`](crate::ConnectionOptions::pool_size)
//! slots. Each call clones a slot's [`MultiplexedConnection`] (a handle:
//! many calls share one socket, their commands pipelined by the
//! connection's driver task). Nothing is sent to check a connection out; in
//! particular no `PING`, so an operation costs exactly its own round trip.
//!
//! # Fill, then spill
//! A call takes the first slot with fewer than
//! [`ConnectionOptions::calls_per_connection`](crate::ConnectionOptions::calls_per_connection)
//! calls in flight; only when every slot has that many are they taken
//! round-robin. Calls that share a connection share its writes, reads and
//! wake-ups (on the server's side too), so a connection is filled before
//! the next is used, up to the point where one connection's driver task
//! would become the bottleneck. A lightly used client thus keeps one
//! connection open, and a connection that stops answering stops getting
//! calls once it has that many of them waiting.
//!
//! # `WAIT` apart
//! A `WAIT` (replica sync) blocks its connection until the replicas
//! acknowledge or its timeout passes: Redis reads nothing more from that
//! client meanwhile. On a shared connection it would hold up every call
//! pipelined behind it, the watchdog's renewals on the first connection
//! above all (issue 37: with a replica that stopped acknowledging, held
//! locks expired while renewals sat behind seconds of `WAIT`s). So
//! acquisitions that wait for replicas take their connection with
//! [`ConnectionSet::get_for_wait`] from slots of their own (as many as
//! the ordinary ones, one `WAIT` each before the next is used), which no
//! other call uses: a `WAIT` delays only its own acquisition (and, with
//! more `WAIT`s in flight than such slots, the `WAIT`s queued behind it).
//! They are connected lazily like the others, so a client that never
//! waits for replicas never opens one.
//!
//! A slot is connected lazily, by the first call that finds it empty or
//! stale, within the connect timeout and the call's deadline. One task at a
//! time connects a slot; other calls for that slot wait for it (bounded by
//! their own deadlines) and then use its connection.
//!
//! # Health without round trips
//! A call that fails with an error meaning the connection is broken (I/O
//! error, connection dropped, refused or reset, an error redis-rs calls
//! unrecoverable, or no reply by the call's deadline) reports it with
//! [`ConnectionSet::report`] / [`ConnectionSet::report_no_reply`]:
//!
//! * the slot's connection is discarded, but only if it is still the one
//!   the call used: every connection a slot gets has a new *generation*, so
//!   a late report about an old connection leaves its replacement alone;
//! * the set-wide *epoch* moves past the epoch the broken connection was
//!   made in. Every connection remembers the epoch it was made in and is
//!   used only while that is still the current epoch, so all connections
//!   made before the failure was seen are replaced on their next use, not
//!   each after a failure of its own. After a server restart, about one
//!   call fails rather than one per slot. Reports about connections of an
//!   older epoch do not move it again, so a burst of failures of calls that
//!   were in flight does not throw away connections made after the first.
//!
//! A connect that is refused or reset retires the older connections in the
//! same way: the server went away, so they are most likely dead as well.
//!
//! Calls already running on a discarded connection finish on it; its socket
//! closes when the last of them drops its handle.
//!
//! # A failed reconnect is an outage
//! Once the set has made a connection, a connect that fails for any reason
//! (the credentials provider failing, `AUTH` refused, a TLS handshake
//! refused, as well as a refused or timed-out connect) is
//! [`LockError::Unavailable`], with the cause in its message and source:
//! the request never reached the server, so it is safe to retry, and what
//! the client is doing (a wait, a release, a permit given back, renewals)
//! must ride it out as it rides a server restart, not end or be lost over
//! a provider that fails for a moment or a token that rotated on the
//! server a moment before the provider's. A cause that persists shows as
//! an outage that does not end, its cause in the log (the waits' outage
//! warning, the background releases' warnings). Before the first
//! connection (a new client's connect, or a lazy one's first call) such a
//! refusal keeps its own error ([`LockError::Unauthorized`],
//! [`LockError::Tls`], ...): there the caller has a configuration to fix.
//!
//! # Following a Sentinel master
//! A set made for a Sentinel group asks the group's master for a client on
//! every connect (the master is cached until a failure). Broken
//! connections, failed connects and `READONLY` replies (a demoted master)
//! make it ask the sentinels again; each connection remembers the master
//! generation it was made for and is replaced once the master is found to
//! be another node.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use lock_core::{LockError, Result};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, RedisError};
use tokio::time::{timeout_at, Instant};

use crate::config::RedisConfig;
use crate::transport::sentinel::Endpoint;
use lock_script::error::{from_redis, timed_out};

/// `info` with `TCP_NODELAY` on (its other TCP settings kept), as Redisson
/// and most Redis clients set it. redis-rs leaves Nagle's algorithm on,
/// under which a request written while an earlier one on the same
/// multiplexed connection is still unacknowledged waits for that ACK (up
/// to the server's delayed-ACK timeout). Every connection the transports
/// make gets its client through here.
pub(crate) fn no_delay(info: redis::ConnectionInfo) -> redis::ConnectionInfo {
    let tcp = info.tcp_settings().clone().set_nodelay(true);
    info.set_tcp_settings(tcp)
}

/// A connection handed out by [`ConnectionSet::get`], with what is needed to
/// report it broken. It counts as a call in flight on its slot until
/// dropped.
pub struct Lease {
    conn: MultiplexedConnection,
    slot: usize,
    generation: u64,
    epoch: u64,
    in_flight: InFlight,
}

/// One call in flight on a slot, counted until dropped.
struct InFlight {
    count: Arc<AtomicUsize>,
    /// How many calls it counts as.
    weight: usize,
}

impl InFlight {
    fn start(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self {
            count: Arc::clone(count),
            weight: 1,
        }
    }

    /// Counts as `weight` calls from now on (never fewer than it does).
    fn weigh(&mut self, weight: usize) {
        if weight > self.weight {
            self.count
                .fetch_add(weight - self.weight, Ordering::Relaxed);
            self.weight = weight;
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.count.fetch_sub(self.weight, Ordering::Relaxed);
    }
}

impl Lease {
    /// The connection (a handle; cloning or dropping it is cheap).
    pub fn conn(&mut self) -> &mut MultiplexedConnection {
        &mut self.conn
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease")
            .field("slot", &self.slot)
            .field("generation", &self.generation)
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}

/// A fixed number of lazily made multiplexed connections; see the module
/// docs.
pub struct ConnectionSet {
    endpoint: Endpoint,
    config: AsyncConnectionConfig,
    connect_timeout: Duration,
    command_timeout: Duration,
    /// The ordinary slots (`..pool`), then as many for `WAIT`s
    /// (`pool..`); see the module docs.
    slots: Box<[Slot]>,
    /// How many ordinary slots (and how many for `WAIT`s) there are.
    pool: usize,
    /// Calls on one connection before the next slot is used.
    spill_at: usize,
    /// The next slot when every slot has `spill_at` calls in flight.
    next: AtomicUsize,
    /// The next `WAIT` slot when every one has a call in flight.
    next_wait: AtomicUsize,
    /// What this server said last about its connected replicas.
    replicas: Mutex<Option<KnownReplicas>>,
    epoch: AtomicU64,
    closed: AtomicBool,
    /// Whether a connection was ever made (by this set, or by another of
    /// the same client sharing the flag): see the module docs.
    established: Arc<AtomicBool>,
}

struct Slot {
    /// Calls holding a lease of this slot.
    in_flight: Arc<AtomicUsize>,
    state: Mutex<SlotState>,
    /// Held by the one task connecting this slot.
    connecting: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct SlotState {
    live: Option<Live>,
    /// The generation of the newest connection this slot had.
    generation: u64,
}

struct Live {
    conn: MultiplexedConnection,
    generation: u64,
    epoch: u64,
    /// The endpoint's generation (which master) it was made for.
    master: u64,
}

/// How long a replica count read from `INFO replication` is used before
/// the server is asked again: 1 s. A replica that connects is waited for
/// from at most this long after; a master without replicas pays one `INFO`
/// (pipelined with an acquisition, no round trip of its own) per second.
pub const REPLICAS_FRESH_FOR: Duration = Duration::from_secs(1);

/// A server's connected replicas as it last said.
struct KnownReplicas {
    count: u32,
    at: Instant,
    /// The endpoint's generation and the set's epoch it was said in: a
    /// failover or a reconnect makes it stale.
    master: u64,
    epoch: u64,
}

impl Slot {
    fn state(&self) -> MutexGuard<'_, SlotState> {
        // Nothing panics while the lock is held; never give up on a slot.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ConnectionSet {
    /// A set of [`crate::ConnectionOptions::pool_size`] (at least 1;
    /// one server's default when none is set) slots, none
    /// connected yet. Connections to `client` are made within the connect
    /// timeout, with credentials from the configuration's provider when it
    /// has one (asked at every connect); the command timeout only names
    /// the limit in timeout errors (callers pass deadlines).
    ///
    /// The connections have no response timeout of their own: every caller
    /// bounds its whole call (several commands, on `NOSCRIPT`) by its
    /// deadline, so a second timer per command would only cost time.
    pub fn new(client: Client, config: &RedisConfig) -> Self {
        Self::to_endpoint(
            Endpoint::fixed(client, config.connection.credentials.clone()),
            config,
        )
    }

    /// A set like [`ConnectionSet::new`] whose connections go to `endpoint`
    /// (a fixed server or a Sentinel group's master).
    pub(crate) fn to_endpoint(endpoint: Endpoint, config: &RedisConfig) -> Self {
        let connection_config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(config.connection.connect_timeout))
            .set_response_timeout(None);
        let pool = config
            .connection
            .pool_size_or(crate::DEFAULT_POOL_SIZE)
            .max(1);
        let slots = (0..2 * pool)
            .map(|_| Slot {
                in_flight: Arc::default(),
                state: Mutex::new(SlotState::default()),
                connecting: tokio::sync::Mutex::new(()),
            })
            .collect();
        Self {
            endpoint,
            config: connection_config,
            connect_timeout: config.connection.connect_timeout,
            command_timeout: config.connection.command_timeout,
            slots,
            pool,
            spill_at: config.connection.calls_per_connection,
            next: AtomicUsize::new(0),
            next_wait: AtomicUsize::new(0),
            replicas: Mutex::new(None),
            epoch: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            established: Arc::default(),
        }
    }

    /// This set, counting as established (a failed connect is then
    /// [`LockError::Unavailable`], see the module docs) once `established`
    /// is set, which it sets when it connects. A transport of several sets
    /// (the cluster's, one per node) gives all of them one flag, so a node
    /// first reached after the client connected is treated as the client
    /// is.
    #[must_use]
    pub fn sharing_established(mut self, established: Arc<AtomicBool>) -> Self {
        self.established = established;
        self
    }

    /// Whether [`ConnectionSet::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// A connection of the first slot with room for another call (see the
    /// module docs), connecting it first if it has none or only a stale
    /// one.
    ///
    /// # Errors
    /// [`LockError::Closed`] after [`ConnectionSet::close`]; a retryable
    /// timeout when `deadline` passes while waiting for the slot or
    /// connecting; the mapped connect error (refused: retryable; rejected
    /// credentials: invalid argument).
    ///
    /// # Cancel safety
    /// Safe to drop: a half-made connection is dropped, and another caller
    /// then connects the slot.
    pub async fn get(&self, deadline: Instant) -> Result<Lease> {
        self.get_slot(self.pick(), deadline).await
    }

    /// A connection for pipelined batches (the watchdog's renewals),
    /// always of the first slot: a connection keeps the buffers its biggest
    /// message and reply took, so batches spread over the pool would make
    /// every connection keep a batch's worth (issue 15, W4: ~50 B per held
    /// lock at 10 000 locks with 4 connections). While the batch is in
    /// flight the slot counts as full, so calls made meanwhile go to the
    /// next slot instead of waiting behind thousands of scripts.
    ///
    /// # Errors
    /// As [`ConnectionSet::get`].
    ///
    /// # Cancel safety
    /// As [`ConnectionSet::get`].
    pub async fn get_for_batch(&self, deadline: Instant) -> Result<Lease> {
        let mut lease = self.get_slot(0, deadline).await?;
        lease.in_flight.weigh(self.spill_at);
        Ok(lease)
    }

    /// A connection for a call that ends in `WAIT`, from the slots no
    /// other call uses (see the module docs): the first with no call in
    /// flight, else the next round-robin.
    ///
    /// # Errors
    /// As [`ConnectionSet::get`].
    ///
    /// # Cancel safety
    /// As [`ConnectionSet::get`].
    pub async fn get_for_wait(&self, deadline: Instant) -> Result<Lease> {
        let waits = &self.slots[self.pool..];
        let index = waits
            .iter()
            .position(|slot| slot.in_flight.load(Ordering::Relaxed) == 0)
            .unwrap_or_else(|| self.next_wait.fetch_add(1, Ordering::Relaxed) % self.pool);
        self.get_slot(self.pool + index, deadline).await
    }

    /// The first ordinary slot with fewer than `spill_at` calls in flight,
    /// else the next round-robin (always, when `spill_at` is 0). Concurrent
    /// callers may read the same counts and overfill a slot by a few
    /// calls: harmless, and no lock is taken.
    fn pick(&self) -> usize {
        self.slots[..self.pool]
            .iter()
            .position(|slot| slot.in_flight.load(Ordering::Relaxed) < self.spill_at)
            .unwrap_or_else(|| self.next.fetch_add(1, Ordering::Relaxed) % self.pool)
    }

    /// How many replicas this server had connected when last asked (by
    /// the master and the connections of now), and whether that is recent
    /// (within [`REPLICAS_FRESH_FOR`]); `None` when never asked, or asked
    /// of another master or over connections replaced since (see
    /// [`crate::transport::replicas`]).
    pub fn known_replicas(&self) -> (Option<u32>, bool) {
        let known = self.replicas.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(known) = known.as_ref() else {
            return (None, false);
        };
        if known.master != self.endpoint.generation()
            || known.epoch != self.epoch.load(Ordering::Acquire)
        {
            return (None, false);
        }
        (Some(known.count), known.at.elapsed() < REPLICAS_FRESH_FOR)
    }

    /// Remembers that the server has `count` replicas connected (from its
    /// `INFO replication`), for [`REPLICAS_FRESH_FOR`].
    pub fn learn_replicas(&self, count: u32) {
        *self.replicas.lock().unwrap_or_else(PoisonError::into_inner) = Some(KnownReplicas {
            count,
            at: Instant::now(),
            master: self.endpoint.generation(),
            epoch: self.epoch.load(Ordering::Acquire),
        });
    }

    /// Makes the replica count stale (kept, but asked again by the next
    /// acquisition): a `WAIT` was acknowledged by another number of
    /// replicas than it named (as in Redisson).
    pub fn forget_replicas(&self) {
        let mut known = self.replicas.lock().unwrap_or_else(PoisonError::into_inner);
        match (
            known.as_mut(),
            Instant::now().checked_sub(REPLICAS_FRESH_FOR),
        ) {
            (Some(known), Some(long_ago)) => known.at = long_ago,
            // A clock younger than the freshness: forgetting it all is as good.
            _ => *known = None,
        }
    }

    async fn get_slot(&self, index: usize, deadline: Instant) -> Result<Lease> {
        if self.is_closed() {
            return Err(LockError::Closed);
        }
        if let Some(lease) = self.current(index) {
            return Ok(lease);
        }
        // Boxed: connecting (a Sentinel query, a TCP and TLS handshake) is
        // a future of kilobytes, and inline it would make every store
        // call's future that big, connected or not (every script call's
        // was 2.6 KB, one allocation past the allocator's small sizes).
        Box::pin(self.connect_slot(index, deadline)).await
    }

    /// [`ConnectionSet::get_slot`] for a slot with no current connection:
    /// waits for the slot's gate, then connects it unless whoever held the
    /// gate before did.
    async fn connect_slot(&self, index: usize, deadline: Instant) -> Result<Lease> {
        let slot = &self.slots[index];
        let Ok(_connecting) = timeout_at(deadline, slot.connecting.lock()).await else {
            return Err(self.checkout_timed_out());
        };
        // Whoever held the gate before us may have connected the slot.
        if let Some(lease) = self.current(index) {
            return Ok(lease);
        }
        // Read before connecting: should a failure be reported meanwhile,
        // the new connection counts as made before it (one reconnect too
        // many at worst, never a broken connection kept).
        let epoch = self.epoch.load(Ordering::Acquire);
        let connect_by = deadline.min(Instant::now() + self.connect_timeout);
        let (client, master) = match self.endpoint.client(connect_by).await {
            Ok(found) => found,
            Err(e) if e.is_timeout() && connect_by >= deadline => {
                return Err(self.checkout_timed_out());
            }
            Err(e) => return Err(self.connect_failed(e)),
        };
        let conn = match timeout_at(
            connect_by,
            client.get_multiplexed_async_connection_with_config(&self.config),
        )
        .await
        {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => {
                tracing::debug!(slot = index, error = %e, "cannot connect to redis");
                // Refused or reset: the server went away, so the
                // connections made before are most likely dead too. (A slow
                // or rejected connect says nothing about them; they report
                // their own failures.)
                if e.is_connection_refusal() || e.is_connection_dropped() {
                    self.retire_up_to(epoch);
                }
                self.endpoint.invalidate();
                return Err(self.connect_failed(from_redis(&e, "")));
            }
            Err(_) if connect_by < deadline => {
                self.endpoint.invalidate();
                return Err(timed_out("connecting", self.connect_timeout));
            }
            Err(_) => return Err(self.checkout_timed_out()),
        };
        self.install(index, conn, epoch, master)
    }

    /// Reports that a call on `lease` failed with `err`. Discards the
    /// connection (see the module docs) when `err` means it is broken;
    /// other errors (error replies of the server) leave it in use.
    pub fn report(&self, lease: &Lease, err: &RedisError) {
        if is_broken(err) {
            tracing::debug!(slot = lease.slot, error = %err, "redis connection broken");
            self.discard(lease);
            self.endpoint.invalidate();
        } else if self.endpoint.follows_failovers() && err.code() == Some("READONLY") {
            // The node was demoted: every connection to it is wrong now.
            tracing::info!(
                slot = lease.slot,
                "redis answered READONLY; asking the sentinels for the master"
            );
            self.discard(lease);
            self.endpoint.invalidate();
        }
    }

    /// Reports that a call on `lease` got no reply by its deadline: the
    /// connection is treated as broken.
    pub fn report_no_reply(&self, lease: &Lease) {
        tracing::debug!(slot = lease.slot, "no reply from redis in time");
        if lease.slot >= self.pool {
            // A `WAIT` queued behind others on its connection runs out of
            // time when replicas do not acknowledge: that says nothing of
            // the server, so only this connection is replaced (its
            // `WAIT`s dropped with it), not every connection of the set.
            self.drop_slot(lease);
            return;
        }
        self.discard(lease);
        self.endpoint.invalidate();
    }

    /// Drops every connection; later [`ConnectionSet::get`] calls fail with
    /// [`LockError::Closed`]. Calls in flight finish on the connections they
    /// hold.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.endpoint.close();
        for slot in self.slots.iter() {
            slot.state().live = None;
        }
    }

    /// The slot's connection, if it has one made in the current epoch, to
    /// the current master.
    fn current(&self, index: usize) -> Option<Lease> {
        let epoch = self.epoch.load(Ordering::Acquire);
        let master = self.endpoint.generation();
        let slot = &self.slots[index];
        let state = slot.state();
        let live = state
            .live
            .as_ref()
            .filter(|live| live.epoch >= epoch && live.master == master)?;
        Some(Lease {
            conn: live.conn.clone(),
            slot: index,
            generation: live.generation,
            epoch: live.epoch,
            in_flight: InFlight::start(&slot.in_flight),
        })
    }

    fn install(
        &self,
        index: usize,
        conn: MultiplexedConnection,
        epoch: u64,
        master: u64,
    ) -> Result<Lease> {
        let slot = &self.slots[index];
        let mut state = slot.state();
        // Checked under the slot lock, so `close` cannot miss this one.
        if self.is_closed() {
            return Err(LockError::Closed);
        }
        self.established.store(true, Ordering::Release);
        state.generation += 1;
        let generation = state.generation;
        state.live = Some(Live {
            conn: conn.clone(),
            generation,
            epoch,
            master,
        });
        Ok(Lease {
            conn,
            slot: index,
            generation,
            epoch,
            in_flight: InFlight::start(&slot.in_flight),
        })
    }

    fn discard(&self, lease: &Lease) {
        self.retire_up_to(lease.epoch);
        self.drop_slot(lease);
    }

    /// Drops the slot's connection if it is still the one `lease` used.
    fn drop_slot(&self, lease: &Lease) {
        let mut state = self.slots[lease.slot].state();
        if state
            .live
            .as_ref()
            .is_some_and(|live| live.generation == lease.generation)
        {
            state.live = None;
        }
    }

    /// Makes every connection made in `epoch` or before stale.
    fn retire_up_to(&self, epoch: u64) {
        self.epoch.fetch_max(epoch + 1, Ordering::AcqRel);
    }

    /// The error of a connect that failed with `error`: on an established
    /// set, a refusal that would not be retried (credentials, TLS, a
    /// provider's bad answer) is [`LockError::Unavailable`] with `error`
    /// as its source (see the module docs).
    fn connect_failed(&self, error: LockError) -> LockError {
        if error.is_retryable() || error.is_closed() || !self.established.load(Ordering::Acquire) {
            return error;
        }
        tracing::debug!(%error, "reconnecting to redis failed; retried as an outage");
        LockError::unavailable(
            format!("reconnecting to redis failed: {error}"),
            Some(Arc::new(error)),
        )
    }

    fn checkout_timed_out(&self) -> LockError {
        LockError::timeout(format!(
            "timed out: no redis connection within the command timeout of {:?}",
            self.command_timeout
        ))
    }
}

/// Whether `err` means the connection it came from is unusable.
fn is_broken(err: &RedisError) -> bool {
    err.is_io_error()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || err.is_timeout()
        || err.is_unrecoverable_error()
}

impl fmt::Debug for ConnectionSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let epoch = self.epoch.load(Ordering::Relaxed);
        let connected = self
            .slots
            .iter()
            .filter(|slot| {
                slot.state()
                    .live
                    .as_ref()
                    .is_some_and(|live| live.epoch >= epoch)
            })
            .count();
        f.debug_struct("ConnectionSet")
            .field("size", &self.pool)
            .field("connected", &connected)
            .field("epoch", &epoch)
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lock_testkit::fixtures::RedisServer;
    use std::io;

    fn config(server: &RedisServer, size: usize) -> RedisConfig {
        RedisConfig::new(server.url())
            .pool_size(size)
            .command_timeout(Duration::from_secs(2))
            .connect_timeout(Duration::from_secs(2))
    }

    /// A set whose slots take one call each before the next is used, so
    /// that calls held at once go to slots 0, 1, 2, ….
    fn set(server: &RedisServer, size: usize) -> ConnectionSet {
        ConnectionSet::new(
            server.client(),
            &config(server, size).calls_per_connection(1),
        )
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(2)
    }

    fn broken() -> RedisError {
        RedisError::from(io::Error::from(io::ErrorKind::BrokenPipe))
    }

    /// `n` leases taken one after another and held together.
    async fn hold(set: &ConnectionSet, n: usize) -> Vec<Lease> {
        let mut held = Vec::new();
        for _ in 0..n {
            held.push(set.get(soon()).await.unwrap());
        }
        held
    }

    /// `(slot, generation, epoch)` of the next `n` leases, held together.
    async fn next_leases(set: &ConnectionSet, n: usize) -> Vec<(usize, u64, u64)> {
        hold(set, n)
            .await
            .iter()
            .map(|lease| (lease.slot, lease.generation, lease.epoch))
            .collect()
    }

    #[tokio::test]
    async fn full_slots_spill_in_order_then_round_robin_and_connect_once() {
        let server = RedisServer::start();
        let set = set(&server, 3);
        let first = next_leases(&set, 3).await;
        assert_eq!(first, [(0, 1, 0), (1, 1, 0), (2, 1, 0)]);
        let twice = next_leases(&set, 6).await;
        assert_eq!(twice[..3], first);
        assert_eq!(twice[3..], first, "all full: round-robin");
    }

    /// The default threshold: a connection takes 8 calls before
    /// the next is opened, and calls go back to the first once it has
    /// room again, so a lightly used client keeps one connection.
    #[tokio::test]
    async fn calls_fill_the_first_connection_before_the_next_is_opened() {
        let server = RedisServer::start();
        let set = ConnectionSet::new(server.client(), &config(&server, 4));
        let mut held = hold(&set, crate::DEFAULT_CALLS_PER_CONNECTION).await;
        assert!(held.iter().all(|lease| lease.slot == 0));
        let spilled = set.get(soon()).await.unwrap();
        assert_eq!(spilled.slot, 1);
        held.pop();
        assert_eq!(set.get(soon()).await.unwrap().slot, 0, "room again");
        drop((held, spilled));
        assert_eq!(next_leases(&set, 1).await, [(0, 1, 0)]);
        assert!(format!("{set:?}").contains("connected: 2"), "{set:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_task_connects_a_slot_and_the_others_share_it() {
        let server = RedisServer::start();
        let set = std::sync::Arc::new(set(&server, 1));
        let tasks: Vec<_> = (0..20)
            .map(|_| {
                let set = set.clone();
                tokio::spawn(async move { set.get(soon()).await.unwrap().generation })
            })
            .collect();
        for task in tasks {
            assert_eq!(task.await.unwrap(), 1);
        }
    }

    /// A batch on the first slot fills it: calls made meanwhile do not
    /// queue behind it.
    #[tokio::test]
    async fn calls_made_during_a_batch_go_to_the_next_slot() {
        let server = RedisServer::start();
        let set = ConnectionSet::new(server.client(), &config(&server, 2));
        let batch = set.get_for_batch(soon()).await.unwrap();
        assert_eq!(batch.slot, 0);
        assert_eq!(next_leases(&set, 2).await, [(1, 1, 0), (1, 1, 0)]);
        drop(batch);
        assert_eq!(next_leases(&set, 1).await, [(0, 1, 0)]);
    }

    /// `WAIT`s take slots of their own, one call each, and no ordinary
    /// call lands there; a `WAIT` that ran out of time replaces its own
    /// connection only.
    #[tokio::test]
    async fn waits_have_slots_of_their_own() {
        let server = RedisServer::start();
        let set = ConnectionSet::new(server.client(), &config(&server, 2));
        let first = set.get_for_wait(soon()).await.unwrap();
        let second = set.get_for_wait(soon()).await.unwrap();
        assert_eq!((first.slot, second.slot), (2, 3));
        let third = set.get_for_wait(soon()).await.unwrap();
        assert!(third.slot >= 2, "all busy: round-robin among WAIT slots");
        assert_eq!(next_leases(&set, 2).await, [(0, 1, 0), (0, 1, 0)]);
        set.report_no_reply(&first);
        assert_eq!(next_leases(&set, 1).await, [(0, 1, 0)], "epoch kept");
        drop((first, second, third));
        let again = set.get_for_wait(soon()).await.unwrap();
        assert_eq!((again.slot, again.generation, again.epoch), (2, 2, 0));
    }

    #[tokio::test]
    async fn error_replies_keep_the_connection() {
        let server = RedisServer::start();
        let set = set(&server, 1);
        let lease = set.get(soon()).await.unwrap();
        set.report(
            &lease,
            &redis::make_extension_error("WRONGTYPE".into(), None),
        );
        assert_eq!(next_leases(&set, 1).await, [(0, 1, 0)]);
    }

    #[tokio::test]
    async fn a_late_report_leaves_the_replacement_alone() {
        let server = RedisServer::start();
        let set = set(&server, 1);
        let old = set.get(soon()).await.unwrap();
        set.report(&old, &broken());
        assert_eq!(next_leases(&set, 1).await, [(0, 2, 1)]);
        // Another call that was in flight on the old connection fails late.
        set.report(&old, &broken());
        set.report_no_reply(&old);
        assert_eq!(next_leases(&set, 2).await, [(0, 2, 1), (0, 2, 1)]);
    }

    #[tokio::test]
    async fn one_broken_connection_retires_every_older_one() {
        let server = RedisServer::start();
        let set = set(&server, 4);
        let leases = next_leases(&set, 4).await;
        assert!(leases.iter().all(|&(_, generation, _)| generation == 1));
        let broken_lease = set.get(soon()).await.unwrap();
        set.report_no_reply(&broken_lease);
        // Every slot reconnects once, in the new epoch, and stays.
        let after = next_leases(&set, 8).await;
        assert!(after.iter().all(|&(_, g, e)| g == 2 && e == 1), "{after:?}");
        // A burst of reports about connections of the old epoch changes
        // nothing.
        set.report(&broken_lease, &broken());
        let again = next_leases(&set, 4).await;
        assert!(again.iter().all(|&(_, g, e)| g == 2 && e == 1), "{again:?}");
    }

    #[tokio::test]
    async fn a_failed_connect_leaves_the_slot_for_the_next_call() {
        let mut server = RedisServer::start();
        let set = set(&server, 1);
        server.kill();
        let err = set.get(soon()).await.unwrap_err();
        assert!(err.is_retryable(), "{err:?}");
        server.restart();
        // The refusal moved the epoch; the slot's first connection is made
        // in the new one.
        assert_eq!(next_leases(&set, 1).await, [(0, 1, 1)]);
    }

    #[tokio::test]
    async fn a_refused_connect_retires_every_older_connection() {
        let mut server = RedisServer::start();
        let set = set(&server, 3);
        let held = hold(&set, 2).await;
        let seen: Vec<_> = held
            .iter()
            .map(|l| (l.slot, l.generation, l.epoch))
            .collect();
        assert_eq!(seen, [(0, 1, 0), (1, 1, 0)]);
        server.kill();
        // Slots 0 and 1 are busy and slot 2 has no connection yet:
        // connecting is refused.
        let err = set.get(soon()).await.unwrap_err();
        assert!(err.is_retryable(), "{err:?}");
        drop(held);
        server.restart();
        // Slots 0 and 1 do not hand out their dead connections.
        assert_eq!(
            next_leases(&set, 3).await,
            [(0, 2, 1), (1, 2, 1), (2, 1, 1)]
        );
    }

    #[tokio::test]
    async fn closed_sets_hand_out_nothing() {
        let server = RedisServer::start();
        let set = set(&server, 2);
        let lease = set.get(soon()).await.unwrap();
        set.close();
        assert!(matches!(set.get(soon()).await, Err(LockError::Closed)));
        // Reports after close are harmless.
        set.report(&lease, &broken());
        assert!(set.is_closed());
    }

    #[tokio::test]
    async fn waiting_for_a_frozen_server_ends_at_the_deadline() {
        let server = RedisServer::start();
        let set = set(&server, 1);
        server.pause();
        let started = Instant::now();
        let err = set
            .get(Instant::now() + Duration::from_millis(300))
            .await
            .unwrap_err();
        server.resume();
        assert!(err.is_timeout(), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    /// A Sentinel master answering `READONLY` was demoted: its connection
    /// is dropped and the sentinels are asked again (here they name no
    /// master until it is promoted back), where a fixed server's connection
    /// would be kept.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn readonly_from_a_sentinel_master_asks_the_sentinels_again() {
        use crate::transport::sentinel::{Master, SentinelConfig};
        use lock_testkit::fixtures::{SentinelGroup, SENTINEL_MASTER_NAME};

        let group = tokio::task::block_in_place(SentinelGroup::start_minimal);
        let other = RedisServer::start();
        let config = RedisConfig::new("")
            .pool_size(1)
            .command_timeout(Duration::from_secs(2))
            .connect_timeout(Duration::from_secs(2));
        let sentinel = SentinelConfig::new(group.sentinel_urls(), SENTINEL_MASTER_NAME);
        let master = Master::new(&sentinel, config.connection.connect_timeout, None).unwrap();
        let set = ConnectionSet::to_endpoint(Endpoint::sentinel(master), &config);
        assert_eq!(next_leases(&set, 1).await, [(0, 1, 0)]);

        // Demote the master behind the sentinels' back.
        let port = other.port().to_string();
        group.master().cmd(&["REPLICAOF", "127.0.0.1", &port]);
        let mut lease = set.get(soon()).await.unwrap();
        let err = redis::cmd("SET")
            .arg("k")
            .arg("v")
            .query_async::<()>(lease.conn())
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some("READONLY"), "{err:?}");
        set.report(&lease, &err);

        // The cached master is gone: the sentinels are asked, and the node
        // they name is not a master now.
        let err = set.get(soon()).await.unwrap_err();
        assert!(err.is_retryable(), "{err:?}");
        assert!(err.to_string().contains(SENTINEL_MASTER_NAME), "{err}");

        group.master().cmd(&["REPLICAOF", "NO", "ONE"]);
        let (slot, generation, _) = next_leases(&set, 1).await[0];
        assert_eq!((slot, generation), (0, 2), "a new connection to the master");
        set.close();
    }

    #[test]
    fn broken_means_the_connection_is_unusable() {
        for kind in [
            io::ErrorKind::BrokenPipe,
            io::ErrorKind::ConnectionReset,
            io::ErrorKind::ConnectionRefused,
            io::ErrorKind::ConnectionAborted,
            io::ErrorKind::UnexpectedEof,
            io::ErrorKind::TimedOut,
        ] {
            assert!(
                is_broken(&RedisError::from(io::Error::from(kind))),
                "{kind:?}"
            );
        }
        for code in ["WRONGTYPE", "NOSCRIPT", "BUSY", "LOADING", "ERR"] {
            let err = redis::make_extension_error(code.to_owned(), None);
            assert!(!is_broken(&err), "{code}");
        }
    }
}
