#!/usr/bin/env bash
# proxy-overhead.sh: what putting `wiretap proxy` in front of RabbitMQ
# costs a client. The same load (`wiretap bench`, PerfTest's flags: fanout,
# 1 producer, 1 consumer, 16 B bodies, autoack) runs against RabbitMQ
# directly, through `wiretap proxy --headless` (decoding every frame to
# /dev/null) and, when tmux is installed, through the proxy with its TUI
# open in a detached tmux window, in alternation. The script prints, per
# mode, the median receive rate, its ratio to direct's, the median p99
# consumer latency and the p99 the proxy adds, and the share of the bytes
# the proxy's decoder decoded (the rest it was too far behind to take:
# gaps, "decoder behind"; see --decode-cpu).
#
#   scripts/proxy-overhead.sh                       60 s a run, 2 rounds
#   DURATION=10s ROUNDS=3 scripts/proxy-overhead.sh
#   RATE=10000 scripts/proxy-overhead.sh            the producer at 10k msg/s (bench -r)
#   MODES="direct headless" scripts/proxy-overhead.sh   no TUI run
#   MODES="direct headless headless-all" ...        headless-all: --decode-cpu all
#   FLAGS="-s 4096" scripts/proxy-overhead.sh       other bench flags, added
#   PROXY_FLAGS="--decode-buffer 8388608" ...       other proxy flags, added
#   NICE=-15 RENICE_RABBITMQ=1 scripts/proxy-overhead.sh
#   BASELINE=/tmp/wiretap-old MODES="direct headless headless-base" ...
#                                                   *-base modes: that binary's proxy
#   MODES="direct socat headless" ...               socat: the same hop through
#                                                   socat(1), a forwarder that decodes
#                                                   nothing: what any proxy costs here
#   MODES="direct copy headless tui" ...            copy: internal/copyproxy, the least
#                                                   a Go proxy does (read, write)
#   MODES="direct headless headless-inproc" ...     *-inproc: the proxy decoding in its
#                                                   own process (--decode-in-process), as
#                                                   before the decoding process
#
# The issue's goal: throughput within 10% of direct and under 200 µs of
# added p99. Publishers are unlimited by default (PerfTest's default), so
# p99 is mostly time spent queued in RabbitMQ; RATE=N compares latency at
# a load every mode sustains. RabbitMQ is $RABBITMQ_URL (default
# amqp://guest:guest@127.0.0.1:5672/); the proxy listens on
# 127.0.0.1:$PORT (default 15673). PAUSE (default 2 s) separates runs.
# NICE=N runs the load generator and the proxy under `nice -n N`;
# RENICE_RABBITMQ=1 gives every thread of beam.smp the same niceness for
# the run and puts back the one it had at the end (both need root for a
# negative N): on a machine others use, it keeps their jobs from deciding
# the result. The load average at each run's start is printed with it.
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
PROXY_FLAGS=${PROXY_FLAGS:-}
NICE=${NICE:-}
RENICE_RABBITMQ=${RENICE_RABBITMQ:-}
CPUPROFILE=${CPUPROFILE:-}
BASELINE=${BASELINE:-}
RABBITMQ_URL=${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/}
MODES=${MODES:-direct headless tui}
if [[ " $MODES " == *" socat "* ]] && ! command -v socat >/dev/null; then
	echo "proxy-overhead: no socat: the socat mode is left out" >&2
	MODES=$(echo "$MODES" | tr ' ' '\n' | grep -vx socat | tr '\n' ' ')
fi
if [[ " $MODES " == *" tui"* ]] && ! command -v tmux >/dev/null; then
	echo "proxy-overhead: no tmux: the TUI modes are left out" >&2
	MODES=$(echo "$MODES" | tr ' ' '\n' | grep -v '^tui' | tr '\n' ' ')
fi
hostport=${RABBITMQ_URL#*://}
hostport=${hostport#*@}
hostport=${hostport%%/*}
proxy_url=${RABBITMQ_URL/$hostport/127.0.0.1:$PORT}
work=$(mktemp -d)
proxy_pid=
session=wiretap-proxy-overhead-$$
# An exchange of its own: another bench on the same RabbitMQ deletes
# wiretap.bench-fanout when it ends.
exchange=wiretap.proxy-overhead-$$
nice_cmd=()
if [ -n "$NICE" ]; then nice_cmd=(nice -n "$NICE"); fi

beam_nice=
renice_beam() { # NICENESS: every thread of every beam.smp
	local pid t
	for pid in $(pgrep -x beam.smp); do
		for t in /proc/"$pid"/task/*; do
			renice -n "$1" -p "${t##*/}" >/dev/null 2>&1 || true
		done
	done
}
if [ -n "$RENICE_RABBITMQ" ] && [ -n "$NICE" ]; then
	beam=$(pgrep -x beam.smp | head -1)
	if [ -z "$beam" ]; then
		echo "proxy-overhead: RENICE_RABBITMQ: no beam.smp running" >&2
	else
		beam_nice=$(ps -o ni= -p "$beam" | tr -d ' ')
		renice_beam "$NICE"
	fi
fi

cleanup() {
	stop_proxy
	if [ -n "$beam_nice" ]; then renice_beam "$beam_nice"; fi
	rm -rf "$work"
}
stop_proxy() {
	if [ -n "$proxy_pid" ]; then
		# SIGINT, headless and in the TUI: the proxy ends as a user's would,
		# saying on stderr how much it did not decode.
		kill -INT "$proxy_pid" 2>/dev/null || true
		for _ in $(seq 600); do
			kill -0 "$proxy_pid" 2>/dev/null || break
			sleep 0.1
		done
		wait "$proxy_pid" 2>/dev/null || true
		proxy_pid=
	fi
	tmux kill-session -t "$session" 2>/dev/null || true
}
trap cleanup EXIT
go build -o "$work/wiretap" ./cmd/wiretap
go build -o "$work/copyproxy" ./internal/copyproxy

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
	local prof=() extra=() bin=$work/wiretap
	if [[ $1 == *-base ]]; then
		if [ -z "$BASELINE" ]; then
			echo "proxy-overhead: mode $1 needs BASELINE=BINARY" >&2
			exit 2
		fi
		bin=$BASELINE
	fi
	if [ -n "$CPUPROFILE" ]; then
		mkdir -p "$CPUPROFILE"
		prof=(--cpuprofile "$CPUPROFILE/proxy-$1-$n.pprof")
	fi
	case $1 in
	*-all) extra=(--decode-cpu all) ;;
	*-inproc) extra=(--decode-in-process) ;;
	esac
	: >"$work/proxy.err"
	case $1 in
	copy)
		"${nice_cmd[@]}" "$work/copyproxy" "127.0.0.1:$PORT" "$hostport" 2>"$work/proxy.err" &
		proxy_pid=$!
		;;
	socat)
		"${nice_cmd[@]}" socat "TCP-LISTEN:$PORT,bind=127.0.0.1,reuseaddr,fork,nodelay" "TCP:$hostport,nodelay" 2>"$work/proxy.err" &
		proxy_pid=$!
		;;
	headless*)
		# shellcheck disable=SC2086
		"${nice_cmd[@]}" "$bin" "${prof[@]}" proxy --headless --listen "127.0.0.1:$PORT" --upstream "$hostport" "${extra[@]}" $PROXY_FLAGS >/dev/null 2>"$work/proxy.err" &
		proxy_pid=$!
		;;
	tui*)
		tmux new-session -d -s "$session" -x 160 -y 48 \
			"exec ${nice_cmd[*]} '$bin' ${prof[*]} proxy --listen 127.0.0.1:$PORT --upstream $hostport ${extra[*]} $PROXY_FLAGS 2>'$work/proxy.err'"
		proxy_pid=$(tmux list-panes -t "$session" -F '#{pane_pid}')
		;;
	esac
	wait_port
}

# decoded_share: the share of the bytes handed to the decoder that it
# decoded, from the proxy's last line ("the decoder fell behind: X of Y
# bytes ... not decoded"); all of them without that line.
decoded_share() {
	local line
	line=$(grep -o 'decoder fell behind: [0-9]* of [0-9]* bytes' "$work/proxy.err" | tail -1 || true)
	if [ -z "$line" ]; then
		echo 1.000
		return
	fi
	echo "$line" | awk '{ printf "%.3f", 1 - $4 / $6 }'
}

run() { # MODE -> "receive_rate p99_us decoded_share" in $work/result
	local mode=$1 url=$RABBITMQ_URL f="$work/run-$n.json" share=-
	n=$((n + 1))
	if [ "$mode" != direct ]; then
		start_proxy "$mode"
		url=$proxy_url
	fi
	local rate=()
	if [ -n "$RATE" ]; then rate=(-r "$RATE"); fi
	local ok=1
	# shellcheck disable=SC2086
	if ! "${nice_cmd[@]}" "$work/wiretap" bench --uri "$url" -t fanout -e "$exchange" -x 1 -y 1 -s 16 -a -z "$DURATION" --warm-up "$WARMUP" "${rate[@]}" $FLAGS --json >"$f" 2>"$f.err"; then
		echo "proxy-overhead: run $n ($mode) failed: $(tail -1 "$f.err")" >&2
		ok=
	fi
	stop_proxy
	# A baseline binary may not say what it did not decode.
	if [ "$mode" != direct ] && [ "$mode" != socat ] && [ "$mode" != copy ] && [[ $mode != *-base ]]; then share=$(decoded_share); fi
	if [ -n "$ok" ]; then
		tail -1 "$f" | python3 -c 'import json,sys; s=json.load(sys.stdin)["summary"]; print(int(s["receive_rate"]), s["consumer_latency"]["p99_us"], sys.argv[1])' "$share" >"$work/result"
	else
		echo "0 0 -" >"$work/result"
	fi
	sleep "$PAUSE"
}

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); ${NICE:+nice $NICE; }$(nproc) CPUs" >&2
declare -A rates p99s shares
for r in $(seq "$ROUNDS"); do
	for m in $MODES; do
		load=$(cut -d' ' -f1 /proc/loadavg)
		run "$m"
		read -r rate p99 share <"$work/result"
		if [ "$rate" = 0 ]; then
			echo "round $r $m: failed, left out of the medians" >&2
			continue
		fi
		rates[$m]+="$rate "
		p99s[$m]+="$p99 "
		shares[$m]+="$share "
		echo "round $r $m: $rate msg/s, p99 $p99 µs, decoded $share (load $load)" >&2
	done
done

median() { tr ' ' '\n' | { grep -v -e '^$' -e '^-$' || true; } | sort -g | awk '{a[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
echo
echo "fanout 1p1c 16 B autoack${RATE:+, $RATE msg/s}${FLAGS:+, $FLAGS}; $DURATION a run, $ROUNDS rounds (median; every run in brackets); load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-13s %9s %9s %11s %12s %8s   %s\n' mode "msg/s" "vs direct" "p99 µs" "added p99" decoded "runs (msg/s; p99 µs; decoded)"
d_rate=$(echo "${rates[direct]:-}" | median)
d_p99=$(echo "${p99s[direct]:-}" | median)
for m in $MODES; do
	rate=$(echo "${rates[$m]:-}" | median)
	p99=$(echo "${p99s[$m]:-}" | median)
	share=$(echo "${shares[$m]:-}" | median)
	ratio=$(awk -v a="$rate" -v b="$d_rate" 'BEGIN { if (b > 0 && a != "-") printf "%.3f", a / b; else print "-" }')
	added=$(awk -v a="$p99" -v b="$d_p99" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%+d", a - b }')
	if [ "$share" != - ]; then share=$(awk -v s="$share" 'BEGIN { printf "%.1f%%", 100 * s }'); fi
	printf '%-13s %9s %9s %11s %12s %8s   [%s; %s; %s]\n' "$m" "$rate" "$ratio" "$p99" "$added" "$share" "${rates[$m]:- }" "${p99s[$m]:- }" "${shares[$m]:- }"
done
