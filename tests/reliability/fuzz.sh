#!/usr/bin/env bash
# Fuzzes the fingerprint core with cargo fuzz (libFuzzer): the simhash64 text and binary input
# (hex_input), the text pipeline on arbitrary UTF-8 with arbitrary options (fingerprint), and
# the exactness of block-lookup plans (probe_plan). Targets live in src/core/fuzz.
#
#   bash tests/reliability/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   # default 600 s, all three
#
# Needs a nightly toolchain (rustup toolchain install nightly) and cargo-fuzz
# (cargo install cargo-fuzz); both are checked, neither is installed here. The corpus grows in
# target/fuzz-corpus/<target> (kept between runs, never committed); a crash leaves its input in
# src/core/fuzz/artifacts/<target>/, and becomes a regression test in src/core/tests/fuzz_regressions.rs.
# Prints one line per target: runs, coverage, outcome. Exits non-zero if any target crashed.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
export PATH="$HOME/.cargo/bin:$PATH"
SECONDS_PER_TARGET=${1:-600}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(hex_input fingerprint probe_plan)

cargo +nightly --version >/dev/null 2>&1 || { echo "needs a nightly toolchain: rustup toolchain install nightly" >&2; exit 2; }
cargo fuzz --version >/dev/null 2>&1 || { echo "needs cargo-fuzz: cargo install cargo-fuzz" >&2; exit 2; }

cd src/core
cargo +nightly fuzz build -O >/dev/null
status=0
for target in "${TARGETS[@]}"; do
    corpus=$ROOT/target/fuzz-corpus/$target
    log=$ROOT/target/fuzz-corpus/$target.log
    mkdir -p "$corpus"
    started=$(date +%s)
    outcome=ok
    # -rss_limit_mb: a 2 GB allowance per input, as a backend would have; -timeout: 10 s per input.
    cargo +nightly fuzz run -O "$target" "$corpus" -- -max_total_time="$SECONDS_PER_TARGET" \
        -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 >"$log" 2>&1 || { outcome=CRASH; status=1; }
    runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo '?')
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || echo '?')
    printf '%-12s %5ss  %12s runs  cov %6s  corpus %6s  %s\n' "$target" "$(( $(date +%s) - started ))" \
        "$runs" "$cov" "$(ls "$corpus" | wc -l)" "$outcome"
    [ "$outcome" = ok ] || grep -E 'panicked|SUMMARY|artifact_prefix|Test unit written' "$log" | head -5
done
exit $status
