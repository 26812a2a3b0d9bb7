# SPDX-License-Identifier: LGPL-2.1-or-later
"""Python binding of libcordon: run work under the isolation tier its trust level requires.

    import cordon
    with cordon.Context() as ctx, ctx.sandbox("semi-trusted", caller="agent-1") as sb:
        r = sb.run(["make", "test"], timeout_ms=60_000)
        print(r.exit_code, r.stdout)

Errors are CordonError (a subclass per class: Forbidden, Terminal, Transient, Cancelled,
Invalid) carrying the library's class, code and errno. A non-zero exit of the work is a
Result, never an error. See docs/embedding.md.
"""
from __future__ import annotations

import asyncio
import ctypes
import enum
import errno as _errno
import json
import os
import select
import weakref
from dataclasses import dataclass
from typing import (AsyncIterator, Callable, Dict, Iterator, List, Mapping, Optional,
                    Sequence, Tuple, Union)

from . import _lib
from ._lib import lib

__all__ = [
    "CordonError", "Forbidden", "Terminal", "Transient", "Cancelled", "Invalid", "ErrorClass",
    "Containment", "Egress", "Limit", "LogLevel", "OutputStream", "Context", "Request",
    "Decision", "Sandbox", "Result", "Stream", "Serve", "version", "set_log_handler",
]


class ErrorClass(enum.IntEnum):
    TERMINAL = 1
    FORBIDDEN = 2
    TRANSIENT = 3
    CANCELLED = 4
    INVALID = 5


class Containment(enum.IntEnum):
    PROCESS_JAIL = 1
    KERNEL = 2
    CONTAINER = 3
    USERSPACE_KERNEL = 4
    MICROVM = 5
    REMOTE = 6


class Egress(enum.IntEnum):
    DENY = 0
    GOVERNED = 1
    ALLOW = 2


class Limit(enum.IntEnum):
    WALL_MS = 0
    MEMORY = 1
    PIDS = 2
    CPU_MILLI = 3
    OUTPUT = 4
    NOFILE = 5
    FSIZE = 6


class LogLevel(enum.IntEnum):
    ERROR = 1
    WARNING = 2
    INFO = 3
    DEBUG = 4


class OutputStream(enum.IntEnum):
    COMBINED = 0
    STDOUT = 1
    STDERR = 2


class CordonError(Exception):
    """The library's error: cls (ErrorClass), code (a stable string), errno (positive, as
    OSError's: EPERM for a refusal), message."""

    def __init__(self, cls: ErrorClass, code: str, message: str, errno: int) -> None:
        super().__init__(f"{cls.name.lower()} [{code}]: {message}")
        self.cls = cls
        self.code = code
        self.message = message
        self.errno = errno


class Terminal(CordonError):
    """The work could not run; retrying will not help."""


class Forbidden(CordonError):
    """Refused by policy: the answer is a stronger tier, not a retry."""


class Transient(CordonError):
    """May succeed later."""


class Cancelled(CordonError):
    """The caller cancelled, or a deadline passed."""


class Invalid(CordonError):
    """The caller passed bad input."""


_BY_CLASS = {ErrorClass.TERMINAL: Terminal, ErrorClass.FORBIDDEN: Forbidden,
             ErrorClass.TRANSIENT: Transient, ErrorClass.CANCELLED: Cancelled,
             ErrorClass.INVALID: Invalid}


def _s(b: Optional[bytes]) -> Optional[str]:
    return None if b is None else b.decode("utf-8", "replace")


def _b(s: Union[str, bytes, os.PathLike]) -> bytes:
    return os.fsencode(s) if not isinstance(s, bytes) else s


def _raise(rc: int, err: ctypes.c_void_p) -> None:
    """Turns a failed call's cordon_error into the exception of its class, and frees it."""
    if not err:
        raise Terminal(ErrorClass.TERMINAL, "error", os.strerror(-rc), -rc)
    try:
        cls = ErrorClass(lib.cordon_error_get_class(err))
        exc = _BY_CLASS[cls](cls, _s(lib.cordon_error_get_code(err)) or "error",
                             _s(lib.cordon_error_get_message(err)) or "",
                             -lib.cordon_error_get_errno(err))  # positive, as OSError's
    finally:
        lib.cordon_error_free(err)
    raise exc


def _call(fn: Callable[..., int], *args: object) -> int:
    err = ctypes.c_void_p()
    rc = fn(*args, ctypes.byref(err))
    if rc < 0:
        _raise(rc, err)
    return rc


def _take_string(p: Optional[int]) -> Optional[str]:
    """A string the library returned for free(): copied, then freed with cordon_free."""
    if not p:
        return None
    try:
        return ctypes.string_at(p).decode("utf-8", "replace")
    finally:
        lib.cordon_free(p)


def _argv(argv: Sequence[Union[str, bytes]]) -> "ctypes.Array[ctypes.c_char_p]":
    if isinstance(argv, (str, bytes)):
        raise TypeError("argv is a sequence of words, not a string (use exec for a shell line)")
    return (ctypes.c_char_p * (len(argv) + 1))(*[_b(a) for a in argv], None)


def version() -> Tuple[str, Tuple[int, int, int]]:
    """The running library's version: ("0.1.0", (0, 1, 0))."""
    ma, mi, mc = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    s = lib.cordon_version(ctypes.byref(ma), ctypes.byref(mi), ctypes.byref(mc))
    return s.decode(), (ma.value, mi.value, mc.value)


_log_keep: Optional[object] = None  # the ctypes callback must outlive its registration


def set_log_handler(fn: Optional[Callable[[LogLevel, str], None]],
                    max_level: LogLevel = LogLevel.WARNING) -> None:
    """Routes the library's messages up to max_level to fn(level, message), from any thread;
    None restores GLib's default handler."""
    global _log_keep
    if fn is None:
        lib.cordon_set_log_handler(_lib.LOG_FN(), None, int(max_level))
        _log_keep = None
        return

    def forward(_user: object, level: int, message: bytes) -> None:
        try:
            fn(LogLevel(level), message.decode("utf-8", "replace"))
        except Exception:  # noqa: BLE001 - an exception cannot cross into C
            pass

    cb = _lib.LOG_FN(forward)
    lib.cordon_set_log_handler(cb, None, int(max_level))
    _log_keep = cb  # only now: the library no longer calls the previous one


@dataclass(frozen=True)
class Result:
    """How a run ended. exit_code is 128+signal when a signal ended it."""
    exit_code: int
    signal: int
    timed_out: bool
    cancelled: bool
    oom_killed: bool
    stdout: bytes = b""
    stderr: bytes = b""
    output: bytes = b""
    truncated: bool = False

    @classmethod
    def _take(cls, r: ctypes.c_void_p, captured: bool = True) -> "Result":
        try:
            outs = []
            for stream in (OutputStream.STDOUT, OutputStream.STDERR, OutputStream.COMBINED):
                n = ctypes.c_size_t()
                p = lib.cordon_result_output(r, int(stream), ctypes.byref(n))
                outs.append(ctypes.string_at(p, n.value) if captured and p else b"")
            return cls(lib.cordon_result_exit_code(r), lib.cordon_result_signal(r),
                       lib.cordon_result_timed_out(r), lib.cordon_result_cancelled(r),
                       lib.cordon_result_oom_killed(r), outs[0], outs[1], outs[2],
                       lib.cordon_result_truncated(r, 0))
        finally:
            lib.cordon_result_free(r)


class Request:
    """What the host asks for. Unknown trust strings fail closed to untrusted."""

    def __init__(self, trust: str = "untrusted", *, tier: Optional[str] = None,
                 labels: Optional[Mapping[str, str]] = None, workspace: Optional[str] = None,
                 limits: Optional[Mapping[Limit, int]] = None,
                 env: Optional[Mapping[str, str]] = None, egress: Optional[Egress] = None,
                 image: Optional[str] = None, caller: Optional[str] = None,
                 mounts: Optional[Sequence[Tuple[str, str, bool]]] = None) -> None:
        """mounts: (host directory, inside path, writable) each (docs/embedding.md,
        "Mounts"); read-only unless writable is true."""
        self._h = lib.cordon_request_new(_b(trust))
        if not self._h:
            raise MemoryError("cordon_request_new")
        if tier is not None:
            _call(lib.cordon_request_set_tier, self._h, _b(tier))
        for k, v in (labels or {}).items():
            _call(lib.cordon_request_add_label, self._h, _b(k), _b(v))
        if workspace is not None:
            _call(lib.cordon_request_set_workspace, self._h, _b(workspace))
        for which, value in (limits or {}).items():
            _call(lib.cordon_request_set_limit, self._h, int(which), int(value))
        for k, v in (env or {}).items():
            _call(lib.cordon_request_grant_env, self._h, _b(k), _b(v))
        if egress is not None:
            _call(lib.cordon_request_set_egress, self._h, int(egress))
        if image is not None:
            _call(lib.cordon_request_set_image, self._h, _b(image))
        if caller is not None:
            _call(lib.cordon_request_set_caller, self._h, _b(caller))
        for host, inside, writable in (mounts or ()):
            _call(lib.cordon_request_add_mount, self._h, _b(host), _b(inside),
                  1 if writable else 0)

    def __del__(self) -> None:
        if getattr(self, "_h", None):
            lib.cordon_request_free(self._h)
            self._h = None


@dataclass(frozen=True)
class Decision:
    admitted: bool
    id: Optional[str]
    tier: Optional[str]
    detail: Dict[str, object]  # the decision as cordon_decision_to_json writes it

    @classmethod
    def _take(cls, d: ctypes.c_void_p) -> "Decision":
        try:
            detail = json.loads(_take_string(lib.cordon_decision_to_json(d)) or "{}")
            return cls(bool(lib.cordon_decision_admitted(d)), _s(lib.cordon_decision_id(d)),
                       _s(lib.cordon_decision_tier(d)), detail)
        finally:
            lib.cordon_decision_free(d)


def _options(timeout_ms: Optional[int], env: Optional[Mapping[str, str]],
             workdir: Optional[str], stdin: Optional[bytes], output_cap: Optional[int],
             keep: List[object]) -> _lib.RunOptions:
    o = _lib.RunOptions.init()
    if timeout_ms:
        o.timeout_ms = int(timeout_ms)
    if env:
        arr = (ctypes.c_char_p * (len(env) + 1))(*[_b(f"{k}={v}") for k, v in env.items()], None)
        keep.append(arr)
        o.env = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
    if workdir is not None:
        o.workdir = _b(workdir)
    if stdin is not None:
        buf = ctypes.create_string_buffer(bytes(stdin), len(stdin))
        keep.append(buf)
        o.stdin_data = ctypes.cast(buf, ctypes.c_void_p)
        o.stdin_len = len(stdin)
    if output_cap:
        o.output_cap = int(output_cap)
    return o


class Stream:
    """A run whose output is read as it comes: iterate it (blocking), or `async for` it
    (the pollable descriptor on asyncio's loop). Closing it cancels a run still going."""

    _CHUNK = 65536

    def __init__(self, handle: ctypes.c_void_p, keep: List[object]) -> None:
        self._h = handle
        self._keep = keep
        self._result: Optional[Result] = None

    def fileno(self) -> int:
        """Readable while output or the end waits (select, poll, add_reader)."""
        return lib.cordon_stream_fd(self._h)

    def read(self) -> Optional[Tuple[OutputStream, bytes]]:
        """The next chunk; (stream, b"") at the end; None when nothing waits yet."""
        buf = ctypes.create_string_buffer(self._CHUNK)
        which = ctypes.c_int()
        err = ctypes.c_void_p()
        n = lib.cordon_stream_read(self._h, buf, self._CHUNK, ctypes.byref(which),
                                   ctypes.byref(err))
        if n == -_errno.EAGAIN:
            lib.cordon_error_free(err)
            return None
        if n < 0:
            _raise(n, err)
        return OutputStream(which.value) if n else OutputStream.COMBINED, buf.raw[:n]

    def __iter__(self) -> Iterator[Tuple[OutputStream, bytes]]:
        while True:
            select.select([self.fileno()], [], [])
            while (chunk := self.read()) is not None:
                if not chunk[1]:
                    return
                yield chunk

    async def __aiter__(self) -> AsyncIterator[Tuple[OutputStream, bytes]]:
        loop = asyncio.get_running_loop()
        ready = asyncio.Event()
        fd = self.fileno()
        loop.add_reader(fd, ready.set)
        try:
            while True:
                await ready.wait()
                ready.clear()
                while (chunk := self.read()) is not None:
                    if not chunk[1]:
                        return
                    yield chunk
        finally:
            loop.remove_reader(fd)

    def cancel(self) -> None:
        lib.cordon_stream_cancel(self._h)

    def result(self) -> Result:
        """How the run ended (after the end was read)."""
        if self._result is None:
            r = ctypes.c_void_p()
            _call(lib.cordon_stream_result, self._h, ctypes.byref(r))
            self._result = Result._take(r, captured=False)
        return self._result

    def close(self) -> None:
        if self._h:
            lib.cordon_stream_free(self._h)
            self._h = None

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


class Serve:
    """A server in the background: address, running, pid, output, wait_ready, wait, stop."""

    def __init__(self, handle: ctypes.c_void_p, keep: List[object]) -> None:
        self._h = handle
        self._keep = keep

    @property
    def address(self) -> Optional[str]:
        return _take_string(lib.cordon_serve_address(self._h))

    @property
    def running(self) -> bool:
        return bool(lib.cordon_serve_running(self._h))

    @property
    def pid(self) -> Optional[int]:
        """The server's pid as seen inside its sandbox (a container's own pid namespace),
        once its tier reports it; None before that, and on the jail and the kernel tier,
        which report none."""
        pid = lib.cordon_serve_pid(self._h)
        return pid if pid > 0 else None

    @property
    def output(self) -> str:
        return _take_string(lib.cordon_serve_output(self._h)) or ""

    def wait_ready(self, timeout_ms: int = -1) -> None:
        """Returns once the server accepts connections (or, without a port, has started);
        raises Transient (still_starting) on timeout, Terminal (serve_ended) if it ended."""
        _call(lib.cordon_serve_wait_ready, self._h, int(timeout_ms))

    def wait(self, timeout_ms: int = -1) -> Result:
        r = ctypes.c_void_p()
        _call(lib.cordon_serve_wait, self._h, int(timeout_ms), ctypes.byref(r))
        return Result._take(r, captured=False)

    def stop(self) -> None:
        _call(lib.cordon_serve_stop, self._h)

    def close(self) -> None:
        if self._h:
            lib.cordon_serve_free(self._h)
            self._h = None

    def __enter__(self) -> "Serve":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Sandbox:
    """An open sandbox; closing it ends everything it started, its streams and servers
    first (the library needs them gone before the sandbox)."""

    def __init__(self, handle: ctypes.c_void_p) -> None:
        self._h = handle
        self._children: "weakref.WeakSet[Union[Stream, Serve]]" = weakref.WeakSet()

    @property
    def id(self) -> str:
        return _s(lib.cordon_sandbox_id(self._h)) or ""

    @property
    def tier(self) -> str:
        return _s(lib.cordon_sandbox_tier(self._h)) or ""

    @property
    def containment(self) -> Containment:
        return Containment(lib.cordon_sandbox_containment(self._h))

    def run(self, argv: Sequence[Union[str, bytes]], *, timeout_ms: Optional[int] = None,
            env: Optional[Mapping[str, str]] = None, workdir: Optional[str] = None,
            stdin: Optional[bytes] = None, output_cap: Optional[int] = None) -> Result:
        """Runs argv (no shell) to completion, output captured."""
        keep: List[object] = []
        av = _argv(argv)
        o = _options(timeout_ms, env, workdir, stdin, output_cap, keep)
        r = ctypes.c_void_p()
        _call(lib.cordon_sandbox_run, self._h, av, ctypes.byref(o), ctypes.byref(r))
        return Result._take(r)

    def exec(self, line: str, **kw: object) -> Result:
        """Runs one shell line through the sandbox's /bin/sh -c."""
        return self.run(["/bin/sh", "-c", line], **kw)  # type: ignore[arg-type]

    def stream(self, argv: Sequence[Union[str, bytes]], *, timeout_ms: Optional[int] = None,
               env: Optional[Mapping[str, str]] = None, workdir: Optional[str] = None,
               stdin: Optional[bytes] = None) -> Stream:
        keep: List[object] = []
        av = _argv(argv)
        o = _options(timeout_ms, env, workdir, stdin, None, keep)
        h = ctypes.c_void_p()
        _call(lib.cordon_sandbox_stream_start, self._h, av, ctypes.byref(o), ctypes.byref(h))
        st = Stream(h, keep)
        self._children.add(st)
        return st

    def serve(self, argv: Sequence[Union[str, bytes]], port: int = 0, *,
              env: Optional[Mapping[str, str]] = None, workdir: Optional[str] = None) -> Serve:
        keep: List[object] = []
        av = _argv(argv)
        o = _options(None, env, workdir, None, None, keep)
        h = ctypes.c_void_p()
        _call(lib.cordon_sandbox_serve, self._h, av, int(port), ctypes.byref(o),
              ctypes.byref(h))
        srv = Serve(h, keep)
        self._children.add(srv)
        return srv

    def read_file(self, path: str) -> bytes:
        data, n = ctypes.c_void_p(), ctypes.c_size_t()
        _call(lib.cordon_sandbox_read_file, self._h, _b(path), ctypes.byref(data),
              ctypes.byref(n))
        try:
            return ctypes.string_at(data, n.value)
        finally:
            lib.cordon_free(data)

    def write_file(self, path: str, data: bytes) -> None:
        _call(lib.cordon_sandbox_write_file, self._h, _b(path), data, len(data))

    def _paths(self, fn: Callable[..., int], arg: str) -> List[str]:
        strv = ctypes.POINTER(ctypes.c_char_p)()
        n = _call(fn, self._h, _b(arg), ctypes.byref(strv))
        try:
            return [os.fsdecode(strv[i]) for i in range(n)]
        finally:
            lib.cordon_strv_free(strv)

    def glob(self, pattern: str) -> List[str]:
        return self._paths(lib.cordon_sandbox_glob, pattern)

    def walk(self, directory: str = "") -> List[str]:
        return self._paths(lib.cordon_sandbox_walk, directory)

    def close(self) -> None:
        for child in list(self._children):
            child.close()
        if self._h:
            lib.cordon_sandbox_close(self._h)
            self._h = None

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Context:
    """A policy and its drivers. Without a policy, the built-in default."""

    def __init__(self, policy_file: Optional[str] = None, *, policy_text: Optional[str] = None,
                 plugin_dir: Optional[str] = None, name: str = "policy.yaml") -> None:
        o = lib.cordon_options_new()
        try:
            if policy_file is not None:
                _call(lib.cordon_options_set_policy_file, o, _b(policy_file))
            if policy_text is not None:
                t = policy_text.encode()
                _call(lib.cordon_options_set_policy_text, o, t, len(t), _b(name))
            if plugin_dir is not None:
                _call(lib.cordon_options_set_plugin_dir, o, _b(plugin_dir))
            h = ctypes.c_void_p()
            _call(lib.cordon_context_new, o, ctypes.byref(h))
            self._h = h
        finally:
            lib.cordon_options_free(o)

    @property
    def audit_path(self) -> Optional[str]:
        return _s(lib.cordon_context_audit_path(self._h))

    @property
    def tiers(self) -> List[str]:
        return [_s(lib.cordon_context_tier_name(self._h, i)) or ""
                for i in range(lib.cordon_context_tier_count(self._h))]

    def decide(self, request: Request) -> Decision:
        """A dry run: the decision, admitted or not (a refusal is a Decision too)."""
        d = ctypes.c_void_p()
        err = ctypes.c_void_p()
        rc = lib.cordon_decide(self._h, request._h, ctypes.byref(d), ctypes.byref(err))
        if rc < 0 and not d:
            _raise(rc, err)
        lib.cordon_error_free(err)
        return Decision._take(d)

    def open(self, request: Request) -> Sandbox:
        h = ctypes.c_void_p()
        _call(lib.cordon_sandbox_open, self._h, request._h, ctypes.byref(h))
        return Sandbox(h)

    def sandbox(self, trust: str = "untrusted", **request: object) -> Sandbox:
        """Opens a sandbox for Request(trust, **request); a context manager."""
        return self.open(Request(trust, **request))  # type: ignore[arg-type]

    def close(self) -> None:
        if getattr(self, "_h", None):
            lib.cordon_context_free(self._h)
            self._h = None

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
