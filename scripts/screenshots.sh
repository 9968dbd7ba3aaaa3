#!/usr/bin/env bash
# screenshots.sh: regenerate the README's screenshots, docs/screenshots/*.png,
# from the real program in a real terminal.
#
#   scripts/screenshots.sh [OUTDIR]
#
# Each view is driven in tmux at 160x48 (TERM=xterm-256color,
# COLORTERM=truecolor), read back with colours by `tmux capture-pane -e -p`,
# turned into HTML by scripts/ansi2html (aha 0.5 drops bright colours to
# their dark variants) and rendered to PNG by headless Chromium.
# Needs tmux, chromium (apt-get install -y chromium) and go; optipng, when
# installed, recompresses the PNGs losslessly (about a quarter smaller).
# Environment: WIRETAP (the binary; default bin/wiretap, rebuilt when older
# than the sources).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$ROOT/docs/screenshots}
COLS=160
ROWS=48
# The page: 13px DejaVu Sans Mono is 7.83 px wide; 15px lines; 8px padding.
WIDTH=1270
HEIGHT=736

log() { printf 'screenshots: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
for tool in tmux chromium go; do
	command -v $tool >/dev/null || die "$tool is not installed"
done

cd "$ROOT"
WIRETAP=${WIRETAP:-$ROOT/bin/wiretap}
if [[ ! -x $WIRETAP ]] || [[ -n $(find "$ROOT" -name '*.go' -newer "$WIRETAP" -not -path '*/testdata/*' 2>/dev/null | head -1) ]]; then
	log "building $WIRETAP"
	go build -o "$WIRETAP" ./cmd/wiretap
fi
mkdir -p "$OUT"
WORK=$(mktemp -d)
go build -o "$WORK/ansi2html" ./scripts/ansi2html
# One tmux server per view: a server killed and started again at once
# under the same name can race and die ("server exited unexpectedly").
N=0
SOCK=wiretap-screenshots-$$-$N
tm() { tmux -L "$SOCK" -f /dev/null "$@"; }
cleanup() {
	tm kill-server 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
exec 9<> <(:)
nap() { read -r -t "$1" -u 9 || true; }

# open FILE [DIR]: wiretap replay FILE in a fresh session, in DIR (default
# the repository).
open() {
	tm kill-server 2>/dev/null || true
	N=$((N + 1))
	SOCK=wiretap-screenshots-$$-$N
	tm new-session -d -x $COLS -y $ROWS -s m -c "${2:-$ROOT}" -- \
		env TERM=xterm-256color COLORTERM=truecolor "$WIRETAP" replay "$1"
	await '│▶ '
}

# await RE: poll the screen (10 s at most) until it matches RE.
await() {
	local sc i
	for ((i = 0; i < 1000; i++)); do
		sc=$(tm capture-pane -p -t m)
		[[ $sc =~ $1 ]] && return 0
		nap 0.01
	done
	die "screen never matched $1; last screen:"$'\n'"$sc"
}

keys() { tm send-keys -t m "$@"; }
typ() { tm send-keys -t m -l "$1"; }

# shot NAME TITLE: the screen as docs/screenshots/NAME.png.
shot() {
	local html=$WORK/$1.html
	nap 0.3 # let the last frame be drawn (bubbletea paces frames)
	tm capture-pane -e -p -t m | "$WORK/ansi2html" -title "$2" -font-size 13 -line-height 15 >"$html"
	chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--hide-scrollbars --force-device-scale-factor=1 \
		--user-data-dir="$WORK/chromium" --window-size=$WIDTH,$HEIGHT \
		--screenshot="$OUT/$1.png" "file://$html" >/dev/null 2>&1
	[[ -s $OUT/$1.png ]] || die "chromium wrote no $OUT/$1.png"
	if command -v optipng >/dev/null; then
		optipng -quiet -o2 "$OUT/$1.png"
	fi
	(($(stat -c %s "$OUT/$1.png") <= 300000)) || log "warning: $OUT/$1.png is over 300 kB"
	log "$OUT/$1.png ($(du -k "$OUT/$1.png" | cut -f1) KiB): $2"
}

# 1. The main view: AMQP 0-9-1 from pika, a publish selected.
open testdata/amqp091-pika.pcapng
keys 2 6 G
await 'Detail #26'
shot main-amqp091 "wiretap replay: AMQP 0-9-1, Basic.Publish selected"

# 2. AMQP 1.0: a transfer whose message checksum does not match, its
# detail tree and the footer's bytes highlighted.
open testdata/amqp10-proton.pcapng
keys 1 8 G
await 'Detail #18'
# Detail pane; e twice: expand all, then collapse all; open message >
# checksum (expected and actual) and message > sections > footer, select
# the footer's x-opt-crc-32 so the hex pane highlights its bytes.
keys Tab
keys e
await '▾ arguments'
keys e
await '▸ message'
keys G l j j l j j j j j l G l j
await 'x-opt-crc-32 \['
shot amqp10-checksum-mismatch "AMQP 1.0 transfer with a checksum mismatch"

# 3. A display filter being typed, validated and applied as you type.
open testdata/amqp091-pika.pcapng
keys /
typ 'amqp.method == "basic.publish" && amqp.channel == 1'
await 'match'
shot filter "display filter in the filter bar"

# 4. PostgreSQL with CompressedMessages: a group expanded to its B* units.
mkdir -p "$WORK/testdata"
"$WIRETAP" compress-sim testdata/pgsql-libpq.pcapng --write "$WORK/testdata/pgsql-libpq-zstd.pcapng" \
	--algorithm zstd --messages 3 >/dev/null
open testdata/pgsql-libpq-zstd.pcapng "$WORK"
keys 3 0 G
await 'Detail #30'
keys l
await 'B\*'
shot pgsql-compressed "PostgreSQL CompressedMessages expanded"

# 5. Statistics.
open testdata/amqp091-pika.pcapng
keys S
await 'atenc'
shot stats "statistics view"

# 6. Help.
open testdata/amqp091-pika.pcapng
keys '?'
await 'Help'
shot help "help: every key"
