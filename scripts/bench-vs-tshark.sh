#!/usr/bin/env bash
# bench-vs-tshark.sh: time `wiretap read` against `tshark -r` on a large
# capture of AMQP 0-9-1 traffic, text and JSON, and print the ratios.
#
#   scripts/bench-vs-tshark.sh [-n RUNS] [-z DURATION] [--regen] [--tshark-only] [FILE]
#
# Without FILE it makes (once; --regen to remake) testdata/large/amqp091-loadgen.pcapng:
# the load generator (internal/loadgen, through `wiretap bench` or
# internal/capgen/loadgen) against RabbitMQ on loopback for DURATION (default
# 4s), recorded with dumpcap: hundreds of thousands of frames. testdata/large/
# is git-ignored. It starts RabbitMQ with .ci/services.sh when none answers.
#
# Each command runs RUNS times (default 3) with output to /dev/null; the
# table shows the median wall time. hyperfine is used when installed.
# The goal (issue 2): wiretap at least 10x faster than tshark's summary
# and 20x faster than `tshark -T json`.
#
# Environment: WIRETAP_AMQP_URL (default amqp://guest:guest@127.0.0.1:5672/),
# WIRETAP (the wiretap binary; default bin/wiretap, built when missing or
# older than the sources).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=3
DURATION=4s
REGEN=0
TSHARK_ONLY=0
FILE=
while [[ $# -gt 0 ]]; do
	case $1 in
	-n) RUNS=$2; shift 2 ;;
	-z) DURATION=$2; shift 2 ;;
	--regen) REGEN=1; shift ;;
	--tshark-only) TSHARK_ONLY=1; shift ;;
	-h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "bench: unknown flag $1" >&2; exit 2 ;;
	*) FILE=$1; shift ;;
esac
done

log() { printf 'bench: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
command -v tshark >/dev/null || die "tshark is not installed (apt-get install tshark)"

URL=${WIRETAP_AMQP_URL:-amqp://guest:guest@127.0.0.1:5672/}
WIRETAP=${WIRETAP:-$ROOT/bin/wiretap}

build_wiretap() {
	[[ -d $ROOT/cmd/wiretap ]] || return 1
	if [[ ! -x $WIRETAP ]] || [[ -n $(find "$ROOT/cmd" "$ROOT/decode" "$ROOT/capture" "$ROOT/pipeline" -name '*.go' -newer "$WIRETAP" 2>/dev/null | head -1) ]]; then
		log "building $WIRETAP"
		(cd "$ROOT" && go build -o "$WIRETAP" ./cmd/wiretap) || return 1
	fi
}

# loadgen ARGS...: the load generator, from wiretap if it has "bench".
loadgen() {
	if [[ -x $WIRETAP ]] && "$WIRETAP" bench --help 2>&1 | grep -q -- --uri; then
		"$WIRETAP" bench "$@"
	else
		(cd "$ROOT" && go build -o "$ROOT/bin/loadgen" ./internal/capgen/loadgen)
		"$ROOT/bin/loadgen" "$@"
	fi
}

make_capture() {
	local out=$1
	mkdir -p "$(dirname "$out")"
	local hostport=${URL#*@}
	hostport=${hostport%%/*}
	local host=${hostport%:*} port=${hostport##*:}
	[[ $port == "$hostport" ]] && port=5672
	if ! timeout 2 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null; then
		log "no broker at $host:$port; starting one"
		WIRETAP_AMQP_HOST=$host WIRETAP_AMQP_PORT=$port "$ROOT/.ci/services.sh" start rabbitmq >/dev/null
	fi
	log "capturing $DURATION of loadgen traffic on lo to $out"
	rm -f "$out"
	local errf
	errf=$(mktemp)
	# A large buffer: at tens of thousands of messages a second the
	# default one drops packets.
	dumpcap -q -i lo -B 256 -f "tcp port $port and host $host" -w "$out" 2>"$errf" &
	local pid=$!
	for _ in $(seq 1 100); do
		grep -q 'Capturing on' "$errf" && break
		kill -0 $pid 2>/dev/null || { cat "$errf" >&2; die "dumpcap failed"; }
		sleep 0.1
	done
	loadgen --uri "$URL" -x 1 -y 1 -s 64 -z "$DURATION" -c 200 -q 500 >&2
	sleep 1
	kill -TERM $pid
	wait $pid || true
	grep -i 'dropped' "$errf" >&2 || true
	rm -f "$errf"
}

if [[ -z $FILE ]]; then
	FILE=$ROOT/testdata/large/amqp091-loadgen.pcapng
	if [[ $REGEN == 1 || ! -s $FILE ]]; then
		[[ $TSHARK_ONLY == 1 ]] || build_wiretap || true
		make_capture "$FILE"
	fi
fi
[[ -r $FILE ]] || die "cannot read $FILE"

if [[ $TSHARK_ONLY == 0 ]]; then
	build_wiretap || { log "no wiretap binary (cmd/wiretap missing or not building): timing tshark only"; TSHARK_ONLY=1; }
fi

# Count what is in the file once; cache it next to the capture.
meta=$FILE.meta
if [[ ! -s $meta || $meta -ot $FILE ]]; then
	log "counting packets and AMQP frames (one tshark pass)"
	packets=$(capinfos -M -c "$FILE" 2>/dev/null | awk -F': *' '/Number of packets/ {print $2}')
	frames=$(tshark -r "$FILE" -T fields -e amqp.type -E occurrence=a -E aggregator=, 2>/dev/null | tr ',' '\n' | grep -c .)
	printf '%s %s\n' "$packets" "$frames" >"$meta"
fi
read -r packets frames <"$meta"
size=$(du -h "$FILE" | cut -f1)

# measure NAME CMD...: median wall seconds over RUNS runs, output discarded.
declare -A SECS
measure() {
	local name=$1
	shift
	if command -v hyperfine >/dev/null; then
		local json
		json=$(mktemp)
		hyperfine -N -w 1 -r "$RUNS" --export-json "$json" -- "$(printf '%q ' "$@")" >/dev/null 2>&1
		SECS[$name]=$(python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["results"][0]["median"])' "$json")
		rm -f "$json"
		return
	fi
	local times=() tf
	tf=$(mktemp)
	for _ in $(seq 1 "$RUNS"); do
		/usr/bin/time -f '%e' -o "$tf" "$@" >/dev/null 2>/dev/null || log "$name: exit status $? (timed anyway)"
		times+=("$(tail -1 "$tf")")
	done
	rm -f "$tf"
	SECS[$name]=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
}

log "timing ($RUNS runs each): tshark summary"
measure tshark_text tshark -r "$FILE"
log "timing: tshark -T json"
measure tshark_json tshark -r "$FILE" -T json
if [[ $TSHARK_ONLY == 0 ]]; then
	log "timing: wiretap read"
	measure wiretap_text "$WIRETAP" read "$FILE"
	log "timing: wiretap read --format json"
	measure wiretap_json "$WIRETAP" read --format json "$FILE"
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "-" }'; }

echo
echo "capture: $FILE"
echo "         $size, $packets packets, $frames AMQP frames; median of $RUNS runs, output to /dev/null"
echo
printf '%-8s %14s %14s %10s %8s\n' format "wiretap (s)" "tshark (s)" speedup goal
if [[ $TSHARK_ONLY == 0 ]]; then
	printf '%-8s %14s %14s %10s %8s\n' text "${SECS[wiretap_text]}" "${SECS[tshark_text]}" "$(ratio "${SECS[tshark_text]}" "${SECS[wiretap_text]}")" ">=10x"
	printf '%-8s %14s %14s %10s %8s\n' json "${SECS[wiretap_json]}" "${SECS[tshark_json]}" "$(ratio "${SECS[tshark_json]}" "${SECS[wiretap_json]}")" ">=20x"
else
	printf '%-8s %14s %14s %10s %8s\n' text - "${SECS[tshark_text]}" - ">=10x"
	printf '%-8s %14s %14s %10s %8s\n' json - "${SECS[tshark_json]}" - ">=20x"
fi
