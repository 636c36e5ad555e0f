//! A client record's fields on the store, both ways.

use std::collections::HashMap;

use lock_core::ClientInfo;
use redis::Value;

/// The fields of a record, in the order written.
const HOST: &str = "host";
const PID: &str = "pid";
const SERVICE: &str = "service";
const EXECUTABLE: &str = "executable";
const STARTED_MS: &str = "started_ms";
const VERSION: &str = "version";
/// The ids of the permits the client's guards hold, space-separated.
const PERMITS: &str = "permits";

/// A record as read back: who the client is, and the permits it named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) info: ClientInfo,
    pub(crate) permits: Vec<String>,
}

/// `info` and `permits` as the field, value pairs `write.lua` takes.
/// Optional fields are left out when unset, so a reader tells "none" from
/// an empty string.
pub(crate) fn encode(info: &ClientInfo, permits: &[String]) -> Vec<String> {
    let mut pairs = vec![
        HOST.to_owned(),
        info.host.clone(),
        PID.to_owned(),
        info.pid.to_string(),
        STARTED_MS.to_owned(),
        info.started_ms.to_string(),
        VERSION.to_owned(),
        info.version.clone(),
        PERMITS.to_owned(),
        permits.join(" "),
    ];
    for (field, value) in [(SERVICE, &info.service), (EXECUTABLE, &info.executable)] {
        if let Some(value) = value {
            pairs.push(field.to_owned());
            pairs.push(value.clone());
        }
    }
    pairs
}

/// One `HGETALL` reply as a record; `None` for a record that is gone (an
/// empty reply) or was not written by a client (no host or pid).
pub(crate) fn decode(reply: &Value) -> Option<Record> {
    let Value::Array(flat) = reply else {
        return None;
    };
    let mut fields = HashMap::new();
    for pair in flat.chunks_exact(2) {
        fields.insert(text(&pair[0])?, text(&pair[1])?);
    }
    let info = ClientInfo::new(
        fields.remove(HOST)?,
        fields.get(PID)?.parse().ok()?,
        fields
            .get(STARTED_MS)
            .and_then(|ms| ms.parse().ok())
            .unwrap_or(0),
        fields.remove(VERSION).unwrap_or_default(),
    )
    .with_service(fields.remove(SERVICE))
    .with_executable(fields.remove(EXECUTABLE));
    let permits = fields
        .get(PERMITS)
        .map(|ids| ids.split_ascii_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    Some(Record { info, permits })
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(pairs: &[String]) -> Value {
        Value::Array(
            pairs
                .iter()
                .map(|s| Value::BulkString(s.as_bytes().to_vec()))
                .collect(),
        )
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let info = ClientInfo::new("web-3", 4242, 1_700_000_000_000, "0.1.0")
            .with_service(Some("billing".into()))
            .with_executable(Some("billing-worker".into()));
        let permits = vec!["ab".repeat(16), "cd".repeat(16)];
        let record = decode(&reply(&encode(&info, &permits))).unwrap();
        assert_eq!(record.info, info);
        assert_eq!(record.permits, permits);
        // Unset options stay unset, no permits is an empty list.
        let bare = ClientInfo::new("h", 1, 2, "v");
        let record = decode(&reply(&encode(&bare, &[]))).unwrap();
        assert_eq!(record.info, bare);
        assert!(record.permits.is_empty());
    }

    #[test]
    fn gone_or_foreign_records_are_none() {
        assert_eq!(decode(&Value::Array(vec![])), None);
        assert_eq!(decode(&reply(&["host".into(), "h".into()])), None);
        assert_eq!(
            decode(&reply(&[
                "host".into(),
                "h".into(),
                "pid".into(),
                "x".into()
            ])),
            None
        );
        assert_eq!(decode(&Value::Nil), None);
    }
}
