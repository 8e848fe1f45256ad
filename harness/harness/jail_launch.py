"""Trusted first step inside the engine's jail (see jail.py), run as pid 1 of the child's pid
namespace before any engine code: copies the submission into the size-capped workspace tmpfs,
changes to the engine's uid (dropping every capability), sets the limits, re-arms the parent-death
signal (a uid change clears it), says "ok" on the ready descriptor and execs the child.

Standard library only. Usage: jail_launch.py --ready-fd N --source DIR --workdir DIR --nproc N
--nofile N --data BYTES [--uid UID] [--move-fd FROM:TO] [--no-aslr] -- COMMAND...
"""
import ctypes
import fcntl
import os
import resource
import shutil
import signal
import sys


def fail(ready, message):
    try:
        os.write(ready, message.encode()[:4000])
    except OSError:
        pass
    sys.exit(111)


def copy_tree(source, target, uid):
    for name in os.listdir(source):
        src, dst = os.path.join(source, name), os.path.join(target, name)
        if os.path.islink(src):
            os.symlink(os.readlink(src), dst)
        elif os.path.isdir(src):
            os.mkdir(dst, 0o755)
            copy_tree(src, dst, uid)
        elif os.path.isfile(src):
            shutil.copyfile(src, dst)
            os.chmod(dst, os.stat(src).st_mode & 0o755 | 0o600)
        else:
            continue
        if uid is not None:
            os.lchown(dst, uid, uid)


def main():
    argv = sys.argv[1:]
    split = argv.index("--")
    opts, command = argv[:split], argv[split + 1:]
    get = lambda name: opts[opts.index(name) + 1] if name in opts else None  # noqa: E731
    ready = int(get("--ready-fd"))
    uid = int(get("--uid")) if get("--uid") is not None else None
    workdir = get("--workdir")
    try:
        copy_tree(get("--source"), workdir, uid)
        os.chmod(workdir, 0o700)
        os.chmod("/tmp", 0o1777)
        if uid is not None:
            os.chown(workdir, uid, uid)
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            if os.getresuid() != (uid, uid, uid) or os.getuid() == 0:
                fail(ready, f"could not change to uid {uid}")
            with open("/proc/self/status") as fh:
                caps = [line.split()[1] for line in fh if line.startswith(("CapEff:", "CapPrm:", "CapAmb:"))]
            if any(int(c, 16) for c in caps):
                fail(ready, "capabilities survived the uid change")
            resource.setrlimit(resource.RLIMIT_NPROC, (int(get("--nproc")),) * 2)
        nofile = int(get("--nofile"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        data = int(get("--data"))
        if data > 0:
            resource.setrlimit(resource.RLIMIT_DATA, (data, data))
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(1, signal.SIGKILL, 0, 0, 0) != 0:  # PR_SET_PDEATHSIG
            fail(ready, "could not set the parent-death signal")
        if get("--move-fd") is not None:
            # The engine's channel at one number for every engine child (the same argv for all).
            src, dst = (int(x) for x in get("--move-fd").split(":"))
            if ready == dst:
                ready = fcntl.fcntl(ready, fcntl.F_DUPFD_CLOEXEC, 10)
            os.dup2(src, dst)  # inheritable: it survives the exec
            os.close(src)
        if "--no-aslr" in opts:
            # ADDR_NO_RANDOMIZE for the engine (kept through exec): every child starts from the
            # same address-space layout instead of a random one of its own. The engine's own
            # layout guards nothing here: it is untrusted code already, and the boundary is the
            # namespaces, the uid and the seccomp filter, not where its own heap lies.
            current = libc.personality(0xFFFFFFFF)
            if current == -1 or libc.personality(current | 0x0040000) == -1:
                fail(ready, "could not turn off address-space randomisation for the engine")
    except SystemExit:
        raise
    except BaseException as exc:
        fail(ready, f"{type(exc).__name__}: {exc}")
    os.chdir(workdir)
    os.write(ready, b"ok")
    os.close(ready)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
