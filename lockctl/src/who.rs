//! Who holds: a holder's, waiter's or permit's client record
//! ([`lock_redis::ClientInfo`]), as JSON and as one line for people.
//!
//! Every lock client of ours keeps a record of itself (host, process id,
//! service name, start time); `status` and `list` show it beside each
//! holder, waiter and permit whose client's record exists. A holder of
//! another library (Redisson, redsync, …) or of a client gone for a few
//! watchdog periods has none: JSON `client` is `null` (the key is always
//! there, so a script needs no check), and people see the raw field only.
//! A permit's client may show up one refresh late (a third of the
//! watchdog timeout): a permit's id does not name its client, the record
//! does, and it is rewritten at each refresh.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lock_redis::{ClientInfo, Holder};
use serde::Serialize;

use crate::duration;

/// A holder (of a lock, a read or a write hold): the stored field, the
/// hold count and its client's record.
#[derive(Debug, Serialize)]
pub(crate) struct HolderJson<'a> {
    field: &'a str,
    count: u64,
    client: Option<ClientJson<'a>>,
}

impl<'a> HolderJson<'a> {
    pub(crate) fn of(h: &'a Holder) -> Self {
        Self {
            field: &h.field,
            count: h.count,
            client: client(h.client.as_ref()),
        }
    }
}

/// A client's record: always these keys; `service` and `executable` are
/// `null` when not known.
#[derive(Debug, Serialize)]
pub(crate) struct ClientJson<'a> {
    host: &'a str,
    pid: u32,
    service: Option<&'a str>,
    executable: Option<&'a str>,
    /// When the client started, in milliseconds since the Unix epoch, by
    /// its host's clock.
    started_ms: u64,
    /// The version of the library it runs.
    version: &'a str,
}

pub(crate) fn client(info: Option<&ClientInfo>) -> Option<ClientJson<'_>> {
    info.map(|c| ClientJson {
        host: &c.host,
        pid: c.pid,
        service: c.service.as_deref(),
        executable: c.executable.as_deref(),
        started_ms: c.started_ms,
        version: &c.version,
    })
}

/// One line for people: `service billing on web-3, pid 4242
/// (billing-worker), up 12m 3s`; how long it has been up is by this
/// machine's clock against the client's, left out when they disagree.
pub(crate) fn line(c: &ClientInfo) -> String {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    line_at(c, now_ms)
}

fn line_at(c: &ClientInfo, now_ms: u64) -> String {
    let mut text = String::new();
    if let Some(service) = &c.service {
        text.push_str(&format!("service {service} on "));
    }
    text.push_str(&format!("{}, pid {}", c.host, c.pid));
    if let Some(executable) = &c.executable {
        text.push_str(&format!(" ({executable})"));
    }
    if let Some(up) = now_ms
        .checked_sub(c.started_ms)
        .filter(|_| c.started_ms > 0)
    {
        // Tenths of a second: finer is noise between two machines'
        // clocks, coarser shows a client up half a second as "up 0ms".
        let up = Duration::from_millis(up / 100 * 100);
        text.push_str(&format!(", up {}", duration::display(up)));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn web3() -> ClientInfo {
        ClientInfo::new("web-3", 4242, 1_000_000, "0.1.0")
            .with_service(Some("billing".into()))
            .with_executable(Some("billing-worker".into()))
    }

    #[test]
    fn a_line_names_service_host_process_and_uptime() {
        assert_eq!(
            line_at(&web3(), 1_090_500),
            format!(
                "service billing on web-3, pid 4242 (billing-worker), up {}",
                duration::display(Duration::from_secs(90))
            )
        );
        // Up half a second: said so, not "0ms".
        assert_eq!(
            line_at(&web3(), 1_000_540),
            "service billing on web-3, pid 4242 (billing-worker), up 500ms"
        );
        assert_eq!(line_at(&web3(), 1_001_540).rsplit(' ').next(), Some("1.5s"));
        // No service, no executable, a clock behind the client's.
        let bare = ClientInfo::new("h", 1, 5_000, "0.1.0");
        assert_eq!(line_at(&bare, 4_000), "h, pid 1");
    }

    #[test]
    fn json_has_every_key() {
        let holder = Holder::new("c1:7", 2).with_client(Some(web3()));
        assert_eq!(
            serde_json::to_string(&HolderJson::of(&holder)).unwrap(),
            r#"{"field":"c1:7","count":2,"client":{"host":"web-3","pid":4242,"service":"billing","executable":"billing-worker","started_ms":1000000,"version":"0.1.0"}}"#
        );
        assert_eq!(
            serde_json::to_string(&HolderJson::of(&Holder::new("x", 1))).unwrap(),
            r#"{"field":"x","count":1,"client":null}"#
        );
    }
}
