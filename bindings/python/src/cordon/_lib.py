# SPDX-License-Identifier: LGPL-2.1-or-later
"""The ctypes declarations of <cordon/cordon.h>: one place, checked by the tests against the
library's exported symbols. Nothing here is public; see cordon/__init__.py."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from ctypes import (CFUNCTYPE, POINTER, c_bool, c_char_p, c_int, c_int32, c_int64, c_size_t,
                    c_uint16, c_uint32, c_uint64, c_void_p)

# The soname's major (libtool current - age), which the API's compatibility promise follows.
SONAME = "libcordon.so.0"


def _load() -> ctypes.CDLL:
    # CORDON_LIBRARY names the file (a build tree, a DESTDIR); otherwise the loader's search
    # path, as for any C program linking -lcordon.
    path = os.environ.get("CORDON_LIBRARY") or ctypes.util.find_library("cordon") or SONAME
    return ctypes.CDLL(path, use_errno=True)


lib = _load()


class RunOptions(ctypes.Structure):
    """cordon_run_options, as CORDON_RUN_OPTIONS_INIT fills it (size first)."""
    _fields_ = [
        ("size", c_uint32), ("flags", c_uint32), ("timeout_ms", c_uint64),
        ("env", POINTER(c_char_p)), ("workdir", c_char_p), ("stdin_data", c_void_p),
        ("stdin_len", c_size_t), ("cancel_fd", c_int), ("reserved_", c_uint32),
        ("output_cap", c_uint64), ("stdin_fd", c_int32), ("tty_rows", c_uint16),
        ("tty_cols", c_uint16), ("tty_resize_fd", c_int32), ("reserved2_", c_uint32),
    ]

    @classmethod
    def init(cls) -> "RunOptions":
        o = cls()
        o.size = ctypes.sizeof(cls)
        o.cancel_fd = -1
        o.stdin_fd = -1
        o.tty_resize_fd = -1
        return o


OUTPUT_FN = CFUNCTYPE(c_int, c_void_p, c_int, c_void_p, c_size_t)
LOG_FN = CFUNCTYPE(None, c_void_p, c_int, c_char_p)

P = c_void_p  # every handle is opaque
E = POINTER(c_void_p)  # cordon_error **

_SIGNATURES = {
    # the library
    "cordon_version": (c_char_p, [POINTER(c_int), POINTER(c_int), POINTER(c_int)]),
    "cordon_free": (None, [c_void_p]),
    "cordon_set_log_handler": (None, [LOG_FN, c_void_p, c_int]),
    # errors
    "cordon_error_get_class": (c_int, [P]),
    "cordon_error_get_code": (c_char_p, [P]),
    "cordon_error_get_message": (c_char_p, [P]),
    "cordon_error_get_errno": (c_int, [P]),
    "cordon_error_free": (None, [P]),
    # vocabulary
    "cordon_containment_to_string": (c_char_p, [c_int]),
    # context
    "cordon_options_new": (P, []),
    "cordon_options_free": (None, [P]),
    "cordon_options_set_policy_file": (c_int, [P, c_char_p, E]),
    "cordon_options_set_policy_text": (c_int, [P, c_char_p, c_size_t, c_char_p, E]),
    "cordon_options_set_plugin_dir": (c_int, [P, c_char_p, E]),
    "cordon_context_new": (c_int, [P, POINTER(P), E]),
    "cordon_context_free": (None, [P]),
    "cordon_context_audit_path": (c_char_p, [P]),
    "cordon_context_tier_count": (c_size_t, [P]),
    "cordon_context_tier_name": (c_char_p, [P, c_size_t]),
    # requests and decisions
    "cordon_request_new": (P, [c_char_p]),
    "cordon_request_free": (None, [P]),
    "cordon_request_set_tier": (c_int, [P, c_char_p, E]),
    "cordon_request_add_label": (c_int, [P, c_char_p, c_char_p, E]),
    "cordon_request_set_workspace": (c_int, [P, c_char_p, E]),
    "cordon_request_set_limit": (c_int, [P, c_int, c_uint64, E]),
    "cordon_request_grant_env": (c_int, [P, c_char_p, c_char_p, E]),
    "cordon_request_set_egress": (c_int, [P, c_int, E]),
    "cordon_request_set_image": (c_int, [P, c_char_p, E]),
    "cordon_request_set_caller": (c_int, [P, c_char_p, E]),
    "cordon_request_add_mount": (c_int, [P, c_char_p, c_char_p, c_uint32, E]),
    "cordon_decide": (c_int, [P, P, POINTER(P), E]),
    "cordon_decision_admitted": (c_bool, [P]),
    "cordon_decision_tier": (c_char_p, [P]),
    "cordon_decision_id": (c_char_p, [P]),
    "cordon_decision_containment": (c_int, [P]),
    "cordon_decision_to_json": (c_void_p, [P]),
    "cordon_decision_free": (None, [P]),
    # sandboxes
    "cordon_sandbox_open": (c_int, [P, P, POINTER(P), E]),
    "cordon_sandbox_close": (None, [P]),
    "cordon_sandbox_containment": (c_int, [P]),
    "cordon_sandbox_tier": (c_char_p, [P]),
    "cordon_sandbox_id": (c_char_p, [P]),
    "cordon_result_exit_code": (c_int, [P]),
    "cordon_result_signal": (c_int, [P]),
    "cordon_result_timed_out": (c_bool, [P]),
    "cordon_result_cancelled": (c_bool, [P]),
    "cordon_result_oom_killed": (c_bool, [P]),
    "cordon_result_output": (c_void_p, [P, c_int, POINTER(c_size_t)]),
    "cordon_result_truncated": (c_bool, [P, c_int]),
    "cordon_result_free": (None, [P]),
    "cordon_sandbox_run": (c_int, [P, POINTER(c_char_p), POINTER(RunOptions), POINTER(P), E]),
    "cordon_sandbox_stream": (c_int, [P, POINTER(c_char_p), POINTER(RunOptions), OUTPUT_FN,
                                      c_void_p, POINTER(P), E]),
    "cordon_sandbox_stream_start": (c_int, [P, POINTER(c_char_p), POINTER(RunOptions),
                                            POINTER(P), E]),
    "cordon_stream_fd": (c_int, [P]),
    "cordon_stream_read": (c_int, [P, c_void_p, c_size_t, POINTER(c_int), E]),
    "cordon_stream_cancel": (None, [P]),
    "cordon_stream_result": (c_int, [P, POINTER(P), E]),
    "cordon_stream_free": (None, [P]),
    "cordon_sandbox_serve": (c_int, [P, POINTER(c_char_p), c_uint16, POINTER(RunOptions),
                                     POINTER(P), E]),
    "cordon_serve_address": (c_void_p, [P]),
    "cordon_serve_running": (c_bool, [P]),
    "cordon_serve_pid": (c_int64, [P]),
    "cordon_serve_output": (c_void_p, [P]),
    "cordon_serve_wait": (c_int, [P, c_int64, POINTER(P), E]),
    "cordon_serve_wait_ready": (c_int, [P, c_int64, E]),
    "cordon_serve_stop": (c_int, [P, E]),
    "cordon_serve_free": (None, [P]),
    # files
    "cordon_sandbox_read_file": (c_int, [P, c_char_p, POINTER(c_void_p), POINTER(c_size_t), E]),
    "cordon_sandbox_write_file": (c_int, [P, c_char_p, c_void_p, c_size_t, E]),
    "cordon_sandbox_glob": (c_int, [P, c_char_p, POINTER(POINTER(c_char_p)), E]),
    "cordon_sandbox_walk": (c_int, [P, c_char_p, POINTER(POINTER(c_char_p)), E]),
    "cordon_strv_free": (None, [POINTER(c_char_p)]),
}

for _name, (_res, _args) in _SIGNATURES.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

DECLARED = frozenset(_SIGNATURES)
