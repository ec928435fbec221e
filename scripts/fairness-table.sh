#!/bin/sh
# Distance from the weighted max-min fair allocation for every policy on the
# NASA iPSC/860 and LCG 2005 traces: the table of docs/simulator.md.
#   scripts/fairness-table.sh TRACE_DIR   (the folder that holds the two
#   traces, NASA-iPSC-1993-3.1-cln.swf.gz and LCG-2005-1.swf.gz)
# Every job of a user is in its share (--share-field user) and, for
# classload, its requestor (--class-field user). NASA runs whole on 64
# one-slot workers (half its machine, so that jobs contend: on its own 128
# nodes no job of the cleaned log ever waits); LCG runs its first 20,000 jobs on 300
# workers (its 24,515 processors never contend either).
set -eu
dir=${1:?usage: scripts/fairness-table.sh TRACE_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/allot" ./cmd/allot

scenarios() { # workers
	cat >"$tmp/decay.yaml" <<YAML
queues:
  - {name: default, policy: {kind: fairshare, fairshare: {shareDecaySeconds: 3600}}}
workers:
  - {name: node, count: $1}
YAML
	cat >"$tmp/preempt.yaml" <<YAML
queues:
  - {name: default, policy: {kind: fairshare, fairshare: {preemption: {}}}}
workers:
  - {name: node, count: $1}
YAML
	cat >"$tmp/classload.yaml" <<YAML
queues:
  - name: default
    policy:
      kind: classload
      classload:
        classes: [{name: a, percent: 50}, {name: b, percent: 30}, {name: c, percent: 20}]
        requestorMap:
          - {pattern: '^u[0-9]*[0-2]\$', class: a}
          - {pattern: '^u[0-9]*[3-5]\$', class: b}
workers:
  - {name: node, count: $1}
YAML
	cat >"$tmp/sla.yaml" <<YAML
queues:
  - {name: default, policy: {kind: sla, sla: {groups: [{name: all, value: 100}]}}}
workers:
  - {name: node, count: $1}
YAML
}

row() { # trace label args...
	name=$1 label=$2
	shift 2
	"$tmp/allot" sim "$@" -o json 2>/dev/null | jq -r --arg t "$name" --arg p "$label" '
	  def pc: . * 1000 | round / 10 | tostring + "%";
	  "| \($t) | \($p) | \(.utilisation | pc) | \(.usefulUtilisation | pc) | \(.makespanSeconds / 86400 * 10 | round / 10) d | \(.wait.p95 / 3600 * 10 | round / 10) h | \(.fairness.ideal.meanError | pc) | \(.fairness.ideal.p95Error | pc) | \(.fairness.ideal.floorMeanError | pc) | \(if .fairness.ideal.window then (.fairness.ideal.window.meanError | pc) else "–" end) |"'
}

echo "| trace | policy | utilisation | useful | makespan | wait p95 | mean error | p95 error | whole-slot floor | window mean error |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for t in nasa lcg; do
	case $t in
	nasa) f=$dir/NASA-iPSC-1993-3.1-cln.swf.gz n=64 lim=0 tname="NASA (all, 64 slots)" ;;
	lcg) f=$dir/LCG-2005-1.swf.gz n=300 lim=20000 tname="LCG (first 20,000, 300 slots)" ;;
	esac
	scenarios $n
	common="--trace $f --limit $lim --share-field user --class-field user"
	row "$tname" fifo $common --workers $n --policy fifo
	row "$tname" fairshare $common --workers $n --policy fairshare
	row "$tname" "fairshare, preemption" -f "$tmp/preempt.yaml" $common
	row "$tname" "fairshare, decay 1 h" -f "$tmp/decay.yaml" $common
	row "$tname" "classload 50/30/20" -f "$tmp/classload.yaml" $common
	row "$tname" "priority (all level 5)" $common --workers $n --policy priority --trace-priority 5
	row "$tname" "sla (one group)" -f "$tmp/sla.yaml" $common --trace-sla-group all
done
