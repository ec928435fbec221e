#!/usr/bin/env bash
# Allot and Slurm side by side on this machine, with real processes (`true`).
#
# Installs Debian's Slurm and munge if they are missing, then runs, for each system in turn (Slurm, Allot, Slurm,
# Allot, ...), each round on freshly started daemons with the same number of slots:
#   backlog  N single-task jobs submitted while nothing may start, then released: jobs/s until all are done
#   array    one array of N tasks (Slurm: sbatch --array; Allot: one job whose task has count N), the same way
#   latency  L jobs submitted one at a time on the idle system: submit to the job's first command, in ms
# and prints the medians over the rounds and the ratios. Every daemon it starts is stopped and its temporary directory
# removed when it exits, whatever the reason. Not part of the test suite.
#
# Each measurement is also one machine-readable line on stdout:
#   RESULT {"system":"slurm","round":1,"workload":"backlog",...}
#   SUMMARY {"workload":"backlog","metric":"jobs_per_s","slurm":...,"allot":...,"ratio":...}
# (ratio is Allot's figure over Slurm's for rates, Slurm's over Allot's for latencies: above 1 means Allot is faster).
#
# Usage: sudo bench/slurm/run.sh [--quick] [--rounds R] [--jobs N] [--array N] [--latency L] [--slots S]
#                                [--submitters P] [--prefetch N] [--only slurm|allot] [--keep]
# See docs/performance.md, "Side by side with Slurm".
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

rounds=3 jobs=10000 array=10000 latency=200 slots=16 submitters=4 prefetch=0 only="" keep=0
while [ $# -gt 0 ]; do
	case $1 in
	--quick) rounds=1 jobs=500 array=500 latency=20 ;;
	--rounds) rounds=$2; shift ;;
	--jobs) jobs=$2; shift ;;
	--array) array=$2; shift ;;
	--latency) latency=$2; shift ;;
	--slots) slots=$2; shift ;;
	--submitters) submitters=$2; shift ;;
	--prefetch) prefetch=$2; shift ;; # allot worker --prefetch: tasks taken ahead of free slots
	--only) only=$2; shift ;;
	--keep) keep=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
[ "$(id -u)" = 0 ] || { echo "run.sh: run as root (it installs packages and runs munged, slurmctld and slurmd)" >&2; exit 2; }

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
now() { printf '%s\n' "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# ---------------------------------------------------------------- installation

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null ||
	! command -v munged >/dev/null; then
	log "installing Slurm and munge (apt-get)"
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurm-wlm slurm-client munge
fi
for cmd in curl awk go; do command -v $cmd >/dev/null || die "$cmd is needed"; done

work=$(mktemp -d /tmp/allot-vs-slurm.XXXXXX)
chmod 755 "$work" # Allot's agent runs tasks as nobody: the latency jobs write under it
pids=()           # daemons started, stopped in reverse order by cleanup

stop_pid() { # stop_pid PID: TERM, up to 10 s, then KILL
	local pid=$1 i
	kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}
stop_all() {
	local i
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop_pid "${pids[i]}"; done
	pids=()
}
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	[ -z "${SLURM_CONF:-}" ] || slurm_quiesce
	stop_all
	if [ "$keep" = 1 ]; then log "kept $work"; else rm -rf "$work"; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_until DESCRIPTION TIMEOUT_S COMMAND...: polls COMMAND every 0.1 s
wait_until() {
	local what=$1 timeout=$2 deadline
	shift 2
	deadline=$(($(date +%s) + timeout))
	until "$@"; do
		[ "$(date +%s)" -lt $deadline ] || die "timed out after ${timeout}s waiting for $what"
		sleep 0.1
	done
}

free_port() { # free_port FROM: the first TCP port from FROM up that nothing listens on
	local p
	for p in $(seq "$1" $(($1 + 999))); do
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
	die "no free port from $1"
}

# ---------------------------------------------------------------- versions and machine

log "building allot from $repo"
(cd "$repo" && go build -o "$work/bin/allot" ./cmd/allot)
allot=$work/bin/allot
slurm_version=$(slurmctld -V | awk '{print $2}')
munge_version=$(munged --version 2>&1 | awk '{print $1; exit}')
allot_version=$(cd "$repo" && git describe --always --dirty 2>/dev/null || echo unknown)
cpu_model=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
machine="$(nproc) vCPU, $cpu_model, $(uname -sr)"
printf 'MACHINE {"cpus":%d,"cpu":"%s","kernel":"%s","slurm":"%s","munge":"%s","allot":"%s","rounds":%d,"jobs":%d,"array":%d,"latency_samples":%d,"slots":%d,"submitters":%d}\n' \
	"$(nproc)" "$cpu_model" "$(uname -r)" "$slurm_version" "$munge_version" "$allot_version" "$rounds" "$jobs" "$array" \
	"$latency" "$slots" "$submitters"
log "$machine; Slurm $slurm_version, $munge_version, Allot $allot_version"

result() { # result SYSTEM ROUND WORKLOAD JSON-FIELDS: one RESULT line on stdout (with the load average), saved for the summary
	local line
	line=$(printf '{"system":"%s","round":%d,"workload":"%s",%s,"load1":%s}' "$1" "$2" "$3" "$4" "$(cut -d' ' -f1 /proc/loadavg)")
	printf 'RESULT %s\n' "$line"
	printf '%s\n' "$line" >>"$work/results.ndjson"
}

# latency_stats FILE: p50 p95 p99 max of the milliseconds in FILE, one a line
latency_stats() {
	sort -n "$1" | awk '
		function at(q,   k) { k = int(n * q + 0.999999); if (k < 1) k = 1; if (k > n) k = n; return v[k] }
		{ v[NR] = $1 }
		END { n = NR; if (n == 0) { print "0 0 0 0"; exit }
			printf "%.1f %.1f %.1f %.1f\n", at(0.50), at(0.95), at(0.99), v[n] }'
}

# idle_gap: a random pause of 0 to 1 s between latency samples. Slurm starts batch jobs in a scheduling pass about
# once a second; samples submitted right after the previous job ended would all land at the same point of that cycle.
idle_gap() { sleep "$(printf '0.%03d' $((RANDOM % 1000)))"; }

# ---------------------------------------------------------------- Slurm

node=bench1
host=$(hostname -s)

slurm_start() {
	local d=$work/slurm
	rm -rf "$d"
	mkdir -p "$d/state" "$d/spool" "$d/log" "$d/munge" "$d/lat"
	chmod 700 "$d/munge"
	dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 status=none
	chmod 400 "$d/munge/munge.key"
	# munged refuses to run as root unless forced; more threads than the default 2, as the HTC guide suggests
	munged --foreground --force --num-threads=10 --key-file="$d/munge/munge.key" --socket="$d/munge/munge.socket" \
		--pid-file="$d/munge/munged.pid" --log-file="$d/log/munged.log" --seed-file="$d/munge/munged.seed" \
		>"$d/log/munged.out" 2>&1 &
	pids+=($!)
	wait_until "munged's socket" 10 test -S "$d/munge/munge.socket"

	sed -e "s|@DIR@|$d|g" -e "s|@HOST@|$host|g" -e "s|@NODE@|$node|g" -e "s|@SLOTS@|$slots|g" \
		-e "s|@CTLD_PORT@|$ctld_port|g" -e "s|@SLURMD_PORT@|$slurmd_port|g" "$here/slurm.conf.in" >"$d/slurm.conf"
	export SLURM_CONF=$d/slurm.conf
	slurmctld -D -c -f "$SLURM_CONF" >"$d/log/slurmctld.out" 2>&1 &
	pids+=($!)
	slurmd -D -N "$node" -f "$SLURM_CONF" >"$d/log/slurmd.out" 2>&1 &
	pids+=($!)
	wait_until "the Slurm node to be idle" 60 slurm_idle
	log "slurm: slurmctld, slurmd and munged up, node $node with $slots CPUs"
}
# slurm_quiesce: cancel what is left and wait (up to 30 s) for every slurmstepd of this run to exit, so that stopping
# slurmd leaves no job process behind. A step's socket lives in SlurmdSpoolDir until its slurmstepd exits.
slurm_quiesce() {
	local i
	scancel --partition=bench 2>/dev/null || true
	for i in $(seq 300); do
		if [ -z "$(squeue -h 2>/dev/null | head -1)" ] && ! compgen -G "$work/slurm/spool/${node}_*" >/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	log "warning: slurmstepd still running: $(cd "$work/slurm/spool" && echo "${node}"_*)"
}
slurm_idle() { [ "$(sinfo -h -N -n "$node" -o %t 2>/dev/null)" = idle ]; }
slurm_done() { [ -f "$work/slurm/jobcomp.txt" ] && wc -l <"$work/slurm/jobcomp.txt" || echo 0; }
slurm_done_at_least() { [ "$(slurm_done)" -ge "$1" ]; }
slurm_hold() { scontrol update PartitionName=bench State="$1"; }
slurm_check_completed() { # slurm_check_completed N: every finished job completed with exit 0
	local ok
	ok=$(grep -c 'JobState=COMPLETED' "$work/slurm/jobcomp.txt" || true)
	[ "$ok" -eq "$1" ] || die "slurm: $ok of $1 jobs completed (see $work/slurm/jobcomp.txt; --keep keeps it)"
}

slurm_submit_loop() { # slurm_submit_loop COUNT: sbatch --wrap true, COUNT times
	local i
	for ((i = 0; i < $1; i++)); do sbatch -Q -o /dev/null --wrap true >/dev/null; done
}

slurm_round() {
	local r=$1 t0 t1 t1b t2 per i base subs=()
	slurm_start

	# backlog: submit with the partition down (jobs queue, none starts), then bring it up
	slurm_hold DOWN
	t0=$(now)
	per=$((jobs / submitters))
	for ((i = 0; i < submitters; i++)); do
		slurm_submit_loop $((i < jobs % submitters ? per + 1 : per)) &
		subs+=($!)
	done
	for i in "${subs[@]}"; do wait "$i" || die "slurm: sbatch failed"; done
	t1=$(now)
	[ "$(squeue -h -t PD | wc -l)" -eq "$jobs" ] || die "slurm: not all $jobs jobs are pending"
	slurm_hold UP
	t1b=$(now)
	wait_until "slurm's backlog to drain" 3600 slurm_done_at_least "$jobs"
	t2=$(now)
	slurm_check_completed "$jobs"
	result slurm "$r" backlog "$(awk -v n="$jobs" -v s="$(elapsed "$t0" "$t1")" -v d="$(elapsed "$t1b" "$t2")" -v p="$submitters" \
		'BEGIN { printf "\"jobs\":%d,\"submit_s\":%.3f,\"submit_per_s\":%.1f,\"submitters\":%d,\"drain_s\":%.3f,\"jobs_per_s\":%.1f", n, s, n / s, p, d, n / d }')"
	log "slurm round $r backlog: submitted $jobs in $(elapsed "$t0" "$t1") s, drained in $(elapsed "$t1b" "$t2") s"

	# array: one sbatch --array=0-(N-1), held the same way
	wait_until "slurm's job records to be purged" 120 slurm_queue_empty
	base=$(slurm_done)
	slurm_hold DOWN
	sbatch -Q -o /dev/null --array=0-$((array - 1)) --wrap true >/dev/null
	slurm_hold UP
	t1=$(now)
	wait_until "slurm's array to drain" 3600 slurm_done_at_least $((base + array))
	t2=$(now)
	slurm_check_completed $((base + array))
	result slurm "$r" array "$(awk -v n="$array" -v d="$(elapsed "$t1" "$t2")" \
		'BEGIN { printf "\"tasks\":%d,\"drain_s\":%.3f,\"tasks_per_s\":%.1f", n, d, n / d }')"
	log "slurm round $r array: $array tasks in $(elapsed "$t1" "$t2") s"

	# latency: one job at a time on the idle node; the job writes the time its first command ran
	wait_until "slurm's job records to be purged" 120 slurm_queue_empty
	: >"$work/slurm/lat.ms"
	for ((i = 1; i <= latency; i++)); do
		idle_gap
		base=$(slurm_done)
		t0=$(now)
		sbatch -Q -o /dev/null --wrap "date +%s.%N > $work/slurm/lat/$i" >/dev/null
		wait_until "slurm latency job $i" 60 test -s "$work/slurm/lat/$i"
		awk -v a="$t0" '{ printf "%.3f\n", ($1 - a) * 1000 }' "$work/slurm/lat/$i" >>"$work/slurm/lat.ms"
		wait_until "slurm latency job $i to end" 60 slurm_done_at_least $((base + 1))
	done
	read -r p50 p95 p99 max < <(latency_stats "$work/slurm/lat.ms")
	result slurm "$r" latency "$(printf '"samples":%d,"p50_ms":%s,"p95_ms":%s,"p99_ms":%s,"max_ms":%s' "$latency" "$p50" "$p95" "$p99" "$max")"
	log "slurm round $r latency: p50 $p50 ms, p95 $p95 ms, max $max ms"

	slurm_quiesce
	stop_all
	unset SLURM_CONF
}
slurm_queue_empty() { [ -z "$(squeue -h 2>/dev/null | head -1)" ]; }

# ---------------------------------------------------------------- Allot

allot_start() {
	local d=$work/allot
	rm -rf "$d"
	mkdir -p "$d/lat" "$d/worker-state"
	chmod 1777 "$d/lat"
	chmod 755 "$d"
	export ALLOT_SERVER=http://127.0.0.1:$allot_port
	"$allot" server --data-dir "$d/data" --listen "127.0.0.1:$allot_port" --log-level warn >"$d/server.log" 2>&1 &
	pids+=($!)
	wait_until "allot server" 30 test -s "$d/data/admin.token"
	ALLOT_TOKEN=$(cat "$d/data/admin.token")
	export ALLOT_TOKEN
	wait_until "allot server ready" 30 curl -sf -o /dev/null "$ALLOT_SERVER/readyz"
	"$allot" worker --name "$node" --slots "$slots" --prefetch "$prefetch" --cpu "$slots" --memory 16Gi --token-file "$d/data/admin.token" \
		--state-dir "$d/worker-state" >"$d/worker.log" 2>&1 &
	pids+=($!)
	wait_until "allot worker" 30 allot_worker_ready
	log "allot: server and worker up, worker $node with $slots slots"
}
allot_worker_ready() { "$allot" workers -o json 2>/dev/null | grep -q "\"$node\""; }
allot_metric() { # allot_metric NAME{LABELS}: its value, summed, as an integer
	curl -s -H "Authorization: Bearer $ALLOT_TOKEN" "$ALLOT_SERVER/metrics" | awk -v m="$1" '$1 == m { s += $2 } END { printf "%d\n", s }'
}
allot_jobs_done() { allot_metric 'allot_jobs_ended_total{state="succeeded"}'; }
allot_tasks_done() { allot_metric 'allot_task_ends_total{outcome="succeeded"}'; }
allot_jobs_done_at_least() { [ "$(allot_jobs_done)" -ge "$1" ]; }
allot_tasks_done_at_least() { [ "$(allot_tasks_done)" -ge "$1" ]; }
allot_hold() { "$allot" workers "$1" "$node" >/dev/null; }

allot_round() {
	local r=$1 t0 t1 t1b t2 i base
	allot_start

	# backlog: N one-task jobs in one NDJSON file (allot submit sends them in calls of 10,000), submitted while the
	# worker is disabled, then the worker enabled. The jobs are named, as a script would name them: IDs the server
	# generates have 5 random characters after the second of submission, and thousands submitted in one second can
	# draw the same one (the later job is then refused as a conflict).
	awk -v n="$jobs" 'BEGIN { for (i = 0; i < n; i++) printf "{\"id\":\"backlog-%06d\",\"tasks\":[{\"name\":\"t\",\"run\":\"true\"}]}\n", i }' >"$work/allot/backlog.ndjson"
	allot_hold disable
	t0=$(now)
	"$allot" submit "$work/allot/backlog.ndjson" >"$work/allot/submit.out" || die "allot: submission failed (see $work/allot/submit.out)"
	t1=$(now)
	allot_hold enable
	t1b=$(now)
	wait_until "allot's backlog to drain" 3600 allot_jobs_done_at_least "$jobs"
	t2=$(now)
	result allot "$r" backlog "$(awk -v n="$jobs" -v s="$(elapsed "$t0" "$t1")" -v d="$(elapsed "$t1b" "$t2")" \
		'BEGIN { printf "\"jobs\":%d,\"submit_s\":%.3f,\"submit_per_s\":%.1f,\"submitters\":1,\"drain_s\":%.3f,\"jobs_per_s\":%.1f", n, s, n / s, d, n / d }')"
	log "allot round $r backlog: submitted $jobs in $(elapsed "$t0" "$t1") s, drained in $(elapsed "$t1b" "$t2") s"

	# array: one job whose one task entry has count N (tasks t-0 ... t-(N-1)), the same way
	base=$(allot_tasks_done)
	printf '{"tasks":[{"name":"t","count":%d,"run":"true"}]}\n' "$array" >"$work/allot/array.json"
	allot_hold disable
	"$allot" submit "$work/allot/array.json" >/dev/null
	allot_hold enable
	t1=$(now)
	wait_until "allot's array to drain" 3600 allot_tasks_done_at_least $((base + array))
	t2=$(now)
	result allot "$r" array "$(awk -v n="$array" -v d="$(elapsed "$t1" "$t2")" \
		'BEGIN { printf "\"tasks\":%d,\"drain_s\":%.3f,\"tasks_per_s\":%.1f", n, d, n / d }')"
	log "allot round $r array: $array tasks in $(elapsed "$t1" "$t2") s"

	# latency: one job at a time on the idle worker, submitted with allot submit; the task writes the time its first
	# command ran
	: >"$work/allot/lat.ms"
	for ((i = 1; i <= latency; i++)); do
		idle_gap
		base=$(allot_jobs_done)
		printf '{"tasks":[{"name":"t","run":"date +%%s.%%N > %s/%d"}]}\n' "$work/allot/lat" "$i" >"$work/allot/lat.json"
		t0=$(now)
		"$allot" submit "$work/allot/lat.json" >/dev/null
		wait_until "allot latency job $i" 60 test -s "$work/allot/lat/$i"
		awk -v a="$t0" '{ printf "%.3f\n", ($1 - a) * 1000 }' "$work/allot/lat/$i" >>"$work/allot/lat.ms"
		wait_until "allot latency job $i to end" 60 allot_jobs_done_at_least $((base + 1))
	done
	read -r p50 p95 p99 max < <(latency_stats "$work/allot/lat.ms")
	result allot "$r" latency "$(printf '"samples":%d,"p50_ms":%s,"p95_ms":%s,"p99_ms":%s,"max_ms":%s' "$latency" "$p50" "$p95" "$p99" "$max")"
	log "allot round $r latency: p50 $p50 ms, p95 $p95 ms, max $max ms"

	stop_all
	unset ALLOT_SERVER ALLOT_TOKEN
}

# ---------------------------------------------------------------- the rounds, interleaved

ctld_port=$(free_port 26817)
slurmd_port=$(free_port $((ctld_port + 1)))
allot_port=$(free_port 27070)
: >"$work/results.ndjson"
for ((r = 1; r <= rounds; r++)); do
	[ "$only" = allot ] || slurm_round "$r"
	[ "$only" = slurm ] || allot_round "$r"
done

# ---------------------------------------------------------------- medians and ratios

# median SYSTEM WORKLOAD FIELD: the median over the rounds; empty when that
# system did not run (--only)
median() {
	{ grep "\"system\":\"$1\"" "$work/results.ndjson" || true; } | { grep "\"workload\":\"$2\"" || true; } |
		sed -n "s/.*\"$3\":\([0-9.]*\).*/\1/p" | sort -n |
		awk '{ v[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
summary() { # summary WORKLOAD FIELD higher|lower
	local s a ratio
	s=$(median slurm "$1" "$2")
	a=$(median allot "$1" "$2")
	ratio=null
	if [ -n "$s" ] && [ -n "$a" ]; then
		if [ "$3" = higher ]; then
			ratio=$(awk -v s="$s" -v a="$a" 'BEGIN { printf "%.1f", (s > 0 ? a / s : 0) }')
		else
			ratio=$(awk -v s="$s" -v a="$a" 'BEGIN { printf "%.1f", (a > 0 ? s / a : 0) }')
		fi
	fi
	printf 'SUMMARY {"workload":"%s","metric":"%s","rounds":%d,"slurm":%s,"allot":%s,"ratio":%s}\n' \
		"$1" "$2" "$rounds" "${s:-null}" "${a:-null}" "$ratio"
}
summary backlog jobs_per_s higher
summary backlog submit_per_s higher
summary array tasks_per_s higher
summary latency p50_ms lower
summary latency p95_ms lower
summary latency p99_ms lower
