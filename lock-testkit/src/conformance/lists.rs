//! The table (`table.rs`) as values, for a deployment that runs checks in
//! one test against one expensive store (a cluster) rather than one store
//! per test: [`kinds`] gives every kind's checks, [`run_checks`] runs a
//! list of them.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::{Harness, Kind, OfKind, RedisLayout};

/// A check that needs only [`Harness`]: a behaviour check, any store runs it.
pub type BehaviourCheck = for<'a> fn(&'a dyn Harness) -> BoxFuture<'a, ()>;

/// A check that looks at Redisson's keys: it needs [`RedisLayout`].
pub type LayoutCheck = for<'a> fn(&'a dyn RedisLayout) -> BoxFuture<'a, ()>;

/// One conformance check, marked by what it needs of the store. The mark
/// is the check's own parameter type (`&dyn Harness` or `&dyn
/// RedisLayout`), read by the compiler when the table is listed
/// ([`Check::of`]), so it cannot drift from what the check does.
#[derive(Clone, Copy)]
pub enum Check {
    /// A behaviour check: any store.
    Behaviour(BehaviourCheck),
    /// A Redis-layout check: a Redis store.
    Layout(LayoutCheck),
}

impl Check {
    /// The check `f`, given as `run` (the same function behind a boxed
    /// future): a [`Check::Behaviour`] when `f` takes `&dyn Harness`, a
    /// [`Check::Layout`] when it takes `&dyn RedisLayout`. `f` is only read
    /// for its type, which picks `run`'s.
    pub fn of<A: CheckArg, R>(_f: impl Fn(A) -> R, run: A::Run) -> Self {
        A::check(run)
    }

    /// Whether the check needs [`RedisLayout`] (else any [`Harness`] runs it).
    pub fn needs_redis_layout(&self) -> bool {
        matches!(self, Check::Layout(_))
    }

    /// The check as a behaviour check, when it is one.
    pub fn behaviour(&self) -> Option<BehaviourCheck> {
        match self {
            Check::Behaviour(run) => Some(*run),
            Check::Layout(_) => None,
        }
    }

    /// Runs the check on a Redis store (which runs both sorts).
    pub fn run<'a>(&self, h: &'a dyn RedisLayout) -> BoxFuture<'a, ()> {
        match self {
            Check::Behaviour(run) => run(h),
            Check::Layout(run) => run(h),
        }
    }
}

/// Implementation detail of [`Check::of`]: a check's parameter type, and
/// the [`Check`] variant it makes.
pub trait CheckArg {
    /// The boxed form of a check taking this parameter.
    type Run;
    /// `run` as a [`Check`].
    fn check(run: Self::Run) -> Check;
}

impl<'a> CheckArg for &'a (dyn Harness + 'a) {
    type Run = BehaviourCheck;
    fn check(run: BehaviourCheck) -> Check {
        Check::Behaviour(run)
    }
}

impl<'a> CheckArg for &'a (dyn RedisLayout + 'a) {
    type Run = LayoutCheck;
    fn check(run: LayoutCheck) -> Check {
        Check::Layout(run)
    }
}

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

    /// The behaviour checks of [`checks`](Self::checks): what a store that
    /// implements [`Harness`] alone (not Redis) runs for this kind.
    pub fn behaviour_checks(&self, shared: Shared) -> Vec<(String, BehaviourCheck)> {
        self.checks(shared)
            .into_iter()
            .filter_map(|(name, check)| Some((name, check.behaviour()?)))
            .collect()
    }

    /// `harness` as this kind's checks take it: a lock kind's wrapped in
    /// [`OfKind`].
    pub fn harness(&self, harness: Arc<dyn RedisLayout>) -> Arc<dyn RedisLayout> {
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
    harness: Arc<dyn RedisLayout>,
    checks: Vec<(String, Check)>,
    limit: Duration,
) -> Vec<String> {
    let mut failed = Vec::new();
    for (name, check) in checks {
        let h = harness.clone();
        let mut run = tokio::spawn(async move { check.run(&*h).await });
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
                $crate::conformance::Check::of(
                    $crate::conformance::$group::$check,
                    |h| ::std::boxed::Box::pin($crate::conformance::$group::$check(h)),
                ),
            )),*
        ];
        checks
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each check is marked by its parameter type: spot checks of both
    /// marks, and the counts the docs quote (`conformance/mod.rs`,
    /// `docs/testing.md`; update them with these numbers).
    #[test]
    fn checks_are_marked_by_what_they_need() {
        let kinds = kinds();
        let reentrant = kinds.iter().find(|k| k.name == "reentrant").unwrap();
        let full = reentrant.checks(Shared::Full);
        let mark = |name: &str| {
            let (_, check) = full.iter().find(|(n, _)| n == name).unwrap();
            check.needs_redis_layout()
        };
        assert!(!mark("shared::other_clients_are_excluded"));
        assert!(mark("shared::hash_field_is_owner_and_count"));

        let shared: Vec<Check> = full
            .iter()
            .filter(|(n, _)| n.starts_with("shared::"))
            .map(|&(_, c)| c)
            .collect();
        let behaviour =
            |checks: &[Check]| checks.iter().filter(|c| c.behaviour().is_some()).count();
        assert_eq!(
            (behaviour(&shared), shared.len()),
            (39, 56),
            "shared checks"
        );
        let own: Vec<Check> = kinds
            .iter()
            .flat_map(|k| k.own.iter().map(|&(_, c)| c))
            .collect();
        assert_eq!((behaviour(&own), own.len()), (60, 122), "kinds' own checks");
        let behaviour_only: usize = kinds
            .iter()
            .map(|k| k.behaviour_checks(Shared::Full).len())
            .sum();
        assert_eq!(
            behaviour_only,
            39 * 3 + 60,
            "what a store that is not Redis runs"
        );
    }

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
