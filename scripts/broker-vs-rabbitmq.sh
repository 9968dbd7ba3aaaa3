#!/usr/bin/env bash
# broker-vs-rabbitmq.sh: the same loads against RabbitMQ and against
# wiretap's embedded broker, in alternation, from both load generators
# (`wiretap bench --client wiretap`, wiretap's own AMQP codec, and
# `--client amqp091-go`, github.com/rabbitmq/amqp091-go), and prints
# receive rates, p99 consumer latency and the ratios side by side.
#
#   scripts/broker-vs-rabbitmq.sh                     every scenario, 10 s each, 1 round
#   DURATION=5s scripts/broker-vs-rabbitmq.sh         a short run
#   DURATION=30s WARMUP=5s ROUNDS=3 CLIENTS=wiretap scripts/broker-vs-rabbitmq.sh
#   ONLY=topic scripts/broker-vs-rabbitmq.sh          scenarios whose name contains "topic"
#
# PAUSE (default 2 seconds) separates the runs, so a broker still deleting
# the last run's backlog does not take the cores from the next one.
#
# RabbitMQ is $RABBITMQ_URL (default amqp://guest:guest@127.0.0.1:5672/,
# where .ci/services.sh starts it). The embedded broker is started afresh
# for each of its runs, headless on 127.0.0.1:$PORT (default 5673), no
# management API, with its tap decoding every frame to /dev/null as
# `wiretap broker --headless` does: its numbers include the cost of
# watching, and the "tap" column says how much of the run's traffic the
# tap decoded (a tap that falls behind drops bytes as gaps rather than
# slow the broker; the broker says how many when it stops). TAP=off runs
# it with --no-tap instead: the broker alone; TAP=tui runs it with its TUI
# open, in a tmux session of 200x50 (needs tmux), storing and drawing
# every unit. Each run's JSON lines are kept in $OUT (default a temporary
# directory, removed at the end).
#
# Publishers are not rate limited (PerfTest's default), so latency on a
# broker that cannot keep up is mostly the time messages wait in the queue.
# RATE=N limits each producer to N msg/s (bench -r) in every scenario, to
# compare latencies at a load both brokers sustain.
#
# The "cpu/msg" columns are the CPU time the embedded broker and the
# generator took together (from /proc, over the first 60% of the measured
# time by the script's clock) per message received at the run's rate: on a machine other jobs load, it moves
# far less than the rates do. BEFORE=PATH (a wiretap binary, say one built
# from the previous commit) runs each scenario a third time, broker and
# generator from that binary, right after the current one, for a
# before/after comparison in the same conditions; RABBITMQ=off leaves
# RabbitMQ out (the before/after alone).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-${TIME:-10s}}
WARMUP=${WARMUP:-1s}
ROUNDS=${ROUNDS:-1}
PORT=${PORT:-5673}
CLIENTS=${CLIENTS:-wiretap amqp091-go}
ONLY=${ONLY:-}
PAUSE=${PAUSE:-2}
RATE=${RATE:-}
TAP=${TAP:-on}
BEFORE=${BEFORE:-}
RABBITMQ=${RABBITMQ:-on}
RABBITMQ_URL=${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/}
WIRETAP_URL=amqp://guest:guest@127.0.0.1:$PORT/
work=$(mktemp -d)
out=${OUT:-$work/runs}
mkdir -p "$out"
broker_pid=
cleanup() {
	if [ -n "$broker_pid" ]; then kill "$broker_pid" 2>/dev/null || true; fi
	if [ "$TAP" = tui ]; then tmux kill-session -t wiretap-bvr 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/wiretap" ./cmd/wiretap
tapflag=
if [ "$TAP" = off ]; then tapflag=--no-tap; fi

start_broker() { # [BIN]: a fresh embedded broker for the next run
	local bin=${1:-$work/wiretap}
	if [ "$TAP" = tui ]; then
		tmux new-session -d -s wiretap-bvr -x 200 -y 50 "$bin broker --listen 127.0.0.1:$PORT --management '' 2>$work/broker.err"
	else
		# shellcheck disable=SC2086
		"$bin" broker --headless $tapflag --listen "127.0.0.1:$PORT" --management "" >/dev/null 2>"$work/broker.err" &
		broker_pid=$!
	fi
	local up=
	for _ in $(seq 50); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then up=1 && break; fi
		sleep 0.1
	done
	if [ -z "$up" ]; then
		echo "broker-vs-rabbitmq: wiretap's broker did not start on 127.0.0.1:$PORT: $(cat "$work/broker.err")" >&2
		exit 1
	fi
}

stop_broker() { # sets tap: the share of the run's bytes the tap decoded ("-" without a tap or with the TUI)
	tap=-
	if [ "$TAP" = tui ]; then
		tmux send-keys -t wiretap-bvr q
		for _ in $(seq 100); do
			tmux has-session -t wiretap-bvr 2>/dev/null || break
			sleep 0.1
		done
		tmux kill-session -t wiretap-bvr 2>/dev/null || true
		return
	fi
	kill -INT "$broker_pid" 2>/dev/null || true
	wait "$broker_pid" 2>/dev/null || true
	broker_pid=
	if [ "$TAP" = off ]; then return; fi
	tap=$(python3 - "$work/broker.err" <<'PY'
import re, sys
m = re.search(r"fell behind: (\d+) of (\d+) bytes", open(sys.argv[1]).read())
print("100%" if not m else "%.0f%%" % (100 - 100 * int(m.group(1)) / max(int(m.group(2)), 1)))
PY
)
}

# name | bench flags
scenarios=(
	"fanout 1p1c 16 B autoack|-t fanout -s 16 -a"
	"confirms (window 1000), manual acks, qos 1000|-s 16 -c 1000 -q 1000"
	"4 KiB bodies, autoack|-s 4096 -a"
	"10p10c on 10 queues, autoack|-x 10 -y 10 --queues 10 -s 16 -a"
	"topic, 1000 bindings, autoack|-t topic --bindings 1000 -s 16 -a"
	"fanout to 10 queues, 10c, autoack|-t fanout --queues 10 -y 10 -s 16 -a"
)

ticks() { # PID -> CPU ticks (user + system) so far, 0 when it is gone
	awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0
}

secs() { # a Go duration (or bare seconds) -> seconds
	python3 -c "
import re, sys
v = 0.0 if re.search('[a-z]', '$1') else float('$1')
for n, u in re.findall(r'([0-9.]+)(ms|us|h|m|s)', '$1'):
    v += float(n) * {'h': 3600, 'm': 60, 's': 1, 'ms': 1e-3, 'us': 1e-6}[u]
print(v)"
}
warmup_s=$(secs "$WARMUP")
duration_s=$(secs "$DURATION")
window_s=$(python3 -c "print($duration_s * 0.6)")

n=0
run() { # URL CLIENT FLAGS FILE [BIN] -> "receive_rate p99_us cpu_us_per_msg" (or "0 0 -" when the run failed)
	local f=$4 bin=${5:-$work/wiretap}
	# shellcheck disable=SC2086
	"$bin" bench --uri "$1" --client "$2" -z "$DURATION" --warm-up "$WARMUP" --json $3 >"$f" 2>"$f.err" &
	local gen=$!
	sleep "$warmup_s"
	local g0 g1 b0=0 b1=0 t0 t1
	# The CPU over the first 60% of the measured time (by the script's
	# clock, so ending well before the generator stops), per message at
	# the run's average rate.
	t0=$(date +%s.%N)
	g0=$(ticks $gen)
	if [ -n "$broker_pid" ]; then b0=$(ticks "$broker_pid"); fi
	sleep "$window_s"
	g1=$(ticks $gen)
	if [ -n "$broker_pid" ]; then b1=$(ticks "$broker_pid"); fi
	t1=$(date +%s.%N)
	if ! wait $gen; then
		echo "broker-vs-rabbitmq: run $n ($1, $2, $3) failed: $(tail -1 "$f.err")" >&2
		echo "0 0 -"
		return
	fi
	local cpu=-
	if [ -n "$broker_pid" ] && [ "$g1" != 0 ]; then cpu=$(((b1 - b0) + (g1 - g0))); fi
	tail -1 "$f" | python3 -c '
import json, os, sys
s = json.load(sys.stdin)["summary"]
cpu, window = sys.argv[1], float(sys.argv[2])
msgs = s["receive_rate"] * window
per = "-" if cpu == "-" or msgs <= 0 else "%.2f" % (int(cpu) / os.sysconf("SC_CLK_TCK") * 1e6 / msgs)
print(int(s["receive_rate"]), s["consumer_latency"]["p99_us"], per)' "$cpu" "$(python3 -c "print($t1 - $t0)")"
}

us() { # microseconds, readably
	python3 -c "v=$1; print('%.1f ms' % (v/1000) if v >= 1000 else '%d us' % v)"
}

if [ -n "$BEFORE" ]; then
	printf '%-46s %-10s %11s %11s %7s %13s %13s %5s %8s %11s %13s %8s\n' scenario generator "RabbitMQ/s" "wiretap/s" ratio "RabbitMQ p99" "wiretap p99" tap "cpu/msg" "before/s" "before p99" "cpu/msg"
else
	printf '%-46s %-10s %11s %11s %7s %13s %13s %5s %8s\n' scenario generator "RabbitMQ/s" "wiretap/s" ratio "RabbitMQ p99" "wiretap p99" tap "cpu/msg"
fi
for sc in "${scenarios[@]}"; do
	name=${sc%%|*}
	flags=${sc#*|}
	if [ -n "$RATE" ]; then flags="$flags -r $RATE"; fi
	case $name in *"$ONLY"*) ;; *) continue ;; esac
	for client in $CLIENTS; do
		for _ in $(seq 1 "$ROUNDS"); do
			n=$((n + 1))
			# A pause after each run lets the broker finish deleting the
			# backlog before the other one is measured on the same cores.
			rr=0 rp=0
			if [ "$RABBITMQ" != off ]; then
				read -r rr rp _ < <(run "$RABBITMQ_URL" "$client" "$flags" "$out/$n-rabbitmq.json")
				sleep "$PAUSE"
			fi
			start_broker
			read -r wr wp wc < <(run "$WIRETAP_URL" "$client" "$flags" "$out/$n-wiretap.json")
			stop_broker
			sleep "$PAUSE"
			ratio=$(python3 -c "print('%.1fx' % ($wr / max($rr, 1)))")
			if [ "$RABBITMQ" = off ]; then ratio=-; fi
			if [ -n "$BEFORE" ]; then
				wtap=$tap
				start_broker "$BEFORE"
				read -r br bp bc < <(run "$WIRETAP_URL" "$client" "$flags" "$out/$n-before.json" "$BEFORE")
				stop_broker
				sleep "$PAUSE"
				printf '%-46s %-10s %11d %11d %7s %13s %13s %5s %8s %11d %13s %8s\n' "$name" "$client" "$rr" "$wr" "$ratio" "$(us "$rp")" "$(us "$wp")" "$wtap" "$wc" "$br" "$(us "$bp")" "$bc"
			else
				printf '%-46s %-10s %11d %11d %7s %13s %13s %5s %8s\n' "$name" "$client" "$rr" "$wr" "$ratio" "$(us "$rp")" "$(us "$wp")" "$tap" "$wc"
			fi
		done
	done
done
