"""pyfork.py [--boto3|--aws] SOCKET: a Python interpreter that has the
tests' heavy modules imported once (boto3 and botocore, or aws-cli v2)
and forks a copy of itself for each Python run a test asks for
(tests/lib/pyfork.c is the client). On the suite's 2-core VM a run that
makes a boto3 client costs 0.62 s of CPU in a fresh python3 and 0.22 s
forked; aws-cli 1.07 s and 0.49 s; a trivial run 47 and 49 ms (the
fork's copy-on-write faults cost what an interpreter's start does), so
the tests start a server only where boto3 or aws-cli is used
(docs/decisions.md, "Python runs fork from a server").

Contract (what a run sees, as under /usr/bin/python3):
  * the client's stdin, stdout and stderr (its own file descriptors,
    passed over the socket), its argv, environment and working directory;
  * `python3 - ARGS` (the program on stdin), `python3 -c CODE ARGS` and
    `python3 SCRIPT ARGS` (run as __main__, as runpy does; /usr/bin/aws is
    such a script), with sys.argv and sys.path as python3 sets them
    (PYTHONPATH included);
  * its exit status: SystemExit's code, 1 after an uncaught exception (the
    traceback on stderr), non-daemon threads joined and atexit handlers
    run first;
  * a fresh process: state changed by one run is gone for the next, the
    random module is reseeded;
  * signals: the client forwards TERM, INT, HUP and QUIT to the run; a
    client that dies (KILL) ends the run (it watches the connection).
botocore's data files (the S3 model, endpoints, rule sets) come parsed
by the server (share_botocore_data), not read and parsed by the run.
Modules were imported before the run's environment was set: a module that
reads the environment at import time sees the server's (none of the
preloaded ones reads AWS_* or the like then; botocore reads it per
session), and what an import added to it (aws-cli sets AWS_DATA_PATH) is
added to each run's environment unless the client set it.

The server ends when its socket file is gone (its test's temp dir removed),
or on TERM. The socket is bound only once the imports are done: until then the client
runs /usr/bin/python3 itself, so a run is never slower than without this.

Wire: the client sends 4 bytes (the request's length, little-endian) with
its fds 0, 1 and 2 (SCM_RIGHTS), then the request: cwd, argc, argv..., then
the environment's "K=V" entries, each NUL-terminated. The run answers its
pid (4 bytes) once it has read the request, and its exit status (4 bytes)
when it ends.
"""
import array
import gc
import os
import signal
import socket
import struct
import sys

# What the suite's Python runs import; a module missing on this machine
# is skipped (its runs import it themselves, or fail as they would).
# Debian's aws-cli v2 brings its own botocore, imported as "botocore":
# it cannot share an interpreter with boto3's, so aws-cli has a server of
# its own (--aws).
PRELOAD = [
    "json", "hashlib", "hmac", "base64", "binascii", "zlib", "random", "re",
    "time", "threading", "subprocess", "tempfile", "shutil", "struct",
    "datetime", "email.utils", "xml.etree.ElementTree", "urllib.request",
    "urllib.parse", "http.client", "http.server", "socketserver",
    "concurrent.futures", "queue", "io", "traceback", "runpy", "types",
    "atexit", "codecs", "encodings.idna",
]
PRELOAD_BOTO3 = [
    "botocore", "botocore.session", "botocore.config", "botocore.auth",
    "botocore.awsrequest", "botocore.exceptions", "botocore.client",
    "botocore.endpoint", "botocore.httpsession", "botocore.utils",
    "boto3", "boto3.session", "boto3.s3.transfer",
]
# awscli.handlers is what every aws-cli run imports when its driver loads
# the plugins (~270 modules, the customizations and s3transfer): 0.15 s
# of a forked run's 0.4 s here; none of these starts a thread on import
PRELOAD_AWSCLI = ["awscli", "awscli.clidriver", "awscli.handlers",
                  "awscli.paramfile", "s3transfer.manager", "awscrt.s3"]

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def recv_exact(conn, n):
    buf = b""
    while len(buf) < n:
        got = conn.recv(n - len(buf))
        if not got:
            raise EOFError("client went away")
        buf += got
    return buf


def read_request(conn):
    """(fds, cwd, argv, env) from the client."""
    fds = array.array("i")
    msg, anc, _flags, _addr = conn.recvmsg(4, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
    if len(msg) < 4:
        msg += recv_exact(conn, 4 - len(msg))
    (n,) = struct.unpack("<I", msg)
    if len(fds) != 3 or n > 16 << 20:
        raise ValueError("bad request")
    parts = recv_exact(conn, n).split(b"\0")[:-1]
    cwd = parts[0]
    argc = int(parts[1])
    argv = [os.fsdecode(a) for a in parts[2:2 + argc]]
    env = {}
    for kv in parts[2 + argc:]:
        k, sep, v = kv.partition(b"=")
        if sep:
            env[k] = v
    return list(fds), cwd, argv, env


def watch_client(conn):
    """Ends the run when its client is gone (the client never writes)."""
    import threading

    def watch():
        try:
            while conn.recv(1):
                pass
        except OSError:
            pass
        os._exit(137)
    threading.Thread(target=watch, daemon=True).start()


def std_streams():
    enc = os.environ.get("PYTHONIOENCODING", "utf-8").split(":")[0] or "utf-8"
    sys.stdin = sys.__stdin__ = open(0, "r", encoding=enc, closefd=False)
    sys.stdout = sys.__stdout__ = open(
        1, "w", buffering=1 if os.isatty(1) else -1, encoding=enc,
        closefd=False)
    sys.stderr = sys.__stderr__ = open(
        2, "w", buffering=1, encoding=enc, errors="backslashreplace",
        closefd=False)


def set_path(argv, base_path):
    if argv[0] in ("-", "-c"):
        first = ""
    else:
        first = os.path.dirname(os.path.realpath(argv[0]))
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(":") if p]
    sys.path[:] = [first] + extra + base_path


def run_main(argv):
    """Runs the program as python3 would; returns its exit status."""
    import runpy
    import traceback
    import types
    status = 0
    try:
        if argv[0] in ("-", "-c"):
            if argv[0] == "-":
                src, name = sys.stdin.read(), "<stdin>"
            else:
                src, name = argv.pop(1), "<string>"
                sys.argv[:] = argv
            mod = types.ModuleType("__main__")
            mod.__dict__["__builtins__"] = __builtins__
            sys.modules["__main__"] = mod
            exec(compile(src, name, "exec"), mod.__dict__)
        else:
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        status = exit_code(e.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        status = 130
    except BaseException:
        traceback.print_exc()
        status = 1
    return status


def exit_code(code):
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:
        pass
    return 1


def finish(status):
    """What the interpreter does at exit: joins threads, runs atexit,
    flushes the streams."""
    import atexit
    import threading
    try:
        threading._shutdown()
    except BaseException:
        pass
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            if status == 0 and f is sys.stdout:
                status = 120   # what python3 answers when its flush fails
    return status


def child(conn, listener, base_path, import_env):
    listener.close()
    for s in FORWARDED + (signal.SIGCHLD,):
        signal.signal(s, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        fds, cwd, argv, env = read_request(conn)
    except Exception:
        os._exit(1)
    for i, fd in enumerate(fds):
        os.dup2(fd, i)
        os.close(fd)
    conn.sendall(struct.pack("<I", os.getpid()))
    watch_client(conn)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update({os.fsdecode(k): os.fsdecode(v) for k, v in env.items()})
    for k, v in import_env.items():
        os.environ.setdefault(k, v)
    sys.argv[:] = argv
    set_path(argv, base_path)
    std_streams()
    import random
    random.seed()
    status = finish(run_main(argv))
    try:
        conn.sendall(struct.pack("<I", status))
    except OSError:
        pass
    os._exit(status)


def share_botocore_data():
    """botocore's data files (the S3 model, endpoints, rule sets: a few MB
    of JSON), parsed once here, so that a run's client does not parse
    them again: 0.40 to 0.27 s of CPU per forked boto3 run that makes a
    client, on the loaded VM, and half its page faults (6,712 to 3,410). Each
    JSONFileLoader.load_file answers a path's parse from a table filled
    here (a client made now, with no network, loads what an S3 client
    loads); a file not in it is read and kept, in that run only. A run
    gets the very objects this process parsed (its own copies, once it
    writes to them: the fork's copy-on-write), where botocore would give
    each Loader a parse of its own; botocore's Loader caches per instance
    anyway. list_available_services (a listdir of every service) is kept
    the same way, by search path. Without botocore: nothing."""
    try:
        from botocore import loaders, session
    except Exception:
        return
    parsed, listed = {}, {}
    load_file = loaders.JSONFileLoader.load_file
    list_services = loaders.Loader.list_available_services

    def shared_load_file(self, file_path):
        data = parsed.get(file_path)
        if data is None:
            data = load_file(self, file_path)
            if data is not None:
                parsed[file_path] = data
        return data

    def shared_list_services(self, type_name):
        key = (tuple(self.search_paths), type_name)
        if key not in listed:
            listed[key] = list_services(self, type_name)
        return list(listed[key])

    loaders.JSONFileLoader.load_file = shared_load_file
    loaders.Loader.list_available_services = shared_list_services
    env = dict(os.environ)
    try:
        session.Session().create_client(
            "s3", region_name="us-east-1", endpoint_url="http://127.0.0.1:9",
            aws_access_key_id="x", aws_secret_access_key="y")
    except Exception:
        pass
    finally:
        os.environ.clear()
        os.environ.update(env)


def main():
    mode = sys.argv[1] if len(sys.argv) > 2 else "--boto3"
    path = sys.argv[-1]
    env_before = dict(os.environ)
    for name in PRELOAD + {"--aws": PRELOAD_AWSCLI,
                           "--boto3": PRELOAD_BOTO3}[mode]:
        try:
            __import__(name)
        except Exception:
            pass
    # what the imports put in the environment (aws-cli: AWS_DATA_PATH)
    import_env = {k: v for k, v in os.environ.items()
                  if env_before.get(k) != v}
    base_path = [p for p in sys.path[1:]
                 if p not in os.environ.get("PYTHONPATH", "").split(":")]
    share_botocore_data()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)   # children reap themselves
    for s in FORWARDED:
        signal.signal(s, lambda *_: os._exit(0))
    tmp = path + ".tmp"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    listener.bind(tmp)
    listener.listen(64)
    os.rename(tmp, path)          # ready: clients connect from now on
    gc.collect()
    gc.freeze()                   # forks share the imported objects' pages
    listener.settimeout(2.0)
    while True:
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            if not os.path.exists(path):
                return            # its test is gone (its temp dir removed)
            continue
        except InterruptedError:
            continue
        conn.settimeout(None)
        pid = os.fork()
        if pid == 0:
            try:
                child(conn, listener, base_path, import_env)
            except BaseException:
                import traceback
                traceback.print_exc()
            finally:
                os._exit(1)
        conn.close()


if __name__ == "__main__":
    main()
