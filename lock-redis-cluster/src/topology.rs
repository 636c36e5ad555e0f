//! The slot map: which master serves each of the 16 384 slots, read with
//! `CLUSTER SLOTS` and kept current on redirects and failures.
//!
//! The map is published through a [`watch`] channel so the pub/sub side can
//! move subscriptions when slots move. Refreshes are single-flight and at
//! most one per 100 ms: during a failover every call fails
//! for a while, and they must not all ask every node for the map at once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use lock_core::{LockError, Result};
use redis::Value;
use tokio::sync::{watch, Mutex};
use tokio::time::{sleep, sleep_until, timeout_at, Instant};

use crate::nodes::Nodes;
use crate::slot::SLOTS;

/// At most one `CLUSTER SLOTS` round per this interval.
pub(crate) const MIN_REFRESH_INTERVAL: Duration = Duration::from_millis(100);
/// How long a node asked for the map has before the next is asked too: a
/// healthy node answers `CLUSTER SLOTS` well within it.
const STAGGER: Duration = Duration::from_millis(200);

/// A node address, `host:port`.
pub(crate) type Addr = Arc<str>;

/// Which master serves each slot.
#[derive(Clone, PartialEq, Eq)]
pub struct SlotMap {
    /// Per slot, an index into `masters` (or `u16::MAX` when unserved).
    owners: Box<[u16]>,
    masters: Vec<Addr>,
}

impl std::fmt::Debug for SlotMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let served = self.owners.iter().filter(|&&o| o != u16::MAX).count();
        f.debug_struct("SlotMap")
            .field("masters", &self.masters)
            .field("served_slots", &served)
            .finish()
    }
}

impl SlotMap {
    /// A map serving no slot.
    pub fn empty() -> Self {
        Self {
            owners: vec![u16::MAX; usize::from(SLOTS)].into_boxed_slice(),
            masters: Vec::new(),
        }
    }

    /// The master serving `slot`, if any.
    pub fn master(&self, slot: u16) -> Option<&str> {
        let owner = *self.owners.get(usize::from(slot))?;
        self.masters.get(usize::from(owner)).map(|a| &**a)
    }

    pub(crate) fn master_addr(&self, slot: u16) -> Option<Addr> {
        let owner = *self.owners.get(usize::from(slot))?;
        self.masters.get(usize::from(owner)).cloned()
    }

    /// Every master serving at least one slot.
    pub fn masters(&self) -> &[Arc<str>] {
        &self.masters
    }

    /// Whether every slot is served.
    pub fn is_complete(&self) -> bool {
        self.owners.iter().all(|&o| o != u16::MAX)
    }

    /// The map with `slot` served by `addr`.
    fn with_slot(&self, slot: u16, addr: &str) -> Self {
        let mut map = self.clone();
        let index = map.index_of(addr);
        if let Some(owner) = map.owners.get_mut(usize::from(slot)) {
            *owner = index;
        }
        map.prune();
        map
    }

    fn index_of(&mut self, addr: &str) -> u16 {
        if let Some(i) = self.masters.iter().position(|a| &**a == addr) {
            // At most 16 384 masters: one per slot.
            return u16::try_from(i).unwrap_or(u16::MAX);
        }
        self.masters.push(Arc::from(addr));
        u16::try_from(self.masters.len() - 1).unwrap_or(u16::MAX)
    }

    /// Drops masters that serve no slot (renumbering the rest).
    fn prune(&mut self) {
        let mut used = vec![false; self.masters.len()];
        for &o in self.owners.iter() {
            if let Some(u) = used.get_mut(usize::from(o)) {
                *u = true;
            }
        }
        if used.iter().all(|&u| u) {
            return;
        }
        let mut renumber = vec![u16::MAX; self.masters.len()];
        let mut kept = Vec::new();
        for (i, addr) in self.masters.iter().enumerate() {
            if used[i] {
                renumber[i] = u16::try_from(kept.len()).unwrap_or(u16::MAX);
                kept.push(addr.clone());
            }
        }
        for o in self.owners.iter_mut() {
            if let Some(&n) = renumber.get(usize::from(*o)) {
                *o = n;
            }
        }
        self.masters = kept;
    }

    /// Parses a `CLUSTER SLOTS` reply; `asked` is the address of the node
    /// that sent it (a node reports its own host as empty when it does not
    /// know it).
    ///
    /// # Errors
    /// [`LockError::Protocol`] for a reply of another shape.
    pub fn from_cluster_slots(reply: &Value, asked: &str) -> Result<Self> {
        let bad = || LockError::protocol(format!("unexpected CLUSTER SLOTS reply: {reply:?}"));
        let Value::Array(ranges) = reply else {
            return Err(bad());
        };
        let mut map = Self::empty();
        for range in ranges {
            let Value::Array(fields) = range else {
                return Err(bad());
            };
            let (Some(start), Some(end), Some(Value::Array(master))) =
                (int(fields.first()), int(fields.get(1)), fields.get(2))
            else {
                return Err(bad());
            };
            let (Some(host), Some(port)) = (text(master.first()), int(master.get(1))) else {
                return Err(bad());
            };
            let host = if host.is_empty() || host == "?" {
                asked.rsplit_once(':').map_or("127.0.0.1", |(h, _)| h)
            } else {
                host
            };
            if start > end || end >= i64::from(SLOTS) || start < 0 {
                return Err(bad());
            }
            let index = map.index_of(&format!("{host}:{port}"));
            for slot in start..=end {
                // `0 <= slot < SLOTS`, checked above.
                map.owners[usize::try_from(slot).unwrap_or(0)] = index;
            }
        }
        Ok(map)
    }
}

fn int(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Int(i) => Some(*i),
        _ => None,
    }
}

fn text(v: Option<&Value>) -> Option<&str> {
    match v? {
        Value::BulkString(b) => std::str::from_utf8(b).ok(),
        Value::SimpleString(s) => Some(s),
        _ => None,
    }
}

/// The shared, refreshable slot map of one transport.
pub(crate) struct Topology {
    map: watch::Sender<Arc<SlotMap>>,
    seeds: Vec<Addr>,
    /// Held while refreshing; the instant the last refresh ended.
    refresh: Mutex<Option<Instant>>,
    /// Refreshes done so far (changed map or not). Read without the lock:
    /// every call reads it, and must not wait for a refresh in progress.
    rounds: AtomicU64,
    command_timeout: Duration,
}

impl Topology {
    pub(crate) fn new(seeds: Vec<Addr>, command_timeout: Duration) -> Self {
        Self {
            map: watch::Sender::new(Arc::new(SlotMap::empty())),
            seeds,
            refresh: Mutex::new(None),
            rounds: AtomicU64::new(0),
            command_timeout,
        }
    }

    /// The seed addresses, as configured.
    pub(crate) fn seeds(&self) -> &[Addr] {
        &self.seeds
    }

    /// The current map.
    pub(crate) fn map(&self) -> Arc<SlotMap> {
        self.map.borrow().clone()
    }

    /// A receiver that sees every new map.
    pub(crate) fn watch(&self) -> watch::Receiver<Arc<SlotMap>> {
        self.map.subscribe()
    }

    /// The number of refreshes done so far; pass it to
    /// [`Topology::refresh`] to skip a refresh someone else did meanwhile.
    pub(crate) fn rounds(&self) -> u64 {
        self.rounds.load(Ordering::Acquire)
    }

    /// Records a `-MOVED` answer: `slot` is on `addr` now.
    pub(crate) fn moved(&self, slot: u16, addr: &str) {
        self.map.send_if_modified(|map| {
            if map.master(slot) == Some(addr) {
                return false;
            }
            *map = Arc::new(map.with_slot(slot, addr));
            true
        });
    }

    /// Reads the map again unless a refresh finished after round `seen`,
    /// asking the current masters and then the seeds until one answers.
    /// Waits (until `deadline`) so rounds are at least
    /// [`MIN_REFRESH_INTERVAL`] apart.
    ///
    /// # Errors
    /// A retryable error when no node answered by `deadline`.
    pub(crate) async fn refresh(&self, nodes: &Nodes, seen: u64, deadline: Instant) -> Result<()> {
        let Ok(mut last_end) = timeout_at(deadline, self.refresh.lock()).await else {
            return Err(LockError::timeout("waiting for a cluster topology refresh"));
        };
        if self.rounds() != seen {
            return Ok(());
        }
        if let Some(last) = *last_end {
            let next = last + MIN_REFRESH_INTERVAL;
            if next > deadline {
                return Err(LockError::timeout("cluster topology refresh"));
            }
            sleep_until(next).await;
        }
        let result = self.fetch(nodes, deadline).await;
        *last_end = Some(Instant::now());
        let installed = result.map(|map| {
            self.map.send_if_modified(|current| {
                if **current == map {
                    return false;
                }
                tracing::debug!(?map, "cluster topology changed");
                *current = Arc::new(map);
                true
            });
        });
        // Counted whether or not it worked, after any new map is in place,
        // so a caller that sees the count move also sees the map.
        self.rounds.fetch_add(1, Ordering::AcqRel);
        installed
    }

    /// Asks the current masters, then the seeds, for the map. A node gets
    /// [`STAGGER`] to answer before the next one is asked as well (and
    /// the next is asked at once when one fails): a node that is down
    /// without refusing connections (a dead host, a partition) costs a
    /// fraction of a second, not a third of the command timeout, so a
    /// client still connects when several seeds are unreachable.
    async fn fetch(&self, nodes: &Nodes, deadline: Instant) -> Result<SlotMap> {
        let current = self.map();
        let mut candidates: Vec<Addr> = current.masters().to_vec();
        for seed in &self.seeds {
            if !candidates.contains(seed) {
                candidates.push(seed.clone());
            }
        }
        let ask = |addr: Addr| async move {
            // One node must not take all the time: a dead one would.
            let by = deadline.min(Instant::now() + self.command_timeout / 3);
            let reply = nodes
                .query(&addr, redis::cmd("CLUSTER").arg("SLOTS"), by)
                .await?;
            match SlotMap::from_cluster_slots(&reply, &addr) {
                Ok(map) if !map.masters().is_empty() => Ok(map),
                Ok(_) => Err(LockError::unavailable(
                    format!("node {addr} serves no slots (cluster not ready)"),
                    None,
                )),
                Err(e) => Err(e),
            }
        };
        let mut last_error =
            LockError::unavailable("no cluster node to ask for the topology", None);
        let mut waiting = candidates.into_iter();
        let mut asking = FuturesUnordered::new();
        loop {
            if asking.is_empty() {
                match waiting.next() {
                    Some(addr) => asking.push(ask(addr)),
                    None => return Err(last_error),
                }
            }
            let more = waiting.len() > 0;
            tokio::select! {
                Some(answer) = asking.next() => match answer {
                    Ok(map) => return Ok(map),
                    Err(e) => {
                        last_error = e;
                        if let Some(addr) = waiting.next() {
                            asking.push(ask(addr));
                        }
                    }
                },
                () = sleep(STAGGER), if more => {
                    if let Some(addr) = waiting.next() {
                        asking.push(ask(addr));
                    }
                }
                () = sleep_until(deadline) => return Err(last_error),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn range(start: i64, end: i64, host: &str, port: i64) -> Value {
        Value::Array(vec![
            Value::Int(start),
            Value::Int(end),
            Value::Array(vec![bulk(host), Value::Int(port), bulk("id")]),
            Value::Array(vec![bulk(host), Value::Int(port + 3), bulk("replica")]),
        ])
    }

    #[test]
    fn parses_cluster_slots() {
        let reply = Value::Array(vec![
            range(0, 5460, "127.0.0.1", 7000),
            range(5461, 10922, "127.0.0.1", 7001),
            range(10923, 16383, "", 7002),
        ]);
        let map = SlotMap::from_cluster_slots(&reply, "10.0.0.9:7002").unwrap();
        assert!(map.is_complete());
        assert_eq!(map.master(0), Some("127.0.0.1:7000"));
        assert_eq!(map.master(5461), Some("127.0.0.1:7001"));
        assert_eq!(map.master(16383), Some("10.0.0.9:7002"));
        assert_eq!(map.masters().len(), 3);
    }

    #[test]
    fn rejects_other_shapes() {
        assert!(SlotMap::from_cluster_slots(&Value::Int(1), "a:1").is_err());
        let out_of_range = Value::Array(vec![range(0, 16384, "h", 1)]);
        assert!(SlotMap::from_cluster_slots(&out_of_range, "a:1").is_err());
    }

    #[test]
    fn a_moved_slot_changes_only_that_slot_and_drops_unused_masters() {
        let reply = Value::Array(vec![range(0, 0, "h", 1), range(1, 16383, "h", 2)]);
        let map = SlotMap::from_cluster_slots(&reply, "h:1").unwrap();
        let moved = map.with_slot(0, "h:2");
        assert_eq!(moved.master(0), Some("h:2"));
        assert_eq!(moved.master(1), Some("h:2"));
        assert_eq!(moved.masters().len(), 1, "h:1 serves nothing now");
        let added = map.with_slot(5, "h:3");
        assert_eq!(added.master(5), Some("h:3"));
        assert_eq!(added.masters().len(), 3);
    }
}
