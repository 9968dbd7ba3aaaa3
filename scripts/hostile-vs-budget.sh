#!/usr/bin/env bash
# hostile-vs-budget.sh: run `wiretap read` (text and JSON) on each file of
# the hostile corpus (testdata/hostile, written by internal/hostilegen) and
# print wall time and peak RSS as a table, with a verdict against the
# budget: every case under 10 s and under 512 MiB (issue 14). The
# "budget" column counts the units that say the decoders' memory budget
# (--max-memory, MAX_MEMORY here) dropped or refused something.
#
#   scripts/hostile-vs-budget.sh [FILE...]
#
# Without FILE it takes every testdata/hostile/*.pcap*. Environment:
# WIRETAP (the binary; default: built from the working tree into a
# temporary directory), LIMIT_S (default 10), LIMIT_MIB (default 512),
# MAX_MEMORY (read's --max-memory; default: read's own, 512MiB).
# Peak RSS and wall time come from GNU time (/usr/bin/time -f).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LIMIT_S=${LIMIT_S:-10}
LIMIT_MIB=${LIMIT_MIB:-512}
MAX_MEMORY=${MAX_MEMORY:-}
budget_args=()
if [[ -n $MAX_MEMORY ]]; then budget_args=(--max-memory "$MAX_MEMORY"); fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if [[ -z ${WIRETAP:-} ]]; then
	WIRETAP=$TMP/wiretap
	(cd "$ROOT" && go build -o "$WIRETAP" ./cmd/wiretap)
fi
if [[ ! -x /usr/bin/time ]]; then
	echo "hostile-vs-budget: needs GNU time at /usr/bin/time" >&2
	exit 2
fi
files=("$@")
if [[ ${#files[@]} -eq 0 ]]; then
	files=("$ROOT"/testdata/hostile/*.pcap*)
fi

fail=0
printf '| input | size | format | wall s | peak RSS MiB | stderr | budget | verdict |\n'
printf '|---|---:|---|---:|---:|---|---:|---|\n'
for f in "${files[@]}"; do
	size=$(stat -c %s "$f")
	for format in text json; do
		# A hard stop at 6x the limit so a regression cannot hang the script.
		set +e
		timeout $((LIMIT_S * 6)) /usr/bin/time -f '%e %M' -o "$TMP/time" \
			"$WIRETAP" read --format "$format" "${budget_args[@]}" "$f" 2>"$TMP/err" |
			grep -c 'memory budget' >"$TMP/budget"
		rc=${PIPESTATUS[0]}
		set -e
		budget=$(cat "$TMP/budget")
		read -r wall kb <"$TMP/time" || { wall=timeout; kb=0; }
		if [[ $rc -eq 124 ]]; then wall=">$((LIMIT_S * 6))"; fi
		mib=$((kb / 1024))
		warn=$(grep -c 'warning' "$TMP/err" || true)
		verdict=ok
		if [[ $rc -ne 0 ]] || ! awk -v w="$wall" -v l="$LIMIT_S" 'BEGIN { exit !(w + 0 < l && w !~ />/) }' || [[ $mib -ge $LIMIT_MIB ]]; then
			verdict="OVER (exit $rc)"
			fail=1
		fi
		printf '| %s | %s | %s | %s | %s | %s warning(s) | %s | %s |\n' "$(basename "$f")" "$size" "$format" "$wall" "$mib" "$warn" "$budget" "$verdict"
	done
done
exit $fail
