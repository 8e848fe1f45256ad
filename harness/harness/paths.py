"""Paths in what teams see: tracebacks and messages never show the agent's own folders.

A submission runs from a folder of the agent's work directory (``.data/agent-work/runs/<run>/workspace``
by default, or wherever the sandbox maps it); a traceback from it names that absolute path, and the
harness's own files by where the agent is installed. Teams see paths relative to their submission
(``engine.py``, ``kernels/attn.py``) and ``<harness>/…`` for the evaluator's own code.
"""
from __future__ import annotations

import os
import re

HARNESS_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A workspace path the exact replacement missed (a sandbox that mounts it elsewhere, a symlinked
# work directory): the agent's layout, up to and including the workspace folder.
_AGENT_WORKSPACE = re.compile(r"(?:/[^\s\"'/]+)*/runs/[0-9A-Za-z_-]+/workspace/")
_AGENT_WORK_DIR = re.compile(r"(?:/[^\s\"'/]+)*/\.data/agent-work/")


def _variants(folder: str) -> list:
    out = {os.path.abspath(folder), os.path.realpath(folder)}
    return sorted((p.rstrip(os.sep) for p in out if p and p != os.sep), key=len, reverse=True)


def relative_to_submission(text: str, submission_dir: str) -> str:
    """``text`` with the submission folder's absolute path made relative, the harness's own folder
    shown as ``<harness>``, and any other path into the agent's work directory cut to what follows it."""
    if not text:
        return text
    for root in _variants(submission_dir):
        text = text.replace(root + os.sep, "")
        text = re.sub(re.escape(root) + r"(?![\w.-])", ".", text)
    for root in _variants(HARNESS_ROOT):
        text = text.replace(root + os.sep, "<harness>" + os.sep)
    text = _AGENT_WORKSPACE.sub("", text)
    return _AGENT_WORK_DIR.sub("<agent-work>/", text)
