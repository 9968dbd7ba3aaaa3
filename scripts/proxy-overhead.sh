#!/usr/bin/env bash
# proxy-overhead.sh: what putting `wiretap proxy` in front of RabbitMQ
# costs a client. The same load (`wiretap bench`, PerfTest's flags: fanout,
# 1 producer, 1 consumer, 16 B bodies, autoack) runs against RabbitMQ
# directly, through `wiretap proxy --headless` (decoding every frame to
# /dev/null) and, when tmux is installed, through the proxy with its TUI
# open in a detached tmux window, in alternation, and the script prints
# the receive rate and p99 consumer latency of each, side by side, with
# the ratio to direct and the latency the proxy adds.
#
#   scripts/proxy-overhead.sh                       60 s a run, 2 rounds
#   DURATION=10s ROUNDS=3 scripts/proxy-overhead.sh
#   RATE=20000 scripts/proxy-overhead.sh            each producer at 20k msg/s (bench -r)
#   MODES="direct headless" scripts/proxy-overhead.sh   no TUI run
#   FLAGS="-s 4096" scripts/proxy-overhead.sh       other bench flags, added
#
# The issue's goal: throughput within 10% of direct and under 200 µs of
# added p99. Publishers are unlimited by default (PerfTest's default), so
# p99 is mostly time spent queued in RabbitMQ; RATE=N compares latency at
# a load every mode sustains. RabbitMQ is $RABBITMQ_URL (default
# amqp://guest:guest@127.0.0.1:5672/); the proxy listens on
# 127.0.0.1:$PORT (default 15673). PAUSE (default 2 s) separates runs.
# CPUPROFILE=DIR writes the proxy's CPU profile of each proxied run there
# (--cpuprofile).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-60s}
WARMUP=${WARMUP:-2s}
ROUNDS=${ROUNDS:-2}
PORT=${PORT:-15673}
PAUSE=${PAUSE:-2}
RATE=${RATE:-}
FLAGS=${FLAGS:-}
CPUPROFILE=${CPUPROFILE:-}
RABBITMQ_URL=${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/}
MODES=${MODES:-direct headless tui}
if [[ " $MODES " == *" tui "* ]] && ! command -v tmux >/dev/null; then
	echo "proxy-overhead: no tmux: the TUI mode is left out" >&2
	MODES=${MODES//tui/}
fi
hostport=${RABBITMQ_URL#*://}
hostport=${hostport#*@}
hostport=${hostport%%/*}
proxy_url=${RABBITMQ_URL/$hostport/127.0.0.1:$PORT}
work=$(mktemp -d)
proxy_pid=
session=wiretap-proxy-overhead-$$
cleanup() {
	stop_proxy
	rm -rf "$work"
}
stop_proxy() {
	if [ -n "$proxy_pid" ]; then
		kill -INT "$proxy_pid" 2>/dev/null || true
		wait "$proxy_pid" 2>/dev/null || true
		proxy_pid=
	fi
	tmux kill-session -t "$session" 2>/dev/null || true
}
trap cleanup EXIT
go build -o "$work/wiretap" ./cmd/wiretap

wait_port() {
	for _ in $(seq 300); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	echo "proxy-overhead: the proxy did not listen on 127.0.0.1:$PORT: $(cat "$work/proxy.err" 2>/dev/null)" >&2
	exit 1
}

n=0
start_proxy() { # MODE
	local prof=()
	if [ -n "$CPUPROFILE" ]; then
		mkdir -p "$CPUPROFILE"
		prof=(--cpuprofile "$CPUPROFILE/proxy-$1-$n.pprof")
	fi
	case $1 in
	headless)
		"$work/wiretap" "${prof[@]}" proxy --headless --listen "127.0.0.1:$PORT" --upstream "$hostport" >/dev/null 2>"$work/proxy.err" &
		proxy_pid=$!
		;;
	tui)
		tmux new-session -d -s "$session" -x 160 -y 48 \
			"'$work/wiretap' ${prof[*]} proxy --listen 127.0.0.1:$PORT --upstream $hostport 2>'$work/proxy.err'"
		;;
	esac
	wait_port
}

run() { # MODE -> "receive_rate p99_us" in $work/result
	local mode=$1 url=$RABBITMQ_URL f="$work/run-$n.json"
	n=$((n + 1))
	if [ "$mode" != direct ]; then
		start_proxy "$mode"
		url=$proxy_url
	fi
	local rate=()
	if [ -n "$RATE" ]; then rate=(-r "$RATE"); fi
	# shellcheck disable=SC2086
	if ! "$work/wiretap" bench --uri "$url" -t fanout -x 1 -y 1 -s 16 -a -z "$DURATION" --warm-up "$WARMUP" "${rate[@]}" $FLAGS --json >"$f" 2>"$f.err"; then
		echo "proxy-overhead: run $n ($mode) failed: $(tail -1 "$f.err")" >&2
		echo "0 0" >"$work/result"
	else
		tail -1 "$f" | python3 -c 'import json,sys; s=json.load(sys.stdin)["summary"]; print(int(s["receive_rate"]), s["consumer_latency"]["p99_us"])' >"$work/result"
	fi
	stop_proxy
	sleep "$PAUSE"
}

declare -A rates p99s
for r in $(seq "$ROUNDS"); do
	for m in $MODES; do
		run "$m"
		read -r rate p99 <"$work/result"
		if [ "$rate" = 0 ]; then
			echo "round $r $m: failed, left out of the medians" >&2
			continue
		fi
		rates[$m]+="$rate "
		p99s[$m]+="$p99 "
		echo "round $r $m: $rate msg/s, p99 $p99 µs" >&2
	done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {if (NR==0) print 0; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
echo
echo "fanout 1p1c 16 B autoack${RATE:+, $RATE msg/s}${FLAGS:+, $FLAGS}; $DURATION a run, $ROUNDS rounds (median; every run in brackets)"
printf '%-10s %12s %9s %12s %14s   %s\n' mode "msg/s" "vs direct" "p99 µs" "added p99 µs" "runs (msg/s; p99 µs)"
d_rate=$(echo "${rates[direct]:-0}" | median)
d_p99=$(echo "${p99s[direct]:-0}" | median)
for m in $MODES; do
	rate=$(echo "${rates[$m]:-}" | median)
	p99=$(echo "${p99s[$m]:-}" | median)
	ratio=$(awk -v a="$rate" -v b="$d_rate" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }')
	added=$(awk -v a="$p99" -v b="$d_p99" 'BEGIN { printf "%+d", a - b }')
	printf '%-10s %12s %9s %12s %14s   [%s; %s]\n' "$m" "$rate" "$ratio" "$p99" "$added" "${rates[$m]:- }" "${p99s[$m]:- }"
done
