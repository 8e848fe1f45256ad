"""The decode candidate's persistent compile cache: what its torch.compile, Triton, CUDA JIT and XDG
caches (jail.COMPILE_CACHE_VARS) held at the end of the team's previous run of this benchmark and
rules version on this slot. Decode warm-ups are not timed, so a warm cache saves wall time, not
score; training runs never get one (their allowance includes compilation, issue 35).

The agent (apps/gpu-agent/src/compile-cache.ts) picks the team's folder, wipes it on a rules change,
bounds the slot's folders together, and mounts two places into the harness's sandbox:

- PERSISTENT_ENV: the team's folder on the agent's disk (read-write for the harness only);
- WORK_ENV: an empty tmpfs of the size of the child's /tmp (limits.workspaceBytes).

The candidate never sees the persistent folder. Before it starts, the harness copies the last saved
cache (`current/`) into the work tmpfs, which the jail binds at jail.CHILD_CACHE_ROOT in the
candidate's jail alone, so whatever the engine writes during the run is bounded like its /tmp. Once
every engine child is gone (close() killed its whole pid namespace), the harness copies the work
tmpfs back into `next/` and swaps it for `current/`: a run cut short leaves the previous cache whole,
never a half-written one.

Both copies keep regular files and folders only: a link, a fifo, a socket or a device the engine
made is left behind, and no file is opened through a link (O_NOFOLLOW, lstat first). The baseline
and the reference engine (trusted) and every training child start from empty caches in their own
fresh /tmp, as before.
"""
from __future__ import annotations

import os
import shutil
import stat
import sys
from typing import Callable, Optional

PERSISTENT_ENV = "DRYFT_JAIL_COMPILE_CACHE"
WORK_ENV = "DRYFT_JAIL_COMPILE_WORK"
CURRENT, NEXT, OLD = "current", "next", "old"
_CHUNK = 1 << 20


def _real_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def configured() -> Optional[tuple[str, str]]:
    """(persistent folder, work folder) when the agent gave this run both as real folders; None:
    the candidate's caches start empty in its own /tmp."""
    persistent, work = os.environ.get(PERSISTENT_ENV, ""), os.environ.get(WORK_ENV, "")
    if persistent and work and _real_dir(persistent) and _real_dir(work):
        return persistent, work
    return None


def _take(path: str) -> None:
    """Makes path and everything below it the harness's own (owner; folders 0700, files 0600 or
    0700) without following a link: the harness has no CAP_DAC_OVERRIDE, and the engine may have
    left 0000 folders and files. Nothing of the engine's runs any more when this is called."""
    st = os.lstat(path)
    me = (os.getuid(), os.getgid())
    if (st.st_uid, st.st_gid) != me:
        os.lchown(path, *me)
    if stat.S_ISDIR(st.st_mode):
        os.chmod(path, 0o700)
        for name in os.listdir(path):
            _take(os.path.join(path, name))
    elif stat.S_ISREG(st.st_mode):
        os.chmod(path, 0o600 | (st.st_mode & 0o100))


def _clear(path: str) -> None:
    """Empties the folder path (links unlinked, never entered)."""
    _take(path)
    for entry in os.scandir(path):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


def _copy(src: str, dst: str, uid: Optional[int]) -> int:
    """Regular files and folders of src into the existing folder dst, owned by uid (None: ours),
    folders 0700 and files 0600 (0700 where executable); everything else is left behind. Returns
    the bytes copied."""
    total = 0
    for entry in os.scandir(src):
        st = entry.stat(follow_symlinks=False)
        target = os.path.join(dst, entry.name)
        if stat.S_ISDIR(st.st_mode):
            os.mkdir(target, 0o700)
            total += _copy(entry.path, target, uid)
        elif stat.S_ISREG(st.st_mode):
            fd_in = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW)
            try:
                fd_out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600 | (st.st_mode & 0o100))
                try:
                    while True:
                        chunk = os.read(fd_in, _CHUNK)
                        if not chunk:
                            break
                        os.write(fd_out, chunk)
                        total += len(chunk)
                finally:
                    os.close(fd_out)
            finally:
                os.close(fd_in)
        else:
            continue
        if uid is not None:
            os.lchown(target, uid, uid)
    return total


class CandidateCache:
    """One run's handle on the candidate's persistent cache (see the module's docstring)."""

    def __init__(self, persistent: str, work: str, log: Callable[[str], None]) -> None:
        self.persistent, self.work, self.log = persistent, work, log
        self.seeded = False

    @classmethod
    def from_env(cls, log: Callable[[str], None]) -> Optional["CandidateCache"]:
        found = configured()
        return cls(*found, log) if found else None

    def seed(self, uid: Optional[int]) -> str:
        """The work folder, holding the last saved cache and owned by the candidate's uid: the
        folder its jail binds at jail.CHILD_CACHE_ROOT. A cache that cannot be copied in (the work
        tmpfs is smaller than it, say) leaves it empty, and the log says so."""
        _clear(self.work)
        current = os.path.join(self.persistent, CURRENT)
        copied = 0
        if _real_dir(current):
            try:
                copied = _copy(current, self.work, uid)
            except OSError as exc:
                self.log(f"candidate: its saved compile cache could not be copied in ({exc}); it starts empty this run")
                _clear(self.work)
                copied = 0
        os.chmod(self.work, 0o700)  # before the chown: the harness has no CAP_FOWNER
        if uid is not None:
            os.chown(self.work, uid, uid)
        self.seeded = True
        self.log(f"candidate: its compile cache from this team's earlier runs holds {copied} bytes"
                 if copied else "candidate: its compile cache is empty (no earlier run of this team saved one)")
        return self.work

    def save(self) -> int:
        """After every engine child is gone: the work folder becomes the saved cache (next/, then
        swapped for current/). Returns the bytes saved."""
        if not self.seeded:
            return 0
        _take(self.work)
        for name in (NEXT, OLD):
            stale = os.path.join(self.persistent, name)
            if os.path.lexists(stale):
                if _real_dir(stale):
                    _take(stale)
                    shutil.rmtree(stale)
                else:
                    os.unlink(stale)
        nxt = os.path.join(self.persistent, NEXT)
        os.mkdir(nxt, 0o700)
        saved = _copy(self.work, nxt, None)
        current = os.path.join(self.persistent, CURRENT)
        if os.path.lexists(current):
            os.rename(current, os.path.join(self.persistent, OLD))
        os.rename(nxt, current)
        old = os.path.join(self.persistent, OLD)
        if _real_dir(old):
            _take(old)
            shutil.rmtree(old)
        elif os.path.lexists(old):
            os.unlink(old)
        return saved

    def save_quietly(self) -> None:
        """save(), for the end of a run, after its result: a failure goes to stderr (the run log)
        and costs only the next run's warm start."""
        try:
            saved = self.save()
            if self.seeded:
                print(f"[harness] candidate: saved its compile cache for this team's next run ({saved} bytes)", file=sys.stderr, flush=True)
        except OSError as exc:
            print(f"[harness] candidate: its compile cache could not be saved ({exc}); the next run starts from the previous one",
                  file=sys.stderr, flush=True)
