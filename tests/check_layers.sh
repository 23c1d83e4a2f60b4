# check_layers.sh — no include runs up a floor (issue 28, "Leaf modules").
#
# Reads every #include "..." in src/ and fails, naming the file and line,
# when a file includes a header of a folder on a higher floor, or of a
# sibling folder on its own floor (siblings know nothing of each other).
# A file may include its own folder, any folder on a lower floor, and
# autoconf's "config.h". The floors, lowest first:
#
#   0  util                            buffers, lists, hashing, CRCs, log
#   1  loop  stats  s3  policy         each on util alone
#   2  chunk  config                   chunk: stats
#   3  creds
#   4  upstream  tier                  the origin and the tiers: strangers
#   5  cache
#   6  prefetch
#   7  scale
#   8  http
#   9  main.c                          the composition root
#
# A new folder under src/ fails the check until it is given a floor below.
# Run by `make check` (quick tier) and tests/run; alone:
#   sh tests/check_layers.sh            (from the source tree's top)
# Exits 0 when every include goes down, 1 otherwise.

# one build: it reads the sources, not a build
src=${BC_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/src
exec /usr/bin/python3 - "$src" <<'EOF'
import os, re, sys

FLOORS = [
    ["util"],
    ["loop", "stats", "s3", "policy"],
    ["chunk", "config"],
    ["creds"],
    ["upstream", "tier"],
    ["cache"],
    ["prefetch"],
    ["scale"],
    ["http"],
    ["main"],                  # src/main.c
]
FLOOR = {m: i for i, ms in enumerate(FLOORS) for m in ms}
OUTSIDE = {"config.h"}         # autoconf's, in the build directory
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')

src = sys.argv[1]
bad = files = n = 0
for root, dirs, names in os.walk(src):
    dirs.sort()
    for name in sorted(names):
        if not name.endswith((".c", ".h", ".tbl")):
            continue
        path = os.path.join(root, name)
        rel = os.path.relpath(path, os.path.dirname(src))   # src/x/y.c
        parts = os.path.relpath(path, src).split(os.sep)
        mod = parts[0] if len(parts) > 1 else "main"
        files += 1
        if mod not in FLOOR:
            print("%s: folder src/%s/ has no floor (tests/check_layers.sh)"
                  % (rel, mod))
            bad += 1
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for ln, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if m is None:
                    continue
                n += 1
                h = m.group(1)
                if h in OUTSIDE:
                    continue
                hp = h.split("/")
                if len(hp) != 2 or ".." in hp:
                    why = "names no folder of src/ (write \"folder/file.h\")"
                elif hp[0] == mod:
                    continue
                elif hp[0] not in FLOOR:
                    why = "src/%s/ has no floor" % hp[0]
                elif FLOOR[hp[0]] > FLOOR[mod]:
                    why = "%s/ (floor %d) is above %s/ (floor %d)" % (
                        hp[0], FLOOR[hp[0]], mod, FLOOR[mod])
                elif FLOOR[hp[0]] == FLOOR[mod]:
                    why = "%s/ and %s/ are siblings on floor %d" % (
                        mod, hp[0], FLOOR[mod])
                else:
                    continue
                print('%s:%d: #include "%s": %s' % (rel, ln, h, why))
                bad += 1
if files == 0:
    print("check_layers: no source under %s" % src)
    sys.exit(1)
if bad:
    print("check_layers: %d include(s) against the floors in %d files"
          % (bad, files))
    sys.exit(1)
print("check_layers: %d includes in %d files, none runs up a floor"
      % (n, files))
EOF
