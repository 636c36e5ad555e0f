//! A Redis URL from a redis-rs [`ConnectionInfo`]: how
//! [`RedisConfig::from_connection_info`](crate::RedisConfig::from_connection_info)
//! starts from an existing redis configuration while the URL stays the one
//! description of the server (printed redacted, validated, reparsed on
//! every use).

use std::fmt::Write as _;

use lock_core::{LockError, Result};
use redis::{ConnectionAddr, ConnectionInfo, ProtocolVersion};

/// The URL that parses back into `info` (address, user, password,
/// database, protocol).
///
/// # Errors
/// [`LockError::InvalidArgument`] for TLS certificates inside `info` (a URL
/// cannot carry them) or a Unix socket path that is not UTF-8.
pub(crate) fn url_of(info: &ConnectionInfo) -> Result<String> {
    let redis = info.redis_settings();
    let resp3 = redis.protocol() == ProtocolVersion::RESP3;
    match info.addr() {
        ConnectionAddr::Tcp(host, port) => Ok(tcp_url("redis", host, *port, info, resp3, "")),
        ConnectionAddr::TcpTls {
            host,
            port,
            insecure,
            tls_params,
        } => {
            if tls_params.is_some() {
                return Err(LockError::invalid(
                    "the redis connection info carries TLS certificates, which a URL cannot: give them with the `tls` option (TlsOptions) instead",
                ));
            }
            let fragment = if *insecure { "#insecure" } else { "" };
            Ok(tcp_url("rediss", host, *port, info, resp3, fragment))
        }
        ConnectionAddr::Unix(path) => {
            let path = path.to_str().ok_or_else(|| {
                LockError::invalid(format!("the Unix socket path {path:?} is not UTF-8"))
            })?;
            let mut url = format!("redis+unix://{}?db={}", encode(path, true), redis.db());
            if let Some(user) = redis.username() {
                let _ = write!(url, "&user={}", encode(user, false));
            }
            if let Some(password) = redis.password() {
                let _ = write!(url, "&pass={}", encode(password, false));
            }
            if resp3 {
                url.push_str("&protocol=resp3");
            }
            Ok(url)
        }
        // `ConnectionAddr` is non-exhaustive: a new kind of address is
        // refused rather than guessed at.
        #[allow(unreachable_patterns)]
        other => Err(LockError::invalid(format!(
            "unsupported redis address {other}"
        ))),
    }
}

fn tcp_url(
    scheme: &str,
    host: &str,
    port: u16,
    info: &ConnectionInfo,
    resp3: bool,
    fragment: &str,
) -> String {
    let redis = info.redis_settings();
    let mut userinfo = String::new();
    if let Some(user) = redis.username() {
        userinfo.push_str(&encode(user, false));
    }
    if let Some(password) = redis.password() {
        let _ = write!(userinfo, ":{}", encode(password, false));
    }
    if !userinfo.is_empty() {
        userinfo.push('@');
    }
    // An IPv6 address goes in brackets, as redis-rs stores it without.
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    let query = if resp3 { "?protocol=resp3" } else { "" };
    format!(
        "{scheme}://{userinfo}{host}:{port}/{}{query}{fragment}",
        redis.db()
    )
}

/// Percent-encodes all but the unreserved characters (and `/` in a path).
fn encode(text: &str, path: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        let keep = byte.is_ascii_alphanumeric()
            || matches!(byte, b'-' | b'.' | b'_' | b'~')
            || (path && byte == b'/');
        if keep {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::IntoConnectionInfo;

    fn round_trip(url: &str) -> ConnectionInfo {
        let info = url.into_connection_info().unwrap();
        let back = url_of(&info).unwrap();
        let reparsed = back.as_str().into_connection_info().unwrap();
        assert_eq!(reparsed.addr(), info.addr(), "{url} -> {back}");
        let (a, b) = (info.redis_settings(), reparsed.redis_settings());
        assert_eq!(
            (a.username(), a.password(), a.db(), a.protocol()),
            (b.username(), b.password(), b.db(), b.protocol()),
            "{url} -> {back}"
        );
        reparsed
    }

    #[test]
    fn every_part_of_the_info_survives() {
        round_trip("redis://127.0.0.1:6379/");
        round_trip("redis://app:p%40ss%3Aw%2Frd%25@10.0.0.5:6380/2?protocol=resp3");
        round_trip("redis://:only-a-password@h:1/0");
        round_trip("redis://user-only@h:1/0");
        round_trip("redis://[::1]:6379/1");
        round_trip("redis+unix:///tmp/redis%20dir/redis.sock?db=3&user=u&pass=p%26q");
        let info = round_trip("redis://u:p%C3%A9@h:1/0");
        assert_eq!(info.redis_settings().password(), Some("pé"));
    }

    #[cfg(feature = "tls")]
    #[test]
    fn tls_addresses_survive_but_built_in_certificates_do_not() {
        round_trip("rediss://h:6380/0");
        round_trip("rediss://h:6380/0#insecure");
        let info = "rediss://h:6380/".into_connection_info().unwrap();
        let with_certs = redis::Client::build_with_tls(
            info,
            redis::TlsCertificates {
                client_tls: None,
                root_cert: None,
            },
        )
        .unwrap();
        let e = url_of(with_certs.get_connection_info()).unwrap_err();
        assert!(
            e.is_invalid_argument() && e.to_string().contains("tls"),
            "{e}"
        );
    }
}
