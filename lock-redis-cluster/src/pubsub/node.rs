//! One subscriber connection to one node, owned by one task.
//!
//! The task keeps the set of channels the manager assigned to this node,
//! subscribes them (one command per channel: a sharded subscribe must not
//! mix slots), and reports confirmations, messages and losses to the
//! manager. When the connection drops it reports [`NodeEvent::Down`],
//! reconnects with backoff and subscribes everything again. It ends when
//! the manager drops its command sender.
//!
//! In a `rediss://` cluster the connection is TLS, with the same CA and
//! client certificate as the command connections.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use lock_redis::credentials::{self, CredentialsProvider};
use redis::ConnectionInfo;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::{timeout, Instant};

use super::resp::{read_frame, Frame};
use crate::topology::Addr;

/// An idle connection is pinged this often, to find dead ones.
const PING_INTERVAL: Duration = Duration::from_secs(5);
const BACKOFF_BASE: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// What the manager tells a node task.
#[derive(Debug)]
pub(crate) enum NodeCmd {
    Subscribe(String),
    Unsubscribe(String),
}

/// What a node task tells the manager.
#[derive(Debug)]
pub(crate) enum NodeEvent {
    /// The server confirmed the subscription of `channel`.
    Confirmed { addr: Addr, channel: String },
    /// A message arrived.
    Message { channel: String, payload: Vec<u8> },
    /// The node dropped `channel` (its slot moved away) or refused it
    /// (`-MOVED`): it must be subscribed elsewhere.
    Lost { addr: Addr, channel: String },
    /// The ACL does not let our user subscribe to `channel` (`-NOPERM`):
    /// no node will, so its subscribers must be told.
    Refused { channel: String, message: String },
    /// The connection broke; every subscription of this node is gone until
    /// it reconnects and confirms them again.
    Down { addr: Addr },
}

/// What a node task needs to know.
pub(crate) struct NodeSettings {
    pub(crate) addr: Addr,
    pub(crate) info: ConnectionInfo,
    pub(crate) sharded: bool,
    pub(crate) connect_timeout: Duration,
    pub(crate) command_timeout: Duration,
    /// Asked for the credentials at every connect, when set (else those of
    /// `info` are used).
    pub(crate) credentials: Option<Arc<dyn CredentialsProvider>>,
    /// TLS settings, for a `rediss://` cluster.
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<std::sync::Arc<rustls::ClientConfig>>,
}

/// A subscriber connection: plain TCP or TLS.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

enum Pending {
    Sub(String),
    Unsub(String),
    Ping,
}

/// Runs the node's subscriber connection until `commands` closes.
pub(crate) async fn run(
    settings: NodeSettings,
    mut commands: mpsc::UnboundedReceiver<NodeCmd>,
    events: mpsc::UnboundedSender<NodeEvent>,
) {
    let mut channels: HashSet<String> = HashSet::new();
    let mut backoff = BACKOFF_BASE;
    loop {
        match connect(&settings).await {
            Ok(stream) => {
                backoff = BACKOFF_BASE;
                let ended = serve(&settings, stream, &mut channels, &mut commands, &events).await;
                if ended {
                    return;
                }
            }
            Err(e) => {
                tracing::debug!(addr = %settings.addr, error = %e, "cannot connect the subscriber");
            }
        }
        if events
            .send(NodeEvent::Down {
                addr: settings.addr.clone(),
            })
            .is_err()
        {
            return;
        }
        // Keep the channel set current while waiting to reconnect.
        let wake = Instant::now() + backoff.mul_f64(0.5 + fastrand::f64() / 2.0);
        backoff = (backoff * 2).min(BACKOFF_MAX);
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(wake) => break,
                cmd = commands.recv() => match cmd {
                    None => return,
                    Some(NodeCmd::Subscribe(ch)) => { channels.insert(ch); }
                    Some(NodeCmd::Unsubscribe(ch)) => { channels.remove(&ch); }
                },
            }
        }
    }
}

async fn connect(settings: &NodeSettings) -> std::io::Result<Box<dyn Stream>> {
    let (host, port) = settings
        .addr
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.to_owned(), p.parse::<u16>().ok()?)))
        .ok_or_else(|| std::io::Error::other(format!("bad address {}", settings.addr)))?;
    let timed_out = |_| std::io::Error::from(std::io::ErrorKind::TimedOut);
    let tcp = timeout(
        settings.connect_timeout,
        TcpStream::connect((host.as_str(), port)),
    )
    .await
    .map_err(timed_out)??;
    tcp.set_nodelay(true)?;
    #[cfg(feature = "tls")]
    let mut stream: Box<dyn Stream> = match &settings.tls {
        Some(config) => {
            let name = rustls::pki_types::ServerName::try_from(host)
                .map_err(|e| std::io::Error::other(format!("bad TLS server name: {e}")))?;
            let connector = tokio_rustls::TlsConnector::from(config.clone());
            Box::new(
                timeout(settings.connect_timeout, connector.connect(name, tcp))
                    .await
                    .map_err(timed_out)??,
            )
        }
        None => Box::new(tcp),
    };
    #[cfg(not(feature = "tls"))]
    let mut stream: Box<dyn Stream> = Box::new(tcp);
    let redis = settings.info.redis_settings();
    let fresh = match &settings.credentials {
        Some(provider) => {
            let by = Instant::now() + settings.connect_timeout;
            let fresh = credentials::fetch(provider, by)
                .await
                .map_err(std::io::Error::other)?;
            Some(fresh)
        }
        None => None,
    };
    let (username, password) = match &fresh {
        Some(fresh) => (
            fresh.username.as_deref().or(redis.username()),
            Some(fresh.password.as_str()),
        ),
        None => (redis.username(), redis.password()),
    };
    if let Some(password) = password {
        let mut auth = redis::cmd("AUTH");
        if let Some(user) = username {
            auth.arg(user);
        }
        auth.arg(password);
        stream.write_all(&auth.get_packed_command()).await?;
        stream.flush().await?;
        let mut reader = BufReader::new(&mut stream);
        let reply = timeout(settings.command_timeout, read_frame(&mut reader))
            .await
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
        if let Frame::Error(e) = reply {
            return Err(std::io::Error::other(format!("AUTH failed: {e}")));
        }
    }
    Ok(stream)
}

/// Serves one connection; returns `true` when the manager is gone (the task
/// should end), `false` when the connection broke.
async fn serve(
    settings: &NodeSettings,
    stream: Box<dyn Stream>,
    channels: &mut HashSet<String>,
    commands: &mut mpsc::UnboundedReceiver<NodeCmd>,
    events: &mpsc::UnboundedSender<NodeEvent>,
) -> bool {
    let (read, mut write) = tokio::io::split(stream);
    let mut reader = BufReader::new(read);
    let (sub, unsub) = if settings.sharded {
        ("SSUBSCRIBE", "SUNSUBSCRIBE")
    } else {
        ("SUBSCRIBE", "UNSUBSCRIBE")
    };
    let mut pending: VecDeque<Pending> = VecDeque::new();
    let mut out = Vec::new();
    for ch in channels.iter() {
        out.extend(redis::cmd(sub).arg(ch).get_packed_command());
        pending.push_back(Pending::Sub(ch.clone()));
    }
    if send(&mut write, &out).await.is_err() {
        return false;
    }
    // Frames are read by a separate task so a half-read frame is never
    // dropped by `select!`.
    let (frames_tx, mut frames) = mpsc::unbounded_channel();
    let reader_task = tokio::spawn(async move {
        loop {
            let frame = read_frame(&mut reader).await;
            let failed = frame.is_err();
            if frames_tx.send(frame).is_err() || failed {
                return;
            }
        }
    });
    let _stop_reader = AbortOnDrop(reader_task);
    let mut last_heard = Instant::now();
    let mut ping_sent: Option<Instant> = None;
    loop {
        let ping_at = match ping_sent {
            Some(sent) => sent + settings.command_timeout,
            None => last_heard + PING_INTERVAL,
        };
        let mut out = Vec::new();
        tokio::select! {
            cmd = commands.recv() => match cmd {
                None => return true,
                Some(NodeCmd::Subscribe(ch)) => {
                    if channels.insert(ch.clone()) {
                        out.extend(redis::cmd(sub).arg(&ch).get_packed_command());
                        pending.push_back(Pending::Sub(ch));
                    }
                }
                Some(NodeCmd::Unsubscribe(ch)) => {
                    if channels.remove(&ch) {
                        out.extend(redis::cmd(unsub).arg(&ch).get_packed_command());
                        pending.push_back(Pending::Unsub(ch));
                    }
                }
            },
            frame = frames.recv() => {
                let Some(Ok(frame)) = frame else {
                    tracing::debug!(addr = %settings.addr, "subscriber connection closed");
                    return false;
                };
                last_heard = Instant::now();
                handle(settings, frame, channels, &mut pending, &mut ping_sent, events);
            }
            () = tokio::time::sleep_until(ping_at) => {
                if ping_sent.is_some() {
                    tracing::debug!(addr = %settings.addr, "subscriber ping unanswered");
                    return false;
                }
                out.extend(redis::cmd("PING").get_packed_command());
                pending.push_back(Pending::Ping);
                ping_sent = Some(Instant::now());
            }
        }
        if !out.is_empty() && send(&mut write, &out).await.is_err() {
            return false;
        }
    }
}

/// Writes `bytes` and flushes them: a TLS stream may keep written data in
/// its buffer until flushed (a no-op on plain TCP).
async fn send(write: &mut (impl AsyncWrite + Unpin), bytes: &[u8]) -> std::io::Result<()> {
    write.write_all(bytes).await?;
    write.flush().await
}

fn handle(
    settings: &NodeSettings,
    frame: Frame,
    channels: &mut HashSet<String>,
    pending: &mut VecDeque<Pending>,
    ping_sent: &mut Option<Instant>,
    events: &mpsc::UnboundedSender<NodeEvent>,
) {
    let addr = &settings.addr;
    let items = match frame {
        Frame::Array(Some(items)) => items,
        Frame::Error(message) => {
            // Replies come in command order: the error answers the oldest
            // pending command.
            match pending.pop_front() {
                Some(Pending::Sub(channel)) => {
                    tracing::debug!(%addr, %channel, %message, "subscribe refused");
                    channels.remove(&channel);
                    let event = if message.starts_with("NOPERM") {
                        NodeEvent::Refused { channel, message }
                    } else {
                        NodeEvent::Lost {
                            addr: addr.clone(),
                            channel,
                        }
                    };
                    let _ = events.send(event);
                }
                Some(Pending::Ping) => *ping_sent = None,
                Some(Pending::Unsub(_)) | None => {}
            }
            return;
        }
        Frame::Simple(s) if s.eq_ignore_ascii_case("PONG") => {
            if matches!(pending.front(), Some(Pending::Ping)) {
                pending.pop_front();
            }
            *ping_sent = None;
            return;
        }
        other => {
            tracing::debug!(%addr, ?other, "unexpected subscriber frame");
            return;
        }
    };
    let kind = items.first().and_then(Frame::text).unwrap_or_default();
    let channel = items
        .get(1)
        .and_then(Frame::text)
        .unwrap_or_default()
        .to_owned();
    match kind {
        "message" | "smessage" => {
            if let Some(Frame::Bulk(Some(payload))) = items.get(2) {
                let _ = events.send(NodeEvent::Message {
                    channel,
                    payload: payload.clone(),
                });
            }
        }
        "subscribe" | "ssubscribe" => {
            if matches!(pending.front(), Some(Pending::Sub(c)) if *c == channel) {
                pending.pop_front();
            }
            if channels.contains(&channel) {
                let _ = events.send(NodeEvent::Confirmed {
                    addr: addr.clone(),
                    channel,
                });
            }
        }
        "unsubscribe" | "sunsubscribe" => {
            if matches!(pending.front(), Some(Pending::Unsub(c)) if *c == channel) {
                pending.pop_front();
            } else if channels.remove(&channel) {
                // Not asked for: the server dropped it (its slot moved).
                let _ = events.send(NodeEvent::Lost {
                    addr: addr.clone(),
                    channel,
                });
            }
        }
        "pong" => {
            if matches!(pending.front(), Some(Pending::Ping)) {
                pending.pop_front();
            }
            *ping_sent = None;
        }
        _ => tracing::debug!(%addr, kind, "unexpected subscriber frame"),
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
