#!/usr/bin/env bash
# make demo: build the CLI and run an example agent offline, end to end.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=bin/stepwise
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export STEPWISE_DB="$work/demo.db"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "1. Run the shopping agent (testdata/agents/external.toml) with its scripted model"
echo "   It reads a price list with the built-in read_file tool, then calls approve_purchase,"
echo "   an external tool: the run pauses (exit code 3) and prints the pending call."
echo "\$ stepwise run testdata/agents/external.toml \"Buy a desk lamp\""
set +e
"$bin" run testdata/agents/external.toml "Buy a desk lamp"
code=$?
set -e
echo "(exit code $code: paused awaiting tool results)"
[ "$code" -eq 3 ] || { echo "expected exit code 3"; exit 1; }
run=$("$bin" ls --status awaiting_tool_results | awk 'NR==2 {print $1}')

say "2. Answer the external call and resume the run"
echo "\$ cat testdata/results/approve.json"; cat testdata/results/approve.json
echo "\$ stepwise resume $run --results testdata/results/approve.json"
"$bin" resume "$run" --results testdata/results/approve.json

say "3. The recorded run, step by step"
echo "\$ stepwise show $run"
"$bin" show "$run"

say "4. Replay it offline: no model, no tools; every decision must match the recording"
echo "\$ stepwise replay $run"
"$bin" replay "$run"

say "5. Replay it against a changed agent (max_steps = 3): the first divergent step is reported"
sed 's/^max_steps = 20/max_steps = 3/' testdata/agents/external.toml > testdata/agents/.demo-changed.toml
trap 'rm -rf "$work" testdata/agents/.demo-changed.toml' EXIT
set +e
"$bin" replay "$run" --agent testdata/agents/.demo-changed.toml
echo "(exit code $?: diverged)"
set -e

say "Done. Try: $bin help"
