# SPDX-License-Identifier: LGPL-2.1-or-later
import os
import sys

import pytest

# The package from this tree unless the test asks for an installed one (CORDON_PY_INSTALLED).
if not os.environ.get("CORDON_PY_INSTALLED"):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))


@pytest.fixture
def policy(tmp_path):
    """A policy of the process-jail and the kernel tier, auditing every run in full."""
    trail = tmp_path / "audit.jsonl"
    text = ("cordon: 1\ntiers:\n  jail: {driver: local, confine: none}\n"
            "trust:\n  trusted: {require: process-jail, tiers: [jail]}\n"
            "  untrusted: {require: microvm, tiers: [jail]}\n"
            f"rules:\n  - {{name: no-ci, when: {{labels: {{origin: ci}}}}, deny: true}}\n"
            f"audit: {{path: {trail}, record_argv: full}}\n")
    p = tmp_path / "policy.yaml"
    p.write_text(text)
    return p
