# SPDX-License-Identifier: LGPL-2.1-or-later
"""The binding against the real library (the build tree's, or an installed one: see
tests/integration/test-python.sh) on the real process-jail tier."""
import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

import cordon
from cordon import _lib


def test_loaded_library_is_the_one_asked_for():
    want = os.environ.get("CORDON_LIBRARY")
    if want:
        maps = open("/proc/self/maps").read()
        assert os.path.realpath(want) in maps


def test_every_declared_function_is_exported():
    nm = subprocess.run(["nm", "-D", "--defined-only", _lib.lib._name], capture_output=True,
                        text=True, check=True).stdout
    exported = {line.split()[-1].split("@")[0] for line in nm.splitlines()}
    assert _lib.DECLARED <= exported, _lib.DECLARED - exported


def test_version():
    s, (ma, mi, mc) = cordon.version()
    assert s == f"{ma}.{mi}.{mc}"
    assert (ma, mi) >= (0, 1)


def test_run_and_result(policy):
    with cordon.Context(str(policy)) as ctx, ctx.sandbox("trusted", caller="pytest") as sb:
        assert sb.containment == cordon.Containment.PROCESS_JAIL
        assert sb.tier == "jail"
        r = sb.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
        assert (r.exit_code, r.stdout, r.stderr) == (3, b"out\n", b"err\n")
        assert not r.timed_out
        r = sb.exec("cat", stdin=b"fed\x00in")
        assert r.stdout == b"fed\x00in"
        r = sb.exec('printf "%s" "$GREETING"', env={"GREETING": "hello"})
        assert r.stdout == b"hello"
        r = sb.run(["sleep", "5"], timeout_ms=200)
        assert r.timed_out
        r = sb.exec("kill -9 $$")
        assert (r.signal, r.exit_code) == (9, 137)


def test_files(policy):
    with cordon.Context(str(policy)) as ctx, ctx.sandbox("trusted") as sb:
        sb.write_file("d/a.txt", b"one")
        sb.write_file("d/b.txt", b"two")
        assert sb.read_file("d/a.txt") == b"one"
        assert sb.glob("d/*.txt") == ["d/a.txt", "d/b.txt"]
        assert sb.walk("d") == ["d/a.txt", "d/b.txt"]
        with pytest.raises(cordon.Forbidden) as e:
            sb.read_file("../../etc/passwd")
        assert e.value.code == "sandbox_path_escape"
        assert e.value.cls == cordon.ErrorClass.FORBIDDEN


def test_errors_carry_class_and_code(policy):
    with cordon.Context(str(policy)) as ctx:
        with pytest.raises(cordon.Forbidden) as e:
            ctx.sandbox("untrusted")
        assert e.value.code == "containment_insufficient"
        assert isinstance(e.value, cordon.CordonError) and e.value.errno > 0
        with pytest.raises(cordon.Forbidden) as e:
            ctx.sandbox("trusted", labels={"origin": "ci"})
        assert e.value.code == "sandbox_denied"
        d = ctx.decide(cordon.Request("untrusted"))
        assert not d.admitted and d.detail["code"] == "containment_insufficient"
        d = ctx.decide(cordon.Request("trusted"))
        assert d.admitted and d.tier == "jail" and len(d.id) == 36
        with pytest.raises(cordon.Forbidden) as e:
            cordon.Request("trusted", env={"LD_PRELOAD": "x"})
        assert e.value.code == "env_forbidden"
        with pytest.raises(cordon.Invalid) as e:
            cordon.Request("trusted", caller="two\nlines")
        assert e.value.code == "invalid_argument"
        with ctx.sandbox("trusted") as sb:
            with pytest.raises(cordon.Terminal) as e:
                sb.run(["/no/such/program"])
            assert e.value.code == "exec_failed"
            with pytest.raises(TypeError):
                sb.run("echo not-a-list")
    with pytest.raises(cordon.Invalid) as e:
        cordon.Context(policy_text="cordon: 1\nbogus: 1\n")
    assert e.value.code.startswith("policy_")


def test_audit_records_the_caller(policy):
    with cordon.Context(str(policy)) as ctx:
        with ctx.sandbox("trusted", caller="agent-9") as sb:
            sb.run(["true"])
            sid = sb.id
        lines = [json.loads(l) for l in open(ctx.audit_path)]
    runs = [o for o in lines if o["event"] == "run"]
    assert len(runs) == 1 and runs[0]["sandbox"] == sid
    assert runs[0]["caller"] == {"uid": os.getuid(), "pid": os.getpid(), "label": "agent-9"}
    assert runs[0]["argv"] == ["true"]


def test_stream_blocking(policy):
    with cordon.Context(str(policy)) as ctx, ctx.sandbox("trusted") as sb:
        with sb.stream(["sh", "-c", "echo a; sleep 0.2; echo b >&2; exit 4"]) as st:
            got = list(st)
            assert st.result().exit_code == 4
        assert (cordon.OutputStream.STDOUT, b"a\n") in got
        assert (cordon.OutputStream.STDERR, b"b\n") in got


def test_stream_async_is_live_and_does_not_block_the_loop(policy):
    async def main(sb):
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        t = asyncio.create_task(ticker())
        seen = []
        with sb.stream(["sh", "-c", "echo first; sleep 0.6; echo second"]) as st:
            async for stream, data in st:
                seen.append((time.monotonic(), data))
            code = st.result().exit_code
        t.cancel()
        return seen, code, ticks

    with cordon.Context(str(policy)) as ctx, ctx.sandbox("trusted") as sb:
        seen, code, ticks = asyncio.run(main(sb))
    assert code == 0
    assert b"".join(d for _, d in seen) == b"first\nsecond\n"
    # the first line came as it was written, well before the second
    assert seen[-1][0] - seen[0][0] > 0.4
    assert ticks >= 5  # the loop kept running meanwhile


def test_stream_cancel(policy):
    with cordon.Context(str(policy)) as ctx, ctx.sandbox("trusted") as sb:
        t0 = time.monotonic()
        with sb.stream(["sleep", "30"]) as st:
            st.cancel()
            assert list(st) == []
            assert st.result().cancelled
        assert time.monotonic() - t0 < 10


def test_sandbox_close_ends_its_streams_first(policy):
    with cordon.Context(str(policy)) as ctx:
        sb = ctx.sandbox("trusted")
        st = sb.stream(["sleep", "30"])
        t0 = time.monotonic()
        sb.close()  # the stream is cancelled and freed before the sandbox goes
        assert time.monotonic() - t0 < 10 and st._h is None


def _serve_until(srv, needle, timeout=30.0):
    end = time.monotonic() + timeout
    while needle not in srv.output and time.monotonic() < end:
        time.sleep(0.05)
    return srv.output


def test_serve_pid_on_the_jail(policy):
    """The jail shares the host's pid namespace: the pid is the server's $$, a host pid."""
    with cordon.Context(str(policy)) as ctx, ctx.sandbox("trusted") as sb:
        with sb.serve(["/bin/sh", "-c", "echo pid=$$; exec sleep 30"]) as srv:
            out = _serve_until(srv, "\n")
            seen = int(out.split("pid=")[1].split()[0])
            assert srv.pid == seen, (out, srv.pid)
            with open("/proc/%d/comm" % seen) as f:
                assert f.read() == "sleep\n"


def test_serve_pid_in_a_container():
    """The pid a container tier reports is the one the server has inside its container."""
    plugins = os.environ.get("CORDON_TEST_PODMAN_PLUGINS")
    if not plugins:
        if os.environ.get("CORDON_REQUIRE") == "all":
            pytest.fail("CORDON_REQUIRE=all: no podman tier (root, podman, the pinned image)")
        pytest.skip("no podman tier here (root, podman and the pinned image)")
    text = ("cordon: 1\nplugins: {dir: %s, load: [podman]}\ntiers:\n  box:\n"
            "    driver: podman\n    helper: %s\n    image: \"%s\"\n    runtime: runc\n"
            "    cgroup_manager: cgroupfs\n    ulimits: [nofile=1024:1024, nproc=4096:4096]\n"
            "    limits: {memory: 256MiB, pids: 64, wall: 60s}\n"
            "trust:\n  semi-trusted: {require: kernel, tiers: [box]}\n"
            % (plugins, os.environ["CORDON_TEST_AGENT"], os.environ["CORDON_TEST_IMAGE"]))
    with cordon.Context(policy_text=text) as ctx, ctx.sandbox("semi-trusted") as sb:
        assert sb.tier == "box"
        with sb.serve(["/bin/sh", "-c", "echo pid=$$; exec sleep 30"]) as srv:
            out = _serve_until(srv, "\n")
            seen = int(out.split("pid=")[1].split()[0])
            assert seen > 1 and srv.pid == seen, (out, srv.pid)
            srv.stop()
            assert srv.pid == seen  # it stays after the end


def test_serve_ready(policy):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    server = ("import socket,time\ntime.sleep(0.3)\ns=socket.socket()\n"
              f"s.bind(('127.0.0.1',{port}))\ns.listen(8)\nwhile True:\n  c,_=s.accept()\n  c.sendall(b'hi')\n  c.close()\n"
              )
    with cordon.Context(str(policy)) as ctx, ctx.sandbox("trusted") as sb:
        with sb.serve(["/usr/bin/python3", "-c", server], port) as srv:
            with pytest.raises(cordon.Transient) as e:
                srv.wait_ready(50)
            assert e.value.code == "still_starting"
            srv.wait_ready(10_000)
            assert srv.address == f"127.0.0.1:{port}" and srv.running
            with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
                assert c.recv(2) == b"hi"
        with sb.serve(["true"], port) as srv:
            with pytest.raises(cordon.Terminal) as e:
                srv.wait_ready(10_000)
            assert e.value.code == "serve_ended"


def test_log_handler_from_threads(policy, tmp_path):
    text = ("cordon: 1\ntiers: {jail: {driver: local, confine: none}}\n"
            "trust: {trusted: {tiers: [jail]}}\n"
            f"audit: {{path: {tmp_path}/missing/a.jsonl, required: false}}\n")
    got = []
    lock = threading.Lock()

    def handler(level, message):
        with lock:
            got.append((level, message))

    cordon.set_log_handler(handler, cordon.LogLevel.DEBUG)
    try:
        with cordon.Context(policy_text=text) as ctx:
            ths = [threading.Thread(target=lambda: [ctx.decide(cordon.Request("trusted"))
                                                    for _ in range(10)]) for _ in range(4)]
            for t in ths:
                t.start()
            for t in ths:
                t.join()
    finally:
        cordon.set_log_handler(None)
    hits = [m for lv, m in got if lv == cordon.LogLevel.DEBUG and "audit (not required)" in m]
    assert len(hits) >= 40


def test_example_agent_tool(policy):
    ex = os.path.join(os.path.dirname(__file__), "..", "examples", "agent_tool.py")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, ex, "--policy", str(policy), "--trust", "trusted",
                        "echo tool-output; exit 2"], capture_output=True, text=True, env=env)
    out = json.loads(r.stdout)
    assert r.returncode == 0 and out["ok"] and out["exit_code"] == 2
    assert out["output"] == "tool-output\n"
    r = subprocess.run([sys.executable, ex, "--policy", str(policy), "true"],
                       capture_output=True, text=True, env=env)
    out = json.loads(r.stdout)
    assert r.returncode == 1 and out["refused"] and out["code"] == "containment_insufficient"


def test_mounts_are_judged(policy, tmp_path):
    """The jail gives no mounts (mount_unsupported), and a bad inside path is refused
    when the request is made; the kernel tier's mounts are test-mount's (as root)."""
    with cordon.Context(str(policy)) as ctx:
        with pytest.raises(cordon.Invalid) as e:
            cordon.Request("trusted", mounts=[(str(tmp_path), "relative", False)])
        assert e.value.code == "mount_invalid"
        with pytest.raises(cordon.Forbidden) as e:
            ctx.sandbox("trusted", mounts=[(str(tmp_path), "/tmp/in", False)])
        assert e.value.code == "mount_unsupported"
