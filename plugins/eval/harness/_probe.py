import json, sys, time
sys.path.insert(0, ".")
from tests import client
from tests.test_gpu import CASES
s = client.Server(mode="fork", device="cuda:0", max_children=1)
t = time.time()
r = s.ask(*[c[1] for c in CASES], timeout=400)
for cid, _, status, cls, text in CASES:
    v = r[cid]
    ok = v["status"] == status and v.get("error_class", "") == cls
    print("OK " if ok else "BAD", cid, v["status"], v.get("error_class"), v.get("message", "")[:400].replace("\n", " "), v.get("flags"))
    if not ok:
        print("   LOG:", v.get("log_tail", "")[-1500:].replace("\n", "\n   "))
print("secs", time.time() - t)
s.close()
