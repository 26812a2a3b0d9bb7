#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Drives `cordon run -t` and `cordon shell` on a real pseudo-terminal pair, for
tests/integration/test-cli-tty.sh: cordon's stdio is the peer of a pty whose master this
program holds, as a terminal emulator would.

  cli-tty.py CASE CORDON-ARGS...   exits 0 when the case holds, 1 with the reason on stderr
"""
import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time


class Term:
    def __init__(self, argv, rows=30, cols=100):
        self.master, self.slave = os.openpty()
        self.resize(rows, cols)
        self.before = termios.tcgetattr(self.slave)
        self.out = b""
        self.p = subprocess.Popen(argv, stdin=self.slave, stdout=self.slave, stderr=self.slave,
                                  start_new_session=True, preexec_fn=self._ctty)

    @staticmethod
    def _ctty():
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    def resize(self, rows, cols):
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def send(self, data):
        os.write(self.master, data)

    def expect(self, needle, timeout=60):
        end = time.monotonic() + timeout
        while needle not in self.out:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.master], [], [], left)[0]:
                fail("did not see %r; got %r" % (needle, self.out))
            try:
                d = os.read(self.master, 4096)
            except OSError:
                d = b""
            if not d:
                fail("EOF before %r; got %r" % (needle, self.out))
            self.out += d

    def wait(self, timeout=60):
        end = time.monotonic() + timeout
        while self.p.poll() is None:
            if time.monotonic() > end:
                self.p.kill()
                fail("cordon did not exit; got %r" % self.out)
            if select.select([self.master], [], [], 0.1)[0]:
                try:
                    self.out += os.read(self.master, 4096)
                except OSError:
                    pass
        return self.p.returncode

    def is_raw(self):
        lflag = termios.tcgetattr(self.slave)[3]
        return not (lflag & (termios.ICANON | termios.ECHO | termios.ISIG))

    def restored(self):
        return termios.tcgetattr(self.slave) == self.before


def fail(why):
    sys.stderr.write(why + "\n")
    sys.exit(1)


def want(cond, why):
    if not cond:
        fail(why)


def case_basic(cmd):
    t = Term(cmd + ["--", "sh", "-c", "test -t 0 && test -t 1 && test -t 2 && echo IS-A-TTY; "
                    "stty size; exit 3"])
    t.expect(b"IS-A-TTY")
    t.expect(b"30 100")
    want(t.wait() == 3, "exit %s, wanted the work's 3" % t.p.returncode)
    want(t.restored(), "the terminal's modes were not restored")


def case_resize(cmd):
    t = Term(cmd + ["--", "sh", "-c", 'trap "stty size; exit 0" WINCH; echo READY; '
                    "while :; do sleep 0.2; done"])
    t.expect(b"READY")
    want(t.is_raw(), "the terminal is not raw during the run")
    t.resize(40, 120)  # the kernel sends SIGWINCH to cordon, our pty's foreground group
    t.expect(b"40 120")
    want(t.wait() == 0, "exit %s after the resize" % t.p.returncode)
    want(t.restored(), "the terminal's modes were not restored")


def case_interrupt(cmd):
    t = Term(cmd + ["--", "sh", "-c", "echo READY; exec sleep 60"])
    t.expect(b"READY")
    t.send(b"\x03")  # ^C, through the sandbox's line discipline: SIGINT to the work
    rc = t.wait()
    want(rc == 130, "exit %s, wanted 130 (the work died of SIGINT)" % rc)
    want(t.restored(), "the terminal's modes were not restored")


def case_typeahead_slow(cmd):
    # A key every 0.3 s from the start, through the sandbox's making (a guest's boot, which
    # takes seconds under TCG) and the switch to raw mode, the line ended by a CR (what a
    # terminal sends for Enter): every key reaches the work, in order.
    t = Term(cmd + ["--", "sh", "-c", "read l; eval \"$l\"; echo READY"])
    for ch in b"echo slow-$((6*7))":
        time.sleep(0.3)
        t.send(bytes([ch]))
    time.sleep(0.5)
    t.send(b"\r")
    t.expect(b"slow-42")
    t.expect(b"READY")
    want(t.wait() == 0, "exit %s" % t.p.returncode)
    want(t.restored(), "the terminal's modes were not restored")


def case_suspend(cmd):
    # ^Z: the work's group has no job-control parent in the sandbox (orphaned), where Linux
    # ignores a terminal stop; the work must go on, never be left stopped (a hung run)
    t = Term(cmd + ["--", "sh", "-c", "echo READY; sleep 2; echo went-on"])
    t.expect(b"READY")
    t.send(b"\x1a")
    t.expect(b"went-on", timeout=30)
    want(t.wait() == 0, "exit %s" % t.p.returncode)
    want(t.restored(), "the terminal's modes were not restored")


def case_typed(cmd):
    # Type once the work is up, as a person would: a microVM boots for seconds, and what is
    # typed before cordon puts the terminal in raw mode is the caller's line discipline's.
    t = Term(cmd + ["--", "sh", "-c", "echo READY; exec sh"])
    t.expect(b"READY")
    t.send(b"echo typed-$((6*7))\n")
    t.expect(b"typed-42")
    t.send(b"exit 4\n")
    want(t.wait() == 4, "exit %s, wanted 4" % t.p.returncode)
    want(t.restored(), "the terminal's modes were not restored")


def case_typeahead(cmd):
    # Typed at once, before the sandbox exists (a microVM boots for seconds): the line waits
    # and reaches the work when it starts, as at a local shell. Only its execution prints
    # "ahead-42" ($((6*7)) is what is typed).
    t = Term(cmd + ["--", "sh", "-c", "read l; eval \"$l\"; echo READY"])
    t.send(b"echo ahead-$((6*7))\n")
    t.expect(b"ahead-42")
    t.expect(b"READY")
    want(t.wait() == 0, "exit %s" % t.p.returncode)
    want(t.restored(), "the terminal's modes were not restored")


def case_shell(cmd):
    t = Term(cmd)  # cordon shell [options]: /bin/sh on a terminal
    t.send(b"[ -t 0 ] && echo shell-$((1+1))-has-a-tty\n")
    t.expect(b"shell-2-has-a-tty")
    t.send(b"exit 5\n")
    want(t.wait() == 5, "exit %s, wanted 5" % t.p.returncode)
    want(t.restored(), "the terminal's modes were not restored")


def case_sigterm(cmd):
    t = Term(cmd + ["--", "sh", "-c", "echo READY; exec sleep 60"])
    t.expect(b"READY")
    want(t.is_raw(), "the terminal is not raw during the run")
    t.p.send_signal(signal.SIGTERM)
    rc = t.wait()
    want(rc == 128 + signal.SIGTERM, "exit %s, wanted 143" % rc)
    want(t.restored(), "the terminal's modes were not restored after SIGTERM")


def case_error(cmd):
    t = Term(cmd + ["--", "/nonexistent/program"])
    rc = t.wait()
    want(rc == 203, "exit %s, wanted 203 (could not run)" % rc)
    want(t.restored(), "the terminal's modes were not restored after an error")


def case_passthrough(cmd):
    # with -t the terminal's bytes are the terminal's (as ssh -t, docker run -t, and the
    # kernel tier here): an escape the work prints arrives as it is, not as \\xNN
    t = Term(cmd + ["--", "printf", "A\\033[1mB\\n"])
    t.expect(b"A\x1b[1mB")
    want(t.wait() == 0, "exit %s" % t.p.returncode)
    want(t.restored(), "the terminal's modes were not restored")


def case_background(cmd):
    # cordon in a background job of the terminal (job control on): it does not read the
    # terminal (that would stop it with SIGTTIN), the work's stdin is empty
    line = " ".join("'%s'" % a for a in cmd) + " -- sh -c 'cat; echo BG-DONE'"
    t = Term(["/bin/sh", "-c", "set -m; %s & wait $!; echo WAITED-$?" % line])
    t.expect(b"BG-DONE", timeout=30)
    t.expect(b"WAITED-0", timeout=30)
    t.wait()


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]](sys.argv[2:])
