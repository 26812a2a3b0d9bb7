# SPDX-License-Identifier: LGPL-2.1-or-later
# The work of test-services.sh, inside the sandbox: calls the service through
# MODEL_API_BASE_URL, then looks for the secret everywhere it can: its
# environment, the files it can see, and the memory of every process of its
# sandbox. It is given only the secret's SHA-256 (argv[1]), so that it never
# holds the secret itself, and the hash of a decoy of the same form that is in
# its environment (argv[2]): finding the decoy shows each search works.
import hashlib
import json
import os
import re
import sys
import time
import urllib.request

want = {"secret": sys.argv[1], "decoy": sys.argv[2]}
# The secrets' form, built here so that the pattern's text is not itself a match.
form = re.compile(("sk" + "-cordon-").encode() + rb"([0-9a-f]{32})")


def found(data):
    hits = set()
    for m in form.finditer(data):
        h = hashlib.sha256(m.group(0)).hexdigest()
        hits |= {k for k, v in want.items() if v == h}
    return hits


out = {}
try:
    url = os.environ["MODEL_API_BASE_URL"] + "/models?q=1"
    with urllib.request.urlopen(url, timeout=20) as r:
        out["answer"] = r.read().decode()
except urllib.error.HTTPError as e:
    out["answer"] = "HTTP %d %s" % (e.code, e.read().decode())
except Exception as e:  # noqa: BLE001 - reported to the test
    out["answer"] = "failed: %r" % e

if sys.argv[3:] == ["answer-only"]:
    print(json.dumps(out))
    sys.exit(0)

with open("/proc/self/environ", "rb") as f:
    out["environ"] = sorted(found(f.read()))

# Every file it can read, bounded (size, count, time).
hits, files, deadline = set(), 0, time.monotonic() + 60
for top in ("/",):
    for d, dirs, names in os.walk(top):
        if d in ("/proc", "/sys", "/dev") or time.monotonic() > deadline:
            dirs[:] = []
            continue
        for n in names:
            p = os.path.join(d, n)
            try:
                if not os.path.isfile(p) or os.path.islink(p) or os.path.getsize(p) > (4 << 20):
                    continue
                with open(p, "rb") as f:
                    hits |= found(f.read())
                files += 1
            except OSError:
                pass
out["files"] = sorted(hits)
out["files_read"] = files

# The memory of every process it can see (its own included).
hits, regions = set(), 0
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        maps = open("/proc/%s/maps" % pid).read().splitlines()
        mem = open("/proc/%s/mem" % pid, "rb", buffering=0)
    except OSError:
        continue
    for line in maps:
        addr, perms = line.split()[:2]
        if not perms.startswith("r"):
            continue
        lo, hi = (int(x, 16) for x in addr.split("-"))
        try:
            mem.seek(lo)
            hits |= found(mem.read(hi - lo))
            regions += 1
        except (OSError, OverflowError, ValueError):
            pass
out["memory"] = sorted(hits)
out["regions_read"] = regions
print(json.dumps(out))
