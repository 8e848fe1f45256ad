"""Dryft's trusted evaluator. `python -m harness run ...` is started by the GPU agent for every run."""

__version__ = "0.1.0"
