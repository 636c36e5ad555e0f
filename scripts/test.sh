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
echo "==> cargo test"
cargo test --workspace --all-features
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
