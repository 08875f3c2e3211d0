#!/usr/bin/env bash
# Runs every fuzz target for SECONDS, JOBS at a time (default: all at once),
# niced, then prints the "## Fuzzing" table of docs/src/internals.md from the logs and exits 1
# when a target crashed (CI runs `fuzz/run-all.sh 60 2`).
# Usage: fuzz/run-all.sh [SECONDS] [JOBS]        (default 1800 s)
#        fuzz/run-all.sh --report SECONDS JOBS    (the table of the last run's logs only)
# Builds the targets first (cargo +nightly fuzz build). Seeds: fuzz/corpus/<target>/
# (python3 fuzz/seed.py; new inputs are added there) and fuzz/regressions/<target>/
# (read only). Logs: fuzz/artifacts/<target>.log; crashes: fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")"
report_only=false
if [ "${1:-}" = --report ]; then report_only=true; shift; fi
seconds=${1:-1800}
declare -A max_len=([archive]=1048576 [front_end]=1048576 [sources]=262144 [params]=262144 [metadata]=65536 [graph]=65536 [relay]=65536 [object]=262144 [memory_x]=65536 [stack]=65536 [c_lexer]=262144 [json]=65536 [c_parser]=262144 [slot_header]=65536)
targets=(archive front_end metadata graph params sources relay object memory_x stack c_lexer json c_parser slot_header)
jobs=${2:-${#targets[@]}}
bin=target/x86_64-unknown-linux-gnu/release

# One target; its exit status goes to artifacts/<target>.status.
fuzz_one() {
    local target=$1 code=0
    local corpora=("corpus/$target")
    if [ -d "regressions/$target" ]; then corpora+=("regressions/$target"); fi
    nice -n 19 "$bin/$target" "${corpora[@]}" -max_total_time="$seconds" -rss_limit_mb=1024 \
        -max_len="${max_len[$target]}" -timeout=30 -print_final_stats=1 \
        -artifact_prefix="artifacts/$target/" >"artifacts/$target.log" 2>&1 || code=$?
    echo "$code" >"artifacts/$target.status"
}
if ! $report_only; then
    cargo +nightly fuzz build
    for target in "${targets[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
        mkdir -p "corpus/$target" "artifacts/$target"
        rm -f "artifacts/$target.status"
        touch "artifacts/$target.started"
        fuzz_one "$target" &
    done
    wait
fi

# The table: executions and the final corpus size from libFuzzer's final stats,
# crash files written this run, and the inputs of earlier crashes (fixed, kept
# in fuzz/regressions/ and run by tests/fuzz_regressions.rs).
echo "Runs on $(date -u +%Y-%m-%d): every target for $seconds s, $jobs at a time (fuzz/run-all.sh $seconds $jobs):"
echo
echo "| target | executions | seconds | crashes this run | earlier crashes, fixed (fuzz/regressions) |"
echo "|---|---:|---:|---:|---:|"
crashed=0
for target in "${targets[@]}"; do
    log="artifacts/$target.log"
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    seconds_used=$(sed -n 's/.*Done \([0-9]*\) runs in \([0-9]*\) second.*/\2/p' "$log" | tail -n 1)
    crashes=$(find "artifacts/$target" -type f -newer "artifacts/$target.started" | wc -l)
    fixed=0
    if [ -d "regressions/$target" ]; then fixed=$(find "regressions/$target" -type f | wc -l); fi
    status=$(cat "artifacts/$target.status" 2>/dev/null || echo "no status")
    if [ "$status" != 0 ]; then
        crashed=1
        if [ "$crashes" -eq 0 ]; then crashes="exit $status"; fi
    fi
    executions=$(echo "${executions:-0}" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta')
    echo "| \`$target\` | $executions | ${seconds_used:-?} | $crashes | $fixed |"
done
if [ "$crashed" -ne 0 ]; then
    echo "a fuzz target crashed: see fuzz/artifacts/<target>.log and the inputs in fuzz/artifacts/<target>/" >&2
    exit 1
fi
