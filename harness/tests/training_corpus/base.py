# Shared prelude of the training cheat corpus: the test writes base.py + a case file into one
# submission.py. A small, honest model that trains in seconds on a CPU.
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from benchmark import ModelSpec, OptimizerBundle, OptimizerSpec, Submission, TokenLossBatch


class TinyModel(nn.Module):
    def __init__(self, spec: ModelSpec, width: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(spec.vocab_size, width)
        self.mix = nn.Linear(width * spec.sequence_length, width * spec.sequence_length)
        self.head = nn.Linear(width, spec.num_classes)

    def forward(self, ids):
        h = self.embed(ids)
        b, l, w = h.shape
        h = h + F.gelu(self.mix(h.reshape(b, l * w))).reshape(b, l, w)
        return self.head(h)


def build_model(spec: ModelSpec):
    return TinyModel(spec).to(spec.device)


def build_optimizer(model, spec: OptimizerSpec):
    return OptimizerBundle(torch.optim.Adam(model.parameters(), lr=3e-3))


BATCH = 64
