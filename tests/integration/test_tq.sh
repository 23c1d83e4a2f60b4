#!/bin/bash
# test_tq.sh — tests/lib/tq, the C readers lib.sh's helpers use, answers
# what the Python they replaced answered (Python is the reference here,
# run once per check over a corpus): json (jsonpath: values as Python
# prints them, containers as json.dumps, floats as repr, text with
# escapes and non-ASCII), stat (the gateway's counters, dotted paths, a
# missing counter's error, --or-0), get and sum (the fixture's stats),
# s3code (xml.etree's root.find('Code') of an <Error>, nothing for other
# or malformed XML), mkfile (the same bytes as hashlib's SHA-256 blocks),
# port (bindable), http (curl's bodies, statuses and exit codes, against a
# Python server; stat and the others reading a URL as they read its file);
# bad input is exit 1, a usage error 2.
# one build: it tests a harness tool that every build compiles alike (no sanitizers)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -x "$BC_TQ" ] || bc_fail "$BC_TQ missing (make check TESTS= in $BC_BUILDDIR)"
D=$BC_TMP/tq
mkdir -p "$D"

# ---- the JSON corpus --------------------------------------------------------
"$BC_PY" - "$D" <<'EOF'
import json, sys
d = sys.argv[1]
doc = {
    "counters": {"requests": 12, "hits": 0, "ratio": 0.5, "big": 2**62},
    "requests_by_op": {"GetObject": {"2xx": 5, "4xx": 0}},
    "f": [1.5, 1e-05, 1e16, 1e15, 123456789012.0, -0.0, 0.1, 2.5e-7, 3.0,
          1e300, 5e-324, 0.30000000000000004, -12.25],
    "s": "h\u00e9llo \"q\" \\ \n\t/\u2603 \U0001F600 \x7f \x01",
    "t": True, "fa": False, "n": None, "l": [], "o": {},
    "nested": {"a": [{"b": 1}, {"c": [True, False, None, "x", {"d": "\u00fc"}]}]},
    "rejected_by_code": {"SignatureDoesNotMatch": 2, "AccessDenied": 3, "X": 0},
}
open(d + "/ascii.json", "w").write(json.dumps(doc))
open(d + "/utf8.json", "w").write(json.dumps(doc, ensure_ascii=False, indent=2))
open(d + "/lit.json", "w").write(
    '{"x": 1.50, "y": 1E5, "z": -0, "w": 10e-3, "k": 1, "k2": "\\ud83d\\ude00"}')
EOF
EXPRS=(counters counters.requests counters.ratio counters.big requests_by_op
	requests_by_op.GetObject.2xx f f.0 f.1 f.2 f.3 f.4 f.5 f.6 f.7 f.8 f.9
	f.10 f.11 f.12 f.13 f.x s t fa n l o nested nested.a.1.c nested.a.1.c.2
	nested.a.1.c.4.d nested.a.5 nested.a.x missing x y z w k k2
	counters.requests.x s.x)

# the reference: what lib.sh's Python printed (fixture/jsonpath.py's walk)
ref_json() {
	"$BC_PY" - "$@" <<'EOF'
import json, sys
def walk(d, expr):
    for p in expr.split("."):
        if isinstance(d, list):
            d = d[int(p)] if p.isdigit() and int(p) < len(d) else None
        elif isinstance(d, dict):
            d = d.get(p)
        else:
            d = None
    if d is None:
        return ""
    return json.dumps(d) if isinstance(d, (dict, list)) else str(d)
top = json.load(open(sys.argv[1]))
for e in sys.argv[2:]:
    print(e + "=" + walk(top, e))
EOF
}
for f in ascii utf8 lit; do
	want=$(ref_json "$D/$f.json" "${EXPRS[@]}")
	got=$("$BC_TQ" json --keys "$D/$f.json" "${EXPRS[@]}")
	if [ "$got" != "$want" ]; then
		diff <(echo "$want") <(echo "$got") >&2 || true
		bc_fail "tq json on $f.json differs from Python's (< Python, > tq)"
	fi
	bc_pass "tq json on $f.json: ${#EXPRS[@]} paths as Python prints them"
done
v=$("$BC_TQ" json "$D/ascii.json" counters.requests)
bc_assert_eq 12 "$v" "tq json without --keys: the value alone"

# ---- stat, get, sum ---------------------------------------------------------
NAMES=(requests hits ratio big requests_by_op.GetObject.2xx
	requests_by_op.GetObject.5xx requests_by_op.Put.2xx counters.requests f.x t.x)
want=$("$BC_PY" - "$D/ascii.json" "${NAMES[@]}" <<'EOF'
import json, sys
top = json.load(open(sys.argv[1]))
for name in sys.argv[2:]:
    d = top
    if "." not in name:
        d = d["counters"][name]
    else:
        for p in name.split("."):
            d = d.get(p, 0) if isinstance(d, dict) else 0
    print(d)
EOF
)
got=$(for n in "${NAMES[@]}"; do "$BC_TQ" stat - "$n" <"$D/ascii.json"; done)
bc_assert_eq "$want" "$got" "tq stat: counters and dotted paths as Python read them"
rc=0; err=$("$BC_TQ" stat - nope <"$D/ascii.json" 2>&1) || rc=$?
bc_assert_eq 1 "$rc" "tq stat: a missing counter is exit 1"
bc_assert_match "stats has no counter 'nope' \(have: requests, hits, ratio, big\)" "$err" \
	"tq stat: its message names the counters there are"
v=$("$BC_TQ" stat --or-0 "$D/ascii.json" nope)
bc_assert_eq 0 "$v" "tq stat --or-0: a missing counter is 0"
v=$(for p in requests_by_op.GetObject.2xx counters.nope requests requests_by_op.GetObject; do
	"$BC_TQ" get - "$p" <"$D/ascii.json"; done | paste -sd'|')
bc_assert_eq '5|0|0|{"2xx": 5, "4xx": 0}' "$v" \
	"tq get: from the top, a missing step 0, an object as JSON"
v=$(for x in "" AccessDenied,X SignatureDoesNotMatch,AccessDenied; do
	"$BC_TQ" sum - rejected_by_code ${x//,/ } <"$D/ascii.json"; done | paste -sd'|')
bc_assert_eq "5|2|0" "$v" "tq sum: the members' total, but for the named ones"

# ---- s3code -----------------------------------------------------------------
i=0
while IFS= read -r line; do
	i=$((i + 1))
	printf '%b' "$line" >"$D/x$i.xml"
done <<'XML'
<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><Key>a</Key><RequestId>x</RequestId></Error>
<Error><Message>m</Message><Code>AccessDenied</Code></Error>
<Error xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Code>X</Code></Error>
<ListBucketResult><Code>X</Code></ListBucketResult>
<Error><Code>A&amp;B&lt;</Code></Error>
<Error><Code></Code></Error>
<Error><Code/></Error>
<Error><Code>Unclosed</Code>
<Error><Code>X</Code></Error>trailing
not xml at all
<Error><Sub><Code>Deep</Code></Sub><Code>Top</Code></Error>
<Error><Code> </Code></Error>
<!-- c --><Error a="1>2"><Code>Q</Code></Error>\n
<Error><Code>X</Code></Error><Error/>
<Error><Code>X</Wrong></Error>

<Error><Code><b>x</b>y</Code></Error>
<Error>\n  <Code>Spaced</Code>\n</Error>
XML
want=$("$BC_PY" - "$D" "$i" <<'EOF'
import sys, xml.etree.ElementTree as ET
for i in range(1, int(sys.argv[2]) + 1):
    out = ""
    try:
        root = ET.parse("%s/x%d.xml" % (sys.argv[1], i)).getroot()
        code = root.find("Code")
        if root.tag.split("}")[-1] == "Error" and code is not None and code.text:
            out = code.text
    except ET.ParseError:
        pass
    print("%d[%s]" % (i, out))
EOF
)
got=$(for j in $(seq "$i"); do echo "$j[$("$BC_TQ" s3code "$D/x$j.xml")]"; done)
if [ "$got" != "$want" ]; then
	diff <(echo "$want") <(echo "$got") >&2 || true
	bc_fail "tq s3code differs from xml.etree's (< Python, > tq)"
fi
bc_pass "tq s3code: $i bodies (S3 errors, other roots, malformed) as xml.etree reads them"
v=$("$BC_TQ" s3code "$D/no-such-file")
bc_assert_eq "" "$v" "tq s3code: no file, no code"

# ---- mkfile, port -----------------------------------------------------------
SIZES=(0 1 31 32 65535 65536 65537 300000)
for n in "${SIZES[@]}"; do "$BC_TQ" mkfile "$D/m-$n.bin" "$n"; done
"$BC_PY" - "$D" "${SIZES[@]}" <<'EOF'
import hashlib, sys
for n in map(int, sys.argv[2:]):
    path = "%s/m-%d.bin" % (sys.argv[1], n)
    seed = hashlib.sha256(path.encode()).digest()
    with open(path.replace(".bin", ".py"), "wb") as f:
        i = 0
        while n > 0:
            block = hashlib.sha256(seed + i.to_bytes(8, "big")).digest() * 2048
            f.write(block[:n])
            n -= min(n, len(block))
            i += 1
EOF
for n in "${SIZES[@]}"; do
	cmp -s "$D/m-$n.bin" "$D/m-$n.py" || bc_fail "tq mkfile $n bytes differs from hashlib's"
done
bc_pass "tq mkfile: ${#SIZES[@]} sizes, the bytes hashlib's blocks make"
p=$("$BC_TQ" port)
"$BC_PY" -c 'import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)' "$p" ||
	bc_fail "tq port: $p cannot be bound"
bc_pass "tq port: a loopback port that can be bound ($p)"

# ---- http -------------------------------------------------------------------
# curl is the reference: a Python server answers with a length, chunked,
# empty, big, error, late and no answers; tq http's body and exit status
# must be `curl -sf`'s, its -w line curl's -w '%{http_code}'
HP=$("$BC_TQ" port)
"$BC_PY" - "$HP" "$D" >"$D/srv.log" 2>&1 <<'EOF' &
import http.server, os, socket, sys, time
port, d = int(sys.argv[1]), sys.argv[2]
big = os.urandom(1 << 20)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def answer(self, code, body, chunked=False):
        self.send_response(code)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        elif code != 204:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "HEAD" or code == 204:
            return
        if chunked:
            for i in range(0, len(body), 7):
                part = body[i:i + 7]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.wfile.write(body)
    def do_GET(self):
        p = self.path
        if p == "/json":
            return self.answer(200, open(d + "/ascii.json", "rb").read())
        if p == "/chunked":
            return self.answer(200, b"chunked body, a line\nand more " * 50, True)
        if p == "/big":
            return self.answer(200, big)
        if p == "/204":
            return self.answer(204, b"")
        if p == "/slow":
            time.sleep(3)
            return self.answer(200, b"late")
        if p.startswith("/len/"):
            self.send_response(200)
            self.send_header("Content-Length", p[5:])
            self.end_headers()
            self.wfile.write(b"0123456789")
            self.close_connection = True
            return
        if p == "/cut":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"only ten b")
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        return self.answer(404, b"<Error><Code>NoSuchKey</Code></Error>")
    do_HEAD = do_GET
    def do_POST(self):
        n = self.headers.get("Content-Length")
        return self.answer(200, ("%s %s %s" % (self.command, self.path, n)).encode())
    do_DELETE = do_POST
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
EOF
HPID=$!
BC_PIDS+=("$HPID")
bc__wait_http "http://127.0.0.1:$HP/json" "$HPID" 20 ||
	bc_fail "the http reference server did not start"
U=http://127.0.0.1:$HP
# http_case NAME TQ-ARGS... -- CURL-ARGS...: the same output and exit status
http_case() {
	local name=$1 rt=0 rc=0 a=()
	shift
	while [ "$1" != -- ]; do a+=("$1"); shift; done
	shift
	"$BC_TQ" http "${a[@]}" >"$D/h-$name.tq" 2>/dev/null || rt=$?
	curl -s "$@" >"$D/h-$name.curl" 2>/dev/null || rc=$?
	cmp -s "$D/h-$name.tq" "$D/h-$name.curl" ||
		bc_fail "tq http $name: the output differs from curl's"
	[ "$rt" = "$rc" ] || bc_fail "tq http $name: exit $rt, curl's $rc"
}
n=0
for path in json chunked big 204 missing; do
	http_case "$path" "$U/$path" -- -f "$U/$path"
	http_case "$path-w" -w "$U/$path" -- -o /dev/null -w '%{http_code}\n' "$U/$path"
	http_case "$path-head" -X HEAD -w "$U/$path" -- -I -o /dev/null -w '%{http_code}\n' "$U/$path"
	n=$((n + 3))
done
http_case post -X POST "$U/ctl?x=1" -- -f -X POST "$U/ctl?x=1"
http_case delete -X DELETE "$U/d" -- -f -X DELETE "$U/d"
http_case slow -m 1 "$U/slow" -- -f --max-time 1 "$U/slow"
http_case slow-w -m 1 -w "$U/slow" -- --max-time 1 -o /dev/null -w '%{http_code}\n' "$U/slow"
RU=http://127.0.0.1:$("$BC_TQ" port)/
http_case refused "$RU" -- -f "$RU"
http_case refused-w -w "$RU" -- -o /dev/null -w '%{http_code}\n' "$RU"
bc_pass "tq http: $((n + 6)) requests answered as curl answers them (bodies, statuses, exit codes)"
# a Content-Length past 2^64, negative, not a number or past tq's 256 MiB
# bound: exit 8 and nothing printed (curl reads some of these to the close)
got=
for len in 99999999999999999999 -5 12x 300000000; do
	rc=0; out=$("$BC_TQ" http "$U/len/$len" 2>/dev/null) || rc=$?
	got="$got $rc:${#out}"
done
bc_assert_eq " 8:0 8:0 8:0 8:0" "$got" "tq http: a Content-Length it cannot trust is exit 8, no body"
rc=0; "$BC_TQ" http "$U/cut" >/dev/null 2>&1 || rc=$?
want=0; curl -sf "$U/cut" >/dev/null 2>&1 || want=$?
bc_assert_eq "18 18" "$rc $want" "tq http: an answer cut short is exit 18, as curl's"
for c in "stat counters.requests" "stat requests_by_op.GetObject.2xx" \
	"get f.1" "sum rejected_by_code X" "json s"; do
	set -- $c
	want=$("$BC_TQ" "$1" "$D/ascii.json" "${@:2}")
	got=$("$BC_TQ" "$1" "$U/json" "${@:2}")
	bc_assert_eq "$want" "$got" "tq $1 of a URL reads what it reads from the file ($2)"
done
rc=0; "$BC_TQ" stat "$U/missing" requests >/dev/null 2>&1 || rc=$?
bc_assert_eq 1 "$rc" "tq stat of a URL that answers 404 is exit 1"
rc=0; "$BC_TQ" http "https://127.0.0.1:$HP/" >/dev/null 2>&1 || rc=$?
bc_assert_eq 2 "$rc" "tq http: a URL it does not speak is exit 2"

# ---- errors -----------------------------------------------------------------
printf '{"a": [1, 2}' >"$D/bad.json"
rc=0; "$BC_TQ" json "$D/bad.json" a >/dev/null 2>&1 || rc=$?
bc_assert_eq 1 "$rc" "tq json: a file that is not JSON is exit 1"
printf '%*s' 70 '' | tr ' ' '[' >"$D/deep.json"
rc=0; "$BC_TQ" json "$D/deep.json" a >/dev/null 2>&1 || rc=$?
bc_assert_eq 1 "$rc" "tq json: nesting past 64 is exit 1, not a crash"
rc=0; "$BC_TQ" frob >/dev/null 2>&1 || rc=$?
bc_assert_eq 2 "$rc" "tq: an unknown command is exit 2"
rc=0; "$BC_TQ" mkfile "$D/x" 12x >/dev/null 2>&1 || rc=$?
bc_assert_eq 2 "$rc" "tq mkfile: a size that is not a number is exit 2"

bc_done 28
