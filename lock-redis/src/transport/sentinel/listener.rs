//! Listening for `+switch-master`, so the client moves as soon as the
//! sentinels announce a new master.

use std::sync::Weak;
use std::time::Duration;

use futures::StreamExt;
use redis::Client;
use tokio::time::{sleep, timeout};

use super::Master;

/// The Sentinel channel that announces a new master:
/// `<name> <old-ip> <old-port> <new-ip> <new-port>`.
const SWITCH_MASTER: &str = "+switch-master";
/// Pause before the `+switch-master` listener tries the sentinels again.
const LISTEN_RETRY: Duration = Duration::from_millis(500);

/// Listens for `+switch-master` on one sentinel at a time (the next one
/// when it fails), until aborted ([`Master::close`]). A sentinel that stops
/// answering without closing the connection leaves this deaf until the
/// connection breaks; the other triggers (broken connections, `READONLY`)
/// still move the client.
pub(super) async fn listen_for_switches(master: Weak<Master>, connect_timeout: Duration) {
    let (urls, name) = match master.upgrade() {
        Some(m) => (m.config.sentinels.clone(), m.config.master_name.clone()),
        None => return,
    };
    let mut next = 0;
    loop {
        let url = &urls[next % urls.len()];
        next += 1;
        let connected = match Client::open(url.as_str()) {
            Ok(client) => timeout(connect_timeout, client.get_async_pubsub()).await,
            Err(_) => return, // validated before: cannot happen
        };
        let Ok(Ok(mut pubsub)) = connected else {
            sleep(LISTEN_RETRY).await;
            continue;
        };
        if !matches!(
            timeout(connect_timeout, pubsub.subscribe(SWITCH_MASTER)).await,
            Ok(Ok(()))
        ) {
            sleep(LISTEN_RETRY).await;
            continue;
        }
        let mut messages = pubsub.into_on_message();
        while let Some(message) = messages.next().await {
            let payload: String = message.get_payload().unwrap_or_default();
            if payload.split(' ').next() != Some(name.as_str()) {
                continue;
            }
            let Some(master) = master.upgrade() else {
                return;
            };
            tracing::info!(%payload, "sentinel: +switch-master");
            master.switched(connect_timeout).await;
        }
        sleep(LISTEN_RETRY).await;
    }
}
