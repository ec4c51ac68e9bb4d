#!/usr/bin/env bash
# make test's suites, run side by side on the machine's cores: the unit
# suite under the race detector; the whole-binary suites (test/...), which
# mostly wait on the processes they start (built without the race
# detector: the harness around them is what -race would instrument); and
# staticcheck with the small suites (make test-side). Each one's output
# follows the unit suite's; any failure fails make test.
set -uo pipefail
GO=${GO:-go}
STATICCHECK=${STATICCHECK:?}
MAKE=${MAKE:-make}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

units=$($GO list ./... | grep -v '/test/')
( "$GO" test -count=1 -timeout 15m ./test/... >"$tmp/binaries" 2>&1; echo $? >"$tmp/binaries.rc" ) &
whole=$!
( { "$GO" run "$STATICCHECK" ./... && "$MAKE" --no-print-directory test-side; } >"$tmp/side" 2>&1; echo $? >"$tmp/side.rc" ) &
side=$!
# shellcheck disable=SC2086 # the package list is word-split on purpose
"$GO" test -race -count=1 -timeout 15m $units
rc=$?
wait "$whole" "$side"
echo "== whole-binary suites (test/...):"
cat "$tmp/binaries"
echo "== staticcheck and make test-side:"
cat "$tmp/side"
brc=$(cat "$tmp/binaries.rc") src=$(cat "$tmp/side.rc")
[ "$brc" = 0 ] || echo "the whole-binary suites failed"
[ "$src" = 0 ] || echo "staticcheck or make test-side failed"
[ "$rc" = 0 ] && [ "$brc" = 0 ] && [ "$src" = 0 ]
