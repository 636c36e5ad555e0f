//! Reading configurations from files (feature `serde`): `RedisConfig`,
//! `ConnectionOptions` and (through [`connection_field`]) the cluster
//! crate's `ClusterConfig`, with the shared options beside the
//! deployment's own fields.
//!
//! Written by hand rather than derived with `#[serde(flatten)]`: a
//! flattened struct is read from a buffered copy of the table, so an error
//! in one of its fields points at the whole table, and TOML then quotes
//! its first line, which is the URL with its password; and
//! `deny_unknown_fields` does not work with `flatten`. Reading each value
//! straight from the file keeps errors at the field, and refuses unknown
//! fields.

use std::fmt;
use std::time::Duration;

use serde::de::{Error, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::{ConnectionOptions, RedisConfig};

/// Reads the value of `key` into `options` if it is a shared option;
/// `false` (nothing read) for any other key.
///
/// # Errors
/// The value's error, at the value.
#[doc(hidden)]
pub fn connection_field<'de, A: MapAccess<'de>>(
    options: &mut ConnectionOptions,
    key: &str,
    map: &mut A,
) -> Result<bool, A::Error> {
    match key {
        "key_prefix" => options.key_prefix = map.next_value()?,
        "command_timeout" => options.command_timeout = duration(map)?,
        "connect_timeout" => options.connect_timeout = duration(map)?,
        "replica_sync" => {
            options.replica_sync = map.next_value::<ReplicaSyncSetting>()?.0;
        }
        "lazy_connect" => options.lazy_connect = map.next_value()?,
        "pool_size" => options.pool_size = Some(map.next_value()?),
        "calls_per_connection" => options.calls_per_connection = map.next_value()?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// `replica_sync` in a file: `"off"`, `"connected"` (the default rule),
/// or a table `{ replicas = 1, timeout = "200ms" }` (either field may be
/// left out: no `replicas` is the default rule, no `timeout` 1 s).
struct ReplicaSyncSetting(Option<lock_script::ReplicaSync>);

impl<'de> Deserialize<'de> for ReplicaSyncSetting {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ReplicaSyncVisitor)
    }
}

struct ReplicaSyncVisitor;

impl<'de> Visitor<'de> for ReplicaSyncVisitor {
    type Value = ReplicaSyncSetting;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(r#""off", "connected" or a table { replicas, timeout }"#)
    }

    fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
        match v {
            "off" => Ok(ReplicaSyncSetting(None)),
            "connected" => Ok(ReplicaSyncSetting(
                Some(lock_script::ReplicaSync::default()),
            )),
            other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
        }
    }

    fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<Self::Value, M::Error> {
        let sync = lock_script::ReplicaSync::deserialize(
            serde::de::value::MapAccessDeserializer::new(map),
        )?;
        Ok(ReplicaSyncSetting(Some(sync)))
    }
}

/// A duration written as `"3s"`, `"250ms"`, `"1m 30s"`.
fn duration<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Duration, A::Error> {
    Ok(map
        .next_value::<humantime_serde::Serde<Duration>>()?
        .into_inner())
}

/// The shared options' field names.
const CONNECTION_FIELDS: &[&str] = &[
    "key_prefix",
    "command_timeout",
    "connect_timeout",
    "replica_sync",
    "lazy_connect",
    "pool_size",
    "calls_per_connection",
];

/// The error for a field no configuration knows.
#[doc(hidden)]
pub fn unknown_field<E: Error>(key: &str) -> E {
    E::custom(format!("unknown field `{key}`"))
}

/// Reads a field name, refusing one that is neither in `own` nor a shared
/// option: refused while reading the key, the error points at the key (a
/// TOML error then quotes that line, not the table's first).
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct FieldName {
    /// The configuration's own fields.
    pub own: &'static [&'static str],
}

impl<'de> serde::de::DeserializeSeed<'de> for FieldName {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for FieldName {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: Error>(self, name: &str) -> Result<String, E> {
        if self.own.contains(&name) || CONNECTION_FIELDS.contains(&name) {
            return Ok(name.to_owned());
        }
        let expected: Vec<&str> = self.own.iter().chain(CONNECTION_FIELDS).copied().collect();
        Err(E::custom(format!(
            "unknown field `{name}`, expected one of {}",
            expected.join(", ")
        )))
    }
}

impl<'de> Deserialize<'de> for ConnectionOptions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Options;
        impl<'de> Visitor<'de> for Options {
            type Value = ConnectionOptions;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("connection options")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut options = ConnectionOptions::default();
                while let Some(key) = map.next_key_seed(FieldName { own: &[] })? {
                    if !connection_field(&mut options, &key, &mut map)? {
                        return Err(unknown_field(&key));
                    }
                }
                Ok(options)
            }
        }
        deserializer.deserialize_map(Options)
    }
}

impl<'de> Deserialize<'de> for RedisConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Config;
        impl<'de> Visitor<'de> for Config {
            type Value = RedisConfig;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Redis configuration (a table with `url`, or with `sentinel`)")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut config = RedisConfig::new("");
                let mut url = None;
                let fields = FieldName {
                    own: &["url", "sentinel", "slot_checking_proxy"],
                };
                while let Some(key) = map.next_key_seed(fields)? {
                    match key.as_str() {
                        "url" => url = Some(map.next_value()?),
                        "sentinel" => config.sentinel = map.next_value()?,
                        "slot_checking_proxy" => config.slot_checking_proxy = map.next_value()?,
                        other => {
                            if !connection_field(&mut config.connection, other, &mut map)? {
                                return Err(unknown_field(other));
                            }
                        }
                    }
                }
                // A Sentinel group names its master itself: no `url` then
                // (as `RedisConfig::sentinel` sets none).
                config.url = match (url, &config.sentinel) {
                    (Some(url), _) => url,
                    (None, Some(_)) => String::new(),
                    (None, None) => return Err(A::Error::missing_field("url")),
                };
                Ok(config)
            }
        }
        deserializer.deserialize_map(Config)
    }
}
