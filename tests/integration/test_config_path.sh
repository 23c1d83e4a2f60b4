#!/bin/bash
# test_config_path.sh — one config path (issue 27, item 6):
# /etc/bucketcache/bucketcache.conf, $(sysconfdir)/bucketcache/ in general.
#   - `make install-data DESTDIR=...` of this build puts conf/bucketcache.conf
#     at $(sysconfdir)/bucketcache/bucketcache.conf, byte for byte;
#   - the systemd unit runs the gateway with --config on
#     /etc/bucketcache/bucketcache.conf, the Dockerfile configures
#     --sysconfdir=/etc, installs with make install and points
#     BUCKETCACHE_CONFIG there, and conf/'s header names that path;
#   - the installed file, all defaults commented out, starts a gateway
#     (--config and BUCKETCACHE_CONFIG), and a line added to it is used.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_skip_unless_tool make curl
[ -f "$BC_BUILDDIR/Makefile" ] || { echo "SKIP: $BC_NAME: no Makefile in $BC_BUILDDIR" >&2; exit 77; }
P=/etc/bucketcache/bucketcache.conf
# make of this build, as if run by hand (under make check the parent's
# flags would print directories and share its jobserver)
bmake() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s -C "$BC_BUILDDIR" "$@"
}

# ---- make install ---------------------------------------------------------------------------
sysconfdir=$(bmake -f Makefile -f - bc-print-sysconfdir <<'MK'
bc-print-sysconfdir:
	@echo '$(sysconfdir)'
MK
)
bc_assert_match '^/' "$sysconfdir" "the build's sysconfdir ($sysconfdir)"
ROOT=$BC_TMP/root
bmake install-data DESTDIR="$ROOT" >"$BC_TMP/install.log" 2>&1 ||
	{ cat "$BC_TMP/install.log" >&2; bc_fail "make install-data failed"; }
INST=$ROOT$sysconfdir/bucketcache/bucketcache.conf
bc_assert_same_file "$BC_SRCDIR/conf/bucketcache.conf" "$INST" \
	"make install puts conf/bucketcache.conf at SYSCONFDIR/bucketcache/bucketcache.conf"
v=$(ls "$ROOT$sysconfdir")
bc_assert_eq bucketcache "$v" "and nothing else in SYSCONFDIR"

# ---- the same path everywhere -----------------------------------------------------------------
v=$(grep -c "^ExecStart=.* --config $P\$" "$BC_SRCDIR/contrib/systemd/bucketcache.service" || true)
bc_assert_eq 1 "$v" "the systemd unit reads $P"
v=$(grep -c -- '--sysconfdir=/etc ' "$BC_SRCDIR/docker/Dockerfile" || true)
bc_assert_eq 1 "$v" "the Dockerfile configures --sysconfdir=/etc"
v=$(grep -c 'make -s install-strip DESTDIR=/out' "$BC_SRCDIR/docker/Dockerfile" || true)
bc_assert_eq 1 "$v" "the Dockerfile installs with make install"
v=$(grep -c "^ENV BUCKETCACHE_CONFIG=$P\$" "$BC_SRCDIR/docker/Dockerfile" || true)
bc_assert_eq 1 "$v" "the image reads $P"
v=$(grep -c "^# Use it with:  bucketcache --config $P\$" "$BC_SRCDIR/conf/bucketcache.conf" || true)
bc_assert_eq 1 "$v" "conf/bucketcache.conf names $P"
v=$(grep -rhoE '/etc/bucketcache[./a-z]*\.conf' "$BC_SRCDIR/contrib" "$BC_SRCDIR/docker" \
	"$BC_SRCDIR/conf" "$BC_SRCDIR/README" "$BC_SRCDIR/docs" | sort -u)
bc_assert_eq "$P" "$v" "no other config path is named (contrib, docker, conf, README, docs)"

# ---- the installed file works -------------------------------------------------------------------
[ -x "$BC_BIN" ] || bc_fail "daemon binary BC_BIN=$BC_BIN missing"
mkdir -p "$BC_TMP/data/b"
echo hi >"$BC_TMP/data/b/k"
bc_start_gateway --config "$INST" --upstream "file://$BC_TMP/data" --anonymous
v=$(curl -sf "$BC_GW_URL/b/k")
bc_assert_eq hi "$v" "a gateway starts with --config on the installed file"
bc_stop_gateway
printf 'public-stats yes\n' >>"$INST"
BUCKETCACHE_CONFIG=$INST bc_start_gateway --upstream "file://$BC_TMP/data" --anonymous
curl -sf -H 'X-Forwarded-For: 10.9.9.9' "$BC_GW_URL/_bucketcache/stats" -o "$BC_TMP/st.json" ||
	bc_fail "stats through a relay refused: the file's line was not read"
bc_pass "BUCKETCACHE_CONFIG reads it, and a line added there is used (public-stats)"
bc_stop_gateway

bc_done 15
