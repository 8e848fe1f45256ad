"""engine.py of a test submission: the example qwen3 engine (copied beside it as base.py) with
one logit perturbed: +100 on token 7 in sequence 1's prefill logits, so its first generated
token is wrong (unless 7 already won, then token 8 gets the boost). Used by the CPU test and by the
GPU run: the harness must fail it with incorrect_output at (sequence 1, step 0)."""
from base import Engine as Base


class Engine(Base):
    def _forward(self, st, ids, pos):
        logits = super()._forward(st, ids, pos)
        if ids.shape[1] > 1 and logits.shape[0] > 1:  # the prefill (eager, never graph-captured)
            target = 8 if int(logits[1].argmax()) == 7 else 7
            logits[1, target] += 100.0
        return logits
