"""The untrusted child's own sandbox (the "jail"), built by the trusted parent for every engine or
training child it starts.

The agent runs the harness parent inside bubblewrap (the allowlisted filesystem, no network, its
own pid namespace) and sets DRYFT_JAIL=1. The parent then starts each child through a nested
bubblewrap that gives it:

- its own pid namespace (the parent, the agent's wrapper and every other process of the run are
  not in it: nothing to ptrace, signal or read through /proc; /proc/1 is the child itself);
- its own uid (DRYFT_JAIL_UID + role offset, never 0) when the parent is real root: root-only files
  are unreadable and RLIMIT_NPROC counts this child's processes only; all capabilities gone;
- a seccomp filter (classic BPF built here) refusing ptrace, process_vm_readv/writev, kcmp,
  perf_event_open, bpf, keyctl/add_key/request_key, mount and the new mount API, pivot_root,
  chroot, setns, unshare and clone with namespace flags, TIOCSTI, io_uring, kernel modules, ...;
- fresh /dev (only the GPU nodes the parent sees, i.e. the slot's), /proc, /run, an empty network
  namespace, and two size-capped tmpfs: the workspace (a copy of the submission folder; a decode
  engine's at ENGINE_WORKDIR, the training child's at its own path) and /tmp;
- for decode engines, the same start for all: workspace path, channel descriptor, HOME and cwd
  alike, and address-space randomisation off (ENGINE_WORKDIR, ENGINE_NO_ASLR);
- compile caches below CHILD_CACHE_ROOT in its fresh /tmp, except a decode candidate's, which may
  be its team's saved cache, bound there (compile_cache.py);
- limits: RLIMIT_NPROC, RLIMIT_NOFILE, and RLIMIT_DATA on CPU-only runs (RLIMIT_AS/DATA break
  CUDA's address-space reservations, so GPU memory is the parent's measurer's job).

The parent itself is made non-dumpable (no ptrace or /proc/<pid>/mem by its own uid either).
Without DRYFT_JAIL the child is a plain subprocess (the harness's own tests, development).
"""
from __future__ import annotations

import ctypes
import os
import platform
import select
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Optional

LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jail_launch.py")
SOURCE_MOUNT = "/run/dryft-source"
# Where every engine child (decode: baseline and candidate) finds its workspace (cwd, HOME,
# `--submission`) and its channel descriptor, whatever its folder is outside: the baseline's engine
# folder and the candidate's workspace have paths of different lengths, which made the two
# children's argv and environment differ, and with them the initial stack and memory layout
# (harness/README.md, "The same conditions for both children"). Under the jail's /run tmpfs: the
# root is a read-only bind, where no new top-level folder can be made. None: each child at its own
# folder's path (the training child, and trials of the old way).
ENGINE_WORKDIR: Optional[str] = "/run/engine"
ENGINE_FD = 3
# Engine children start with address-space randomisation off (personality ADDR_NO_RANDOMIZE, set by
# the launcher and inherited through its exec): with it on, each process has its own random layout
# for its whole life.
ENGINE_NO_ASLR = True

GIB = 1 << 30
# The agent gives each slot four uids (DRYFT_JAIL_UID .. +3): the two trusted engines get their own,
# so in a calibration run (baseline beside reference) neither can reach the other either.
ROLE_UID_OFFSET = {"baseline": 0, "candidate": 1, "training": 1, "reference": 2}


#: Told when an untrusted child starts or stops: __main__ forwards it to the agent as a "child"
#: event (the agent blames a harness that dies while the candidate runs on the candidate).
observer = None


def notify(role: str, state: str) -> None:
    if observer is not None:
        try:
            observer(role, state)
        except Exception:
            pass


class JailError(Exception):
    """The sandbox could not be built: the evaluator's fault, never the engine's."""


# -- seccomp --------------------------------------------------------------------------------

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
# Syscalls refused with EPERM. Numbers: x86_64 (asm/unistd_64.h), aarch64 (asm-generic/unistd.h).
DENIED = {
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "kcmp": (312, 272),
    "pidfd_getfd": (438, 438),
    "perf_event_open": (298, 241),
    "bpf": (321, 280),
    "userfaultfd": (323, 282),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "chroot": (161, 51),
    "setns": (308, 268),
    "unshare": (272, 97),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "reboot": (169, 142),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "acct": (163, 89),
    "syslog": (103, 116),
    "quotactl": (179, 60),
    "fanotify_init": (300, 262),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "move_pages": (279, 239),
    "migrate_pages": (256, 238),
    "vhangup": (153, 58),
}
CLONE = (56, 220)
CLONE3 = (435, 435)
IOCTL = (16, 29)
CLONE_NEW_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
EPERM, ENOSYS = 1, 38

_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
RET_ALLOW, RET_KILL_PROCESS, RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000


def seccomp_program(machine: Optional[str] = None) -> bytes:
    """A classic-BPF seccomp program (struct sock_filter[]) for bwrap --seccomp: wrong arch is
    killed, the x32 ABI refused, DENIED answers EPERM, clone with namespace flags EPERM, clone3
    ENOSYS (libc falls back to clone, whose flags can be checked), ioctl TIOCSTI/TIOCLINUX EPERM."""
    machine = machine or platform.machine()
    if machine not in AUDIT_ARCH:
        raise JailError(f"no seccomp syscall table for {machine}")
    col = 0 if machine == "x86_64" else 1
    prog: list = []  # (code, jt, jf, k) with jt/jf as labels or ints

    def op(code, k, jt=0, jf=0):
        prog.append([code, jt, jf, k])

    op(_LD_W_ABS, 4)  # seccomp_data.arch
    op(_JEQ, AUDIT_ARCH[machine], jt=1)
    op(_RET, RET_KILL_PROCESS)
    op(_LD_W_ABS, 0)  # seccomp_data.nr
    if machine == "x86_64":
        op(_JGE, 0x40000000, jt="deny")
    for nums in DENIED.values():
        op(_JEQ, nums[col], jt="deny")
    op(_JEQ, CLONE3[col], jt="enosys")
    op(_JEQ, CLONE[col], jt="clone")
    op(_JEQ, IOCTL[col], jt="ioctl")
    op(_RET, RET_ALLOW)
    labels = {"clone": len(prog)}
    op(_LD_W_ABS, 16)  # args[0], low 32 bits (little endian)
    op(_JSET, CLONE_NEW_FLAGS, jt="deny")
    op(_RET, RET_ALLOW)
    labels["ioctl"] = len(prog)
    op(_LD_W_ABS, 24)  # args[1], low 32 bits
    op(_JEQ, TIOCSTI, jt="deny")
    op(_JEQ, TIOCLINUX, jt="deny")
    op(_RET, RET_ALLOW)
    labels["deny"] = len(prog)
    op(_RET, RET_ERRNO | EPERM)
    labels["enosys"] = len(prog)
    op(_RET, RET_ERRNO | ENOSYS)
    out = b""
    for i, (code, jt, jf, k) in enumerate(prog):
        jt = labels[jt] - i - 1 if isinstance(jt, str) else jt
        jf = labels[jf] - i - 1 if isinstance(jf, str) else jf
        if not (0 <= jt <= 255 and 0 <= jf <= 255):
            raise JailError("seccomp program too long for a jump")
        out += struct.pack("<HBBI", code, jt, jf, k)
    return out


# -- the parent -----------------------------------------------------------------------------

def make_parent_undumpable() -> None:
    """prctl(PR_SET_DUMPABLE, 0): no ptrace attach, no /proc/<pid>/mem, no core dump of the parent,
    even by a process of the same uid."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    except Exception:
        pass


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise JailError(f"{name}={raw!r} is not an integer")


def human(n: int) -> str:
    for unit, size in (("GiB", GIB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.4g} {unit}"
    return f"{n} bytes"


@dataclass
class JailLimits:
    uid: Optional[int]  # None: the uid cannot be changed here (unprivileged agent)
    nproc: int
    nofile: int
    data: Optional[int]  # RLIMIT_DATA in bytes (CPU-only children), None when GPU nodes exist
    memory_limit: Optional[int]  # the limit data was derived from (for messages)
    workspace: int  # bytes of each tmpfs (workspace, /tmp)


def enabled() -> bool:
    return os.environ.get("DRYFT_JAIL") == "1"


def gpu_nodes() -> list[str]:
    try:
        return sorted("/dev/" + n for n in os.listdir("/dev") if n.startswith("nvidia"))
    except OSError:
        return []


def _uid_mapped(uid: int) -> bool:
    try:
        with open("/proc/self/uid_map") as fh:
            for line in fh:
                inside, _outside, count = (int(x) for x in line.split())
                if inside <= uid < inside + count:
                    return True
    except (OSError, ValueError):
        return False
    return False


def limits_for(role: str, memory_limit: Optional[int]) -> JailLimits:
    base = _env_int("DRYFT_JAIL_UID", 61000)
    uid = base + ROLE_UID_OFFSET.get(role, 3)
    if uid <= 0:
        raise JailError(f"DRYFT_JAIL_UID={base} gives uid {uid}; the engine never runs as root")
    if os.geteuid() != 0 or not _uid_mapped(uid):
        uid = None
    machine_default = _env_int("DRYFT_JAIL_MEMORY", 0) or None
    limit = memory_limit or machine_default
    data = None
    if limit and not gpu_nodes():
        data = limit
    return JailLimits(
        uid=uid,
        nproc=_env_int("DRYFT_JAIL_NPROC", 2048),
        nofile=_env_int("DRYFT_JAIL_NOFILE", 4096),
        data=data,
        memory_limit=limit,
        workspace=_env_int("DRYFT_JAIL_WORKSPACE_BYTES", GIB),
    )


def engine_view(workdir: str, fd: int) -> tuple[str, int]:
    """Where an engine child started with spawn(engine=True) sees its workspace and its channel
    descriptor: in the jail ENGINE_WORKDIR and ENGINE_FD, the same for every engine child; without
    the jail (development, the harness's own tests) the folder and the descriptor themselves."""
    if enabled() and ENGINE_WORKDIR:
        return ENGINE_WORKDIR, ENGINE_FD
    return os.path.abspath(workdir), fd


#: The compile caches an untrusted child may fill (torch.compile's Inductor, Triton, the CUDA JIT,
#: everything under XDG). A training run's allowance includes compilation, and on the H200 the same
#: torch.compile'd model reached its first update in 28.6-32.0 s with an empty cache and in
#: 13.0-15.2 s with a warm one (harness/GPU_RESULTS.md, "Compile caches"): so every training run
#: starts cold, in folders of its own, and no team's compiled artifacts are ever read by another's
#: run. A cache variable set on the agent's host (a shared folder) is never passed on. A decode
#: candidate's warm-ups are not timed: there the harness may hand it the team's own saved cache
#: (compile_cache.py) at the same path, so the environment stays the same for every child.
COMPILE_CACHE_VARS = {
    "TORCHINDUCTOR_CACHE_DIR": "inductor",
    "TRITON_CACHE_DIR": "triton",
    "CUDA_CACHE_PATH": "nv",
    "XDG_CACHE_HOME": "xdg",
}


#: Where every jailed child's compile caches live (COMPILE_CACHE_VARS below it): its fresh /tmp,
#: where a decode candidate with a persistent cache (compile_cache.py) has that bound instead.
CHILD_CACHE_ROOT = "/tmp/dryft-caches"


def fresh_caches(root: str) -> dict:
    """The compile-cache variables, each a folder of its own below root (made empty per run)."""
    return {var: os.path.join(root, name) for var, name in COMPILE_CACHE_VARS.items()}


def child_env(env: dict, home: str) -> dict:
    """The child's environment: the parent's, less the jail's settings; HOME is its own workspace
    (caches such as ~/.triton or ~/.cache land in its size-capped tmpfs), at the path it sees it;
    the compile caches in its own fresh /tmp (for a decode candidate with a persistent cache, the
    same path: jail_command binds that folder there)."""
    out = {k: v for k, v in env.items() if not k.startswith("DRYFT_JAIL")}
    out["HOME"] = home
    out["TMPDIR"] = "/tmp"
    out.update(fresh_caches(CHILD_CACHE_ROOT))
    return out


def kept_under_tmp() -> list[str]:
    """What the jail's fresh /tmp must not hide: the harness (the launcher and child.py), the
    interpreter and the paths the evaluator names in DRYFT_JAIL_READ (the model). A CI clone or a
    checkout under /tmp would otherwise vanish inside the jail. Nothing else of /tmp is kept: not the
    agent's events socket folder (/tmp/dryft-ev-*), which its sandbox mounts there read-only and
    which an engine must never reach."""
    wanted = [os.path.dirname(os.path.dirname(LAUNCHER)), sys.prefix, sys.base_prefix,
              os.path.dirname(os.path.realpath(sys.executable))]
    wanted += [p for p in os.environ.get("DRYFT_JAIL_READ", "").split(os.pathsep) if p]
    keep: list[str] = []
    for path in sorted({os.path.realpath(p) for p in wanted}):
        if not path.startswith("/tmp/") or not os.path.exists(path):
            continue
        if any(path == k or path.startswith(k + "/") for k in keep):
            continue
        keep.append(path)
    return keep


def jail_command(cmd: list[str], workdir: str, limits: JailLimits, seccomp_fd: int, ready_fd: int,
                 engine_fd: Optional[int] = None, cache_dir: Optional[str] = None) -> list[str]:
    """The bubblewrap command line. engine_fd: an engine child's channel descriptor, which it then
    sees at the same path and number as every other engine child (engine_view), with address-space
    randomisation off (ENGINE_NO_ASLR); None: the child sees its folder at its own path. cache_dir:
    the decode candidate's compile cache (compile_cache.CandidateCache.seed), bound read-write at
    CHILD_CACHE_ROOT; None: the caches start empty in the child's fresh /tmp."""
    source = os.path.abspath(workdir)
    engine = engine_fd is not None
    workdir, inside_fd = engine_view(source, engine_fd) if engine else (source, None)
    bwrap = os.environ.get("DRYFT_JAIL_BWRAP", "/usr/bin/bwrap")
    size = str(limits.workspace)
    args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev"]
    for node in gpu_nodes():
        args += ["--dev-bind", node, node]
    args += [
        "--proc", "/proc",
        "--tmpfs", "/run",
        "--size", size, "--tmpfs", "/tmp",
    ]
    kept = kept_under_tmp()
    # bwrap gives the folders it creates above a bind the modes of their sources (a 0700
    # /tmp/pytest-of-root, say), which the engine's uid could not enter: make them 0755 first.
    parents: list[str] = []
    for path in kept + [workdir]:
        parent = os.path.dirname(path)
        while parent.startswith("/tmp/") and parent not in parents:
            parents.append(parent)
            parent = os.path.dirname(parent)
    for parent in sorted(parents, key=lambda p: p.count("/")):
        args += ["--perms", "0755", "--dir", parent]
    for path in kept:
        args += ["--ro-bind", path, path]
    if cache_dir is not None:
        args += ["--bind", cache_dir, CHILD_CACHE_ROOT]
    args += [
        "--ro-bind", source, SOURCE_MOUNT,
        "--size", size, "--tmpfs", workdir,
        "--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts", "--hostname", "dryft-engine",
        "--unshare-cgroup-try",
        "--as-pid-1", "--die-with-parent",
        "--cap-drop", "ALL",
    ]
    if limits.uid is not None:
        # Only for the launcher's first steps (copy the workspace, chown it, change uid): setresuid
        # to a non-zero uid clears every capability before the engine's code runs.
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_CHOWN"]
    args += ["--chdir", "/", "--seccomp", str(seccomp_fd), "--"]
    launch = [sys.executable, "-I", "-S", LAUNCHER,
              "--ready-fd", str(ready_fd), "--source", SOURCE_MOUNT, "--workdir", workdir,
              "--nproc", str(limits.nproc), "--nofile", str(limits.nofile),
              "--data", str(limits.data or 0)]
    if limits.uid is not None:
        launch += ["--uid", str(limits.uid)]
    if engine and inside_fd != engine_fd:
        launch += ["--move-fd", f"{engine_fd}:{inside_fd}"]
    if engine and ENGINE_NO_ASLR:
        launch += ["--no-aslr"]
    return args + launch + ["--"] + cmd


def spawn(cmd: list[str], *, cwd: str, env: dict, pass_fds: tuple, role: str, memory_limit: Optional[int],
          stdin=subprocess.DEVNULL, engine: bool = False, cgroup: Optional[str] = None,
          cache_dir: Optional[str] = None) -> tuple[subprocess.Popen, Optional[JailLimits]]:
    """Start an untrusted child: jailed when DRYFT_JAIL=1, else a plain subprocess. Either way in a
    new session (its own process group) with only pass_fds open beyond stdio. engine: a decode
    engine child, started alike with every other (engine_view; cmd names the workspace and
    pass_fds[0] as engine_view gives them). cgroup: a cgroup v2 folder the child joins before it
    runs anything (in_cgroup), so that nothing it forks is ever born outside it. cache_dir: the
    decode candidate's compile cache, bound in its jail only (for any other role it is ignored)."""
    if not enabled():
        proc = subprocess.Popen(in_cgroup(cmd, cgroup), cwd=cwd, stdin=stdin, pass_fds=pass_fds, close_fds=True,
                                start_new_session=True, env=env)
        notify(role, "started")
        return proc, None
    limits = limits_for(role, memory_limit)
    program = seccomp_program()
    sec_r, sec_w = os.pipe()
    ready_r, ready_w = os.pipe()
    try:
        os.write(sec_w, program)  # a few hundred bytes: fits the pipe's buffer
        os.close(sec_w)
        sec_w = -1
        engine_fd = pass_fds[0] if engine else None
        home = engine_view(cwd, 0)[0] if engine else os.path.abspath(cwd)
        proc = subprocess.Popen(
            in_cgroup(jail_command(cmd, cwd, limits, sec_r, ready_w, engine_fd, cache_dir if role == "candidate" else None), cgroup),
            stdin=stdin, pass_fds=tuple(pass_fds) + (sec_r, ready_w), close_fds=True,
            start_new_session=True, env=child_env(env, home),
        )
    except OSError as exc:
        os.close(ready_r)
        raise JailError(f"could not start bubblewrap for the engine's sandbox: {exc}")
    finally:
        for fd in (sec_r, sec_w, ready_w):
            if fd >= 0:
                os.close(fd)
    try:
        deadline = time.monotonic() + 120
        data = b""
        while time.monotonic() < deadline:
            r, _, _ = select.select([ready_r], [], [], max(0.0, deadline - time.monotonic()))
            if r:
                data = os.read(ready_r, 4096)
                break
    finally:
        os.close(ready_r)
    if data != b"ok":
        try:
            proc.kill()
            code = proc.wait(timeout=10)
        except Exception:
            code = None
        why = data.decode("utf-8", "replace").strip() or f"bubblewrap exited with code {code}; its message is in the run log"
        raise JailError(f"The evaluator could not build the engine's sandbox: {why}")
    notify(role, "started")
    return proc, limits


def in_cgroup(cmd: list[str], cgroup: Optional[str]) -> list[str]:
    """cmd, started by a shell that first moves itself into the cgroup (writing 0 to cgroup.procs
    moves the writer) and then execs cmd in the same process. Moving the child in after it started
    raced with it: a child that forked at once (a double fork, say) had its fork born outside, where
    the freezer could not hold it (CI saw 3 of 4 processes in the cgroup). Where the write fails the
    child starts anyway and the freezer's adopt() moves it, or falls back to signals."""
    if cgroup is None:
        return cmd
    return ["/bin/sh", "-c", 'echo 0 > "$1/cgroup.procs" 2>/dev/null; shift; exec "$@"', "sh", cgroup, *cmd]


def family(root: int) -> list[int]:
    """root, its process group and every descendant (from /proc ppid links): in the jail the child
    lives in its own pid namespace and may leave the group, but never the tree."""
    parents: dict = {}
    groups: dict = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return [root]
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        rest = stat[stat.rfind(b")") + 2:].split()
        if len(rest) > 2:
            parents[int(name)] = int(rest[1])
            groups[int(name)] = int(rest[2])
    out = {root} | {pid for pid, g in groups.items() if g == root}
    changed = True
    while changed:
        changed = False
        for pid, ppid in parents.items():
            if ppid in out and pid not in out:
                out.add(pid)
                changed = True
    return sorted(out)


def explain(text: str, limits: Optional[JailLimits]) -> Optional[tuple[str, str]]:
    """A limit the engine hit, from its own error text: (failure code, message) or None."""
    if limits is None:
        return None
    if "MemoryError" in text and limits.data:
        return "memory_limit", f"the engine ran out of its memory limit ({human(limits.memory_limit or limits.data)})"
    if "[Errno 28]" in text or "No space left on device" in text:
        return "candidate_error", f"the workspace is full (limit {human(limits.workspace)} each for the workspace and /tmp)"
    if "[Errno 11]" in text and ("fork" in text or "BlockingIOError" in text or "thread" in text) and limits.uid is not None:
        return "candidate_error", f"the process limit was reached (limit {limits.nproc} processes and threads)"
    if "can't start new thread" in text and limits.uid is not None:
        return "candidate_error", f"the process limit was reached (limit {limits.nproc} processes and threads)"
    if "[Errno 24]" in text:
        return "candidate_error", f"the open file limit was reached (limit {limits.nofile})"
    return None
