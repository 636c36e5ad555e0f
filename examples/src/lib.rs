//! Runnable examples. The README's examples are compiled here as doctests,
//! and so are those of every page under `docs/` (one hidden module each,
//! only built when rustdoc collects doctests).
#![doc = include_str!("../../README.md")]

#[cfg(doctest)]
#[doc = include_str!("../../docs/README.md")]
mod docs_index {}

#[cfg(doctest)]
#[doc = include_str!("../../docs/acl.md")]
mod docs_acl {}

#[cfg(doctest)]
#[doc = include_str!("../../docs/commands.md")]
mod docs_commands {}

#[cfg(doctest)]
#[doc = include_str!("../../docs/configuration.md")]
mod docs_configuration {}

#[cfg(doctest)]
#[doc = include_str!("../../docs/crates.md")]
mod docs_crates {}

#[cfg(doctest)]
#[doc = include_str!("../../docs/deployments.md")]
mod docs_deployments {}

#[cfg(doctest)]
#[doc = include_str!("../../docs/errors.md")]
mod docs_errors {}

#[cfg(doctest)]
#[doc = include_str!("../../docs/locks.md")]
mod docs_locks {}

#[cfg(doctest)]
#[doc = include_str!("../../docs/observability.md")]
mod docs_observability {}

#[cfg(doctest)]
#[doc = include_str!("../../docs/redis-layout.md")]
mod docs_redis_layout {}

#[cfg(doctest)]
#[doc = include_str!("../../docs/redlock.md")]
mod docs_redlock {}

#[cfg(doctest)]
#[doc = include_str!("../../docs/semaphores-and-latches.md")]
mod docs_semaphores_and_latches {}

#[cfg(doctest)]
#[doc = include_str!("../../docs/testing.md")]
mod docs_testing {}
