"""The attack corpus against the trusted parent and the machine, at the harness level: the harness
runs as the agent runs it (DRYFT_JAIL=1), so each engine child starts in its own jail (jail.py).
Each engine tries one attack; where the attack works it says so in an exception (a verdict that
names it), where it is contained the run goes on and gets an honest verdict. The agent-level
attacks (the allowlisted filesystem, /proc/1, the checkout) are in test/e2e/sandbox.spec.ts.

Needs root and bubblewrap: skipped loudly without them, failed under CI=true (which has both)."""
import os
import shutil
import subprocess
import uuid

import pytest

from conftest import run_harness, toy_spec
from harness import compile_cache, jail


def _bwrap_problem():
    if os.geteuid() != 0:
        return "the jail's own-uid sandbox needs the harness to run as root (the agent's case here)"
    if not shutil.which("bwrap") and not os.path.exists("/usr/bin/bwrap"):
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    r = subprocess.run(["/usr/bin/bwrap", "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--proc", "/proc",
                        "--dev", "/dev", "--as-pid-1", "true"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"bubblewrap cannot create namespaces here: {r.stderr.strip()}"
    return None


PROBLEM = _bwrap_problem()
if PROBLEM and os.environ.get("CI") == "true":
    raise RuntimeError(f"CI must run the jail's attack corpus: {PROBLEM}")
pytestmark = pytest.mark.skipif(PROBLEM is not None, reason=f"SKIPPED LOUDLY: {PROBLEM}")


@pytest.fixture
def jailed(monkeypatch):
    monkeypatch.setenv("DRYFT_JAIL", "1")
    monkeypatch.setenv("DRYFT_JAIL_UID", "61100")
    return monkeypatch


def engine_with(make_engine, attack: str):
    """An engine whose __init__ runs `attack` (a function body that raises on success) first."""
    body = "\n".join("        " + line for line in attack.strip("\n").splitlines())
    return make_engine(f"""
import ctypes, os, signal, socket, time
from base import Engine as Base

def attack():
{body}

class Engine(Base):
    def __init__(self, path):
        attack()
        super().__init__(path)
""")


def assert_contained(run):
    assert run.result["status"] == "succeeded", run.result
    assert "ATTACK WORKED" not in run.stdout + run.stderr


def test_the_child_runs_as_its_own_uid_in_its_own_pid_namespace(tmp_path, make_engine, jailed):
    d = engine_with(make_engine, """
        status = open("/proc/self/status").read()
        caps = [l.split()[1] for l in status.splitlines() if l.startswith(("CapEff", "CapPrm", "CapBnd"))]
        filtered = "Seccomp:\t2" in status
        raise RuntimeError(f"uid={os.getuid()} pid={os.getpid()} ppid={os.getppid()} caps={caps} "
                           f"pids={sorted(int(p) for p in os.listdir('/proc') if p.isdigit())} "
                           f"cmdline1={open('/proc/1/cmdline').read()!r} seccomp={filtered}")
    """)
    res = run_harness(toy_spec("public"), d, tmp_path).result
    assert res["failureCode"] == "candidate_error"
    msg = res["message"]
    assert "uid=61101 pid=1 ppid=0" in msg, msg
    assert "caps=['0000000000000000', '0000000000000000'" in msg and "pids=[1]" in msg and "seccomp=True" in msg, msg
    assert "bwrap" not in msg and "spec" not in msg.split("cmdline1=")[1], msg


def test_reading_the_parents_memory_is_refused(tmp_path, make_engine, jailed):
    d = engine_with(make_engine, """
        for pid in {os.getppid()} - {0, 1}:
            try:
                with open(f"/proc/{pid}/maps") as fh:
                    first = fh.readline()
                start = int(first.split("-")[0], 16)
                with open(f"/proc/{pid}/mem", "rb") as mem:
                    mem.seek(start)
                    data = mem.read(4096)
                raise RuntimeError(f"ATTACK WORKED: read {len(data)} bytes of process {pid}'s memory")
            except OSError:
                pass
    """)
    assert_contained(run_harness(toy_spec("public"), d, tmp_path))


def test_reading_the_parents_memory_with_process_vm_readv_is_refused(tmp_path, make_engine, jailed):
    d = engine_with(make_engine, """
        libc = ctypes.CDLL(None, use_errno=True)
        class iovec(ctypes.Structure):
            _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
        buf = ctypes.create_string_buffer(64)
        for pid in {os.getppid()} - {0, 1}:
            try:
                start = int(open(f"/proc/{pid}/maps").readline().split("-")[0], 16)
            except OSError:
                start = 0x400000
            local, remote = iovec(ctypes.addressof(buf), 64), iovec(start, 64)
            n = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
            if n > 0:
                raise RuntimeError(f"ATTACK WORKED: process_vm_readv read {n} bytes of process {pid}")
        # and on itself: the syscall is refused outright by the seccomp filter
        local, remote = iovec(ctypes.addressof(buf), 8), iovec(ctypes.addressof(buf), 8)
        if libc.process_vm_readv(os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) == 8:
            raise RuntimeError("ATTACK WORKED: process_vm_readv is allowed")
    """)
    assert_contained(run_harness(toy_spec("public"), d, tmp_path))


def test_ptrace_attach_to_the_parent_is_refused(tmp_path, make_engine, jailed):
    d = engine_with(make_engine, """
        libc = ctypes.CDLL(None, use_errno=True)
        libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
        for pid in {os.getppid()} - {0}:
            if libc.ptrace(16, pid, None, None) == 0:  # PTRACE_ATTACH
                os.waitpid(pid, 0x40000000)  # __WALL: wait for the stop, then let it go
                libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
                raise RuntimeError(f"ATTACK WORKED: attached to the parent {pid} with ptrace")
        child = os.fork()
        if child == 0:
            time.sleep(30)
            os._exit(0)
        try:
            if libc.ptrace(16, child, None, None) == 0:  # even its own child: ptrace is refused
                raise RuntimeError("ATTACK WORKED: ptrace is allowed")
        finally:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
    """)
    assert_contained(run_harness(toy_spec("public"), d, tmp_path))


def test_signalling_the_parent_does_not_reach_it(tmp_path, make_engine, jailed):
    d = engine_with(make_engine, """
        # Only the parent (never a sweep over /proc: where the jail failed, that would hit the machine).
        if os.getppid() > 1:
            os.kill(os.getppid(), signal.SIGKILL)
    """)
    run = run_harness(toy_spec("public"), d, tmp_path)
    assert_contained(run)


def test_namespaces_mounts_and_keyrings_are_refused(tmp_path, make_engine, jailed):
    d = engine_with(make_engine, """
        libc = ctypes.CDLL(None, use_errno=True)
        worked = []
        if libc.unshare(0x10000000) == 0:  # CLONE_NEWUSER: would give it capabilities in a new namespace
            worked.append("unshare(CLONE_NEWUSER)")
        if libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == 0:
            worked.append("mount")
        if libc.syscall(250, 0, 0, 0, 0, 0) >= 0 and ctypes.get_errno() != 1:  # keyctl(GET_KEYRING_ID)
            worked.append("keyctl")
        if libc.syscall(321, 0, 0, 0) >= 0:  # bpf
            worked.append("bpf")
        if worked:
            raise RuntimeError("ATTACK WORKED: " + ", ".join(worked))
    """)
    assert_contained(run_harness(toy_spec("public"), d, tmp_path))


def test_postgres_by_socket_or_tcp_is_unreachable(tmp_path, make_engine, jailed):
    d = engine_with(make_engine, """
        import glob
        reached = []
        for path in glob.glob("/tmp/.s.PGSQL.*") + glob.glob("/var/run/postgresql/.s.PGSQL.*") + glob.glob("/run/postgresql/.s.PGSQL.*"):
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(path)
                reached.append(path)
            except OSError:
                pass
            finally:
                s.close()
        for port in (5432, 6379):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=2).close()
                reached.append(f"127.0.0.1:{port}")
            except OSError:
                pass
        if reached:
            raise RuntimeError(f"ATTACK WORKED: reached {reached}")
    """)
    assert_contained(run_harness(toy_spec("public"), d, tmp_path))


def test_the_hosts_tmp_and_root_only_files_are_invisible(tmp_path, make_engine, jailed):
    secret = f"/tmp/dryft-secret-{uuid.uuid4().hex}"
    with open(secret, "w") as fh:
        fh.write("hub session token")
    try:
        d = engine_with(make_engine, f"""
            seen = [n for n in os.listdir("/tmp") if n.startswith("dryft-secret") or n.startswith(".s.PGSQL")]
            if seen:
                raise RuntimeError(f"ATTACK WORKED: the host's /tmp holds {{seen}}")
            for path in ("/etc/shadow", "/root/.bash_history", "/proc/1/environ"):
                try:
                    open(path, "rb").read(1)
                    if path != "/proc/1/environ":
                        raise RuntimeError(f"ATTACK WORKED: read {{path}}")
                except OSError:
                    pass
        """)
        assert_contained(run_harness(toy_spec("public"), d, tmp_path))
    finally:
        os.unlink(secret)


def test_a_fork_bomb_hits_the_process_limit(tmp_path, make_engine, jailed):
    jailed.setenv("DRYFT_JAIL_NPROC", "200")
    d = engine_with(make_engine, """
        kids = 0
        while kids < 1500:  # the issue's attack went to 3000; a limit stops it long before
            pid = os.fork()
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            kids += 1
        raise RuntimeError(f"ATTACK WORKED: forked {kids} processes")
    """)
    res = run_harness(toy_spec("public"), d, tmp_path).result
    assert res["failureCode"] == "candidate_error", res
    assert "process limit was reached (limit 200" in res["message"], res


def test_memory_exhaustion_hits_the_definitions_limit(tmp_path, make_engine, jailed):
    d = engine_with(make_engine, """
        hoard = [bytearray(256 << 20) for _ in range(8)]  # 2 GiB
        raise RuntimeError(f"ATTACK WORKED: holds {sum(map(len, hoard)) >> 20} MiB")
    """)
    spec = toy_spec("public", limits={"memoryBytes": 256 << 20, "memoryMeasure": "rss"})
    res = run_harness(spec, d, tmp_path).result
    assert res["failureCode"] == "memory_limit", res
    assert "memory limit (256 MiB)" in res["message"], res


def test_memory_exhaustion_hits_the_machine_default_without_a_definition_limit(tmp_path, make_engine, jailed):
    jailed.setenv("DRYFT_JAIL_MEMORY", str(512 << 20))
    d = engine_with(make_engine, """
        hoard = [bytearray(256 << 20) for _ in range(8)]
        raise RuntimeError(f"ATTACK WORKED: holds {sum(map(len, hoard)) >> 20} MiB")
    """)
    res = run_harness(toy_spec("public"), d, tmp_path).result
    assert res["failureCode"] == "memory_limit", res
    assert "memory limit (512 MiB)" in res["message"], res


@pytest.mark.parametrize("where", ["workspace", "tmp"])
def test_disk_exhaustion_hits_the_workspace_limit(tmp_path, make_engine, jailed, where):
    jailed.setenv("DRYFT_JAIL_WORKSPACE_BYTES", str(64 << 20))
    target = "os.path.join(os.getcwd(), 'fill')" if where == "workspace" else "'/tmp/fill'"
    d = engine_with(make_engine, f"""
        chunk = b"x" * (8 << 20)
        path = {target}
        written = 0
        try:
            with open(path, "wb") as fh:
                while written < (256 << 20):  # four times the limit; a fixed cap keeps a failed test off the disk
                    fh.write(chunk)
                    fh.flush()
                    written += len(chunk)
            raise RuntimeError(f"ATTACK WORKED: wrote {{written >> 20}} MiB to {{path}}")
        finally:
            if written >= (256 << 20):
                os.unlink(path)
    """)
    res = run_harness(toy_spec("public"), d, tmp_path).result
    assert res["failureCode"] == "candidate_error", res
    assert "workspace is full (limit 64 MiB" in res["message"], res
    assert not (d / "fill").exists()  # the host folder was never written


def test_opening_files_without_end_hits_the_open_file_limit(tmp_path, make_engine, jailed):
    jailed.setenv("DRYFT_JAIL_NOFILE", "64")
    d = engine_with(make_engine, """
        held = [open("/dev/null") for _ in range(5000)]
        raise RuntimeError(f"ATTACK WORKED: {len(held)} files open")
    """)
    res = run_harness(toy_spec("public"), d, tmp_path).result
    assert res["failureCode"] == "candidate_error", res
    assert "open file limit was reached (limit 64)" in res["message"], res


def test_a_sandbox_that_cannot_be_built_is_the_evaluators_failure(tmp_path, make_engine, jailed):
    jailed.setenv("DRYFT_JAIL_BWRAP", "/nonexistent/bwrap")
    d = engine_with(make_engine, "pass")
    res = run_harness(toy_spec("public"), d, tmp_path).result
    assert res["failureCode"] == "harness_error", res


def test_the_seccomp_program_is_well_formed():
    for machine in ("x86_64", "aarch64"):
        prog = jail.seccomp_program(machine)
        assert len(prog) % 8 == 0 and 20 < len(prog) // 8 < 255
    with pytest.raises(jail.JailError):
        jail.seccomp_program("mips")


def test_a_harness_and_model_under_tmp_stay_visible_in_the_jail(tmp_path, make_engine, jailed):
    """A checkout under /tmp (CI clones may live there): the jail's fresh /tmp must not hide the
    harness (its launcher) or the model, while the rest of /tmp stays out of the engine's sight."""
    from conftest import HARNESS, TOY_MODEL
    import json as _json
    import sys as _sys

    assert str(tmp_path).startswith("/tmp/"), tmp_path
    copy = tmp_path / "checkout"
    shutil.copytree(HARNESS, copy / "harness", ignore=shutil.ignore_patterns("__pycache__", "tests"))
    (copy / "models").mkdir()
    shutil.copy(TOY_MODEL, copy / "models" / "model.json")
    secret = tmp_path / "not-for-engines.txt"
    secret.write_text("hidden")
    d = engine_with(make_engine, f"""
        if os.path.exists({str(secret)!r}):
            raise RuntimeError("ATTACK WORKED: the engine sees the rest of /tmp")
    """)
    spec = toy_spec("public")
    spec["model"]["path"] = str(copy / "models" / "model.json")
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(_json.dumps(spec))
    r, w = os.pipe()
    proc = subprocess.Popen(
        [_sys.executable, "-m", "harness", "run", "--benchmark", spec["benchmark"], "--submission", str(d),
         "--mode", "public", "--spec", str(spec_path), "--events-fd", str(w)],
        cwd=str(copy), pass_fds=(w,), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(copy / "harness")),
    )
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        events = [_json.loads(line) for line in fh.read().decode().splitlines()]
    out, err = proc.communicate(timeout=120)
    result = events[-1]
    assert result["type"] == "result" and result["status"] == "succeeded", (result.get("detail"), result.get("message"), err.decode()[-2000:])
    assert "ATTACK WORKED" not in out.decode() + err.decode()


def test_both_children_start_alike_whatever_their_folders(tmp_path, make_engine, jailed):
    """The baseline's engine folder and the candidate's workspace have paths of different lengths;
    inside the jail both children see theirs at jail.ENGINE_WORKDIR, so argv, environment and cwd are
    byte for byte the same, and both start with address-space randomisation off: the same initial
    layout for both (harness/README.md, "The same conditions for both children")."""
    candidate = make_engine('''
        import ctypes, json, os, sys
        from base import Engine as _Base

        class Engine(_Base):
            def __init__(self, model_path):
                super().__init__(model_path)
                seen = {"argv": sys.argv, "cwd": os.getcwd(), "env": sorted(os.environ.items()),
                        "personality": ctypes.CDLL(None).personality(0xFFFFFFFF)}
                print("start-check " + json.dumps(seen), flush=True)
    ''')
    baseline = tmp_path / "a-baseline-folder-with-a-much-longer-path" / "engine"
    shutil.copytree(candidate, baseline)
    spec = toy_spec("official", baselineEngine=str(baseline), samplesPerWorkload=2, maxPairs=2,
                    checks={"maxRatioSpreadPct": 10000}, baseline=None)
    run = run_harness(spec, candidate, tmp_path)
    assert run.result["status"] == "succeeded", run.result
    import json as _json
    seen = [_json.loads(line.split(" ", 1)[1]) for line in run.stdout.splitlines() if line.startswith("start-check ")]
    assert len(seen) == 2 and seen[0] == seen[1], seen
    assert seen[0]["cwd"] == jail.ENGINE_WORKDIR and dict(seen[0]["env"])["HOME"] == jail.ENGINE_WORKDIR
    assert seen[0]["argv"][-2:] == ["--submission", jail.ENGINE_WORKDIR], seen[0]["argv"]
    assert seen[0]["personality"] & 0x0040000, seen[0]  # ADDR_NO_RANDOMIZE


def test_an_engines_traceback_names_its_files_relative_to_its_workspace(tmp_path, make_engine, jailed):
    d = make_engine('''
        from base import Engine as _Base

        class Engine(_Base):
            def __init__(self, model_path):
                raise RuntimeError("where: " + __file__)
    ''')
    res = run_harness(toy_spec("public"), d, tmp_path).result
    assert res["failureCode"] == "candidate_error", res
    assert "where: engine.py" in res["message"] and jail.ENGINE_WORKDIR not in res["message"], res["message"]


def test_only_engine_children_are_moved_to_the_common_view(jailed):
    # The training child reads its submission at its own path (the parent names it): it keeps it.
    limits = jail.JailLimits(uid=None, nproc=10, nofile=10, data=None, memory_limit=None, workspace=1 << 20)
    own = jail.jail_command(["x"], "/some/where/ws", limits, 5, 6)
    assert own[own.index("--tmpfs", own.index(jail.SOURCE_MOUNT)) + 1] == "/some/where/ws"
    assert "--no-aslr" not in own and "--move-fd" not in own and own[own.index("--workdir") + 1] == "/some/where/ws"
    eng = jail.jail_command(["x"], "/some/where/ws", limits, 5, 6, engine_fd=9)
    assert eng[eng.index("--tmpfs", eng.index(jail.SOURCE_MOUNT)) + 1] == jail.ENGINE_WORKDIR
    assert eng[eng.index("--workdir") + 1] == jail.ENGINE_WORKDIR and eng[eng.index("--move-fd") + 1] == f"9:{jail.ENGINE_FD}"
    assert "--no-aslr" in eng and eng.count("/some/where/ws") == 1  # only as the copy's source



CACHE_PROBE = '''
    import json, os
    from base import Engine as _Base

    class Engine(_Base):
        def __init__(self, model_path):
            super().__init__(model_path)
            d = os.environ["TORCHINDUCTOR_CACHE_DIR"]
            f = os.path.join(d, "kernel")
            found = open(f).read() if os.path.exists(f) else None
            os.makedirs(d, exist_ok=True)
            with open(f, "w") as fh:
                fh.write(f"compiled by {os.getuid()}")
            for name, make in (("escape", lambda p: os.symlink("/etc", p)), ("pipe", os.mkfifo)):
                if not os.path.lexists(os.path.join(d, name)):
                    make(os.path.join(d, name))
            os.makedirs(os.path.join(d, "locked"), exist_ok=True)
            os.chmod(os.path.join(d, "locked"), 0)
            print("cache-check " + json.dumps({"uid": os.getuid(), "found": found, "dir": d}), flush=True)
'''


def test_only_the_candidate_gets_the_teams_saved_compile_cache(tmp_path, make_engine, jailed):
    """The agent gives a decode run the team's persistent folder and a work folder (its tmpfs):
    the candidate finds in run 2 what it compiled in run 1; the trusted baseline, at the same path in
    its environment, starts from an empty cache of its own every run and never writes into the
    team's. Only regular files and folders are saved: no link, no fifo."""
    candidate = make_engine(CACHE_PROBE)
    baseline = tmp_path / "baseline" / "engine"
    shutil.copytree(candidate, baseline)
    persistent, work = tmp_path / "team-cache", tmp_path / "work"
    persistent.mkdir(mode=0o700)
    work.mkdir()
    jailed.setenv(compile_cache.PERSISTENT_ENV, str(persistent))
    jailed.setenv(compile_cache.WORK_ENV, str(work))
    spec = toy_spec("official", baselineEngine=str(baseline), samplesPerWorkload=2, maxPairs=2,
                    checks={"maxRatioSpreadPct": 10000}, baseline=None)
    import json as _json
    seen = []
    for n in range(2):
        (tmp_path / f"run{n}").mkdir()
        run = run_harness(spec, candidate, tmp_path / f"run{n}")
        assert run.result["status"] == "succeeded", run.result
        lines = [_json.loads(line.split(" ", 1)[1]) for line in run.stdout.splitlines() if line.startswith("cache-check ")]
        seen.append({x["uid"]: x for x in lines})
        assert any("are this team's own" in e["message"] for e in run.of("log")), run.of("log")
        assert "saved its compile cache" in run.stderr, run.stderr
    assert seen[0][61101]["found"] is None and seen[0][61100]["found"] is None, seen
    assert seen[1][61101]["found"] == "compiled by 61101", seen  # the candidate's own, from run 1
    assert seen[1][61100]["found"] is None, seen  # the baseline: empty again, never the team's
    assert seen[1][61100]["dir"] == seen[1][61101]["dir"] == "/tmp/dryft-caches/inductor", seen
    saved = persistent / compile_cache.CURRENT / "inductor"
    assert (saved / "kernel").read_text() == "compiled by 61101"
    assert sorted(os.listdir(persistent)) == [compile_cache.CURRENT]  # next/ and old/ swapped away
    assert sorted(os.listdir(saved)) == ["kernel", "locked"]  # the link and the fifo stayed behind


def test_a_cache_that_cannot_be_copied_in_starts_empty_and_keeps_the_saved_one(tmp_path, monkeypatch):
    persistent, work = tmp_path / "team-cache", tmp_path / "work"
    (persistent / compile_cache.CURRENT / "triton").mkdir(parents=True)
    (persistent / compile_cache.CURRENT / "triton" / "k.so").write_bytes(b"x" * 10)
    os.symlink("/etc/passwd", persistent / compile_cache.CURRENT / "triton" / "passwd")
    work.mkdir()
    (work / "stale").write_text("from a run before")
    logs = []
    cache = compile_cache.CandidateCache(str(persistent), str(work), logs.append)
    assert cache.seed(None) == str(work)
    assert sorted(os.listdir(work)) == ["triton"] and os.listdir(work / "triton") == ["k.so"], os.listdir(work / "triton")
    assert "holds 10 bytes" in logs[-1]
    real_copy = compile_cache._copy
    monkeypatch.setattr(compile_cache, "_copy", lambda *a: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    cache.seed(None)
    assert os.listdir(work) == [] and "starts empty this run" in logs[-2], logs
    monkeypatch.setattr(compile_cache, "_copy", real_copy)
    # a save cut short (a next/ left behind) never replaces current/ with half a cache
    (persistent / compile_cache.NEXT).mkdir()
    (work / "new.bin").write_bytes(b"y")
    assert cache.save() == 1
    assert sorted(os.listdir(persistent)) == [compile_cache.CURRENT]
    assert os.listdir(persistent / compile_cache.CURRENT) == ["new.bin"]
    for env in (compile_cache.PERSISTENT_ENV, compile_cache.WORK_ENV):
        monkeypatch.delenv(env, raising=False)
    assert compile_cache.configured() is None
    monkeypatch.setenv(compile_cache.PERSISTENT_ENV, str(persistent))
    monkeypatch.setenv(compile_cache.WORK_ENV, str(work))
    assert compile_cache.configured() == (str(persistent), str(work))
    os.symlink(work, tmp_path / "link")
    monkeypatch.setenv(compile_cache.WORK_ENV, str(tmp_path / "link"))
    assert compile_cache.configured() is None  # a link in a folder's place: no cache at all


def test_the_compile_cache_is_bound_in_the_candidates_jail_alone(tmp_path, jailed):
    limits = jail.JailLimits(uid=None, nproc=10, nofile=10, data=None, memory_limit=None, workspace=1 << 20)
    bound = jail.jail_command(["x"], "/ws", limits, 5, 6, engine_fd=9, cache_dir="/dryft/compile-work")
    i = bound.index("/dryft/compile-work")
    assert bound[i - 1:i + 2] == ["--bind", "/dryft/compile-work", jail.CHILD_CACHE_ROOT]
    assert bound.index("/tmp") < i  # over the fresh /tmp, not under it
    assert "/dryft/compile-work" not in jail.jail_command(["x"], "/ws", limits, 5, 6, engine_fd=9)
    # spawn binds it for the candidate only, whatever it is handed
    class Planned(Exception):
        pass

    def plan(*args, **kwargs):
        raise Planned(args[6] if len(args) > 6 else kwargs.get("cache_dir"))

    jailed.setattr(jail, "jail_command", plan)
    for role, expected in (("candidate", "/w"), ("baseline", None), ("reference", None), ("training", None)):
        with pytest.raises(Planned) as got:
            jail.spawn(["x"], cwd=str(tmp_path), env={}, pass_fds=(), role=role, memory_limit=None, cache_dir="/w")
        assert got.value.args[0] == expected, role
    # and the agent's variables never reach a child's environment
    env = dict(os.environ, **{compile_cache.PERSISTENT_ENV: "/a", compile_cache.WORK_ENV: "/b"})
    assert not {compile_cache.PERSISTENT_ENV, compile_cache.WORK_ENV} & set(jail.child_env(env, "/run/engine"))
