# lib_rgw.sh — a throw-away Ceph RADOS Gateway for the integration tests
# (sourced after lib.sh; bash only).
#
# RGW is a real S3 implementation (Debian 12's radosgw, ceph-mon and
# ceph-osd, 16.2): it verifies every SigV4 signature (header, presigned,
# aws-chunked chunk signatures) and Content-MD5, answers ranges and
# conditionals as S3 does, and has ACLs and versioning — what s3rver, a
# mock, lacks. bc_rgw_start makes one cluster in $BC_TMP/rgw: one monitor,
# one OSD on memstore (data in RAM, gone at the end), one radosgw (beast)
# on a free loopback port; no systemd, no mgr, cephx off. Every daemon runs
# in the foreground as a child of the test, logs under $BC_TMP/rgw/log,
# and is stopped by PID when the test exits (lib.sh's cleanup hooks):
# radosgw first, then the OSD, then the monitor (radosgw waits on a gone
# monitor instead of exiting). Two users are made with radosgw-admin:
# the owner of the tests' buckets and another one (ACL checks).
#
# One cluster per test script (docs/decisions.md, "RGW per test script"):
# it is up in 2.5-3 s on a quiet machine (5 s with both cores busy, 6-11 s
# at a load of 10), and stopped in 0.3 s. What makes it that fast: the
# monitor's Paxos proposes every 50 ms instead of every second (radosgw
# creates its pools one proposal after another: 12 s with the default);
# the monitor is made with an osdmap that holds osd.0 already and its
# port is probed, so no `ceph` CLI call (a second of Python each) is made;
# one PG per pool; the two users are made at once.
#
# Gotchas:
#   * with cephx off, radosgw never opens its port unless
#     "ms mon client mode = crc secure" (it waits on an auth mode the
#     monitor does not offer);
#   * deleted objects wait for RGW's garbage collector (2 h by default):
#     the rgw gc settings below make it seconds;
#   * without "cluster addr" the OSD listens on 0.0.0.0 and its heartbeats
#     use the host's address (then a test's 0.0.0.0 listener can find its
#     port taken);
#   * RGW 16 has no flexible checksums (x-amz-checksum-*, aws-chunked
#     trailers): STREAMING-*-TRAILER bodies are 400
#     XAmzContentSHA256Mismatch, checksum headers are ignored. Clients
#     talking to it straight must use requestChecksumCalculation
#     WHEN_REQUIRED (the AWS SDKs' setting for such stores).
#
# Knobs: BC_RGW_MEM_BYTES (the memstore's size, RAM as it is used;
# default 2 GiB), BC_RGW_TRACE=1 (log the start's phases).
#
# After bc_rgw_start:
#   BC_RGW_URL       http://127.0.0.1:PORT (path-style buckets)
#   BC_RGW_PORT
#   BC_RGW_KEY, BC_RGW_SECRET     the owner's pair (uid bc-owner)
#   BC_RGW_KEY2, BC_RGW_SECRET2   another user's pair (uid bc-other)
#   BC_RGW_DIR       the cluster's directory (ceph.conf, data, logs)
#   bc_rgw_admin ARGS...          radosgw-admin on this cluster
#   bc_rgw_ceph ARGS...           the ceph CLI on this cluster

BC_CLEANUP_HOOKS+=(bc__rgw_stop)
BC_RGW_PIDS=()     # radosgw, osd, mon: the order they are stopped in

bc_rgw_admin() { radosgw-admin -c "$BC_RGW_DIR/ceph.conf" "$@"; }
bc_rgw_ceph() { timeout 30 ceph -c "$BC_RGW_DIR/ceph.conf" "$@"; }

# Stops the daemons by PID in BC_RGW_PIDS's order (radosgw, the OSD, the
# monitor): radosgw with SIGKILL (a clean exit takes it 1.2 s and it holds
# nothing worth one: the data is thrown away), the others with SIGTERM,
# up to 5 s, then SIGKILL. A cleanup hook (lib.sh), and callable before.
bc__rgw_stop() {
	local pid i sig=KILL
	# (stderr off: bash says "Killed" of a job it reaps)
	for pid in "${BC_RGW_PIDS[@]}"; do
		i=$sig
		sig=TERM
		kill -"$i" "$pid" || continue
		for i in $(seq 100); do
			kill -0 "$pid" || break
			sleep 0.05
		done
		kill -KILL "$pid" || true
		wait "$pid" || true
	done 2>/dev/null
	BC_RGW_PIDS=()
}

# bc__rgw_reaper: a watcher (in BC_PIDS: the cleanup ends it) that kills
# the daemons when the test's shell is gone without its cleanup (SIGKILL,
# or a cleanup cut short), so that no cluster outlives its test.
bc__rgw_reaper() {
	local pids=("${BC_RGW_PIDS[@]}") main=$BC_MAIN_PID
	(
		trap - EXIT ERR INT TERM HUP
		while kill -0 "$main" 2>/dev/null; do
			sleep 1
		done
		kill -KILL "${pids[@]}" 2>/dev/null
	) >/dev/null 2>&1 </dev/null &
	BC_PIDS+=("$!")
}

# bc__rgw_daemon NAME CMD...: starts CMD in the foreground (a child of the
# test), its stdout/stderr to log/NAME.out; prints nothing, appends the PID
# to BC_RGW_PIDS at the front (so the last started stops first).
bc__rgw_daemon() {
	local name=$1
	shift
	"$@" >>"$BC_RGW_DIR/log/$name.out" 2>&1 &
	BC_RGW_PIDS=("$!" "${BC_RGW_PIDS[@]}")
}

bc__rgw_conf() {   # mon port, rgw port
	cat >"$BC_RGW_DIR/ceph.conf" <<EOF
[global]
fsid = $BC_RGW_FSID
mon host = v2:127.0.0.1:$1
mon initial members = a
auth cluster required = none
auth service required = none
auth client required = none
# with cephx off, radosgw never opens its port without this
ms mon client mode = crc secure
ms bind ipv4 = true
ms bind ipv6 = false
public addr = 127.0.0.1
cluster addr = 127.0.0.1
run dir = $BC_RGW_DIR/run
admin socket = $BC_RGW_DIR/run/\$name.asok
log file = $BC_RGW_DIR/log/\$name.log
pid file = $BC_RGW_DIR/run/\$name.pid
keyring = /dev/null
# one OSD: pools of one replica, few PGs
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 1
osd pool default pgp num = 1
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon allow pool delete = true
mon max pg per osd = 1000
osd crush chooseleaf type = 0
mon data avail warn = 1
mon data avail crit = 0
# Paxos proposes every 50 ms, not every second: radosgw creates its pools
# one proposal after another at start (12 s with the default, 2 s so)
paxos propose interval = 0.05
paxos min wait = 0.01
[mon.a]
mon data = $BC_RGW_DIR/mon
[osd.0]
osd data = $BC_RGW_DIR/osd
osd objectstore = memstore
memstore device bytes = $BC_RGW_MEM_BYTES
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$2
rgw thread pool size = 64
# deleted data goes in seconds, not after 2 h
rgw gc obj min wait = 2
rgw gc processor period = 2
rgw gc processor max time = 2
EOF
}

# bc__rgw_phase NAME: with BC_RGW_TRACE=1, logs the time since the start.
bc__rgw_phase() {
	[ -z "${BC_RGW_TRACE:-}" ] ||
		bc_log "rgw: $1 after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}

# bc__rgw_port_open PORT PID: waits (10 s) until something accepts on
# 127.0.0.1:PORT; false when PID dies first or the time is up.
bc__rgw_port_open() {
	local i
	for i in $(seq 200); do
		kill -0 "$2" 2>/dev/null || return 1
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
			return 0
		fi
		sleep 0.05
	done
	return 1
}

# bc__rgw_user UID KEY SECRET: creates an S3 user with that key pair.
bc__rgw_user() {
	bc_rgw_admin user create --uid="$1" --display-name="$1" \
		--access-key="$2" --secret-key="$3" >"$BC_RGW_DIR/log/user-$1.json" \
		2>>"$BC_RGW_DIR/log/admin.out" || {
		tail -n 20 "$BC_RGW_DIR/log/admin.out" >&2
		bc_fail "radosgw-admin user create $1 failed"
	}
}

# bc_rgw_start: starts the cluster and its users (see the top). Skips the
# test (77) when Ceph is not installed. BC_RGW_MEM_BYTES: the OSD's
# memstore size (default 2 GiB; it is RAM only as far as it is used).
bc_rgw_start() {
	local t0 monport rgwport uuid try
	bc_skip_unless_tool ceph-mon ceph-osd radosgw radosgw-admin monmaptool osdmaptool
	t0=$(date +%s%N)
	BC_RGW_DIR=$BC_TMP/rgw
	BC_RGW_MEM_BYTES=${BC_RGW_MEM_BYTES:-$((2 << 30))}
	mkdir -p "$BC_RGW_DIR"/{mon,osd,run,log}
	BC_LOGS+=("$BC_RGW_DIR/log/client.rgw.log" "$BC_RGW_DIR/log/osd.0.out")
	BC_RGW_FSID=$(cat /proc/sys/kernel/random/uuid)

	# the monitor, its osdmap holding osd.0 already (no `ceph osd new`:
	# the ceph CLI costs a second of Python per call); a port race: a new
	# port, up to 3 times
	osdmaptool --createsimple 1 --clobber "$BC_RGW_DIR/osdmap" \
		>>"$BC_RGW_DIR/log/mkfs.out" 2>&1 || bc_fail "osdmaptool failed"
	for try in 1 2 3; do
		monport=$(bc_free_port)
		rgwport=$(bc_free_port)
		bc__rgw_conf "$monport" "$rgwport"
		rm -rf "$BC_RGW_DIR/mon" && mkdir "$BC_RGW_DIR/mon"
		monmaptool --create --clobber --add a "v2:127.0.0.1:$monport" \
			--fsid "$BC_RGW_FSID" "$BC_RGW_DIR/monmap" >/dev/null
		ceph-mon -c "$BC_RGW_DIR/ceph.conf" --mkfs -i a \
			--monmap "$BC_RGW_DIR/monmap" --osdmap "$BC_RGW_DIR/osdmap" \
			>>"$BC_RGW_DIR/log/mkfs.out" 2>&1 ||
			bc_fail "ceph-mon --mkfs failed (see $BC_RGW_DIR/log/mkfs.out)"
		bc__rgw_phase "monitor made"
		bc__rgw_daemon mon.a ceph-mon -f -c "$BC_RGW_DIR/ceph.conf" -i a
		if bc__rgw_port_open "$monport" "${BC_RGW_PIDS[0]}"; then
			break
		fi
		bc__rgw_stop
		[ "$try" -lt 3 ] || { cat "$BC_RGW_DIR/log/mon.a.out" >&2; bc_fail "ceph-mon did not start"; }
	done

	# the OSD, on memstore
	bc__rgw_phase "monitor up"
	uuid=$(cat /proc/sys/kernel/random/uuid)
	ceph-osd -c "$BC_RGW_DIR/ceph.conf" -i 0 --mkfs --osd-uuid "$uuid" \
		>>"$BC_RGW_DIR/log/mkfs.out" 2>&1 ||
		bc_fail "ceph-osd --mkfs failed (see $BC_RGW_DIR/log/mkfs.out)"
	bc__rgw_phase "OSD made"
	bc__rgw_daemon osd.0 ceph-osd -f -c "$BC_RGW_DIR/ceph.conf" -i 0

	# radosgw: it creates its pools, then opens its port
	bc__rgw_daemon client.rgw radosgw -f -c "$BC_RGW_DIR/ceph.conf" -n client.rgw
	bc__rgw_reaper
	if ! bc__wait_http "http://127.0.0.1:$rgwport/" "${BC_RGW_PIDS[0]}" 60; then
		tail -n 30 "$BC_RGW_DIR/log/client.rgw.log" "$BC_RGW_DIR/log/client.rgw.out" >&2 || true
		bc_fail "radosgw did not open port $rgwport within 60 s"
	fi
	bc__rgw_phase "radosgw up"
	BC_RGW_PORT=$rgwport
	BC_RGW_URL=http://127.0.0.1:$rgwport

	# two users; secrets drawn per run (a test cannot work by a fixed one)
	BC_RGW_KEY=RGWOWNER$(bc__rgw_rand 12 | tr a-z A-Z)
	BC_RGW_SECRET=$(bc__rgw_rand 40)
	BC_RGW_KEY2=RGWOTHER$(bc__rgw_rand 12 | tr a-z A-Z)
	BC_RGW_SECRET2=$(bc__rgw_rand 40)
	bc__rgw_user bc-owner "$BC_RGW_KEY" "$BC_RGW_SECRET" &
	bc__rgw_user bc-other "$BC_RGW_KEY2" "$BC_RGW_SECRET2" ||
		{ wait || true; bc_fail "radosgw-admin user create bc-other failed"; }
	wait $! || bc_fail "radosgw-admin user create bc-owner failed"
	export BC_RGW_URL BC_RGW_PORT BC_RGW_KEY BC_RGW_SECRET BC_RGW_KEY2 BC_RGW_SECRET2
	bc_log "RGW up at $BC_RGW_URL in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}

# bc__rgw_rand N: N random letters and digits.
bc__rgw_rand() {
	"$BC_PY" -c 'import secrets, string, sys
a = string.ascii_lowercase + string.digits
print("".join(secrets.choice(a) for _ in range(int(sys.argv[1]))))' "$1"
}
