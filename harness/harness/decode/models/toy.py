"""The toy decode model: small, deterministic, pure Python integer arithmetic (no torch, no numpy).

Definition (the engines in starters/toy-decode implement exactly this):
  weights  modulus P (prime), vocab V, dim D; embed[V][D], mix[D][D], head[V][D], ints in [0, P)
  state    h = [0] * D before the first token
  feed x   u_i = (sum_j mix[i][j] * h[j] + embed[x][i]) mod P ;  h_i = (u_i * u_i + i + 1) mod P
  logits   logit_v = ((sum_j head[v][j] * h[j]) mod P) * V + (V - 1 - v)
  greedy   next token = argmax_v logit_v after feeding the whole context

The `+ (V - 1 - v)` term makes every logit distinct, so greedy has exactly one answer (no ties),
and the check uses tolerance 0. The squaring keeps the recurrence non-linear, so there is no
closed-form shortcut: an engine either recomputes the state over the whole context every step
(the baseline) or carries it forward (the fast example).
"""
from __future__ import annotations

import json
import random
from typing import Optional

FORMAT = "dryft-toy-decode"


def generate(seed: int = 20261130, vocab: int = 256, dim: int = 8, modulus: int = 65521) -> dict:
    rng = random.Random(seed)
    draw = lambda rows, cols: [[rng.randrange(modulus) for _ in range(cols)] for _ in range(rows)]
    return {
        "format": FORMAT,
        "version": 1,
        "seed": seed,
        "vocab": vocab,
        "dim": dim,
        "modulus": modulus,
        "embed": draw(vocab, dim),
        "mix": draw(dim, dim),
        "head": draw(vocab, dim),
    }


def load(path: str) -> dict:
    import os

    if os.path.isdir(path):
        path = os.path.join(path, "model.json")
    with open(path, encoding="utf-8") as fh:
        weights = json.load(fh)
    if weights.get("format") != FORMAT:
        raise ValueError(f"{path} is not a {FORMAT} model file")
    return weights


class ToyReference:
    """The trusted checker for toy-decode."""

    def __init__(self, path: str) -> None:
        w = load(path)
        self.vocab_size = w["vocab"]
        self.prompt_vocab = w["vocab"]
        self.P = w["modulus"]
        self.dim = w["dim"]
        self.embed, self.mix, self.head = w["embed"], w["mix"], w["head"]
        self.hardware_hint = "cpu"

    def feed(self, h: list[int], x: int) -> list[int]:
        P, e = self.P, self.embed[x]
        out = []
        for i, row in enumerate(self.mix):
            u = (sum(a * b for a, b in zip(row, h)) + e[i]) % P
            out.append((u * u + i + 1) % P)
        return out

    def logits(self, h: list[int]) -> list[int]:
        P, V = self.P, self.vocab_size
        return [(sum(a * b for a, b in zip(row, h)) % P) * V + (V - 1 - v) for v, row in enumerate(self.head)]

    def greedy(self, prompt: list[int], steps: int) -> list[int]:
        h = [0] * self.dim
        for x in prompt:
            h = self.feed(h, x)
        out = []
        for _ in range(steps):
            lg = self.logits(h)
            tok = max(range(self.vocab_size), key=lg.__getitem__)
            out.append(tok)
            h = self.feed(h, tok)
        return out

    def verify(self, prompts: list[list[int]], outputs: list[list[int]], tolerance: float) -> Optional[dict]:
        """Teacher-forced over prompt + the candidate's own tokens; first rejected position or None."""
        for s, (prompt, toks) in enumerate(zip(prompts, outputs)):
            h = [0] * self.dim
            for x in prompt:
                h = self.feed(h, x)
            for t, tok in enumerate(toks):
                lg = self.logits(h)
                best = max(range(self.vocab_size), key=lg.__getitem__)
                if lg[tok] < lg[best] - tolerance:
                    return {"sequence": s, "step": t, "token": tok, "tokenLogit": lg[tok], "best": best, "maxLogit": lg[best]}
                h = self.feed(h, tok)
        return None

    def close(self) -> None:
        pass


if __name__ == "__main__":  # regenerate the shipped weights: python -m harness.decode.models.toy OUT.json
    import sys

    with open(sys.argv[1], "w", encoding="utf-8") as fh:
        json.dump(generate(), fh, separators=(",", ":"))
        fh.write("\n")
