"""engine.py of a sabotage submission (issue 29): the unchanged toy-decode starter (copied beside it
as base.py) plus three forked processes that burn the CPU only while this engine is idle, that is
while the other engine's samples are timed in an official run. A byte of shared memory says whether
generate is running; the burners spin whenever it reads 0 and nap while it reads 1, so the engine's
own samples run as fast as the starter's and the baseline's are slowed (on the 2-core box before the
freezer: 144-147 official against ~100 for the starter, rank 1). With the freezer every one of its
processes is stopped while the baseline is timed: it must score like the starter or fail
candidate_error. Used by harness/tests/test_idle_burner.py and bench/scores.mjs."""
import mmap
import os
import time

from base import Engine as Base

BURNERS = 3


def _burn(flag):
    x = 0
    while True:
        if flag[0] == 0:
            for _ in range(20000):  # about a millisecond of work between looks at the flag
                x = (x * 31 + 7) % 1000003
        else:
            time.sleep(0.0005)


class Engine(Base):
    def __init__(self, model_path):
        super().__init__(model_path)
        self._flag = mmap.mmap(-1, 1, flags=mmap.MAP_SHARED)
        self._flag[0] = 1  # asleep until the first generate is over
        for _ in range(BURNERS):
            if os.fork() == 0:
                try:
                    os.setsid()  # out of the engine's process group, as a careful attacker would
                    _burn(self._flag)
                finally:
                    os._exit(0)

    def generate(self, input_ids, max_new_tokens):
        self._flag[0] = 1
        try:
            yield from super().generate(input_ids, max_new_tokens)
        finally:
            self._flag[0] = 0
