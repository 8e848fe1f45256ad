"""Baseline engine for toy-decode: correct and deliberately slow.

The toy model (pure-Python integer arithmetic, no torch) is defined in the benchmark's README:
a state h of `dim` ints mod P, updated by every token, and logits computed from h. This baseline
recomputes h from scratch over the whole context (prompt + tokens generated so far) at every
step, the way a transformer without a KV cache would. Carry the state forward instead and you
are much faster (see examples/fast/engine.py).
"""
import json
import os


class Engine:
    def __init__(self, model_path: str) -> None:
        # model_path is the model's folder (model.json in it) or the file itself
        if os.path.isdir(model_path):
            model_path = os.path.join(model_path, "model.json")
        with open(model_path, encoding="utf-8") as fh:
            w = json.load(fh)
        self.P, self.V, self.D = w["modulus"], w["vocab"], w["dim"]
        self.embed, self.mix, self.head = w["embed"], w["mix"], w["head"]

    def _state(self, context):
        P = self.P
        h = [0] * self.D
        for x in context:
            e = self.embed[x]
            u = [(sum(a * b for a, b in zip(row, h)) + e[i]) % P for i, row in enumerate(self.mix)]
            h = [(v * v + i + 1) % P for i, v in enumerate(u)]
        return h

    def _next(self, h):
        P, V = self.P, self.V
        best, best_logit = 0, -1
        for v, row in enumerate(self.head):
            logit = (sum(a * b for a, b in zip(row, h)) % P) * V + (V - 1 - v)
            if logit > best_logit:
                best, best_logit = v, logit
        return best

    def generate(self, input_ids, max_new_tokens):
        contexts = [list(seq) for seq in input_ids]
        for _ in range(max_new_tokens):
            step = [self._next(self._state(ctx)) for ctx in contexts]
            for ctx, tok in zip(contexts, step):
                ctx.append(tok)
            yield step
