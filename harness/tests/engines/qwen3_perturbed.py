"""engine.py of a test submission: the example qwen3 engine (copied beside it as base.py) with
one logit perturbed: +100 on token 7 in sequence 1's prefill logits, so its first generated
token is wrong (unless 7 already won, then token 8 gets the boost). Used by the CPU test and by the
GPU run: the harness must fail it with incorrect_output at (sequence 1, step 0).

On the GPU the example captures its prefill as a CUDA graph, so the perturbation is made of tensor
operations only (no .item() or int(): a host sync inside a capture invalidates it)."""
import torch

from base import Engine as Base


class Engine(Base):
    def _forward(self, st, ids, pos):
        logits = super()._forward(st, ids, pos)
        if ids.shape[1] > 1 and logits.shape[0] > 1:  # the prefill (a CUDA graph on the GPU)
            row = logits[1]
            target = torch.where(row.argmax() == 7, 8, 7).view(1)
            row.index_add_(0, target, torch.full((1,), 100.0, dtype=row.dtype, device=row.device))
        return logits
