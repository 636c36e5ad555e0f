//! The pub/sub side of a cluster: each lock channel subscribed on the node
//! that owns its slot (sharded pub/sub) or, in classic mode, on the master
//! of its slot too (any node would do; spreading by slot spreads the load).
//!
//! # How it works
//! A manager task owns the *desired* set (channel → slot) and one
//! subscriber task per node it uses (see [`node`]). [`ShardPubSub::subscribe`]
//! and [`ShardPubSub::unsubscribe`] queue a command in the call itself, so
//! commands apply in call order; the subscribe future only waits for the
//! node's confirmation.
//!
//! Each channel is assigned to the master of its slot in the current slot
//! map. When the map changes (a refresh after a redirect, a failover or a
//! migration), channels whose slot moved are unsubscribed from the old node
//! and subscribed on the new one. When a node drops a channel by itself
//! (Redis does that to sharded subscribers when a slot migrates) or refuses
//! it, the manager asks for a topology refresh and assigns it again; a
//! periodic sweep retries channels that have no node yet.
//!
//! Whenever a subscription that had been confirmed is confirmed again after
//! a loss (reconnect, move), the engine's sink gets [`Notice::Reset`]: unlock
//! messages may have been missed meanwhile, and waiters must look again.

mod node;
pub(crate) mod resp;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use lock_core::backend::{Channel, Notice};
use lock_core::{LockError, Result};
use lock_redis::transport::{SinkSlot, SubscriptionCommand, SubscriptionHandle};
use tokio::sync::{mpsc, oneshot};

use crate::slot::key_slot;
use crate::topology::Addr;
use crate::transport::Inner;
use node::{NodeCmd, NodeEvent, NodeSettings};

/// How often channels without a node are assigned again.
const SWEEP_INTERVAL: Duration = Duration::from_millis(250);

type Confirm = oneshot::Sender<Result<()>>;

/// Starts the manager task; its [`SubscriptionHandle`] is what the
/// transport keeps (dropping it stops the task and every subscriber
/// connection).
pub(crate) struct ShardPubSub;

impl ShardPubSub {
    /// Starts the manager task. Until the transport knows the pub/sub mode
    /// (a lazily started one learns it on first use), channels wait
    /// unassigned.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] outside a tokio runtime.
    pub(crate) fn spawn(inner: Arc<Inner>) -> Result<SubscriptionHandle> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| LockError::invalid("the cluster transport needs a tokio runtime"))?;
        let (handle, rx, sink) = SubscriptionHandle::new(
            inner.config.connection.connect_timeout + inner.config.connection.command_timeout,
        );
        let (events_tx, events) = mpsc::unbounded_channel();
        let manager = Manager {
            topology: inner.topology.watch(),
            inner,
            desired: HashMap::new(),
            nodes: HashMap::new(),
            events_tx,
            sink,
            reset_pending: false,
        };
        runtime.spawn(manager.run(rx, events));
        Ok(handle)
    }
}

struct Desired {
    slot: u16,
    node: Option<Addr>,
    confirmed: bool,
    /// Confirmed once, then lost: the next confirmation means a reset.
    lost: bool,
    waiters: Vec<Confirm>,
}

struct Manager {
    inner: Arc<Inner>,
    topology: tokio::sync::watch::Receiver<Arc<crate::topology::SlotMap>>,
    desired: HashMap<String, Desired>,
    nodes: HashMap<Addr, mpsc::UnboundedSender<NodeCmd>>,
    events_tx: mpsc::UnboundedSender<NodeEvent>,
    sink: Arc<SinkSlot>,
    reset_pending: bool,
}

impl Manager {
    async fn run(
        mut self,
        mut commands: mpsc::UnboundedReceiver<SubscriptionCommand>,
        mut events: mpsc::UnboundedReceiver<NodeEvent>,
    ) {
        let mut sweep = tokio::time::interval(SWEEP_INTERVAL);
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                cmd = commands.recv() => match cmd {
                    None => return,
                    Some(SubscriptionCommand::Close { done }) => {
                        self.close();
                        let _ = done.send(());
                        return;
                    }
                    Some(cmd) => self.command(cmd),
                },
                Some(event) = events.recv() => self.event(event),
                changed = self.topology.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    self.reassign_all();
                }
                _ = sweep.tick() => self.sweep(),
            }
            if std::mem::take(&mut self.reset_pending) {
                self.deliver(Notice::Reset);
            }
        }
    }

    fn deliver(&self, notice: Notice) {
        self.sink.deliver(notice);
    }

    fn command(&mut self, cmd: SubscriptionCommand) {
        match cmd {
            SubscriptionCommand::Subscribe { channel, confirm } => {
                if let Some(d) = self.desired.get_mut(&channel) {
                    if d.confirmed {
                        let _ = confirm.send(Ok(()));
                    } else {
                        d.waiters.push(confirm);
                    }
                    return;
                }
                let slot = key_slot(&channel);
                self.desired.insert(
                    channel.clone(),
                    Desired {
                        slot,
                        node: None,
                        confirmed: false,
                        lost: false,
                        waiters: vec![confirm],
                    },
                );
                self.assign(&channel);
            }
            SubscriptionCommand::Unsubscribe { channel } => {
                if let Some(d) = self.desired.remove(&channel)
                    && let Some(node) = d.node
                {
                    self.send(&node, NodeCmd::Unsubscribe(channel));
                }
            }
            SubscriptionCommand::Close { .. } => {}
        }
    }

    fn event(&mut self, event: NodeEvent) {
        match event {
            NodeEvent::Confirmed { addr, channel } => {
                let Some(d) = self.desired.get_mut(&channel) else {
                    return;
                };
                if d.node.as_ref() != Some(&addr) || d.confirmed {
                    return;
                }
                d.confirmed = true;
                for waiter in d.waiters.drain(..) {
                    let _ = waiter.send(Ok(()));
                }
                if std::mem::take(&mut d.lost) {
                    self.reset_pending = true;
                }
            }
            NodeEvent::Message { channel, payload } => {
                if self.desired.contains_key(&channel) {
                    self.deliver(Notice::Message {
                        channel: Channel::new(channel),
                        payload,
                    });
                }
            }
            NodeEvent::Lost { addr, channel } => {
                if let Some(d) = self.desired.get_mut(&channel)
                    && d.node.as_ref() == Some(&addr)
                {
                    d.node = None;
                    mark_lost(d);
                    self.inner.refresh_soon();
                }
            }
            NodeEvent::Refused { channel, message } => {
                if let Some(d) = self.desired.remove(&channel) {
                    tracing::warn!(%channel, %message, "the ACL refuses this channel");
                    let refused = LockError::Unauthorized {
                        message: format!("redis refused the subscription: {message}"),
                    };
                    for waiter in d.waiters {
                        let _ = waiter.send(Err(refused.clone()));
                    }
                }
            }
            NodeEvent::Down { addr } => {
                let mut any = false;
                for d in self.desired.values_mut() {
                    if d.node.as_ref() == Some(&addr) {
                        mark_lost(d);
                        any = true;
                    }
                }
                if any {
                    self.inner.refresh_soon();
                }
            }
        }
    }

    /// Subscribes `channel` on the current master of its slot, if it has
    /// none yet.
    fn assign(&mut self, channel: &str) {
        if self.inner.sharded().is_none() {
            // Not started yet (lazily): which subscribe command to use is
            // not known. The sweep assigns the channel once it is.
            self.inner.start_soon();
            return;
        }
        let map = self.topology.borrow().clone();
        let Some(d) = self.desired.get_mut(channel) else {
            return;
        };
        let owner = map.master_addr(d.slot);
        if d.node == owner {
            return;
        }
        let old = std::mem::replace(&mut d.node, owner.clone());
        mark_lost(d);
        if let Some(old) = old {
            self.send(&old, NodeCmd::Unsubscribe(channel.to_owned()));
        }
        match owner {
            Some(owner) => self.send(&owner, NodeCmd::Subscribe(channel.to_owned())),
            None => self.inner.refresh_soon(),
        }
    }

    fn reassign_all(&mut self) {
        let channels: Vec<String> = self.desired.keys().cloned().collect();
        for channel in channels {
            self.assign(&channel);
        }
        // Subscriber connections to nodes that serve nothing of ours go.
        let used: std::collections::HashSet<Addr> = self
            .desired
            .values()
            .filter_map(|d| d.node.clone())
            .collect();
        self.nodes.retain(|addr, _| used.contains(addr));
    }

    fn sweep(&mut self) {
        let unassigned: Vec<String> = self
            .desired
            .iter()
            .filter(|(_, d)| d.node.is_none())
            .map(|(c, _)| c.clone())
            .collect();
        for channel in unassigned {
            self.assign(&channel);
        }
    }

    /// Sends `cmd` to the subscriber task of `addr`, starting it if needed.
    fn send(&mut self, addr: &Addr, cmd: NodeCmd) {
        if !self.nodes.contains_key(addr) {
            if matches!(cmd, NodeCmd::Unsubscribe(_)) {
                return;
            }
            let info = match self.inner.nodes.connection_info(addr) {
                Ok(info) => info,
                Err(e) => {
                    tracing::warn!(%addr, error = %e, "cannot subscribe on this node");
                    return;
                }
            };
            let Some(sharded) = self.inner.sharded() else {
                return; // `assign` checked: cannot happen
            };
            let (tx, rx) = mpsc::unbounded_channel();
            let settings = NodeSettings {
                addr: addr.clone(),
                info,
                sharded,
                connect_timeout: self.inner.config.connection.connect_timeout,
                command_timeout: self.inner.config.connection.command_timeout,
                credentials: self.inner.config.connection.credentials.clone(),
                #[cfg(feature = "tls")]
                tls: self.inner.nodes.pubsub_tls(),
            };
            tokio::spawn(node::run(settings, rx, self.events_tx.clone()));
            self.nodes.insert(addr.clone(), tx);
        }
        if let Some(node) = self.nodes.get(addr) {
            let _ = node.send(cmd);
        }
    }

    fn close(&mut self) {
        self.nodes.clear();
        for (_, d) in self.desired.drain() {
            for waiter in d.waiters {
                let _ = waiter.send(Err(LockError::Closed));
            }
        }
    }
}

fn mark_lost(d: &mut Desired) {
    if d.confirmed {
        d.confirmed = false;
        d.lost = true;
    }
}
