#!/usr/bin/env bash
# pgo.sh: record cmd/wiretap/default.pgo, the CPU profile that `go build`
# and `go run` optimise wiretap with (profile-guided optimisation: the
# go command uses a main package's default.pgo by itself).
#
#   scripts/pgo.sh
#
# The profile is `wiretap read` in text and in JSON, RUNS times each
# (default 10: a run of a tenth of a second gives the profiler some ten
# samples, and two runs a shape left the compiler's choices to chance),
# on every shape of the benchmark corpus (scripts/corpus.sh,
# testdata/corpus/; CORPUS to read another), merged into one. The binary profiled is built
# without a profile, so that the result does not depend on the one it
# replaces. Rerun it when the decoders or the pipeline change much; an
# older profile still applies to the code it matches (the go command
# ignores what no longer does).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CORPUS=${CORPUS:-$ROOT/testdata/corpus}
RUNS=${RUNS:-10}
die() { printf 'pgo: %s\n' "$*" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$ROOT" && CGO_ENABLED=0 go build -pgo=off -o "$tmp/wiretap" ./cmd/wiretap)
for s in $("$ROOT/scripts/corpus.sh" list); do
	f=$CORPUS/$s.pcapng
	[[ -s $f ]] || die "$f is missing: record the corpus first (scripts/corpus.sh)"
	for ((i = 1; i <= RUNS; i++)); do
		"$tmp/wiretap" read --cpuprofile "$tmp/$s-text-$i.prof" "$f" >/dev/null
		"$tmp/wiretap" read --format json --cpuprofile "$tmp/$s-json-$i.prof" "$f" >/dev/null
	done
done
go tool pprof -proto "$tmp"/*.prof >"$tmp/default.pgo" 2>/dev/null
mv "$tmp/default.pgo" "$ROOT/cmd/wiretap/default.pgo"
printf 'pgo: wrote cmd/wiretap/default.pgo (%s bytes)\n' "$(wc -c <"$ROOT/cmd/wiretap/default.pgo")"
