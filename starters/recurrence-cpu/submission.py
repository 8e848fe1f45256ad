"""Sample submission for `recurrence-cpu`, the CPU practice benchmark of the single-file product.

Same contract and `benchmark` API as `deep-recurrence` (see starters/deep-recurrence), sized for a
laptop: it learns the practice tasks well above chance in under a minute on two CPU cores, and the
loss curve streams to the run page while it trains.

The model is recurrent in depth the cheap way: a GRU reads the known terms, then keeps applying
its learned update once per MASK position, so predicting the k-th unknown term takes k learned
steps. The evaluator still owns the loop, the clock and the score.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from benchmark import ModelSpec, OptimizerBundle, OptimizerSpec, Submission, TokenLossBatch, assert_model_state

CONFIG = dict(width=64, layers=1, batch=64, lr=1e-2, eval_batch=1024)


class RecurrentModel(nn.Module):
    def __init__(self, spec: ModelSpec, width: int, layers: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(spec.vocab_size, width)
        self.gru = nn.GRU(width, width, num_layers=layers, batch_first=True)
        self.head = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, spec.num_classes))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h, _ = self.gru(self.embed(ids))
        return self.head(h)


def build_model(spec: ModelSpec) -> nn.Module:
    model = RecurrentModel(spec, CONFIG["width"], CONFIG["layers"]).to(spec.device)
    assert_model_state(model, spec)  # parameters + persistent buffers under the ceiling
    return model


def build_optimizer(model: nn.Module, spec: OptimizerSpec) -> OptimizerBundle:
    optimizer = torch.optim.Adam(model.parameters(), lr=CONFIG["lr"])
    warmup_updates = 30

    def schedule(update: int) -> float:
        # Warm up by updates, then follow the clock: the evaluator stops at its deadline.
        warm = min(1.0, (update + 1) / warmup_updates)
        return warm * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * spec.elapsed_fraction())))

    return OptimizerBundle(optimizer, scheduler=torch.optim.lr_scheduler.LambdaLR(optimizer, schedule))


def token_training_loss(batch: TokenLossBatch) -> torch.Tensor:
    # Mean cross-entropy over the scored (masked) positions.
    return F.cross_entropy(batch.logits[batch.valid_mask], batch.labels[batch.valid_mask])


SUBMISSION = Submission(
    build_model=build_model,
    build_optimizer=build_optimizer,
    token_training_loss=token_training_loss,
    batch_size=CONFIG["batch"],
    eval_batch_size=CONFIG["eval_batch"],
)
