//! The pub/sub side of a single node: one connection, owned by one task.
//!
//! # How it works
//! Callers never touch the connection. [`PubSub::subscribe`] and
//! [`PubSub::unsubscribe`] put a command on an unbounded queue *in the call
//! itself*, so commands are applied in call order; the returned future only
//! waits for the task to report the server's confirmation.
//!
//! The task keeps the *desired* set of channels: every channel
//! subscribed and not yet unsubscribed, whether or not the server has
//! confirmed it. While connected it drains the queue in batches, sending one
//! `SUBSCRIBE` / `UNSUBSCRIBE` per run of consecutive commands of one kind,
//! forwards messages of desired channels to the engine's notice sink, and `PING`s an idle
//! connection every [`PING_INTERVAL`] to find dead ones.
//!
//! When the connection drops (or a command or ping gets no reply within the
//! command timeout) the task reconnects with bounded, jittered exponential
//! backoff, subscribes every desired channel again, answers the subscribers
//! still waiting, and then delivers [`Notice::Reset`]: messages may have
//! been lost meanwhile. Commands that arrive while disconnected only change
//! the desired set.
//!
//! With a Sentinel group, each connect goes to the master the sentinels
//! name, and the connection is dropped and made again (to the new master,
//! every channel re-subscribed, then [`Notice::Reset`]) when the
//! master is found to be another node.
//!
//! # Promise to subscribers
//! A subscribe future resolves `Ok` once the server confirmed the
//! subscription (possibly on a later connection), or with a retryable
//! timeout error when that did not happen within connect timeout + command
//! timeout. Either way the subscription stays desired until unsubscribed and
//! is made on the next (re)connect. After [`PubSub::close`], or when the
//! backend is dropped, subscribe futures fail with [`LockError::Closed`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use lock_core::{LockError, Result};
use redis::aio::{PubSubSink, PubSubStream};
use redis::Msg;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::{sleep, timeout, Instant};

use crate::transport::sentinel::Endpoint;
use crate::transport::subscriptions::{SinkSlot, SubscriptionCommand, SubscriptionHandle};
use lock_core::backend::{Channel, Notice};
use lock_script::error::{from_redis, timed_out};

/// How long an idle pub/sub connection goes without a `PING`.
pub(crate) const PING_INTERVAL: Duration = Duration::from_secs(10);
/// At most this many channels per `SUBSCRIBE` when re-subscribing.
const SUBSCRIBE_CHUNK: usize = 1000;
/// At most this many queued commands handled in one batch.
const MAX_BATCH: usize = 1000;
/// First reconnect backoff; doubled per failed attempt.
const BACKOFF_BASE: Duration = Duration::from_millis(50);
/// Longest reconnect backoff.
const BACKOFF_MAX: Duration = Duration::from_secs(2);

type Confirm = oneshot::Sender<Result<()>>;

/// Starts a node's pub/sub task; its [`SubscriptionHandle`] is what
/// callers keep (dropping it stops the task).
pub(crate) struct PubSub;

impl PubSub {
    /// Starts the task on the current tokio runtime; it connects in the
    /// background on the first subscription.
    pub(crate) fn spawn(
        endpoint: Endpoint,
        connect_timeout: Duration,
        command_timeout: Duration,
    ) -> Result<SubscriptionHandle> {
        Self::spawn_with_ping(endpoint, connect_timeout, command_timeout, PING_INTERVAL)
    }

    fn spawn_with_ping(
        endpoint: Endpoint,
        connect_timeout: Duration,
        command_timeout: Duration,
        ping_interval: Duration,
    ) -> Result<SubscriptionHandle> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            LockError::invalid("the redis backend must be created inside a tokio runtime")
        })?;
        let (handle, rx, sink) =
            SubscriptionHandle::new(connect_timeout.saturating_add(command_timeout));
        let worker = Worker {
            master_changes: endpoint.changes(),
            connected_to: 0,
            endpoint,
            connect_timeout,
            command_timeout,
            ping_interval,
            commands: rx,
            sink,
            desired: HashSet::new(),
            waiting: HashMap::new(),
            closing: None,
        };
        runtime.spawn(worker.run());
        Ok(handle)
    }
}

/// Why the task left the connected state.
enum Flow {
    /// The connection is gone or unusable: reconnect.
    Lost,
    /// The handle was dropped or closed: stop.
    Exit,
    /// The server is now another node (a Sentinel failover): reconnect.
    Moved,
}

struct Worker {
    endpoint: Endpoint,
    /// Moves on when a Sentinel group's master is another node.
    master_changes: Option<watch::Receiver<u64>>,
    /// The master generation the live connection was made for.
    connected_to: u64,
    connect_timeout: Duration,
    command_timeout: Duration,
    ping_interval: Duration,
    commands: mpsc::UnboundedReceiver<SubscriptionCommand>,
    sink: Arc<SinkSlot>,
    /// Every channel subscribed and not unsubscribed.
    desired: HashSet<String>,
    /// Subscribers waiting for a connection to confirm their channel.
    waiting: HashMap<String, Vec<Confirm>>,
    /// Told when the task has stopped after a `Close`.
    closing: Option<oneshot::Sender<()>>,
}

/// A run of consecutive commands of one kind, sent as one command.
enum Run {
    Subscribe(Vec<(String, Confirm)>),
    Unsubscribe(Vec<String>),
}

impl Worker {
    async fn run(mut self) {
        if let Flow::Exit = self.first_use().await {
            if let Some(done) = self.closing.take() {
                let _ = done.send(());
            }
            return;
        }
        let mut failures: u32 = 0;
        let mut first = true;
        loop {
            match self.connect().await {
                Ok((sink, stream)) => {
                    failures = 0;
                    for (_, confirms) in self.waiting.drain() {
                        for confirm in confirms {
                            let _ = confirm.send(Ok(()));
                        }
                    }
                    if !first {
                        tracing::info!(
                            channels = self.desired.len(),
                            "pub/sub connection restored; channels re-subscribed"
                        );
                        self.emit(Notice::Reset);
                    }
                    first = false;
                    match self.serve(sink, stream).await {
                        Flow::Exit => break,
                        Flow::Lost => {
                            self.endpoint.invalidate();
                            tracing::warn!("pub/sub connection lost; reconnecting");
                        }
                        Flow::Moved => {
                            tracing::info!("the master moved; pub/sub reconnecting to it");
                        }
                    }
                }
                Err(e) => {
                    first = false;
                    self.endpoint.invalidate();
                    failures = failures.saturating_add(1);
                    // Once per outage, as the waiters log theirs: a warning
                    // per attempt (every 2 s at most) filled the log of a
                    // client riding an outage, and of one closing in it.
                    if failures == 1 {
                        tracing::warn!(error = %e, "pub/sub connect failed; trying again with backoff until the server answers");
                    } else {
                        tracing::debug!(error = %e, attempt = failures, "pub/sub connect failed");
                    }
                    if let Flow::Exit = self.backoff(failures).await {
                        break;
                    }
                }
            }
        }
        if let Some(done) = self.closing.take() {
            let _ = done.send(());
        }
    }

    /// Waits, unconnected, until some channel is wanted: a client whose
    /// waiters poll (`WaitStrategy::Poll`) never subscribes, and so never
    /// opens a pub/sub connection at all.
    async fn first_use(&mut self) -> Flow {
        while self.desired.is_empty() {
            let Some(command) = self.commands.recv().await else {
                return Flow::Exit;
            };
            if let Some(Flow::Exit) = self.apply(vec![command], None).await {
                return Flow::Exit;
            }
        }
        Flow::Lost
    }

    /// Opens a connection and subscribes every desired channel.
    async fn connect(&mut self) -> Result<(PubSubSink, PubSubStream)> {
        let connect_by = Instant::now() + self.connect_timeout;
        let (client, generation) = self.endpoint.client(connect_by).await?;
        self.connected_to = generation;
        let pubsub = tokio::time::timeout_at(connect_by, client.get_async_pubsub())
            .await
            .map_err(|_| timed_out("pub/sub connect", self.connect_timeout))?
            .map_err(|e| from_redis(&e, ""))?;
        let (mut sink, stream) = pubsub.split();
        let channels: Vec<String> = self.desired.iter().cloned().collect();
        for chunk in channels.chunks(SUBSCRIBE_CHUNK) {
            if let Err(refused) = self.subscribe_on_connect(&mut sink, chunk).await? {
                // The ACL refuses one channel and with it the whole
                // command: subscribe one by one to tell who is refused.
                tracing::debug!(error = %refused, "pub/sub SUBSCRIBE of a batch refused");
                for channel in chunk {
                    if let Err(refused) = self
                        .subscribe_on_connect(&mut sink, std::slice::from_ref(channel))
                        .await?
                    {
                        self.refuse(channel, &refused);
                    }
                }
            }
        }
        Ok((sink, stream))
    }

    /// SUBSCRIBE while connecting: `Err` fails the connection; `Ok(Err)` is
    /// the ACL refusing a channel, an answer on a healthy connection.
    async fn subscribe_on_connect(
        &self,
        sink: &mut PubSubSink,
        channels: &[String],
    ) -> Result<std::result::Result<(), LockError>> {
        match timeout(self.command_timeout, sink.subscribe(channels)).await {
            Err(_) => Err(timed_out("re-subscribe", self.command_timeout)),
            Ok(Ok(())) => Ok(Ok(())),
            Ok(Err(e)) => {
                let error = from_redis(&e, "");
                if error.is_unauthorized() {
                    Ok(Err(error))
                } else {
                    Err(error)
                }
            }
        }
    }

    /// The ACL refuses `channel` to this user: retrying on a new
    /// connection would be refused again, so its subscribers are told why.
    fn refuse(&mut self, channel: &str, refused: &LockError) {
        tracing::warn!(error = %refused, channel, "pub/sub SUBSCRIBE refused");
        self.desired.remove(channel);
        for confirm in self.waiting.remove(channel).unwrap_or_default() {
            let _ = confirm.send(Err(refused.clone()));
        }
    }

    /// Serves one live connection until it is lost or the task must stop.
    async fn serve(&mut self, mut sink: PubSubSink, mut stream: PubSubStream) -> Flow {
        let mut ping_at = Instant::now() + self.ping_interval;
        loop {
            tokio::select! {
                command = self.commands.recv() => {
                    let Some(command) = command else { return Flow::Exit };
                    let mut batch = vec![command];
                    while batch.len() < MAX_BATCH {
                        match self.commands.try_recv() {
                            Ok(command) => batch.push(command),
                            Err(_) => break,
                        }
                    }
                    if let Some(flow) = self.apply(batch, Some(&mut sink)).await {
                        return flow;
                    }
                    ping_at = Instant::now() + self.ping_interval;
                }
                message = stream.next() => match message {
                    Some(message) => self.dispatch(&message),
                    None => return Flow::Lost,
                },
                () = master_moved(self.master_changes.as_mut(), self.connected_to) => {
                    return Flow::Moved;
                }
                () = tokio::time::sleep_until(ping_at) => {
                    match timeout(self.command_timeout, sink.ping::<redis::Value>()).await {
                        Ok(Ok(_)) => ping_at = Instant::now() + self.ping_interval,
                        Ok(Err(e)) => {
                            tracing::warn!(error = %e, "pub/sub PING failed");
                            return Flow::Lost;
                        }
                        Err(_) => {
                            tracing::warn!("pub/sub PING got no reply in time");
                            return Flow::Lost;
                        }
                    }
                }
            }
        }
    }

    /// Waits out one reconnect backoff, applying commands meanwhile.
    async fn backoff(&mut self, failures: u32) -> Flow {
        let delay = backoff_delay(failures);
        let wake = sleep(delay);
        tokio::pin!(wake);
        loop {
            tokio::select! {
                () = &mut wake => return Flow::Lost,
                command = self.commands.recv() => {
                    let Some(command) = command else { return Flow::Exit };
                    if let Some(Flow::Exit) = self.apply(vec![command], None).await {
                        return Flow::Exit;
                    }
                }
            }
        }
    }

    /// Applies commands in order: always to the desired set, and to the
    /// connection while there is one. Returns how to go on when the
    /// connection failed or the task must stop.
    async fn apply(
        &mut self,
        batch: Vec<SubscriptionCommand>,
        sink: Option<&mut PubSubSink>,
    ) -> Option<Flow> {
        let mut sink = sink;
        let mut lost = false;
        let mut run: Option<Run> = None;
        for command in batch {
            match command {
                SubscriptionCommand::Close { done } => {
                    self.closing = Some(done);
                    return Some(Flow::Exit);
                }
                SubscriptionCommand::Subscribe { channel, confirm } => {
                    self.desired.insert(channel.clone());
                    match &mut run {
                        Some(Run::Subscribe(items)) => items.push((channel, confirm)),
                        _ => {
                            let previous = run.replace(Run::Subscribe(vec![(channel, confirm)]));
                            lost |= self.flush(previous, &mut sink).await;
                        }
                    }
                }
                SubscriptionCommand::Unsubscribe { channel } => {
                    self.desired.remove(&channel);
                    // Nobody waits for a subscription that is gone.
                    for confirm in self.waiting.remove(&channel).unwrap_or_default() {
                        let _ = confirm.send(Ok(()));
                    }
                    match &mut run {
                        Some(Run::Unsubscribe(items)) => items.push(channel),
                        _ => {
                            let previous = run.replace(Run::Unsubscribe(vec![channel]));
                            lost |= self.flush(previous, &mut sink).await;
                        }
                    }
                }
            }
        }
        lost |= self.flush(run, &mut sink).await;
        lost.then_some(Flow::Lost)
    }

    /// Sends one run. Without a connection (or when sending fails, which
    /// also drops `sink`), subscribers wait for the next connection. Returns
    /// whether the connection failed.
    async fn flush(&mut self, run: Option<Run>, sink: &mut Option<&mut PubSubSink>) -> bool {
        let Some(run) = run else { return false };
        match run {
            Run::Subscribe(items) => {
                let Some(live) = sink.as_deref_mut() else {
                    self.wait_for_connection(items);
                    return false;
                };
                let channels: Vec<&str> = items.iter().map(|(c, _)| c.as_str()).collect();
                match timeout(self.command_timeout, live.subscribe(&channels)).await {
                    Ok(Ok(())) => {
                        for (_, confirm) in items {
                            let _ = confirm.send(Ok(()));
                        }
                        false
                    }
                    Ok(Err(e)) if from_redis(&e, "").is_unauthorized() => {
                        // The ACL refuses these channels (NOPERM): an
                        // answer, not a broken connection. Retrying on a
                        // new connection would be refused again, so the
                        // subscribers are told why.
                        let refused = from_redis(&e, "");
                        tracing::warn!(error = %refused, "pub/sub SUBSCRIBE refused");
                        for (channel, confirm) in items {
                            self.desired.remove(&channel);
                            let _ = confirm.send(Err(refused.clone()));
                        }
                        false
                    }
                    failed => {
                        log_failure("SUBSCRIBE", failed);
                        *sink = None;
                        self.wait_for_connection(items);
                        true
                    }
                }
            }
            Run::Unsubscribe(channels) => {
                let Some(live) = sink.as_deref_mut() else {
                    return false;
                };
                match timeout(self.command_timeout, live.unsubscribe(&channels)).await {
                    Ok(Ok(())) => false,
                    failed => {
                        log_failure("UNSUBSCRIBE", failed);
                        *sink = None;
                        true
                    }
                }
            }
        }
    }

    fn wait_for_connection(&mut self, items: Vec<(String, Confirm)>) {
        for (channel, confirm) in items {
            // A channel unsubscribed since is not desired any more.
            if self.desired.contains(&channel) {
                self.waiting.entry(channel).or_default().push(confirm);
            } else {
                let _ = confirm.send(Ok(()));
            }
        }
    }

    fn dispatch(&self, message: &Msg) {
        let channel = message.get_channel_name();
        if self.desired.contains(channel) {
            self.emit(Notice::Message {
                channel: Channel::new(channel),
                payload: message.get_payload_bytes().to_vec(),
            });
        } else {
            tracing::debug!(channel, "message on a channel no longer subscribed");
        }
    }

    fn emit(&self, notice: Notice) {
        self.sink.deliver(notice);
    }
}

/// Resolves when the master's generation is not `connected_to` (the one
/// the connection was made for), at once if it moved already; never without
/// a Sentinel group (or once the group is gone).
async fn master_moved(changes: Option<&mut watch::Receiver<u64>>, connected_to: u64) {
    if let Some(changes) = changes {
        loop {
            if *changes.borrow_and_update() != connected_to {
                return;
            }
            if changes.changed().await.is_err() {
                break;
            }
        }
    }
    std::future::pending().await
}

fn log_failure<E: std::fmt::Display>(
    what: &str,
    failed: std::result::Result<redis::RedisResult<()>, E>,
) {
    match failed {
        Ok(Err(e)) => tracing::warn!(error = %e, "pub/sub {what} failed"),
        Err(_) => tracing::warn!("pub/sub {what} got no reply in time"),
        Ok(Ok(())) => {}
    }
}

/// Backoff before reconnect attempt `failures + 1`: between half and all of
/// `BACKOFF_BASE * 2^(failures-1)`, capped at `BACKOFF_MAX`.
fn backoff_delay(failures: u32) -> Duration {
    let exp = BACKOFF_BASE.saturating_mul(1u32 << failures.saturating_sub(1).min(16));
    let cap = exp.min(BACKOFF_MAX);
    let half = cap / 2;
    half + half.mul_f64(fastrand::f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use lock_core::backend::NoticeSink;
    use lock_testkit::fixtures::RedisServer;

    /// Records notices as strings.
    struct Events(std::sync::Mutex<Vec<String>>);

    impl NoticeSink for Events {
        fn deliver(&self, notice: Notice) {
            let text = match notice {
                Notice::Message { payload, .. } => String::from_utf8_lossy(&payload).into_owned(),
                Notice::Reset => "reset".to_owned(),
                _ => "other".to_owned(),
            };
            self.0.lock().unwrap().push(text);
        }
    }

    /// The ids of the server's pub/sub clients.
    fn pubsub_ids(server: &RedisServer) -> Vec<String> {
        let list = match server.cmd(&["CLIENT", "LIST", "TYPE", "pubsub"]) {
            redis::Value::BulkString(b) => String::from_utf8(b).unwrap(),
            redis::Value::VerbatimString { text, .. } => text,
            other => panic!("{other:?}"),
        };
        list.lines()
            .filter_map(|line| line.split(' ').find(|f| f.starts_with("id=")))
            .map(str::to_owned)
            .collect()
    }

    /// The connection is opened on the first subscription, not before: a
    /// client that never subscribes (its waiters poll) opens none.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connects_on_the_first_subscription_only() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("redis://{}/", listener.local_addr().unwrap());
        let short = Duration::from_millis(300);
        let pubsub = PubSub::spawn(
            Endpoint::fixed(redis::Client::open(url).unwrap(), None),
            short,
            short,
        )
        .unwrap();
        let idle = tokio::time::timeout(Duration::from_millis(300), listener.accept()).await;
        assert!(idle.is_err(), "connected before any subscription");
        let subscribing = pubsub.subscribe(&Channel::new("ch"));
        let accepted = tokio::time::timeout(Duration::from_secs(2), listener.accept()).await;
        assert!(accepted.is_ok(), "the first subscription connects");
        drop(subscribing);
    }

    /// Closing a task that never connected finishes at once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn closing_before_any_subscription_finishes() {
        let server = RedisServer::start();
        let short = Duration::from_millis(300);
        let pubsub = PubSub::spawn(Endpoint::fixed(server.client(), None), short, short).unwrap();
        tokio::time::timeout(Duration::from_secs(1), pubsub.close())
            .await
            .expect("closed");
        assert!(pubsub_ids(&server).is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn idle_pings_keep_a_healthy_connection_and_replace_a_dead_one() {
        let server = RedisServer::start();
        let short = Duration::from_millis(300);
        let pubsub = PubSub::spawn_with_ping(
            Endpoint::fixed(server.client(), None),
            short,
            short,
            Duration::from_millis(100),
        )
        .unwrap();
        let events = Arc::new(Events(std::sync::Mutex::new(Vec::new())));
        pubsub.set_notice_sink(events.clone());
        pubsub.subscribe(&Channel::new("ch")).await.unwrap();
        let ids = pubsub_ids(&server);
        assert_eq!(ids.len(), 1);

        // Several pings pass on a healthy connection: same connection, no reset.
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(pubsub_ids(&server), ids);
        assert!(
            events.0.lock().unwrap().is_empty(),
            "{:?}",
            events.0.lock().unwrap()
        );

        // A frozen server stops answering pings: the connection is replaced
        // once it is back, channels restored, and a reset reported.
        server.pause();
        tokio::time::sleep(Duration::from_millis(800)).await;
        server.resume();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !events.0.lock().unwrap().contains(&"reset".to_owned()) {
            assert!(Instant::now() < deadline, "no reset after a frozen server");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        server.cmd(&["PUBLISH", "ch", "0"]);
        let deadline = Instant::now() + Duration::from_secs(2);
        while !events.0.lock().unwrap().contains(&"0".to_owned()) {
            assert!(Instant::now() < deadline, "no message after the reset");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        for failures in 1..40 {
            let d = backoff_delay(failures);
            assert!(d <= BACKOFF_MAX, "{failures}: {d:?}");
        }
        assert!(backoff_delay(1) <= BACKOFF_BASE);
        assert!(backoff_delay(1) >= BACKOFF_BASE / 2);
        assert!(backoff_delay(30) >= BACKOFF_MAX / 2);
    }
}
