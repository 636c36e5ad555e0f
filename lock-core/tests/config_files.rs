//! `ClientConfig` read from configuration files (feature `serde`).
#![cfg(feature = "serde")]

use std::time::Duration;

use lock_core::{ClientConfig, PollBackoff, RetryPolicy, WaitStrategy};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn toml_example_sets_every_field_in_human_durations() {
    let config: ClientConfig = toml::from_str(
        r#"
        watchdog_timeout = "10s"
        record_ttl = "45s"
        no_ttl_recheck = "2s 500ms"
        waiter_timeout = "5s"
        loss_margin = "250ms"
        wait_strategy = { poll = { initial = "2ms", max = "64ms" } }
        retry = { attempts = 3, base_backoff = "20ms", max_backoff = "500ms" }
        service_name = "billing-worker"
        "#,
    )
    .unwrap();
    let mut retry = RetryPolicy::default();
    retry.attempts = 3;
    retry.base_backoff = ms(20);
    retry.max_backoff = ms(500);
    let expected = ClientConfig::default()
        .watchdog_timeout(Duration::from_secs(10))
        .record_ttl(Duration::from_secs(45))
        .no_ttl_recheck(ms(2500))
        .waiter_timeout(Duration::from_secs(5))
        .loss_margin(ms(250))
        .wait_strategy(WaitStrategy::Poll(
            PollBackoff::default().initial(ms(2)).max(ms(64)),
        ))
        .retry(retry)
        .service_name("billing-worker");
    assert_eq!(config, expected);
    assert!(config.validate().is_ok());
}

#[test]
fn missing_fields_keep_their_defaults() {
    let empty: ClientConfig = toml::from_str("").unwrap();
    assert_eq!(empty, ClientConfig::default());
    let some: ClientConfig = toml::from_str(
        r#"
        watchdog_timeout = "1m"
        retry = { attempts = 1 }
        wait_strategy = { poll = {} }
        "#,
    )
    .unwrap();
    assert_eq!(some.watchdog_timeout, Duration::from_secs(60));
    assert_eq!(some.retry, RetryPolicy::none());
    assert_eq!(some.wait_strategy, WaitStrategy::poll());
    assert_eq!(some.record_ttl, ClientConfig::default().record_ttl);
    let subscribe: ClientConfig = toml::from_str(r#"wait_strategy = "subscribe""#).unwrap();
    assert_eq!(subscribe.wait_strategy, WaitStrategy::Subscribe);
}

#[test]
fn the_old_key_latch_ttl_still_sets_record_ttl() {
    let toml_config: ClientConfig = toml::from_str(r#"latch_ttl = "45s""#).unwrap();
    assert_eq!(toml_config.record_ttl, Duration::from_secs(45));
    let json_config: ClientConfig = serde_json::from_str(r#"{ "latch_ttl": "45s" }"#).unwrap();
    assert_eq!(json_config, toml_config);
    // Written back, it goes by its new name.
    let written = toml::to_string(&toml_config).unwrap();
    assert!(written.contains("record_ttl"), "{written}");
    assert!(!written.contains("latch_ttl"), "{written}");
}

#[test]
fn json_example_parses_and_round_trips() {
    let config: ClientConfig = serde_json::from_str(
        r#"{ "watchdog_timeout": "30s", "wait_strategy": { "poll": { "max": "128ms" } } }"#,
    )
    .unwrap();
    assert_eq!(config.wait_strategy, WaitStrategy::poll());
    let written = serde_json::to_string(&config).unwrap();
    assert!(written.contains(r#""watchdog_timeout":"30s""#), "{written}");
    let again: ClientConfig = serde_json::from_str(&written).unwrap();
    assert_eq!(again, config);
    let toml_again: ClientConfig = toml::from_str(&toml::to_string(&config).unwrap()).unwrap();
    assert_eq!(toml_again, config);
}

#[test]
fn mistakes_are_errors_naming_what_is_wrong() {
    let typo = toml::from_str::<ClientConfig>(r#"watchdog_timout = "10s""#).unwrap_err();
    assert!(typo.to_string().contains("watchdog_timout"), "{typo}");
    let unit = toml::from_str::<ClientConfig>(r#"watchdog_timeout = "10 parsecs""#).unwrap_err();
    assert!(unit.to_string().contains("watchdog_timeout"), "{unit}");
    let number = toml::from_str::<ClientConfig>("watchdog_timeout = 10").unwrap_err();
    assert!(number.to_string().contains("watchdog_timeout"), "{number}");
    let strategy = toml::from_str::<ClientConfig>(r#"wait_strategy = "spin""#).unwrap_err();
    assert!(strategy.to_string().contains("spin"), "{strategy}");
}

#[test]
fn parsed_values_are_still_validated() {
    let zero: ClientConfig =
        toml::from_str(r#"wait_strategy = { poll = { initial = "0s" } }"#).unwrap();
    assert!(zero.validate().unwrap_err().is_invalid_argument());
    let short: ClientConfig = toml::from_str(r#"watchdog_timeout = "1ms""#).unwrap();
    assert!(short.validate().unwrap_err().is_invalid_argument());
}
