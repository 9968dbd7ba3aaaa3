#!/usr/bin/env bash
# tui-vs-termshark.sh: wiretap's terminal UI against termshark on the same
# large AMQP 0-9-1 capture, both in tmux at 160x48, and wiretap's
# per-keypress latency on a capture of a million units.
#
#   scripts/tui-vs-termshark.sh [-n RUNS] [-k KEYS] [--md FILE] [FILE]
#
# Measured for `wiretap replay FILE` and `termshark -r FILE`, RUNS times each
# (default 3; the table shows the median):
#   first screen  launch to the first screen showing unit (packet) rows; the
#                 pane is read with `tmux capture-pane` every 10 ms
#   loaded        launch to the whole file read: wiretap's header has no
#                 "reading N%", termshark's filter bar has no <Stop> button
#   peak RSS      the largest sum of VmRSS over the process tree (termshark
#                 runs tshark children), sampled every 20 ms until 1 s after
#                 loaded; for wiretap also the kernel's exact VmHWM
# Then, on the million-unit capture, wiretap's latency per keypress (KEYS
# presses, default 30; median, p95, max): key sent with send-keys until the
# screen differs, for j, pgdown, G/g, a character typed into the filter bar,
# a whole display filter applied (paste + enter until "N match") and esc.
# The times include tmux's own delay (send-keys, capture-pane: a few ms),
# the 2 ms between reads of the pane and bubbletea's frame pacing, so they
# are upper bounds. Then, for filters edited one key at a time (delete or
# retype the last character), the time from the key until the header shows
# the complete count of the new filter, every unit looked at.
#
# Captures (testdata/large/ is git-ignored):
#   FILE, or testdata/large/amqp091-loadgen.pcapng when present (real
#   RabbitMQ traffic recorded by scripts/bench-vs-tshark.sh), else
#   testdata/large/amqp091-pika-x1700.pcapng: testdata/amqp091-pika.pcapng's
#   connection written 1700 times (~300k frames) by e2e/internal/bigcap;
#   million units: testdata/large/amqp091-pika-x5650.pcapng, the same made
#   with 5650 copies (1,000,050 units).
#
# --latency-only skips the side by side runs and measures only the
# keypress latency; --big FILE measures it on FILE instead of the
# million-unit capture.
#
# --scale FILE measures wiretap alone on FILE (scripts/corpus.sh scale
# makes one of 10 GB) with the default --memory 512MiB: the first screen;
# while the file is still being read, G (the screen moving to the newest
# unit) and a display filter on a content-header property (first change
# on screen); then the whole file read and the peak RSS; then the
# keypress latency on it (j, pgdown, G/g).
#
# --md FILE writes the tables as Markdown too. Environment: WIRETAP (the
# binary; default bin/wiretap, built when missing or older than the sources).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=3
KEYS=30
MD=
LATENCY_ONLY=
BIGFILE=
SCALE=
FILE=
COLS=160
ROWS=48
while [[ $# -gt 0 ]]; do
	case $1 in
	-n) RUNS=$2; shift 2 ;;
	-k) KEYS=$2; shift 2 ;;
	--md) MD=$2; shift 2 ;;
	--latency-only) LATENCY_ONLY=1; shift ;;
	--big) BIGFILE=$2; shift 2 ;;
	--scale) SCALE=$2; shift 2 ;;
	-h | --help) sed -n '2,44p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "tui-vs-termshark: unknown flag $1" >&2; exit 2 ;;
	*) FILE=$1; shift ;;
	esac
done

log() { printf 'tui-vs-termshark: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
tools=(tmux capinfos go)
[[ -z $SCALE$LATENCY_ONLY ]] && tools+=(termshark tshark)
for tool in "${tools[@]}"; do
	command -v "$tool" >/dev/null || die "$tool is not installed"
done

WIRETAP=${WIRETAP:-$ROOT/bin/wiretap}
BIGCAP=$ROOT/bin/bigcap
if [[ ! -x $WIRETAP ]] || [[ -n $(find "$ROOT" -name '*.go' -newer "$WIRETAP" -not -path '*/testdata/*' 2>/dev/null | head -1) ]]; then
	log "building $WIRETAP"
	(cd "$ROOT" && go build -o "$WIRETAP" ./cmd/wiretap)
fi

# synth OUT COPIES: the pika capture's connection COPIES times.
synth() {
	if [[ ! -s $1 ]]; then
		log "writing $1 ($2 copies of testdata/amqp091-pika.pcapng)"
		mkdir -p "$(dirname "$1")"
		(cd "$ROOT" && go build -o "$BIGCAP" ./e2e/internal/bigcap)
		"$BIGCAP" -in "$ROOT/testdata/amqp091-pika.pcapng" -copies "$2" -out "$1"
	fi
}

[[ -n $FILE ]] && FILE=$(realpath "$FILE")
[[ -n $SCALE ]] && SCALE=$(realpath "$SCALE")
[[ -n $BIGFILE ]] && BIGFILE=$(realpath "$BIGFILE")
cd "$ROOT"
if [[ -z $FILE ]]; then
	FILE=testdata/large/amqp091-loadgen.pcapng
	HOW="real RabbitMQ 3.10 traffic from the load generator, recorded by scripts/bench-vs-tshark.sh"
	if [[ ! -s $FILE ]]; then
		FILE=testdata/large/amqp091-pika-x1700.pcapng
		HOW="testdata/amqp091-pika.pcapng's connection written 1700 times by e2e/internal/bigcap"
		synth "$FILE" 1700
	fi
else
	HOW="given on the command line"
fi
BIG=testdata/large/amqp091-pika-x5650.pcapng
if [[ -n $BIGFILE ]]; then
	BIG=$BIGFILE
elif [[ -z $SCALE ]]; then
	synth "$BIG" 5650
fi

# units FILE: how many units wiretap decodes.
units() { "$WIRETAP" read "$1" | grep -cE '^ *[0-9]+ +[0-9]+\.[0-9]{6} '; }
packets() { capinfos -M -c "$1" | awk -F': *' '/^Number of packets/ {print $2}'; }

# One tmux server per session: a server killed and started again at once
# under the same name can race and die ("server exited unexpectedly").
N=0
SOCK=wiretap-vs-termshark-$$-$N
tm() { tmux -L "$SOCK" -f /dev/null "$@"; }
SAMPLER=
RES=$(mktemp -d)
cleanup() {
	[[ -n $SAMPLER ]] && kill "$SAMPLER" 2>/dev/null
	tm kill-server 2>/dev/null || true
	rm -rf "$RES"
}
trap cleanup EXIT

exec 9<> <(:)
nap() { read -r -t "$1" -u 9 || true; }
# now sets NOW to the wall clock in microseconds.
now() { NOW=${EPOCHREALTIME/./}; }

# tree_rss PID: KiB of VmRSS summed over PID and all its descendants.
tree_rss() {
	ps -e -o pid=,ppid=,rss= | awk -v root="$1" '
		{ parent[$1] = $2; rss[$1] = $3 }
		END {
			for (p in rss) {
				for (q = p; q != "" && q != 0 && q != 1; q = parent[q])
					if (q == root) { sum += rss[p]; break }
			}
			print sum + 0
		}'
}

# sample_rss PID OUT: writes the largest tree_rss PID to OUT every 20 ms.
sample_rss() {
	local peak=0 r
	while kill -0 "$1" 2>/dev/null; do
		r=$(tree_rss "$1")
		((r > peak)) && peak=$r && echo "$peak" >"$2"
		nap 0.02
	done
}

# start CMD...: a fresh session running CMD; PANE_PID is its process and T0
# the time it was started (the tmux server is up before, so its start-up
# is not counted).
start() {
	tm kill-server 2>/dev/null || true
	N=$((N + 1))
	SOCK=wiretap-vs-termshark-$$-$N
	tm new-session -d -x $COLS -y $ROWS -s m -- sleep 1000000
	now
	T0=$NOW
	tm respawn-pane -k -t m -- env TERM=xterm-256color "$@"
	PANE_PID=$(tm display-message -p -t m '#{pane_pid}')
}

screen() { tm capture-pane -p -t m; }
# poll_pause: the latency loops read the pane every 2 ms rather than
# back to back, so that tmux and this script do not take a whole CPU from
# the program being measured (on two cores they would take half).
poll_pause() { nap 0.002; }

WIRETAP_ROWS='(^|'$'\n'')│[▶ ] *[0-9]+ +[0-9]+\.[0-9]{6} '
TERMSHARK_ROWS='(^|'$'\n'') [0-9]+ +[0-9]+\.[0-9]+ +[^ ]'
wiretap_loaded() { [[ $1 =~ $WIRETAP_ROWS ]] && [[ ${1%%$'\n'*} != *reading* ]]; }
# wait_loaded FILE MICROSECONDS PAUSE: until wiretap shows FILE loaded,
# looking every PAUSE seconds, for at most MICROSECONDS from T0.
wait_loaded() {
	local deadline=$((T0 + $2))
	until wiretap_loaded "$(screen)"; do
		now
		((NOW > deadline)) && die "wiretap never loaded $1"
		nap "$3"
	done
}
termshark_loaded() {
	[[ $1 =~ $TERMSHARK_ROWS ]] || return 1
	local l=${1#*$'\n'}
	l=${l#*$'\n'}
	[[ ${l%%$'\n'*} != *"<Stop>"* ]]
}

# launch NAME ROWS_RE CMD...: one run; sets FIRST, LOADED (ms), PEAK, HWM (KiB).
launch() {
	local name=$1 rows=$2 sc settle=0 deadline
	shift 2
	local peakf
	peakf=$(mktemp)
	echo 0 >"$peakf"
	start "$@"
	sample_rss "$PANE_PID" "$peakf" &
	SAMPLER=$!
	FIRST= LOADED= HWM=0
	deadline=$((T0 + 600000000))
	while :; do
		sc=$(screen)
		now
		if [[ -z $FIRST && $sc =~ $rows ]]; then
			FIRST=$(((NOW - T0) / 1000))
		fi
		if [[ -n $FIRST && -z $LOADED ]] && "${name}_loaded" "$sc"; then
			LOADED=$(((NOW - T0) / 1000))
			settle=$((NOW + 1000000))
		fi
		if [[ -n $LOADED ]] && ((NOW > settle)); then
			break
		fi
		((NOW > deadline)) && die "$name never loaded; last screen:"$'\n'"$sc"
		[[ -z $FIRST ]] && nap 0.01 || nap 0.05
	done
	HWM=$(awk '/^VmHWM/ {print $2}' /proc/"$PANE_PID"/status 2>/dev/null || echo 0)
	kill "$SAMPLER" 2>/dev/null || true
	wait "$SAMPLER" 2>/dev/null || true
	SAMPLER=
	PEAK=$(<"$peakf")
	rm -f "$peakf"
	tm kill-server 2>/dev/null || true
}

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
# stats: median, p95 and max of numbers on stdin, in ms with one decimal.
stats() {
	sort -n | awk '{a[NR] = $1} END {
		i = int(NR * 0.95 + 0.999); if (i > NR) i = NR
		printf "%.1f %.1f %.1f\n", a[int((NR + 1) / 2)] / 1000, a[i] / 1000, a[NR] / 1000 }'
}
mib() { awk -v k="$1" 'BEGIN {printf "%.0f", k / 1024}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.1fx", a / b; else print "-"}'; }

# key_latency KEY...: microseconds from send-keys KEY... to a changed screen.
key_latency() {
	local before after t
	before=$(screen)
	now
	t=$NOW
	tm send-keys -t m "$@"
	while :; do
		poll_pause
		after=$(screen)
		[[ $after != "$before" ]] && break
		now
		((NOW - t > 30000000)) && die "no change on screen after $*"
	done
	now
	echo $((NOW - t))
}

# until_screen RE: microseconds from T until the screen matches RE.
until_screen() {
	local sc
	while :; do
		poll_pause
		sc=$(screen)
		[[ $sc =~ $1 ]] && break
		now
		((NOW - T > 60000000)) && die "screen never matched $1; last screen:"$'\n'"$sc"
	done
	now
	echo $((NOW - T))
}

# filter_latency EXPR: prints the microseconds from pasting EXPR and enter
# (the bar already open) to the first change on screen, and to "N match".
filter_latency() {
	local before sc first= re
	re="filter $(printf '%s' "$1" | sed 's/[][\\.^$*+?(){}|]/\\&/g'): [0-9,]+ match"
	before=$(screen)
	now
	T=$NOW
	tm send-keys -t m -l "$1" \; send-keys -t m Enter
	while :; do
		poll_pause
		sc=$(screen)
		now
		[[ -z $first && $sc != "$before" ]] && first=$((NOW - T))
		[[ $sc =~ $re ]] && break
		((NOW - T > 60000000)) && die "filter $1 never matched; last screen:"$'\n'"$sc"
	done
	echo "$first $((NOW - T))"
}

if [[ -n $SCALE ]]; then
	log "scale: $SCALE ($(du -h "$SCALE" | cut -f1))"
	peakf=$(mktemp)
	echo 0 >"$peakf"
	start "$WIRETAP" replay "$SCALE"
	sample_rss "$PANE_PID" "$peakf" &
	SAMPLER=$!
	until [[ $(screen) =~ $WIRETAP_ROWS ]]; do nap 0.005; done
	now
	FIRST=$(((NOW - T0) / 1000))
	log "first screen: $FIRST ms"
	nap 2
	[[ $(screen | head -1) == *reading* ]] || die "the file was read in 2 s: nothing to measure while indexing"
	G_WHILE=$(key_latency G)
	log "G while reading: $((G_WHILE / 1000)) ms ($(screen | head -1 | grep -oE 'reading [0-9]+%'))"
	tm send-keys -t m /
	nap 0.2
	SEXPR='amqp.method.properties.content_type == "application/octet-stream"'
	now
	T=$NOW
	tm send-keys -t m -l "$SEXPR" \; send-keys -t m Enter
	F_ROWS=
	while :; do
		poll_pause
		sc=$(screen)
		now
		# The filter's first rows: the header names the filter (still
		# "filtering N%" while the rest is scanned) over rows of units.
		if [[ -z $F_ROWS && $sc =~ $WIRETAP_ROWS && $sc == *"filter amqp.method.properties"* ]]; then
			F_ROWS=$((NOW - T))
			log "filter '$SEXPR' while reading: first rows after $((F_ROWS / 1000)) ms ($(screen | head -1 | grep -oE 'reading [0-9]+%|filtering [0-9]+%' | tr '\n' ' '))"
		fi
		[[ -n $F_ROWS && $sc == *" match"* ]] && break
		((NOW - T > 600000000)) && die "filter never completed; last screen:"$'\n'"$sc"
	done
	log "filter '$SEXPR' while reading: complete count after $(((NOW - T) / 1000)) ms ($(screen | head -1 | grep -oE 'reading [0-9]+%'))"
	tm send-keys -t m Escape
	wait_loaded "$SCALE" 3600000000 0.2
	# A store error (a full disk) takes the title's room and hides
	# "reading": the file is not loaded then, whatever the test above says.
	[[ $(screen | head -1) == *"(store:"* ]] && die "the store failed: $(screen | head -1)"
	now
	LOADED=$(((NOW - T0) / 1000))
	HWM=$(awk '/^VmHWM/ {print $2}' /proc/"$PANE_PID"/status 2>/dev/null || echo 0)
	log "loaded: $((LOADED / 1000)) s, $(screen | head -1 | grep -oE '[0-9,]+ units'), peak RSS $(mib "$(<"$peakf")") MiB (VmHWM $(mib "$HWM") MiB)"
	for k in j NPage; do
		log "$k on the loaded file: $(for ((i = 0; i < KEYS; i++)); do key_latency $k; done | stats) (median p95 max, ms)"
	done
	log "G / g on the loaded file: $(for ((i = 0; i < KEYS; i++)); do
		if ((i % 2 == 0)); then key_latency G; else key_latency g; fi
	done | stats) (median p95 max, ms)"
	kill "$SAMPLER" 2>/dev/null || true
	exit 0
fi

FILE_UNITS=$(units "$FILE")
FILE_PACKETS=$(packets "$FILE")
FILE_SIZE=$(du -h "$FILE" | cut -f1)
log "comparison capture: $FILE ($FILE_PACKETS packets, $FILE_UNITS units, $FILE_SIZE)"

declare -A R
for tool in wiretap termshark; do
	[[ -n $LATENCY_ONLY ]] && break
	: >"$RES/$tool"
	for ((i = 1; i <= RUNS; i++)); do
		if [[ $tool == wiretap ]]; then
			launch wiretap "$WIRETAP_ROWS" "$WIRETAP" replay "$FILE"
		else
			launch termshark "$TERMSHARK_ROWS" termshark -r "$FILE"
		fi
		log "$tool run $i: first screen ${FIRST} ms, loaded ${LOADED} ms, peak RSS $(mib "$PEAK") MiB (VmHWM of the main process $(mib "$HWM") MiB)"
		echo "$FIRST $LOADED $PEAK $HWM" >>"$RES/$tool"
	done
	R[$tool.first]=$(cut -d' ' -f1 "$RES/$tool" | median)
	R[$tool.loaded]=$(cut -d' ' -f2 "$RES/$tool" | median)
	R[$tool.peak]=$(cut -d' ' -f3 "$RES/$tool" | median)
	R[$tool.hwm]=$(cut -d' ' -f4 "$RES/$tool" | median)
done

# Keypress latency on the million-unit capture.
BIG_UNITS=$(units "$BIG")
log "latency capture: $BIG ($BIG_UNITS units)"
start "$WIRETAP" replay "$BIG"
wait_loaded "$BIG" 600000000 0.05

declare -a LAT_NAMES LAT_STATS
lat() { LAT_NAMES+=("$1"); LAT_STATS+=("$(stats)"); log "$1: ${LAT_STATS[-1]} (median p95 max, ms)"; }

lat "j (next unit)" < <(for ((i = 0; i < KEYS; i++)); do key_latency j; done)
lat "pgdown" < <(for ((i = 0; i < KEYS; i++)); do key_latency NPage; done)
lat "G / g (last / first unit)" < <(for ((i = 0; i < KEYS; i++)); do
	if ((i % 2 == 0)); then key_latency G; else key_latency g; fi
done)

EXPR='amqp.method == "basic.publish"'
tm send-keys -t m /
nap 0.2
lat "a character typed in the filter bar, 10 chars/s (live filter)" < <(for ((i = 0; i < ${#EXPR}; i++)); do
	key_latency -l "${EXPR:i:1}"
	nap 0.1
done)
tm send-keys -t m Escape
nap 0.5
tm send-keys -t m /
nap 0.2
lat "a character typed in the filter bar, next one as soon as echoed" < <(for ((i = 0; i < ${#EXPR}; i++)); do
	key_latency -l "${EXPR:i:1}"
done)
tm send-keys -t m Escape
nap 0.5

for f in "$EXPR" 'frame.len > 1000' 'amqp.channel == 2 && !(amqp.method == "basic.ack")' 'amqp.method.arguments.routing_key == "k1"'; do
	out=$(for ((i = 0; i < RUNS; i++)); do
		tm send-keys -t m /
		nap 0.2
		filter_latency "$f"
		tm send-keys -t m Escape
		nap 0.5
	done)
	lat "filter '$f': paste + enter, first change" < <(cut -d' ' -f1 <<<"$out")
	lat "filter '$f': paste + enter, N match shown" < <(cut -d' ' -f2 <<<"$out")
done

# edit_latency EXPR: with EXPR applied from the filter bar, alternately
# deletes and retypes its last character (both versions valid filters);
# prints, per key, the microseconds until the header shows the complete
# count of the filter now in the bar ("filter EXPR: N match"), which it
# shows only once every unit has been looked at.
edit_latency() {
	local expr=$1 short=${1%?} last=${1: -1} re_full re_short
	re_full="filter $(printf '%s' "$expr" | sed 's/[][\\.^$*+?(){}|]/\\&/g'): [0-9,]+ match"
	re_short="filter $(printf '%s' "$short" | sed 's/[][\\.^$*+?(){}|]/\\&/g'): [0-9,]+ match"
	tm send-keys -t m / \; send-keys -t m -l "$expr"
	now
	T=$NOW
	until_screen "$re_full" >/dev/null
	nap 0.3
	for ((i = 0; i < KEYS; i++)); do
		now
		T=$NOW
		if ((i % 2 == 0)); then
			tm send-keys -t m BSpace
			until_screen "$re_short"
		else
			tm send-keys -t m -l "$last"
			until_screen "$re_full"
		fi
		nap 0.1
	done
	tm send-keys -t m Enter
	nap 0.3
	tm send-keys -t m Escape
	nap 0.5
}
lat "filter edited a key at a time, header field (frame.len > 1000 / > 100): key until the complete count" < <(edit_latency 'frame.len > 1000')
lat "filter edited a key at a time, method argument (amqp.method.arguments.delivery_tag > 10 / > 1): key until the complete count" < <(edit_latency 'amqp.method.arguments.delivery_tag > 10')
lat "filter edited a key at a time, content header (amqp.header.body-size > 10 / > 1): key until the complete count" < <(edit_latency 'amqp.header.body-size > 10')

lat "esc closing the help (baseline: the input reader's wait after a lone ESC)" < <(for ((i = 0; i < RUNS; i++)); do
	tm send-keys -t m '?'
	nap 0.3
	key_latency Escape
	nap 0.3
done)

# until_unfiltered: microseconds from T until the header shows no filter.
until_unfiltered() {
	local sc
	while :; do
		poll_pause
		sc=$(screen)
		[[ ${sc%%$'\n'*} != *filter* && $sc =~ $WIRETAP_ROWS ]] && break
		now
		((NOW - T > 60000000)) && die "filter never cleared; last screen:"$'\n'"$sc"
	done
	now
	echo $((NOW - T))
}
lat "esc (clear the filter, back to all units)" < <(for ((i = 0; i < RUNS; i++)); do
	tm send-keys -t m / \; send-keys -t m -l "$EXPR" \; send-keys -t m Enter
	now
	T=$NOW
	until_screen 'match' >/dev/null
	nap 0.3
	now
	T=$NOW
	tm send-keys -t m Escape
	until_unfiltered
done)
BIG_HWM=$(awk '/^VmHWM/ {print $2}' /proc/"$PANE_PID"/status)
tm kill-server 2>/dev/null || true

table() {
	[[ -z $LATENCY_ONLY ]] && cat <<EOF
Comparison capture: $(basename "$FILE") — $FILE_PACKETS packets, $FILE_UNITS AMQP 0-9-1 frames (units), $FILE_SIZE; $HOW.
Terminal: tmux $COLS x $ROWS, TERM=xterm-256color; $(nproc) CPUs shared; median of $RUNS runs.

| | wiretap replay | termshark -r | termshark / wiretap |
|---|---:|---:|---:|
| first screen with rows | ${R[wiretap.first]} ms | ${R[termshark.first]} ms | $(ratio "${R[termshark.first]}" "${R[wiretap.first]}") |
| whole file loaded | ${R[wiretap.loaded]} ms | ${R[termshark.loaded]} ms | $(ratio "${R[termshark.loaded]}" "${R[wiretap.loaded]}") |
| peak RSS (process tree, sampled) | $(mib "${R[wiretap.peak]}") MiB | $(mib "${R[termshark.peak]}") MiB | $(ratio "${R[termshark.peak]}" "${R[wiretap.peak]}") |
| VmHWM of the main process | $(mib "${R[wiretap.hwm]}") MiB | $(mib "${R[termshark.hwm]}") MiB (termshark alone, without tshark) | |

EOF
	cat <<EOF
Keypress latency, wiretap on $(basename "$BIG") ($BIG_UNITS units; VmHWM $(mib "$BIG_HWM") MiB), key sent until the screen changed:

| key | median | p95 | max |
|---|---:|---:|---:|
EOF
	local i
	for i in "${!LAT_NAMES[@]}"; do
		read -r m p x <<<"${LAT_STATS[i]}"
		echo "| ${LAT_NAMES[i]} | $m ms | $p ms | $x ms |"
	done
}
table
[[ -n $MD ]] && table >"$MD"
exit 0
