#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""An agent's tool call, sandboxed: the model asks for `shell` with a command; the host runs
it through cordon at the trust level of the conversation, streams its output as it comes
(asyncio, the stream's pollable descriptor), and hands the model a result it can read,
including a refusal (policy said no: not a crash, not a retry).

    python3 agent_tool.py [--policy FILE] COMMAND
"""
import argparse
import asyncio
import json
import sys
from typing import Dict, Optional

import cordon


async def shell_tool(ctx: cordon.Context, command: str, *, session: str,
                     trust: str = "untrusted", timeout_ms: int = 30_000) -> Dict[str, object]:
    """What the agent runtime registers as its `shell` tool."""
    try:
        with ctx.sandbox(trust, caller=session) as sb, \
                sb.stream(["/bin/sh", "-c", command], timeout_ms=timeout_ms) as st:
            out = bytearray()
            async for stream, data in st:
                out += data
                sys.stderr.buffer.write(data)  # live, for the human watching
            r = st.result()
            return {"ok": True, "exit_code": r.exit_code, "timed_out": r.timed_out,
                    "output": out.decode("utf-8", "replace"), "sandbox": sb.id}
    except cordon.Forbidden as e:
        return {"ok": False, "refused": True, "code": e.code, "reason": e.message}
    except cordon.CordonError as e:
        return {"ok": False, "refused": False, "class": e.cls.name.lower(), "code": e.code,
                "reason": e.message}


def main(argv: Optional[list] = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--policy")
    ap.add_argument("--trust", default="untrusted")
    ap.add_argument("command")
    a = ap.parse_args(argv)
    with cordon.Context(a.policy) as ctx:
        result = asyncio.run(shell_tool(ctx, a.command, session="example", trust=a.trust))
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
