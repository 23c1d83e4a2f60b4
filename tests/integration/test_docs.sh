#!/bin/bash
# test_docs.sh — the manual page and the references generated from the
# tables (issue 28, item 4; Makefile.am "docs", docs/docgen.c):
#   - this build made docs/gen/bucketcache.8, and groff (-ww) and man -l
#     render it without a warning;
#   - every option of src/config/config_table.h is in the rendered page,
#     as `bucketcache --help` names it (the same hint, --no-NAME for a
#     yes/no option);
#   - docs/options.md and docs/metrics.md, as committed, are what this
#     build generates (else: `make docs-update`), every option and counter
#     of the tables is in them, and every metric name docs/metrics.md gives
#     is one a live gateway's /metrics has (the naming rule holds);
#   - `make install DESTDIR=...` puts the page in $(mandir)/man8.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_skip_unless_tool make groff man curl
[ -f "$BC_BUILDDIR/Makefile" ] || { echo "SKIP: $BC_NAME: no Makefile in $BC_BUILDDIR" >&2; exit 77; }
[ -x "$BC_BIN" ] || bc_fail "daemon binary BC_BIN=$BC_BIN missing (build it first)"
# make of this build, as if run by hand (see test_config_path.sh)
bmake() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s -C "$BC_BUILDDIR" "$@"
}
GEN=$BC_BUILDDIR/docs/gen
PAGE=$GEN/bucketcache.8

# ---- the page is generated and renders cleanly -------------------------------------------------
bmake docs/gen/bucketcache.8 docs/gen/options.md docs/gen/metrics.md >"$BC_TMP/gen.log" 2>&1 ||
	{ cat "$BC_TMP/gen.log" >&2; bc_fail "make of the generated docs failed"; }
[ -s "$PAGE" ] || bc_fail "the build did not make $PAGE"
v=$(grep -c '^\.TP$' "$PAGE")
bc_assert_ge "$v" 40 "the build generated bucketcache(8) with its options ($v .TP entries)"
groff -man -Tutf8 -ww -z "$PAGE" 2>"$BC_TMP/groff.err" || bc_fail "groff failed: $(cat "$BC_TMP/groff.err")"
v=$(cat "$BC_TMP/groff.err")
bc_assert_eq "" "$v" "groff -man -Tutf8 -ww renders it without a warning"
MANWIDTH=80 man --warnings -l "$PAGE" >"$BC_TMP/page.raw" 2>"$BC_TMP/man.err" ||
	bc_fail "man -l failed: $(cat "$BC_TMP/man.err")"
v=$(cat "$BC_TMP/man.err")
bc_assert_eq "" "$v" "man --warnings -l renders it without a warning"
# plain text: no overstrike, the hyphens and minus signs groff may use as '-'
sed -e 's/.\x08//g' -e 's/\xe2\x80\x90/-/g' -e 's/\xe2\x88\x92/-/g' "$BC_TMP/page.raw" |
	sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' >"$BC_TMP/page.txt"
for s in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS ENVIRONMENT FILES "SEE ALSO"; do
	grep -qx "$s" "$BC_TMP/page.txt" || bc_fail "the page has no $s section"
done
grep -q '^/etc/bucketcache/bucketcache.conf$' "$BC_TMP/page.txt" ||
	bc_fail "FILES does not name /etc/bucketcache/bucketcache.conf"
grep -q '^bucketcache warm s3://BUCKET' "$BC_TMP/page.txt" ||
	bc_fail "the page does not show bucketcache warm"
bc_pass "the page has its sections, FILES and the warm command"

# ---- every option of the table, as --help shows it --------------------------------------------
sed -n 's/^BC_OPT([^,]*, *"\([^"]*\)".*/\1/p' "$BC_SRCDIR/src/config/config_table.h" >"$BC_TMP/names"
n=$(wc -l <"$BC_TMP/names")
bc_assert_ge "$n" 40 "config_table.h lists $n options"
"$BC_BIN" --help >"$BC_TMP/help.txt"
missing=
while IFS= read -r name; do
	grep -Eq -- "^--$name( |,|\$)" "$BC_TMP/page.txt" || missing="$missing --$name"
	grep -q -- "\`--$name" "$BC_SRCDIR/docs/options.md" || missing="$missing options.md:--$name"
	line=$(grep -E -- "^  --$name( |,|\$)" "$BC_TMP/help.txt" | sed 's/^ *//')
	[ -n "$line" ] || { missing="$missing help:--$name"; continue; }
	grep -qxF -- "$line" "$BC_TMP/page.txt" || missing="$missing [$line]"
done <"$BC_TMP/names"
bc_assert_eq "" "$missing" "every option of config_table.h is in the page as --help shows it, and in docs/options.md"

# ---- the committed references are the generated ones ---------------------------------------
bc_assert_same_file "$GEN/options.md" "$BC_SRCDIR/docs/options.md" \
	"docs/options.md is what the build generates (else: make docs-update)"
bc_assert_same_file "$GEN/metrics.md" "$BC_SRCDIR/docs/metrics.md" \
	"docs/metrics.md is what the build generates (else: make docs-update)"
missing=
for macro in BC_STAT BC_BSTAT BC_TSTAT BC_JSTAT; do
	while IFS= read -r name; do
		grep -q -- "| \`[a-z.]*[A-Z.]*$name\` |" "$BC_SRCDIR/docs/metrics.md" ||
			missing="$missing $macro:$name"
	done < <(sed -n "s/^$macro(\([a-z0-9_]*\),.*/\1/p" "$BC_SRCDIR/src/stats/stats_table.h")
done
bc_assert_eq "" "$missing" "every line of stats_table.h is in docs/metrics.md"

# every metric name it gives is on a live /metrics: one object read makes
# the per-bucket and per-job families appear
mkdir -p "$BC_TMP/data/b"
echo hello >"$BC_TMP/data/b/k"
bc_start_gateway --upstream "file://$BC_TMP/data" --anonymous
curl -sf "$BC_GW_URL/b/k" >/dev/null || bc_fail "GET b/k failed"
curl -sf "$BC_GW_URL/_bucketcache/metrics" >"$BC_TMP/metrics.txt" || bc_fail "GET /metrics failed"
sed -n 's/^| `\(bucketcache_[a-z0-9_]*\)[{`].*/\1/p' "$BC_SRCDIR/docs/metrics.md" >"$BC_TMP/doc-metrics"
n=$(wc -l <"$BC_TMP/doc-metrics")
bc_assert_ge "$n" 100 "docs/metrics.md names $n metrics"
missing=
while IFS= read -r m; do
	grep -q "^# TYPE $m " "$BC_TMP/metrics.txt" || missing="$missing $m"
done <"$BC_TMP/doc-metrics"
bc_assert_eq "" "$missing" "every metric docs/metrics.md names is on /metrics"
bc_stop_gateway

# ---- make install puts it in man8 ---------------------------------------------------------------
mandir=$(bmake -f Makefile -f - bc-print-mandir <<'MK'
bc-print-mandir:
	@echo '$(mandir)'
MK
)
bc_assert_match '^/' "$mandir" "the build's mandir ($mandir)"
ROOT=$BC_TMP/root
bmake install DESTDIR="$ROOT" >"$BC_TMP/install.log" 2>&1 ||
	{ cat "$BC_TMP/install.log" >&2; bc_fail "make install failed"; }
bc_assert_same_file "$PAGE" "$ROOT$mandir/man8/bucketcache.8" \
	"make install DESTDIR puts bucketcache.8 in MANDIR/man8 ($mandir)"
v=$(MANWIDTH=80 MANPATH="$ROOT$mandir" man bucketcache 2>&1 | grep -c 'bucketcache warm' || true)
bc_assert_ge "$v" 1 "man bucketcache finds the installed page (MANPATH)"

bc_done 16
