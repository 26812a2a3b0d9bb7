#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Drives `cordon run` over real pipes for tests/integration/test-cli-io.sh.

  cli-io.py handshake CORDON ARGS...  stdin is streamed: the work echoes a first line
                                      back while cordon's stdin is still open (a slow
                                      producer's line reaches it when it is written)
  cli-io.py live CORDON ARGS...       stdout is live: 'a' arrives well before 'b' of
                                      sh -c 'echo a; sleep 2; echo b'
Exits 0 when the property holds, 1 (with the reason on stderr) when not.
"""
import os
import select
import subprocess
import sys
import time


def read_line(f, deadline):
    buf = b""
    while not buf.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([f], [], [], left)[0]:
            return None
        c = os.read(f.fileno(), 1)
        if not c:
            return buf or None
        buf += c
    return buf


def handshake(cmd):
    p = subprocess.Popen(cmd + ["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    p.stdin.write(b"ping-1\n")
    p.stdin.flush()
    first = read_line(p.stdout, time.monotonic() + 90)
    if first != b"ping-1\n":
        p.kill()
        p.wait()
        sys.exit("the first line did not come back while stdin was open: %r" % first)
    p.stdin.write(b"ping-2\n")
    p.stdin.close()
    rest = p.stdout.read()
    rc = p.wait()
    if rest != b"ping-2\n" or rc != 0:
        sys.exit("after EOF: %r, exit %d" % (rest, rc))


def live(cmd):
    p = subprocess.Popen(cmd + ["sh", "-c", "echo a; sleep 2; echo b"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    deadline = time.monotonic() + 90
    a = read_line(p.stdout, deadline)
    ta = time.monotonic()
    b = read_line(p.stdout, deadline)
    tb = time.monotonic()
    rc = p.wait()
    if a != b"a\n" or b != b"b\n" or rc != 0:
        sys.exit("got %r then %r, exit %d" % (a, b, rc))
    if tb - ta < 1.5:
        sys.exit("'a' came only %.2f s before 'b': the output was held back" % (tb - ta))


if __name__ == "__main__":
    {"handshake": handshake, "live": live}[sys.argv[1]](sys.argv[2:])
