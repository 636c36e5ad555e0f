//! [`conformance_table!`](crate::conformance_table): a deployment crate's
//! table of deployments × kinds, stamped out as one test per check, so a
//! failure names its deployment, kind and check
//! (`<deployment>::<kind>::<check>`, the shared checks under
//! `<deployment>::<kind>::shared::`).

/// A deployment crate's conformance table: one row per deployment, giving
/// the async function that returns its harness (a
/// [`RedisLayout`](crate::conformance::RedisLayout): the table stamps out
/// the Redis-layout checks too), which
/// of the checks every lock kind shares it runs (`full`, or `smoke`: the
/// subset marked in `table.rs`), and which kinds (`all`, or a list of
/// their names: `reentrant`, `fair`, `handoff`, `read_write`, `latch`,
/// `semaphores`). Every kind a row runs runs its own checks in full. The
/// test attribute comes first and holds for every row.
///
/// Each row becomes a module named after the deployment, with one module
/// per kind inside, and one test per check in that:
///
/// ```text
/// lock_testkit::conformance_table! {
///     #[tokio::test(start_paused = true)]
///     // deployment   harness            shared   kinds
///     memory       => memory_harness,    full,    all;
///     polling      => polling_harness,   smoke,   [reentrant, fair];
/// }
/// ```
#[macro_export]
macro_rules! conformance_table {
    (
        $(#[$attr:meta])*
        $($deployment:ident => $make:path, $shared:ident, $kinds:tt;)*
    ) => {
        $crate::__conformance_rows! {
            [$(#[$attr])*]
            $($deployment => $make, $shared, $kinds;)*
        }
    };
}

/// Implementation detail of [`conformance_table!`](crate::conformance_table):
/// one row at a time.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_rows {
    ([$($attrs:tt)*]) => {};
    (
        [$($attrs:tt)*]
        $deployment:ident => $make:path, $shared:ident, $kinds:tt;
        $($rest:tt)*
    ) => {
        mod $deployment {
            // The harness function lives in the invoking module.
            #[allow(unused_imports)]
            use super::*;

            $crate::__conformance_kinds! {
                $kinds => __conformance_stamp_kind ([$($attrs)*] $make, $shared;)
            }
        }
        $crate::__conformance_rows! { [$($attrs)*] $($rest)* }
    };
}

/// Implementation detail of [`conformance_table!`](crate::conformance_table):
/// one kind's module of tests.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_stamp_kind {
    ([$($attrs:tt)*] $make:path, $shared:ident; $name:ident, lock($kind:ident) [$($own:tt)*]) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            async fn __suite() -> $crate::conformance::OfKind<impl $crate::conformance::RedisLayout> {
                $crate::conformance::OfKind($crate::conformance::Kind::$kind, $make().await)
            }

            /// The checks every lock kind shares, on this kind's handles.
            mod shared {
                #[allow(unused_imports)]
                use super::*;

                $crate::__conformance_shared! {
                    __conformance_stamp_shared ([$($attrs)*] __suite, $shared;)
                }
            }

            $crate::__conformance_each! { [$($attrs)*] __suite; $($own)* }
        }
    };
    ([$($attrs:tt)*] $make:path, $shared:ident; $name:ident, own [$($own:tt)*]) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            $crate::__conformance_each! { [$($attrs)*] $make; $($own)* }
        }
    };
}

/// Implementation detail of [`conformance_table!`](crate::conformance_table):
/// the shared checks a row asked for.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_stamp_shared {
    ([$($attrs:tt)*] $make:path, full; smoke [$($smoke:tt)*] rest [$($rest:tt)*]) => {
        $crate::__conformance_each! { [$($attrs)*] $make; $($smoke)* }
        $crate::__conformance_each! { [$($attrs)*] $make; $($rest)* }
    };
    ([$($attrs:tt)*] $make:path, smoke; smoke [$($smoke:tt)*] rest [$($rest:tt)*]) => {
        $crate::__conformance_each! { [$($attrs)*] $make; $($smoke)* }
    };
}

/// Implementation detail of [`conformance_table!`](crate::conformance_table):
/// a test per check, each on a harness of its own.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_each {
    ([$(#[$attr:meta])*] $make:path;) => {};
    ([$(#[$attr:meta])*] $make:path; $group:ident :: $check:ident $(, $($rest:tt)*)?) => {
        $(#[$attr])*
        async fn $check() {
            let harness = $make().await;
            $crate::conformance::$group::$check(&harness).await;
        }
        $crate::__conformance_each! { [$(#[$attr])*] $make; $($($rest)*)? }
    };
}
