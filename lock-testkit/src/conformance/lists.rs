//! The table (`table.rs`) as values, for a deployment that runs checks in
//! one test against one expensive store (a cluster) rather than one store
//! per test: [`kinds`] gives every kind's checks, [`run_checks`] runs a
//! list of them.

use std::sync::Arc;
use std::time::Duration;

use super::{Harness, Kind, OfKind};

/// One conformance check.
pub type Check = for<'a> fn(&'a dyn Harness) -> futures::future::BoxFuture<'a, ()>;

/// Which of the checks every lock kind shares a deployment runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Shared {
    /// Every one.
    Full,
    /// The smoke subset (see `table.rs`): enough to prove a deployment's
    /// wiring where the full set ran on another.
    Smoke,
}

/// One kind's row of the table.
pub struct KindChecks {
    /// The kind's name in the table (`reentrant`, `fair`, …).
    pub name: &'static str,
    /// The lock kind whose handles the shared checks take; `None` for a
    /// kind that is no lock (it has its own checks only).
    pub kind: Option<Kind>,
    /// The kind's own checks, as `(name, check)`.
    pub own: Vec<(&'static str, Check)>,
}

impl KindChecks {
    /// The checks a deployment running `shared` runs for this kind: the
    /// shared ones (a lock kind's, prefixed `shared::`) and then its own.
    pub fn checks(&self, shared: Shared) -> Vec<(String, Check)> {
        let mut checks = Vec::new();
        if self.kind.is_some() {
            let (smoke, rest) = crate::__conformance_shared! { __conformance_split () };
            checks.extend(smoke);
            if shared == Shared::Full {
                checks.extend(rest);
            }
        }
        let mut checks: Vec<(String, Check)> = checks
            .into_iter()
            .map(|(name, check)| (format!("shared::{name}"), check))
            .collect();
        checks.extend(
            self.own
                .iter()
                .map(|&(name, check)| (name.to_owned(), check)),
        );
        checks
    }

    /// `harness` as this kind's checks take it: a lock kind's wrapped in
    /// [`OfKind`].
    pub fn harness(&self, harness: Arc<dyn Harness>) -> Arc<dyn Harness> {
        match self.kind {
            Some(kind) => Arc::new(OfKind(kind, harness)),
            None => harness,
        }
    }
}

/// Every kind of the table, in its order.
pub fn kinds() -> Vec<KindChecks> {
    let mut kinds = Vec::new();
    crate::__conformance_kinds! { all => __conformance_push_kind (kinds;) }
    kinds
}

/// Runs `checks` one after another against `harness`, each in its own task
/// (so a failing check does not stop the others) and bounded by `limit`.
/// Prints one line per check, like the test harness does, and returns the
/// names of the checks that failed.
pub async fn run_checks(
    harness: Arc<dyn Harness>,
    checks: Vec<(String, Check)>,
    limit: Duration,
) -> Vec<String> {
    let mut failed = Vec::new();
    for (name, check) in checks {
        let h = harness.clone();
        let mut run = tokio::spawn(async move { check(&*h).await });
        let outcome = match tokio::time::timeout(limit, &mut run).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(match e.try_into_panic() {
                Ok(payload) => payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_else(|| "panicked".to_owned()),
                Err(e) => e.to_string(),
            }),
            Err(_) => {
                run.abort();
                Err(format!("did not finish within {limit:?}"))
            }
        };
        match outcome {
            Ok(()) => eprintln!("check {name} ... ok"),
            Err(why) => {
                eprintln!("check {name} ... FAILED: {why}");
                failed.push(name);
            }
        }
    }
    failed
}

/// Implementation detail of [`kinds`]: a row as a [`KindChecks`], pushed
/// onto `$kinds`.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_push_kind {
    ($kinds:ident; $name:ident, lock($kind:ident) [$($own:tt)*]) => {
        $kinds.push($crate::conformance::KindChecks {
            name: ::std::stringify!($name),
            kind: ::std::option::Option::Some($crate::conformance::Kind::$kind),
            own: $crate::__conformance_list! { $($own)* },
        });
    };
    ($kinds:ident; $name:ident, own [$($own:tt)*]) => {
        $kinds.push($crate::conformance::KindChecks {
            name: ::std::stringify!($name),
            kind: ::std::option::Option::None,
            own: $crate::__conformance_list! { $($own)* },
        });
    };
}

/// Implementation detail of [`KindChecks::checks`]: the shared checks as
/// `(smoke, rest)` lists.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_split {
    (smoke [$($smoke:tt)*] rest [$($rest:tt)*]) => {
        (
            $crate::__conformance_list! { $($smoke)* },
            $crate::__conformance_list! { $($rest)* },
        )
    };
}

/// Implementation detail: checks as `(name, check)` pairs.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_list {
    ($($group:ident :: $check:ident),* $(,)?) => {{
        let checks: ::std::vec::Vec<(&'static str, $crate::conformance::Check)> = ::std::vec![
            $((
                ::std::stringify!($check),
                (|h| ::std::boxed::Box::pin($crate::conformance::$group::$check(h)))
                    as $crate::conformance::Check,
            )),*
        ];
        checks
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smoke subset is a part of the shared checks, not all of them;
    /// kinds and every kind's checks have distinct names (a test per check
    /// is a function of that name in the kind's module).
    #[test]
    fn smoke_is_a_proper_part_and_names_are_distinct() {
        let kinds = kinds();
        let mut names: Vec<&str> = kinds.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), kinds.len(), "a kind twice");
        for k in &kinds {
            let full = k.checks(Shared::Full);
            let smoke = k.checks(Shared::Smoke);
            let mut names: Vec<&str> = full.iter().map(|(n, _)| n.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), full.len(), "{}: a name twice", k.name);
            if k.kind.is_some() {
                assert!(smoke.len() < full.len(), "{}", k.name);
                assert!(smoke.len() > k.own.len(), "{}", k.name);
            } else {
                assert_eq!(smoke.len(), full.len(), "{}", k.name);
            }
            assert!(smoke.iter().all(|(n, _)| full.iter().any(|(m, _)| m == n)));
        }
    }
}
