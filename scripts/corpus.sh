#!/usr/bin/env bash
# corpus.sh: record the benchmark corpus of traffic shapes (issue 13) from
# real clients and servers, with dumpcap on lo, into testdata/corpus/
# (git-ignored). Each shape is one capture:
#
#   amqp091-fanout-16b     wiretap bench, fanout, 16 B bodies, autoack, 1p1c, 3 s:
#                          small frames, several per TCP segment
#   amqp091-large          wiretap bench, bodies of 64 KiB, 256 KiB and 1 MiB
#                          (split into RabbitMQ's 128 KiB frames), 8 msg/s, 4 s
#   amqp10-small           Azure/go-amqp through RabbitMQ's amqp1_0 plugin:
#                          60,000 transfers of 16 B, each accepted
#   amqp10-multiframe      the same with 64 KiB bodies over 4 KiB frames
#                          (16 transfer frames a message), 300 messages
#   pgsql-select-1m        pgx: SELECT of a million rows (one DataRow each)
#   pgsql-copy             pgx: COPY TO STDOUT of 500,000 rows and COPY FROM
#                          STDIN of the same rows
#   pgsql-zstd             pgsql-select-1m re-encoded by `wiretap compress-sim`
#                          into zstd CompressedMessages (100 messages each), as
#                          testdata/pgsql-libpq-zstd.pcapng was made (no
#                          released PostgreSQL speaks the compression proposal)
#   amqp091-shortconns-10k amqp091-go: 10,000 connections, each a handshake,
#                          a channel, one publish and a close
#
#   scripts/corpus.sh [SHAPE...]          record the shapes (default: all)
#   scripts/corpus.sh scale MB            a capture of at least MB megabytes of
#                                         bench fanout traffic: scale-MB.pcapng
#   scripts/corpus.sh list                the shapes' names
#
# Servers: RabbitMQ on WIRETAP_AMQP_ADDR (default 127.0.0.1:5672, guest/guest,
# with rabbitmq_amqp1_0) and PostgreSQL at WIRETAP_PG_URL (default
# postgres://wiretap_scram:wiretap@127.0.0.1:5432/postgres?sslmode=disable).
# Other traffic to the same servers stays out of the files: corpusgen binds
# its connections to known local ports and the capture filter names them;
# for wiretap bench the script reads its ports from ss while it runs and
# filters the capture to them afterwards (tcpdump -r). Needs root (dumpcap
# on lo), dumpcap, tcpdump and ss. CPU-heavy steps run under nice.
# Environment: CORPUS (output folder, default testdata/corpus), NICE
# (default 5).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CORPUS=${CORPUS:-$ROOT/testdata/corpus}
NICE=${NICE:-5}
AMQP_ADDR=${WIRETAP_AMQP_ADDR:-127.0.0.1:5672}
AMQP_HOST=${AMQP_ADDR%:*}
AMQP_PORT=${AMQP_ADDR##*:}
PG_URL=${WIRETAP_PG_URL:-postgres://wiretap_scram:wiretap@127.0.0.1:5432/postgres?sslmode=disable}
PG_HOSTPORT=${PG_URL#*@}
PG_HOSTPORT=${PG_HOSTPORT%%/*}
PG_PORT=${PG_HOSTPORT##*:}

SHAPES=(amqp091-fanout-16b amqp091-large amqp10-small amqp10-multiframe pgsql-select-1m pgsql-copy pgsql-zstd amqp091-shortconns-10k)

log() { printf 'corpus: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

if [[ ${1:-} == list ]]; then
	printf '%s\n' "${SHAPES[@]}"
	exit 0
fi
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
	sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
fi
for tool in dumpcap editcap tcpdump ss; do
	command -v $tool >/dev/null || die "$tool is not installed (apt-get install wireshark-common tcpdump iproute2)"
done

mkdir -p "$CORPUS"
BIN=$(mktemp -d)
CAP_PID=
cleanup() {
	[[ -n $CAP_PID ]] && kill -TERM "$CAP_PID" 2>/dev/null
	rm -rf "$BIN"
}
trap cleanup EXIT

log "building wiretap and corpusgen"
(cd "$ROOT" && go build -o "$BIN/wiretap" ./cmd/wiretap && go build -o "$BIN/corpusgen" ./internal/corpusgen)
WIRETAP=$BIN/wiretap
GEN=$BIN/corpusgen
AMQP_URI=amqp://guest:guest@$AMQP_ADDR/

# capture_start OUT FILTER [dumpcap args...]: dumpcap in the background,
# returning once it captures. A large buffer: at tens of thousands of
# messages a second the default one drops packets.
capture_start() {
	local out=$1 filter=$2
	shift 2
	rm -f "$out"
	local errf=$BIN/dumpcap.err
	dumpcap -q -i lo -B 256 -f "$filter" "$@" -w "$out" 2>"$errf" &
	CAP_PID=$!
	local i
	for i in $(seq 1 100); do
		# dumpcap says so a moment before its filter is in place: without
		# the pause a connection's first packets can be missed.
		grep -q 'Capturing on' "$errf" && { sleep 1; return 0; }
		kill -0 "$CAP_PID" 2>/dev/null || { cat "$errf" >&2; die "dumpcap failed"; }
		sleep 0.1
	done
	die "dumpcap did not start"
}

# capture_stop: let the last packets land, stop dumpcap, report drops.
capture_stop() {
	sleep 1
	kill -TERM "$CAP_PID" 2>/dev/null || true
	wait "$CAP_PID" || true
	CAP_PID=
	awk -F'[ /]' '/dropped/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+$/ && $(i+1) ~ /^[0-9]+$/ && $(i+1) > 0) { print "corpus: dumpcap dropped " $(i+1) " packets"; exit } }' "$BIN/dumpcap.err" >&2 || true
}

# bench_capture OUT [bench args...]: run wiretap bench while capturing all
# of the broker's port, note bench's local ports with ss as it runs, and
# keep only those connections.
bench_capture() {
	local out=$1
	shift
	local raw=$BIN/raw.pcapng ports=$BIN/ports
	: >"$ports"
	capture_start "$raw" "tcp port $AMQP_PORT and host $AMQP_HOST" "${DUMPCAP_ARGS[@]}"
	"$WIRETAP" bench --uri "$AMQP_URI" "$@" >"$BIN/bench.out" 2>&1 &
	local pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		ss -tnpH "( dport = :$AMQP_PORT )" 2>/dev/null | grep "pid=$pid," |
			awk '{ n = split($4, a, ":"); print a[n] }' >>"$ports" || true
		sleep 0.1
	done
	wait "$pid" || { cat "$BIN/bench.out" >&2; die "bench failed"; }
	capture_stop
	tail -n 3 "$BIN/bench.out" >&2
	local expr
	expr=$(sort -u "$ports" | awk 'NF { printf "%s%s", sep, "port " $1; sep = " or " }')
	[[ -n $expr ]] || die "no connection of bench seen by ss"
	log "keeping bench's connections: $expr"
	keep_ports "$raw" "$out" "$expr"
}

# keep_ports RAW OUT EXPR: the packets of RAW matching the BPF EXPR, as
# pcapng (tcpdump writes pcap; editcap converts).
keep_ports() {
	tcpdump -Z root -r "$1" -w "$BIN/kept.pcap" "$3" 2>/dev/null
	editcap -F pcapng "$BIN/kept.pcap" "$2"
	rm -f "$1" "$BIN/kept.pcap"
}

# gen_capture OUT SERVERPORT PORTLO PORTHI corpusgen ARGS...: run corpusgen
# with connections bound to PORTLO.., capturing only those ports.
gen_capture() {
	local out=$1 sport=$2 lo=$3 hi=$4
	shift 4
	capture_start "$out" "tcp port $sport and tcp portrange $lo-$hi" "${DUMPCAP_ARGS[@]}"
	"$GEN" "$@" -port "$lo" || { capture_stop; die "corpusgen $* failed"; }
	capture_stop
}

DUMPCAP_ARGS=()
shape() {
	local name=$1 out=$CORPUS/$1.pcapng
	log "$name -> $out"
	case $name in
	amqp091-fanout-16b)
		bench_capture "$out" -t fanout -s 16 -x 1 -y 1 -a -z 3s ;;
	amqp091-large)
		bench_capture "$out" -t direct --size-dist 65536:1,262144:1,1048576:1 -x 1 -y 1 -a -r 8 -z 4s ;;
	amqp10-small)
		rabbitmqctl -q delete_queue wiretap.corpus.amqp10 >/dev/null 2>&1 || true
		gen_capture "$out" "$AMQP_PORT" 30000 30009 amqp10 -addr "$AMQP_ADDR" -n 60000 -size 16 ;;
	amqp10-multiframe)
		rabbitmqctl -q delete_queue wiretap.corpus.amqp10 >/dev/null 2>&1 || true
		gen_capture "$out" "$AMQP_PORT" 30010 30019 amqp10 -addr "$AMQP_ADDR" -n 300 -size 65536 -max-frame 4096 ;;
	pgsql-select-1m)
		gen_capture "$out" "$PG_PORT" 30100 30109 pg -url "$PG_URL" -rows 1000000 -mode select ;;
	pgsql-copy)
		gen_capture "$out" "$PG_PORT" 30110 30119 pg -url "$PG_URL" -rows 500000 -mode copy ;;
	pgsql-zstd)
		[[ -s $CORPUS/pgsql-select-1m.pcapng ]] || shape pgsql-select-1m
		nice -n "$NICE" "$WIRETAP" compress-sim "$CORPUS/pgsql-select-1m.pcapng" --write "$out" --algorithm zstd --messages 100 >/dev/null ;;
	amqp091-shortconns-10k)
		gen_capture "$out" "$AMQP_PORT" 20000 31999 shortconns -addr "$AMQP_ADDR" -n 10000 ;;
	*) die "unknown shape $name (scripts/corpus.sh list)" ;;
	esac
	chmod 644 "$out"
	log "$name: $(du -h "$out" | cut -f1)"
}

if [[ ${1:-} == scale ]]; then
	mb=${2:?scale needs a size in MB}
	out=$CORPUS/scale-$mb.pcapng
	# dumpcap stops by itself at the size; bench runs long enough to get there
	# (5-15 MB/s of fanout traffic to RabbitMQ on this machine, by its load;
	# 100 MB/s to wiretap's broker) and is stopped then. dumpcap stops a
	# file at 2 GB whatever the size asked for, so a larger capture is
	# written in files of 1 GB, concatenated after.
	ring=0
	if ((mb > 1000)); then
		ring=1
		DUMPCAP_ARGS=(-b "filesize:1000000" -a "files:$(((mb + 999) / 1000))")
	else
		DUMPCAP_ARGS=(-a "filesize:$((mb * 1000))")
	fi
	secs=$((mb / 4 + 10))
	log "scale: bench fanout until $mb MB (at most ${secs}s)"
	raw=$BIN/raw.pcapng
	capture_start "$raw" "tcp port $AMQP_PORT and host $AMQP_HOST" "${DUMPCAP_ARGS[@]}"
	"$WIRETAP" bench --uri "$AMQP_URI" -t fanout -s 16 -x 1 -y 1 -a -z "${secs}s" >"$BIN/bench.out" 2>&1 &
	pid=$!
	: >"$BIN/ports"
	# Polled often, and once more after the capture stopped: against
	# wiretap's broker a capture of 100 MB is done in about a second.
	note_ports() {
		ss -tnpH "( dport = :$AMQP_PORT )" 2>/dev/null | grep "pid=$pid," |
			awk '{ n = split($4, a, ":"); print a[n] }' >>"$BIN/ports" || true
	}
	while kill -0 "$CAP_PID" 2>/dev/null && kill -0 "$pid" 2>/dev/null; do
		note_ports
		sleep 0.1
	done
	note_ports
	kill -INT "$pid" 2>/dev/null || true
	wait "$pid" || true
	capture_stop
	if ((ring)); then
		mergecap -a -F pcapng -w "$raw" "$BIN"/raw_*.pcapng
		rm -f "$BIN"/raw_*.pcapng
	fi
	tail -n 3 "$BIN/bench.out" >&2
	expr=$(sort -u "$BIN/ports" | awk 'NF { printf "%s%s", sep, "port " $1; sep = " or " }')
	[[ -n $expr ]] || die "no connection of bench seen by ss"
	keep_ports "$raw" "$out" "$expr"
	log "scale: $(du -h "$out" | cut -f1) in $out"
	exit 0
fi

todo=("$@")
[[ ${#todo[@]} -gt 0 ]] || todo=("${SHAPES[@]}")
for s in "${todo[@]}"; do
	shape "$s"
done
log "done: $(du -sh "$CORPUS" | cut -f1) in $CORPUS"
