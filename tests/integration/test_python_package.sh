#!/bin/bash
# test_python_package.sh — contrib/python as a package (issue 27, item 4),
# installed offline the ways contrib/python/README says, with Debian 12's
# python3, pip 23 and setuptools 66 (pip's own configuration ignored, as
# on a fresh machine; --no-index: nothing is fetched):
#   1. a venv with --system-site-packages (Debian's torch and boto3
#      visible): `pip install --no-build-isolation --no-index` works; the
#      package imports from the venv's site-packages with torch hidden;
#      its unit tests run against the installed package (run-tests
#      --installed), the torch and boto3 ones included;
#   2. a venv without system packages (no torch, no boto3 at all), Debian's
#      wheel installed into it first: the package installs, imports,
#      HintedSampler says it needs python3-torch, and the unit tests that
#      need neither pass (the rest are skipped);
#   3. /usr/bin/python3's pip into a --target directory: /usr/bin/python3
#      imports it with torch hidden.
# pip builds in the tree it is given: it gets a copy.
# one build: it runs no gateway; the Python package is the same in every build
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_skip_unless_tool "$BC_PY"
"$BC_PY" -c 'import venv, ensurepip' 2>/dev/null ||
	{ echo "SKIP: $BC_NAME: /usr/bin/python3 lacks venv/ensurepip (python3-venv)" >&2; exit 77; }
"$BC_PY" -m pip --version >/dev/null 2>&1 ||
	{ echo "SKIP: $BC_NAME: /usr/bin/python3 lacks pip (python3-pip)" >&2; exit 77; }
WHEEL_WHL=$(ls /usr/share/python-wheels/wheel-*.whl 2>/dev/null | head -1 || true)
[ -n "$WHEEL_WHL" ] ||
	{ echo "SKIP: $BC_NAME: no /usr/share/python-wheels/wheel-*.whl (python3-wheel-whl)" >&2; exit 77; }
"$BC_PY" -c 'import torch, boto3' 2>/dev/null ||
	{ echo "SKIP: $BC_NAME: /usr/bin/python3 lacks torch or boto3" >&2; exit 77; }

# a fresh machine's pip: no configuration, no index, no questions
export PIP_CONFIG_FILE=/dev/null PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL PYTHONPATH || true
SRC=$BC_TMP/src
cp -r "$BC_SRCDIR/contrib/python" "$SRC"
rm -rf "$SRC/build" "$SRC"/*.egg-info
RUN_TESTS=$BC_SRCDIR/contrib/python/run-tests

install_pkg() {   # NAME PYTHON PIP-ARGS...: pip install, log in $BC_TMP/NAME.log
	local name=$1 py=$2 rc=0
	shift 2
	"$py" -m pip install --no-build-isolation --no-index "$@" "$SRC" \
		>"$BC_TMP/$name.log" 2>&1 || rc=$?
	if [ "$rc" != 0 ]; then
		cat "$BC_TMP/$name.log" >&2
		bc_fail "$name: pip install exited $rc"
	fi
	bc_pass "$name: pip install --no-build-isolation --no-index ./contrib/python"
}

HIDE='import sys; sys.modules["torch"] = None
'
# ---- 1. a venv that sees Debian's packages ------------------------------------------
VA=$BC_TMP/venv-system
"$BC_PY" -m venv --system-site-packages "$VA" >"$BC_TMP/venv-a.log" 2>&1 ||
	{ cat "$BC_TMP/venv-a.log" >&2; bc_fail "python3 -m venv --system-site-packages"; }
install_pkg venv-system "$VA/bin/python"
v=$(cd "$BC_TMP" && "$VA/bin/python" -c "$HIDE"'
import bucketcache, os
assert sys.modules.get("torch") is None
print(os.path.dirname(bucketcache.__file__), bucketcache.__version__)')
bc_assert_match "^$VA/lib/python3[.0-9]*/site-packages/bucketcache 0\.1\.0\$" "$v" \
	"venv-system: import bucketcache (torch hidden) finds the installed package"
rc=0
BC_PY=$VA/bin/python "$RUN_TESTS" --installed >"$BC_TMP/tests-a.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$BC_TMP/tests-a.log" >&2; bc_fail "venv-system: run-tests --installed exited $rc"; }
v=$(grep -Ec '^Ran [0-9]+ tests' "$BC_TMP/tests-a.log" || true)
bc_assert_eq 1 "$v" "venv-system: the unit tests ran against the installed package"
v=$(grep -E '^OK' "$BC_TMP/tests-a.log" || true)
bc_assert_eq OK "$v" "venv-system: all pass, none skipped (torch and boto3 present)"
v=$(grep -c "testing the installed package: $VA/" "$BC_TMP/tests-a.log" || true)
bc_assert_eq 1 "$v" "venv-system: run-tests --installed used the venv's copy"

# ---- 2. a venv with neither torch nor boto3 ----------------------------------------------
VB=$BC_TMP/venv-bare
"$BC_PY" -m venv "$VB" >"$BC_TMP/venv-b.log" 2>&1 ||
	{ cat "$BC_TMP/venv-b.log" >&2; bc_fail "python3 -m venv"; }
"$VB/bin/python" -m pip install --no-index "$WHEEL_WHL" >"$BC_TMP/wheel-b.log" 2>&1 ||
	{ cat "$BC_TMP/wheel-b.log" >&2; bc_fail "installing Debian's wheel into the bare venv"; }
rc=0
"$VB/bin/python" -c 'import torch' >/dev/null 2>&1 || rc=$?
bc_assert_ne 0 "$rc" "venv-bare: has no torch"
install_pkg venv-bare "$VB/bin/python"
v=$(cd "$BC_TMP" && "$VB/bin/python" -c '
import sys, bucketcache
from bucketcache import PlanClient, install_hints, hint_headers, access_key_job
print("torch" in sys.modules, "botocore" in sys.modules, bucketcache.__version__)')
bc_assert_eq "False False 0.1.0" "$v" "venv-bare: import bucketcache without torch or boto3"
v=$(cd "$BC_TMP" && "$VB/bin/python" -c '
import bucketcache
try:
    bucketcache.HintedSampler
except ImportError as e:
    print(e)')
bc_assert_match 'needs PyTorch.*python3-torch' "$v" "venv-bare: HintedSampler names what it needs"
rc=0
BC_PY=$VB/bin/python "$RUN_TESTS" --installed >"$BC_TMP/tests-b.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$BC_TMP/tests-b.log" >&2; bc_fail "venv-bare: run-tests --installed exited $rc"; }
v=$(grep -Eo '^OK \(skipped=[0-9]+\)' "$BC_TMP/tests-b.log" || true)
bc_assert_match '^OK \(skipped=[1-9][0-9]*\)$' "$v" \
	"venv-bare: the tests needing neither pass, the others are skipped"
v=$(grep -Ec '^test_import_without_torch .* ok$' "$BC_TMP/tests-b.log" || true)
bc_assert_eq 1 "$v" "venv-bare: the package tests ran"

# ---- 3. /usr/bin/python3's pip, into a directory -----------------------------------------
T=$BC_TMP/target
install_pkg target "$BC_PY" --target "$T"
v=$(cd "$BC_TMP" && PYTHONPATH=$T "$BC_PY" -c "$HIDE"'
import bucketcache
print(bucketcache.__file__)')
bc_assert_eq "$T/bucketcache/__init__.py" "$v" "target: /usr/bin/python3 imports it (torch hidden)"
v=$(ls "$T" | grep dist-info || true)
bc_assert_match '^bucketcache-0\.1\.0\.dist-info$' "$v" \
	"target: installed with its metadata (bucketcache 0.1.0)"

bc_done 14
