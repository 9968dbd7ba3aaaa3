# lib.sh: helpers sourced by the capture scripts in this folder.
#
# Every capture is taken with dumpcap on the loopback interface while a real
# client talks to a real server started by .ci/services.sh. The servers used
# for regeneration listen on 127.0.0.2 and ::1 (not 127.0.0.1), so the
# capture filter keeps out whatever else runs on the machine.

set -euo pipefail

GEN_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TESTDATA=$(cd "$GEN_DIR/.." && pwd)
ROOT=$(cd "$TESTDATA/.." && pwd)
PY=/usr/bin/python3

export WIRETAP_SERVICES_DIR=${WIRETAP_SERVICES_DIR:-/tmp/wiretap-services}
export WIRETAP_AMQP_HOST=127.0.0.2 WIRETAP_AMQP_HOST6=::1 WIRETAP_AMQP_PORT=5672
export WIRETAP_RABBITMQ_NODE=wiretap-gen@localhost
export WIRETAP_PG_HOST=127.0.0.2 WIRETAP_PG_PORT=5432
AMQP_FILTER="tcp port 5672 and (host 127.0.0.2 or host ::1)"
PG_FILTER="tcp port 5432 and host 127.0.0.2"
declare -A CAP_PID=() CAP_OUT=()

log() { printf 'gen: %s\n' "$*" >&2; }

# Client binaries are built here; on exit (even a failed one) it is removed
# and any capture still running is stopped.
GEN_BIN=$(mktemp -d)
cleanup() {
	local pid
	for pid in "${CAP_PID[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	rm -rf "$GEN_BIN"
}
trap cleanup EXIT

services_up() { "$ROOT/.ci/services.sh" start "$@" >/dev/null; }

# capture_start NAME OUT IFACE FILTER [dumpcap args...]: start dumpcap in the
# background and return once it is capturing. The pid goes in CAP_PID[NAME].
capture_start() {
	local name=$1 out=$2 iface=$3 filter=$4
	shift 4
	rm -f "$out"
	local errf
	errf=$(mktemp)
	dumpcap -q -i "$iface" -f "$filter" "$@" -w "$out" 2>"$errf" &
	CAP_PID[$name]=$!
	CAP_OUT[$name]=$out
	# dumpcap says "Capturing on ..." once the socket is open.
	local i
	for i in $(seq 1 100); do
		grep -q 'Capturing on' "$errf" && break
		kill -0 "${CAP_PID[$name]}" 2>/dev/null || { cat "$errf" >&2; return 1; }
		sleep 0.1
	done
	rm -f "$errf"
}

# capture_stop NAME: let the last packets land, then stop dumpcap cleanly.
capture_stop() {
	local name=$1
	sleep 1
	kill -TERM "${CAP_PID[$name]}"
	wait "${CAP_PID[$name]}" || true
	unset "CAP_PID[$name]"
	chmod 644 "${CAP_OUT[$name]}"
}
