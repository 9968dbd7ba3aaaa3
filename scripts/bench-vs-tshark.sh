#!/usr/bin/env bash
# bench-vs-tshark.sh: time `wiretap read` against tshark on every shape of
# the benchmark corpus (scripts/corpus.sh, testdata/corpus/), text and JSON,
# in the same run, and print the ratios:
#
#   text: `tshark -r FILE`          against `wiretap read FILE`
#   json: `tshark -r FILE -T json`  against `wiretap read --format json FILE`
#
#   scripts/bench-vs-tshark.sh [-n RUNS] [--shapes a,b,...] [--markdown]
#                              [--cached-tshark] [--tshark-only] [FILE...]
#
# Without FILE it takes every shape `scripts/corpus.sh list` names (or those
# of --shapes), recording the missing ones with scripts/corpus.sh first.
# Each command runs RUNS times (default 3), output to /dev/null; the table
# shows medians. The commands of a shape and format (tshark, wiretap,
# BEFORE) run in turn, one run of each at a time (scripts/bench-time.py),
# so that a machine whose speed drifts from minute to minute drifts for
# all of them alike; after each tshark run, wiretap and BEFORE run once
# unmeasured (tshark -T json frees gigabytes, and on a VM the next
# process pays for fresh memory as if new: see bench-time.py --settle). Everything runs under `nice -n $NICE` (default 5):
# the machine is shared. The goal
# (issue 13): every shape at least 10x faster than tshark's summary and 20x
# faster than `tshark -T json`.
#
# Before a file is timed, its pages are dropped from the page cache and it
# is read back once (SETTLE=0 leaves the cache as it is): every file is
# then cached as a capture read from disk is, by readahead, in large
# folios. A file cached by being written (a capture recorded minutes
# before, or copied) sits in 4 KiB pages instead; tshark reads it through
# read(2) and does not notice, but wiretap maps it, and on a VM with
# shadow paging each 4 KiB page of a mapping costs about 2 us on its
# first touch (the COPY shape, 71 MB: some 30 ms more CPU, a sixth of
# its wall time). Without the settling, a ratio would depend on how the
# file last came into the cache.
#
# --cached-tshark reuses tshark's medians from the last full run of each file
# (FILE.tshark), for iterating on wiretap; the table says so, and only a run
# without it compares like with like. --markdown prints the table for the
# README.
#
# Environment: WIRETAP (the binary, timed as it is; default bin/wiretap,
# built static, CGO_ENABLED=0, by the script each time), BEFORE (a second binary,
# an earlier build, timed in the same run in turn with WIRETAP on each
# shape: the table adds its times and ratios, so a change is measured
# against the same load and the same tshark), CORPUS (default
# testdata/corpus), NICE, SETTLE.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CORPUS=${CORPUS:-$ROOT/testdata/corpus}
NICE=${NICE:-5}
SETTLE=${SETTLE:-1}
RUNS=3
SHAPES=
MARKDOWN=0
CACHED=0
TSHARK_ONLY=0
FILES=()
while [[ $# -gt 0 ]]; do
	case $1 in
	-n) RUNS=$2; shift 2 ;;
	--shapes) SHAPES=$2; shift 2 ;;
	--markdown) MARKDOWN=1; shift ;;
	--cached-tshark) CACHED=1; shift ;;
	--tshark-only) TSHARK_ONLY=1; shift ;;
	-h | --help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "bench: unknown flag $1" >&2; exit 2 ;;
	*) FILES+=("$1"); shift ;;
	esac
done

log() { printf 'bench: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
command -v tshark >/dev/null || die "tshark is not installed (apt-get install tshark)"

GIVEN_WIRETAP=${WIRETAP:-}
WIRETAP=${WIRETAP:-$ROOT/bin/wiretap}
build_wiretap() {
	# A binary named by WIRETAP is timed as it is: the tree may hold
	# others' work in progress.
	[[ -n $GIVEN_WIRETAP && -x $WIRETAP ]] && return 0
	[[ -d $ROOT/cmd/wiretap ]] || return 1
	# Static (nothing in wiretap needs cgo): a binary linked against libc
	# spends 3-4 ms more starting, a twentieth of the shorter shapes' time.
	# Always built: go's cache makes an up-to-date build a second's work,
	# and a bin/wiretap built otherwise is not timed by mistake.
	log "building $WIRETAP (CGO_ENABLED=0)"
	(cd "$ROOT" && CGO_ENABLED=0 go build -o "$WIRETAP" ./cmd/wiretap) || return 1
}
if [[ $TSHARK_ONLY == 0 ]]; then
	build_wiretap || { log "no wiretap binary: timing tshark only"; TSHARK_ONLY=1; }
fi

if [[ ${#FILES[@]} -eq 0 ]]; then
	if [[ -n $SHAPES ]]; then
		IFS=, read -r -a names <<<"$SHAPES"
	else
		mapfile -t names < <("$ROOT/scripts/corpus.sh" list)
	fi
	missing=()
	for s in "${names[@]}"; do
		[[ -s $CORPUS/$s.pcapng ]] || missing+=("$s")
		FILES+=("$CORPUS/$s.pcapng")
	done
	if [[ ${#missing[@]} -gt 0 ]]; then
		log "recording missing shapes: ${missing[*]}"
		CORPUS=$CORPUS "$ROOT/scripts/corpus.sh" "${missing[@]}"
	fi
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "-" && b != "-" && b > 0) printf "%.1fx", a / b; else print "-" }'; }
met() { awk -v a="$1" -v b="$2" -v g="$3" 'BEGIN { if (a == "-" || b == "-" || b <= 0) print "-"; else if (a / b >= g) print "yes"; else print "no" }'; }

rows=()
for f in "${FILES[@]}"; do
	[[ -r $f ]] || die "cannot read $f"
	name=$(basename "$f" .pcapng)
	meta=$f.meta
	if [[ ! -s $meta || $meta -ot $f ]]; then
		log "$name: counting packets and units"
		packets=$(capinfos -M -c "$f" 2>/dev/null | awk -F': *' '/Number of packets/ {print $2}')
		units=-
		[[ $TSHARK_ONLY == 1 ]] || units=$("$WIRETAP" read "$f" 2>/dev/null | grep -c '^ *[0-9]')
		printf '%s %s\n' "$packets" "$units" >"$meta"
	fi
	read -r packets units <"$meta"
	size=$(du -m "$f" | cut -f1)
	if [[ $SETTLE == 1 ]]; then
		# Out of the page cache, then in again as a read brings it.
		dd if="$f" iflag=nocache count=0 status=none || log "$name: could not drop it from the page cache"
		cat "$f" >/dev/null
	fi
	# Each format's commands are timed in turn, run by run
	# (scripts/bench-time.py): tshark, wiretap and BEFORE span the same
	# minutes of a machine whose speed drifts.
	text=() json=()
	if [[ $CACHED == 1 && -s $f.tshark ]]; then
		read -r tt tj <"$f.tshark"
		tnote=" (cached)"
	else
		text+=(-- tshark -r "$f")
		json+=(-- tshark -r "$f" -T json)
		tnote=
	fi
	if [[ $TSHARK_ONLY == 0 ]]; then
		text+=(-- "$WIRETAP" read "$f")
		json+=(-- "$WIRETAP" read --format json "$f")
		if [[ -n ${BEFORE:-} ]]; then
			text+=(-- "$BEFORE" read "$f")
			json+=(-- "$BEFORE" read --format json "$f")
		fi
	fi
	wt=- wj=- bt=- bj=-
	for fmt in text json; do
		declare -n cmds=$fmt
		[[ ${#cmds[@]} -gt 0 ]] || continue
		log "$name: $fmt, $RUNS runs of each in turn"
		settle=()
		[[ -n $tnote ]] || settle=(--settle) # tshark first, then the others settled
		mapfile -t got < <("$ROOT/scripts/bench-time.py" -n "$RUNS" --nice "$NICE" "${settle[@]}" "${cmds[@]}")
		unset -n cmds
		i=0
		if [[ -z $tnote ]]; then
			if [[ $fmt == text ]]; then tt=${got[0]}; else tj=${got[0]}; fi
			i=1
		fi
		if [[ $TSHARK_ONLY == 0 ]]; then
			if [[ $fmt == text ]]; then
				wt=${got[i]}
				[[ -z ${BEFORE:-} ]] || bt=${got[i + 1]}
			else
				wj=${got[i]}
				[[ -z ${BEFORE:-} ]] || bj=${got[i + 1]}
			fi
		fi
	done
	[[ -n $tnote ]] || printf '%s %s\n' "$tt" "$tj" >"$f.tshark"
	row="$name|$size|$packets|$units|$tt$tnote|$wt|$(ratio "$tt" "$wt")|$(met "$tt" "$wt" 10)|$tj$tnote|$wj|$(ratio "$tj" "$wj")|$(met "$tj" "$wj" 20)"
	[[ -z ${BEFORE:-} ]] || row+="|$bt|$(ratio "$tt" "$bt")|$bj|$(ratio "$tj" "$bj")"
	rows+=("$row")
done

echo
echo "median of $RUNS runs, output to /dev/null, under nice -n $NICE; goal: text >=10x, json >=20x"
if [[ $MARKDOWN == 1 ]]; then
	echo
	if [[ -n ${BEFORE:-} ]]; then
		echo '| shape | MB | packets | units | tshark text s | wiretap text s | text ratio | >=10x | tshark -T json s | wiretap json s | json ratio | >=20x | before text s | before text ratio | before json s | before json ratio |'
		echo '|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---:|---:|---:|---:|'
	else
		echo '| shape | MB | packets | units | tshark text s | wiretap text s | text ratio | >=10x | tshark -T json s | wiretap json s | json ratio | >=20x |'
		echo '|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|'
	fi
	for r in "${rows[@]}"; do echo "| ${r//|/ | } |"; done
else
	fmt='%-24s %5s %8s %9s %12s %9s %7s %4s %12s %9s %7s %4s'
	head=(shape MB packets units "tshark s" "wiretap s" ratio 10x "tshark-json" "wiretap" ratio 20x)
	if [[ -n ${BEFORE:-} ]]; then
		fmt+=' %9s %7s %9s %7s'
		head+=("before" ratio "before-js" ratio)
	fi
	# shellcheck disable=SC2059
	printf "$fmt\n" "${head[@]}"
	for r in "${rows[@]}"; do
		IFS='|' read -r -a c <<<"$r"
		# shellcheck disable=SC2059
		printf "$fmt\n" "${c[@]}"
	done
fi
