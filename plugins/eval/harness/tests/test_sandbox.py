"""The sandbox against every attack class a hostile candidate has used (issue 9), from
Python and from native code, and honest work inside it.

Each attack runs twice through tests/sandbox_driver.py (a process that plays the server:
a planted store file open, a secret in its environment and its memory, a listener on
127.0.0.1): once in a forked child without the sandbox, where it must succeed (so the
test can fail: the attack is real), once with sandbox.enter(), where it must not.
A test whose protection this host cannot give is skipped, saying which and why."""

import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from kforge_harness import sandbox
from kforge_harness.sandbox import sandbox_fs, seccomp

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
HARNESS_DIR = os.path.dirname(TESTS_DIR)
DRIVER = os.path.join(TESTS_DIR, "sandbox_driver.py")
ATTACKS_C = os.path.join(TESTS_DIR, "data", "sandbox_attacks.c")
SECRET_ENV = "sk-kforge-test-0123456789abcdef"

# A grandchild in a session of its own that writes a heartbeat into the work dir forever.
SURVIVOR = r'''
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(os.path.join(WORKDIR, "survivor.pid"), "w") as f:
            f.write(str(os.getpid()))
        while True:
            with open(os.path.join(WORKDIR, "heartbeat"), "a") as f:
                f.write(".")
            time.sleep(0.02)
    os._exit(0)
time.sleep(0.3)
found(started=True)
'''


class SandboxFixture(unittest.TestCase):
    """A planted store and scratch, the native attack library, and the driver."""

    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="kforge-sandbox-test-")
        os.chmod(cls.base, 0o755)  # shown read-only by one test: uid 65534 must get through
        # What must stay out of reach: kforge's output directory with its store, the
        # server's scratch with another child's directory and the reference store.
        cls.out = os.path.join(cls.base, "out")
        cls.scratch = os.path.join(cls.base, "scratch")
        cls.sibling = os.path.join(cls.scratch, "kforge-sibling")
        cls.reference = os.path.join(cls.scratch, "reference")
        for path in (cls.out, cls.sibling, cls.reference):
            os.makedirs(path)
        cls.store = os.path.join(cls.out, "kforge.db")
        for path, text in ((cls.store, "verdicts"), (os.path.join(cls.sibling, "log.txt"), "other"),
                           (os.path.join(cls.reference, "ref.bin"), "answer")):
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        cls.library = None
        compiler = shutil.which("gcc") or shutil.which("cc")
        if compiler:
            cls.library = os.path.join(cls.base, "tools", "libattacks.so")
            os.makedirs(os.path.dirname(cls.library))
            subprocess.run([compiler, "-shared", "-fPIC", "-O1", ATTACKS_C, "-o", cls.library],
                           check=True, capture_output=True)
        probe = cls.run_attack("pass")
        cls.missing = probe["results"].get("report", {}).get("missing")
        cls.reasons = probe["results"].get("report", {}).get("reasons", {})
        if cls.missing is None:
            raise RuntimeError(f"the sandbox could not be entered at all: {probe}")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.base, ignore_errors=True)

    @classmethod
    def run_attack(cls, code, sandboxed=True, timeout_s=60, **spec):
        workdir = tempfile.mkdtemp(dir=cls.scratch, prefix="kforge-")
        spec = {"code": code, "sandboxed": sandboxed, "workdir": workdir, "store": cls.store,
                "timeout_s": timeout_s, **spec}
        spec_path = os.path.join(cls.base, f"spec-{os.path.basename(workdir)}.json")
        with open(spec_path, "w", encoding="utf-8") as handle:
            json.dump(spec, handle)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
               "KFORGE_TEST_API_KEY": SECRET_ENV, "OPENAI_API_KEY": SECRET_ENV,
               "PYTHONDONTWRITEBYTECODE": "1"}
        # From a directory of its own, as kforge starts the server: its working directory
        # is never shown to the sandbox.
        done = subprocess.run([sys.executable, DRIVER, spec_path], env=env, cwd=cls.base,
                              capture_output=True, text=True, timeout=timeout_s + 30,
                              check=False)
        if done.returncode != 0 or not done.stdout.strip():
            raise AssertionError(f"the driver failed ({done.returncode}): {done.stderr[-3000:]}")
        outcome = json.loads(done.stdout.strip().splitlines()[-1])
        outcome["workdir"] = workdir
        return outcome


class SandboxTest(SandboxFixture):
    def need(self, *protections):
        for name in protections:
            if name in self.missing:
                self.skipTest(f"this host cannot give {name}: {self.reasons.get(name)}")

    def need_library(self):
        if self.library is None:
            self.skipTest("no C compiler (gcc/cc) to build the native attacks")

    def both(self, code, **spec):
        """The attack without and with the sandbox: (control results, sandboxed results)."""
        control = self.run_attack(code, sandboxed=False, **spec)
        self.assertIsNone(control["results"].get("exception"), control)
        sandboxed = self.run_attack(code, **spec)
        self.assertIsNone(sandboxed["results"].get("exception"), sandboxed)
        return control["results"], sandboxed["results"]

    # ---- secrets ----

    def test_api_keys_not_in_the_environment_nor_in_proc(self):
        code = r'''
import os
seen = {"environ": any(SECRET in v for v in os.environ.values())}
with open("/proc/self/environ", "rb") as f:
    seen["proc_self"] = SECRET.encode() in f.read()
leaks = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if SECRET.encode() in f.read():
                    leaks.append(int(pid))
        except OSError:
            pass
seen["proc_any"] = bool(leaks)
try:
    with open(f"/proc/{DRIVER_PID}/environ", "rb") as f:
        seen["driver"] = SECRET.encode() in f.read()
except OSError as e:
    seen["driver"] = False
found(**seen)
'''
        control, sandboxed = self.both(code, args={"SECRET": SECRET_ENV})
        self.assertTrue(all(control[k] for k in ("environ", "proc_self", "proc_any", "driver")),
                        control)
        for key in ("environ", "proc_self", "proc_any", "driver"):
            self.assertFalse(sandboxed[key], f"the secret reached the candidate through {key}")

    def test_environment_is_an_allowlist_plus_what_the_pipeline_names(self):
        code = 'import os\nfound(env=dict(os.environ))'
        env = self.run_attack(code, extra_env={"KFORGE_NAMED": "yes"})["results"]["env"]
        self.assertEqual(env["KFORGE_NAMED"], "yes")
        self.assertEqual(env["HOME"], os.path.join(env["TMPDIR"][:-len("/tmp")], "home"))
        unexpected = [name for name in env if name not in sandbox.ENV_ALLOWED
                      and not name.startswith(sandbox.ENV_ALLOWED_PREFIXES)
                      and name not in ("HOME", "TMPDIR", "XDG_CACHE_HOME", "TRITON_HOME",
                                       "TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR",
                                       "TORCHINDUCTOR_COMPILE_THREADS", "KFORGE_NAMED")]
        self.assertEqual(unexpected, [])

    # ---- other processes, the store, the file system ----

    def test_ancestors_descriptors_and_the_store_are_unreachable(self):
        self.need("pid_namespace", "filesystem")
        code = r'''
import os
result = {}
for label, path in (("fd_write", f"/proc/{DRIVER_PID}/fd/{STORE_FD}"), ("store_write", STORE)):
    try:
        with open(path, "a") as f:
            f.write("pass 42x")
        result[label] = True
    except OSError as e:
        result[label] = False
for label, path in (("sibling_read", SIBLING), ("reference_read", REFERENCE)):
    try:
        with open(path) as f:
            f.read()
        result[label] = True
    except OSError:
        result[label] = False
result["scratch_listing"] = sorted(os.listdir(os.path.dirname(WORKDIR)))
result["visible_pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
found(**result)
'''
        args = {"STORE": self.store, "SIBLING": os.path.join(self.sibling, "log.txt"),
                "REFERENCE": os.path.join(self.reference, "ref.bin")}
        control, sandboxed = self.both(code, args=args)
        for key in ("fd_write", "store_write", "sibling_read", "reference_read"):
            self.assertTrue(control[key], key)
            self.assertFalse(sandboxed[key], f"{key} worked from the sandbox")
        self.assertIn("kforge-sibling", control["scratch_listing"])
        self.assertNotIn("kforge-sibling", sandboxed["scratch_listing"])
        self.assertNotIn("reference", sandboxed["scratch_listing"])
        # Only the reaper (1) and the worker (2) exist in the sandbox's PID namespace.
        self.assertEqual(sandboxed["visible_pids"], [1, 2])
        with open(self.store, encoding="utf-8") as handle:
            self.assertEqual(handle.read().count("pass 42x"), 2)  # the control's two writes

    def test_only_the_work_dir_is_writable(self):
        self.need("filesystem")
        code = r'''
import os
result = {}
for label, path in (("outside", OUTSIDE), ("usr", "/usr/kforge-poison"),
                    ("etc", "/etc/kforge-poison"), ("harness", HARNESS + "/kforge-poison"),
                    ("root", "/kforge-poison")):
    try:
        with open(path, "w") as f:
            f.write("x")
    except OSError:
        pass
with open(os.path.join(WORKDIR, "mine.txt"), "w") as f:
    f.write("ok")
with open("/tmp/scratch.txt", "w") as f:
    f.write("ok")
found(written=True)
'''
        targets = {"outside": os.path.join(self.base, "poison"),
                   "harness": os.path.join(HARNESS_DIR, "kforge-poison"),
                   "usr": "/usr/kforge-poison", "etc": "/etc/kforge-poison",
                   "root": "/kforge-poison"}
        args = {"OUTSIDE": targets["outside"], "HARNESS": HARNESS_DIR}
        self.run_attack(code, sandboxed=False, args=args)
        writable = [path for path in targets.values() if os.access(os.path.dirname(path), os.W_OK)]
        try:
            self.assertIn(targets["outside"], writable)
            self.assertTrue(all(os.path.exists(path) for path in writable),
                            "unsandboxed, every write this user may do lands")
        finally:
            for path in targets.values():
                if os.path.exists(path):
                    os.unlink(path)
        sandboxed = self.run_attack(code, args=args)
        self.assertTrue(sandboxed["results"].get("written"), sandboxed)
        landed = [label for label, path in targets.items() if os.path.exists(path)]
        self.assertEqual(landed, [], "written from the sandbox")
        self.assertTrue(os.path.exists(os.path.join(sandboxed["workdir"], "mine.txt")))
        self.assertTrue(os.path.exists(os.path.join(sandboxed["workdir"], "tmp", "scratch.txt")))

    def test_hidden_paths_are_masked_even_under_a_readonly_path(self):
        self.need("filesystem")
        code = r'''
import os
def readable(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None
found(store=readable(STORE), listing=sorted(os.listdir(BASE)))
'''
        shown = self.run_attack(code, readonly=[self.base], args={"STORE": self.store,
                                                                   "BASE": self.base})
        self.assertTrue(shown["results"]["store"].startswith("verdicts"))  # the bind shows it...
        masked = self.run_attack(code, readonly=[self.base], hidden=[self.out],
                                 args={"STORE": self.store, "BASE": self.base})
        self.assertIsNone(masked["results"]["store"])  # ...unless it is hidden
        self.assertIn("out", masked["results"]["listing"])

    # ---- network ----

    def test_no_network_and_no_way_back_into_the_parents_namespace(self):
        self.need("network_namespace")
        code = r'''
import ctypes, errno, os, socket
result = {}
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
    result["connect"] = True
except OSError:
    result["connect"] = False
libc = ctypes.CDLL(None, use_errno=True)
for label, path in (("setns_driver", f"/proc/{DRIVER_PID}/ns/net"), ("setns_own", "/proc/self/ns/net")):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        result[label] = f"open: {errno.errorcode[e.errno]}"
        continue
    ok = libc.setns(fd, 0x40000000) == 0
    result[label] = True if ok else errno.errorcode[ctypes.get_errno()]
    os.close(fd)
if result.get("setns_driver") is True:
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
        result["connect_after_setns"] = True
    except OSError:
        result["connect_after_setns"] = False
found(**result)
'''
        control, sandboxed = self.both(code)
        self.assertTrue(control["connect"])
        self.assertFalse(sandboxed["connect"])
        self.assertNotEqual(sandboxed["setns_driver"], True)
        self.assertEqual(sandboxed["setns_own"], "EPERM")
        self.assertNotIn("connect_after_setns", sandboxed)

    # ---- other processes' memory ----

    def test_ptrace_and_process_vm_readv_of_the_parent_fail(self):
        self.need("seccomp")
        code = r'''
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
result = {}
if libc.ptrace(0x4206, DRIVER_PID, None, None) == 0:  # PTRACE_SEIZE
    result["ptrace"] = True
    libc.ptrace(17, DRIVER_PID, None, None)  # PTRACE_DETACH
else:
    result["ptrace"] = errno.errorcode[ctypes.get_errno()]
result["traceme"] = True if libc.ptrace(0, 0, None, None) == 0 else errno.errorcode[ctypes.get_errno()]
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buffer = ctypes.create_string_buffer(SECRET_LENGTH)
local = iovec(ctypes.addressof(buffer), SECRET_LENGTH)
remote = iovec(SECRET_ADDRESS, SECRET_LENGTH)
got = libc.process_vm_readv(DRIVER_PID, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
result["memory"] = buffer.raw.decode(errors="replace") if got == SECRET_LENGTH else errno.errorcode[ctypes.get_errno()]
found(**result)
'''
        control, sandboxed = self.both(code)
        self.assertTrue(control["ptrace"] is True)
        self.assertEqual(control["memory"], "kforge-driver-memory-secret")
        self.assertEqual(sandboxed["ptrace"], "EPERM")
        self.assertEqual(sandboxed["traceme"], "EPERM")
        self.assertEqual(sandboxed["memory"], "EPERM")

    def test_native_code_gets_no_further(self):
        self.need_library()
        self.need("seccomp", "network_namespace", "filesystem", "pid_namespace")
        code = r'''
import ctypes
lib = ctypes.CDLL(LIBRARY)
buffer = ctypes.create_string_buffer(64)
# Unsharing the user namespace changes what the process may do afterwards: it goes last.
found(clone_new_user=lib.attack_clone_new_user(), ptrace=lib.attack_ptrace(DRIVER_PID),
      memory=lib.attack_read_memory(DRIVER_PID, ctypes.c_ulong(SECRET_ADDRESS), buffer, SECRET_LENGTH),
      connect=lib.attack_connect(PORT),
      setns=lib.attack_setns(f"/proc/{DRIVER_PID}/ns/net".encode()),
      read_store=lib.attack_read_file(STORE.encode(), buffer, 64),
      write_store=lib.attack_write_file((STORE + ".poison").encode()),
      mount=lib.attack_mount(WORKDIR.encode()), unshare_user=lib.attack_unshare_user())
'''
        control, sandboxed = self.both(code, readonly=[self.library],
                                       args={"LIBRARY": self.library, "STORE": self.store})
        # An unknown file system type: root gets as far as the kernel looking for it
        # (ENODEV) unless the call is refused first.
        self.assertEqual(control.pop("mount"), 19 if os.geteuid() == 0 else 1)
        if os.geteuid() != 0:  # joining another namespace takes CAP_SYS_ADMIN there
            self.assertEqual(control.pop("setns"), 1)
        self.assertEqual(control, {key: 0 for key in control}, "every attack works unsandboxed")
        os.unlink(self.store + ".poison")
        failed = {key: value for key, value in sandboxed.items() if key != "report"}
        self.assertNotIn(0, failed.values(), failed)
        for key in ("unshare_user", "clone_new_user", "mount", "ptrace", "memory"):
            self.assertEqual(failed[key], 1, f"{key}: seccomp answers EPERM")  # errno 1
        self.assertFalse(os.path.exists(self.store + ".poison"))

    def test_every_denied_system_call_answers_eperm(self):
        self.need("seccomp")
        arch = seccomp.current_arch()
        code = r'''
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
result = {}
for name, number in NUMBERS.items():
    ctypes.set_errno(0)
    value = libc.syscall(ctypes.c_long(number), *(ctypes.c_long(-1),) * 6)
    result[name] = ctypes.get_errno() if value == -1 else 0
ctypes.set_errno(0)
result["unshare(0)"] = ctypes.get_errno() if libc.unshare(0) == -1 else 0
found(**result)
'''
        numbers = {name: arch.numbers[name] for name in seccomp.DENIED if name in arch.numbers}
        numbers["clone3"] = arch.numbers["clone3"]
        control = self.run_attack('import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n'
                                  'found(unshare0=libc.unshare(0))', sandboxed=False)["results"]
        self.assertEqual(control["unshare0"], 0)  # without the filter unshare(0) just works
        results = self.run_attack(code, args={"NUMBERS": numbers})["results"]
        for name in numbers:
            expected = 38 if name == "clone3" else 1  # ENOSYS: glibc falls back to clone
            self.assertEqual(results[name], expected, name)
        self.assertEqual(results["unshare(0)"], 1)

    # ---- privileges ----

    def test_no_capabilities_no_new_privileges_and_an_unprivileged_uid(self):
        code = r'''
import os
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
with open(os.path.join(WORKDIR, "owned"), "w") as f:
    f.write("x")
found(**{k: status[k].strip() for k in ("CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")})
'''
        control, sandboxed = self.both(code)
        if os.geteuid() == 0:
            self.assertNotEqual(control["CapEff"], "0000000000000000")
        for key in ("CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb"):
            self.assertEqual(sandboxed[key], "0000000000000000", key)
        self.assertEqual(sandboxed["NoNewPrivs"], "1")
        self.assertEqual(sandboxed["Seccomp"], "2")
        owner = os.stat(os.path.join(self.scratch, sorted(os.listdir(self.scratch))[-1])).st_uid
        self.assertIsNotNone(owner)
        if os.geteuid() == 0:
            self.need("unprivileged_uid")
            report = sandboxed["report"]
            self.assertEqual(report["outside_uid"], sandbox.SANDBOX_UID)

    # ---- survivors and floods ----

    def test_a_setsid_grandchild_does_not_outlive_the_worker(self):
        control = self.run_attack(SURVIVOR, sandboxed=False)
        self.assertTrue(self._still_beating(control["workdir"]), "unsandboxed it survives")
        with open(os.path.join(control["workdir"], "survivor.pid"), encoding="ascii") as handle:
            os.kill(int(handle.read()), 9)
        sandboxed = self.run_attack(SURVIVOR, timeout_s=20)
        self.assertTrue(sandboxed["results"]["started"])
        self.assertEqual((sandboxed["timed_out"], sandboxed["exit_code"]), (False, 0), sandboxed)
        self.assertFalse(self._still_beating(sandboxed["workdir"]),
                         "the grandchild survived the sandboxed worker")

    def test_orphans_are_reaped_while_the_worker_runs(self):
        # PID 1 of the namespace reaps what is orphaned to it: zombies would otherwise
        # pile up against the process limit for the whole run.
        self.need("pid_namespace")
        code = r'''
import os, time
for _ in range(20):
    if os.fork() == 0:
        if os.fork() == 0:  # orphaned to PID 1 as soon as its parent exits
            os._exit(0)
        os._exit(0)
    os.wait()
time.sleep(0.5)
def state(pid):
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0]
pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
found(zombies=sum(1 for p in pids if state(p) == "Z"), processes=len(pids))
'''
        results = self.run_attack(code)["results"]
        self.assertIsNone(results.get("exception"), results)
        self.assertEqual(results["zombies"], 0, results)
        self.assertEqual(results["processes"], 2, results)  # PID 1 and the worker

    @staticmethod
    def _still_beating(workdir):
        path = os.path.join(workdir, "heartbeat")
        before = os.path.getsize(path)
        time.sleep(0.3)
        return os.path.getsize(path) > before

    def test_an_output_flood_stops_at_the_file_size_limit(self):
        code = r'''
import os, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # see EFBIG instead of dying
chunk = b"x" * (1 << 20)
written = {}
for label, fd in (("log", 1), ("file", os.open(os.path.join(WORKDIR, "flood.bin"), os.O_WRONLY | os.O_CREAT))):
    written[label] = 0
    try:
        for _ in range(MEGABYTES):
            written[label] += os.write(fd, chunk)
    except OSError as e:
        written[label + "_error"] = e.strerror
found(**written)
'''
        control = self.run_attack(code, sandboxed=False, args={"MEGABYTES": 32})["results"]
        self.assertEqual(control["file"], 32 << 20)
        sandboxed = self.run_attack(code, limits={"file_size_mb": 16},
                                    args={"MEGABYTES": 300})["results"]
        self.assertEqual(sandboxed["file"], 16 << 20)
        self.assertEqual(sandboxed["log"], 16 << 20)
        self.assertEqual(sandboxed["file_error"], "File too large")

    def test_fork_bombs_stop_at_the_process_limit_from_python_and_native_code(self):
        self.need_library()
        code = r'''
import ctypes, os, signal
born = 0
for _ in range(LIMIT):
    try:
        if os.fork() == 0:
            signal.pause()
            os._exit(0)
        born += 1
    except OSError:
        break
native = ctypes.CDLL(LIBRARY).attack_fork_bomb(LIMIT)
found(python=born, native=native)
'''
        spec = {"readonly": [self.library], "args": {"LIBRARY": self.library, "LIMIT": 48}}
        control = self.run_attack(code, sandboxed=False, **spec)["results"]
        self.assertEqual((control["python"], control["native"]), (48, 48))
        sandboxed = self.run_attack(code, limits={"processes": 16}, **spec)["results"]
        self.assertLess(sandboxed["python"] + sandboxed["native"], 16)

    def test_a_standby_takes_the_requests_limits_after_entering(self):
        code = r'''
import resource
from kforge_harness import sandbox
sandbox.apply_rlimits({"cpu_s": 1000, "file_size_mb": 8}, sandbox.Device("cpu"))
found(cpu=resource.getrlimit(resource.RLIMIT_CPU), fsize=resource.getrlimit(resource.RLIMIT_FSIZE))
'''
        results = self.run_attack(code, limits={"cpu_s": None, "file_size_mb": None})["results"]
        self.assertEqual(results["cpu"], [1000, 1001])
        self.assertEqual(results["fsize"], [8 << 20, 8 << 20])

    def test_a_host_that_allows_namespaces_gets_every_protection(self):
        # Asked of the kernel directly, in a throwaway child: can this process make the
        # namespaces at all? Where it can, a missing protection is a bug, not the host.
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            libc = ctypes.CDLL(None, use_errno=True)
            flags = 0x10000000 | 0x20000000 | 0x40000000 | 0x00020000  # USER|PID|NET|NS
            os.write(write_fd, b"1" if libc.unshare(flags) == 0 else b"0")
            os._exit(0)
        os.close(write_fd)
        allowed = os.read(read_fd, 1) == b"1"
        os.close(read_fd)
        os.waitpid(pid, 0)
        if not allowed:
            self.skipTest("this host refuses user, PID, network and mount namespaces")
        self.assertEqual(self.missing, [], self.reasons)

    def test_probe_says_what_enter_gives(self):
        code = 'from kforge_harness import sandbox\nfound(probe=sandbox.probe().missing)'
        results = self.run_attack(code, sandboxed=False)["results"]
        self.assertEqual(results["probe"], self.missing)

    # ---- the supervisor ----

    def test_the_worker_exit_code_and_signal_reach_the_server(self):
        code = 'import os, signal\nif MODE == "signal":\n    os.kill(os.getpid(), signal.SIGSEGV)\n'
        exited = self.run_attack(code, args={"MODE": "exit"}, exit_code=7)
        self.assertEqual((exited["exit_code"], exited["signal"]), (7, None))
        crashed = self.run_attack(code, args={"MODE": "signal"})
        self.assertEqual(crashed["signal"], 11)

    def test_missing_protections_are_reported_not_hidden(self):
        code = 'found(uid=__import__("os").getuid())'
        refused = self.run_attack(code, deny_unshare=True)["results"]
        report = refused["report"]
        for name in ("pid_namespace", "mount_namespace", "filesystem", "network_namespace",
                     "ipc_namespace", "uts_namespace", "user_namespace"):
            self.assertIn(name, report["missing"])
            self.assertIn("EPERM", report["reasons"][name] + "EPERM")
        self.assertIn("sandbox_no_pid_namespace",
                      [f"sandbox_no_{name}" for name in report["missing"]])
        self.assertNotIn("seccomp", report["missing"])
        self.assertNotIn("capabilities", report["missing"])
        required = self.run_attack(code, deny_unshare=True, required=["pid_namespace"])
        self.assertIn("SandboxError", required["results"]["exception"])
        self.assertIn("pid_namespace", required["results"]["exception"])
        self.assertNotIn("uid", required["results"])

    def test_without_a_pid_namespace_the_supervisor_still_ends_every_survivor(self):
        outcome = self.run_attack(SURVIVOR, deny_unshare=True, timeout_s=20)
        self.assertEqual((outcome["timed_out"], outcome["exit_code"]), (False, 0), outcome)
        self.assertIn("pid_namespace", outcome["results"]["report"]["missing"])
        self.assertFalse(self._still_beating(outcome["workdir"]))

    # ---- honest work ----

    def test_torch_numpy_and_a_compiled_library_work_inside(self):
        if shutil.which("g++") is None:
            self.skipTest("no g++ for kforge_cpp")
        code = r'''
import sys, torch, numpy
sys.path.insert(0, HARNESS)
import kforge_cpp
a = torch.randn(64, 64)
lib = kforge_cpp.load('extern "C" int add(int a, int b) { return a + b; }')
found(matmul=float((a @ torch.eye(64) - a).abs().max()), numpy=float(numpy.arange(4).sum()),
      cpp=lib.add(2, 3), threads=torch.get_num_threads())
'''
        results = self.run_attack(code, import_torch=True, timeout_s=120,
                                  args={"HARNESS": HARNESS_DIR})["results"]
        self.assertIsNone(results.get("exception"), results)
        self.assertEqual(results["matmul"], 0.0)
        self.assertEqual(results["numpy"], 6.0)
        self.assertEqual(results["cpp"], 5)


def _cuda_devices():
    """The GPUs' (minor, uuid) in CUDA's default order as the sandbox maps them, or []
    where torch has no CUDA (it is asked in a child: the test process must not hold a
    CUDA context when it forks)."""
    if not sandbox_fs.nvidia_gpus():
        return []
    probe = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"],
        capture_output=True, text=True, timeout=120, check=False)
    count = int(probe.stdout.strip() or 0) if probe.returncode == 0 else 0
    return sandbox_fs.nvidia_gpus()[:count] if count else []


class SandboxGpuTest(SandboxFixture):
    """On a GPU host: CUDA, Triton and a load_inline extension work inside, and only the
    given GPU is visible. Skipped without CUDA."""

    @classmethod
    def setUpClass(cls):
        cls.gpus = _cuda_devices()
        if not cls.gpus:
            raise unittest.SkipTest("no CUDA device (no NVIDIA driver, or torch without CUDA)")
        super().setUpClass()

    def test_cuda_runs_on_the_given_gpu_only(self):
        index = len(self.gpus) - 1  # the last one: its device node is not nvidia0
        code = r'''
import os, torch
x = torch.randn(1024, 1024, device=DEVICE)
found(matmul=float((x @ torch.eye(1024, device=DEVICE) - x).abs().max()),
      count=torch.cuda.device_count(), uuid=str(torch.cuda.get_device_properties(0).uuid),
      nodes=sorted(n for n in os.listdir("/dev") if n.startswith("nvidia")),
      visible=os.environ.get("CUDA_VISIBLE_DEVICES"))
'''
        outcome = self.run_attack(code, import_torch=True, device=f"cuda:{index}", timeout_s=180,
                                  args={"DEVICE": "cuda:0"})
        results = outcome["results"]
        self.assertIsNone(results.get("exception"), outcome)
        self.assertEqual(results["report"]["missing"], [], results["report"])
        self.assertEqual(results["report"]["device"], "cuda:0")
        self.assertEqual(results["matmul"], 0.0)
        self.assertEqual(results["count"], 1)
        minor, uuid, = self.gpus[index][1], self.gpus[index][2]
        self.assertEqual(results["visible"], uuid)
        self.assertIn(results["uuid"].replace("GPU-", ""), uuid)
        others = [f"nvidia{gpu[1]}" for gpu in self.gpus if gpu[1] != minor]
        self.assertIn(f"nvidia{minor}", results["nodes"])
        self.assertFalse(set(others) & set(results["nodes"]), results["nodes"])

    def test_triton_and_load_inline_compile_and_run_inside(self):
        code = r'''
import importlib, os, sys, torch
from torch.utils.cpp_extension import load_inline
# Triton reads a kernel's source from its file, as the harness's kforge_candidate.py.
with open(os.path.join(WORKDIR, "triton_candidate.py"), "w") as f:
    f.write("import triton, triton.language as tl\n"
            "@triton.jit\n"
            "def add_one(x_ptr, n, BLOCK: tl.constexpr):\n"
            "    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
            "    mask = offsets < n\n"
            "    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)\n")
sys.path.insert(0, WORKDIR)
add_one = importlib.import_module("triton_candidate").add_one
x = torch.zeros(1000, device="cuda:0")
add_one[(4,)](x, 1000, BLOCK=256)
cuda = "__global__ void twice(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2; }\n" \
       "torch::Tensor run(torch::Tensor x) { twice<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), x.numel()); return x; }\n"
module = load_inline("kforge_sandbox_twice", cpp_sources="torch::Tensor run(torch::Tensor x);", cuda_sources=cuda,
                     functions=["run"])
module.run(x)
torch.cuda.synchronize()
found(total=float(x.sum()))
'''
        outcome = self.run_attack(code, import_torch=True, device="cuda:0", timeout_s=540)
        self.assertIsNone(outcome["results"].get("exception"), outcome["log_tail"])
        self.assertEqual(outcome["results"]["total"], 2000.0)


class SandboxCliTest(unittest.TestCase):
    def test_runs_a_command_inside_and_reports_first(self):
        workdir = tempfile.mkdtemp(prefix="kforge-cli-")
        self.addCleanup(shutil.rmtree, workdir, True)
        done = subprocess.run(
            [sys.executable, "-S", "-m", "kforge_harness.sandbox", "run", "--workdir", workdir,
             "--env", "NAMED=1", "--", "/bin/sh", "-c",
             'echo "$NAMED $(id -u)"; echo x > /etc/kforge-poison; echo y > made; exit 3'],
            cwd=HARNESS_DIR, env={"PYTHONPATH": HARNESS_DIR, "PATH": os.environ["PATH"],
                                  "KFORGE_TEST_API_KEY": SECRET_ENV},
            capture_output=True, text=True, timeout=60, check=False)
        lines = done.stdout.splitlines()
        self.assertTrue(lines and lines[0].startswith("kforge-sandbox: {"), done)
        report = json.loads(lines[0][len("kforge-sandbox: "):])
        self.assertEqual(done.returncode, 3, done.stderr)
        if "filesystem" not in report["missing"]:
            self.assertIn("1 0", lines[1])
            self.assertIn("/etc/kforge-poison", done.stderr)
        self.assertTrue(os.path.exists(os.path.join(workdir, "made")))

    def test_a_compilers_own_installation_is_shown_with_it(self):
        # CC=/opt/gcc/bin/gcc (the GPU host's): gcc runs cc1 from its libexec and reads
        # its own headers; binding the driver alone broke every Triton and load_inline
        # build inside the candidate's sandbox there.
        prefix = tempfile.mkdtemp(prefix="kforge-toolchain-")
        workdir = tempfile.mkdtemp(prefix="kforge-cli-")
        for path in (prefix, workdir):
            self.addCleanup(shutil.rmtree, path, True)
        os.chmod(prefix, 0o755)  # as an installed toolchain: the sandbox's user reads it
        os.makedirs(os.path.join(prefix, "bin"))
        os.makedirs(os.path.join(prefix, "libexec"))
        compiler = os.path.join(prefix, "bin", "gcc")
        with open(compiler, "w", encoding="utf-8") as handle:
            handle.write("#!/bin/sh\ncat \"$(dirname \"$0\")/../libexec/cc1\"\n")
        os.chmod(compiler, 0o755)
        with open(os.path.join(prefix, "libexec", "cc1"), "w", encoding="utf-8") as handle:
            handle.write("compiler proper\n")
        done = subprocess.run(
            [sys.executable, "-S", "-m", "kforge_harness.sandbox", "run", "--workdir", workdir,
             "--", compiler],
            cwd=HARNESS_DIR, env={"PYTHONPATH": HARNESS_DIR, "PATH": os.environ["PATH"],
                                  "CC": compiler},
            capture_output=True, text=True, timeout=60, check=False)
        report = json.loads(done.stdout.splitlines()[0][len("kforge-sandbox: "):])
        if "filesystem" in report["missing"]:
            self.skipTest("this host cannot give the sandbox its own root")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("compiler proper", done.stdout)

    def test_a_sandbox_failure_is_exit_125_with_the_reason(self):
        done = subprocess.run(
            [sys.executable, "-S", "-m", "kforge_harness.sandbox", "run", "--workdir",
             "/nonexistent/kforge", "--", "/bin/true"],
            cwd=HARNESS_DIR, env={"PYTHONPATH": HARNESS_DIR, "PATH": os.environ["PATH"]},
            capture_output=True, text=True, timeout=60, check=False)
        self.assertEqual(done.returncode, 125)
        self.assertIn("/nonexistent/kforge", done.stderr)


class SeccompFilterTest(unittest.TestCase):
    def test_every_architecture_table_numbers_every_denied_call(self):
        for name, arch in seccomp.ARCHES.items():
            for call in seccomp.DENIED + ("clone", "clone3", "seccomp", "capset", "pivot_root"):
                if call not in ("iopl", "ioperm", "uselib", "_sysctl") or name == "x86_64":
                    self.assertIn(call, arch.numbers, f"{name}: {call}")
            program = seccomp.build_filter(arch)
            self.assertEqual(len(program) % 8, 0)
            self.assertLess(len(program) // 8, 4096)


if __name__ == "__main__":
    unittest.main()
