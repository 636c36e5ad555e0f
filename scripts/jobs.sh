# A small job pool for scripts/test.sh: the test binaries mostly wait (on
# redis-server, on leases and timeouts), so running several side by side
# cuts the suite's wall time without adding CPU work.
#
#   job NAME DIR [ENV=VALUE...] -- COMMAND [ARGS...]   queue a job
#   run_jobs MAX                                       run them, MAX at once
#
# Jobs start in the order queued (queue the longest first). Each job's
# output goes to a log of its own; one line per job says how it ended, and
# the logs of failed jobs are printed at the end. run_jobs fails when any
# job failed.

JOB_NAMES=()
JOB_DIRS=()
JOB_CMDS=()

job() {
    local name="$1" dir="$2"
    shift 2
    local envs=()
    while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
        envs+=("$1")
        shift
    done
    [ "${1:-}" = "--" ] || { echo "job $name: missing -- before the command" >&2; exit 2; }
    shift
    JOB_NAMES+=("$name")
    JOB_DIRS+=("$dir")
    JOB_CMDS+=("$(printf '%q ' env ${envs[@]+"${envs[@]}"} "$@")")
}

run_jobs() {
    local max="$1" logs i
    logs="$(mktemp -d)"
    for i in "${!JOB_NAMES[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge "$max" ]; do
            wait -n || true
        done
        (
            # The caller's `set -e` must not end this reporter early (e.g.
            # on a job that prints no test summary for grep to find).
            set +e
            local name="${JOB_NAMES[$i]}" log="$logs/$i.log" start rc=0
            start=$(date +%s)
            (cd "${JOB_DIRS[$i]}" && eval "${JOB_CMDS[$i]}") </dev/null >"$log" 2>&1 || rc=$?
            echo "$rc" >"$logs/$i.rc"
            local took=$(($(date +%s) - start)) summary
            summary="$(grep -E '^test result:' "$log" | tail -n 1 | sed -E 's/; finished in.*//')"
            if [ "$rc" = 0 ]; then
                echo "--> ok      $name (${took} s) ${summary}"
            else
                echo "--> FAILED  $name (${took} s, exit $rc) ${summary}"
            fi
        ) &
    done
    wait
    local failed=0
    for i in "${!JOB_NAMES[@]}"; do
        if [ "$(cat "$logs/$i.rc" 2>/dev/null || echo 1)" != 0 ]; then
            failed=1
            echo
            echo "==> output of the failed job ${JOB_NAMES[$i]}"
            echo "    (cd ${JOB_DIRS[$i]} && ${JOB_CMDS[$i]})"
            cat "$logs/$i.log"
        fi
    done
    rm -rf "$logs"
    JOB_NAMES=()
    JOB_DIRS=()
    JOB_CMDS=()
    return "$failed"
}
