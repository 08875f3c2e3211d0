#!/usr/bin/env bash
# Runs every fuzz target at once in the background, at the lowest priority.
# Usage: fuzz/run-all.sh [SECONDS]   (build first: cargo +nightly fuzz build)
# Logs: fuzz/artifacts/<target>.log; crashes: fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-1800}
bin=target/x86_64-unknown-linux-gnu/release
declare -A max_len=([archive]=1048576 [front_end]=1048576 [sources]=262144 [params]=262144 [metadata]=65536 [graph]=65536 [relay]=65536 [object]=262144)
for target in "${!max_len[@]}"; do
    mkdir -p "corpus/$target" "artifacts/$target"
    nice -n 19 "$bin/$target" "corpus/$target" -max_total_time="$seconds" -rss_limit_mb=1024 \
        -max_len="${max_len[$target]}" -timeout=30 -print_final_stats=1 \
        -artifact_prefix="artifacts/$target/" >"artifacts/$target.log" 2>&1 &
done
echo "started; tail -n 3 fuzz/artifacts/*.log to follow"
