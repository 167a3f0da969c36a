#!/usr/bin/env bash
# Audits the fourteen examples one after another (timing must not overlap), each in its own process:
#   scripts/audit_examples.sh [OUT_DIR] [RUN_FILE]
# writes OUT_DIR/audit-<name>/{audit.json,audit.md,flame.html} and OUT_DIR/audit-<name>.log; each
# audit is capped (2-3 min: up to 10 s learning the host, 20 s waiting for its fast state, the rest
# 15-60 s on an H200; naive, whose step rebuilds its graph every call (7 ms), 5 min: a slow host has
# cut it short before: log 2026-12-04-1508). Each phase prints a line with its time, so a cut audit
# says where it was.
# The committed reference audits are re-measured in place with
#   scripts/audit_examples.sh reports/reference/h200 reports/reference/h200/run.json
# (each trap example is followed by its fixed version: naive/fixed, custom-op/direct-op,
# sync-check/sync-check-fixed, library-op/library-op-fixed, scheduler/scheduler-fixed,
# attn-proj/attn-proj-fixed; mixed and autograd-backward have none).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/audits}
run=${2:-}
mkdir -p "$out" || exit 2
rc=0
nogpu=""   # the first audit's one line when this machine has no GPU: every later example gets it too,
#            without a process that would import torch only to say the same
# A trap example names its fixed version (4th field): `--fixed` times both in the same plain-loop rounds.
for p in naive:naive:300:fixed fixed:fixed:120 mixed:mixed:120 custom_op:custom-op:150:direct_op \
         direct_op:direct-op:120 sync_check:sync-check:180:sync_check_fixed sync_check_fixed:sync-check-fixed:180 \
         library_op:library-op:180:library_op_fixed library_op_fixed:library-op-fixed:150 \
         scheduler:scheduler:180:scheduler_fixed scheduler_fixed:scheduler-fixed:150 \
         attn_proj:attn-proj:180:attn_proj_fixed attn_proj_fixed:attn-proj-fixed:150 \
         autograd_backward:autograd-backward:180; do
  IFS=: read -r f d t fx <<< "$p"
  log="$out/audit-$d.log"
  if [ -n "$nogpu" ]; then
    echo "$nogpu" > "$log"; e=2
  else
    PYTHONUNBUFFERED=1 timeout "$t" python3 -m cudnn_hostbench.scripts.cli audit "examples/${f}_integration.py:make_step" \
      ${fx:+--fixed "examples/${fx}_integration.py:make_step"} \
      ${run:+--run-file "$run"} --out "$out/audit-$d" > "$log" 2>&1
    e=$?
    if [ "$e" = 2 ] && [ "$(wc -l < "$log")" -le 1 ] && grep -q '^hostbench audit: needs a CUDA GPU' "$log"; then
      nogpu=$(cat "$log")
    fi
  fi
  echo "audit_examples: $f: exit $e ($out/audit-$d.log)"
  [ $e -ne 0 ] && rc=2
done
exit $rc
