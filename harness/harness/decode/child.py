"""The untrusted side: runs inside the engine's own process, started by the parent as a script.

Everything here can be patched by the submission (it shares the process), so nothing here is
trusted: it only turns the Engine contract into frames on the private socket. The parent
timestamps what arrives, validates it, and decides. Only the standard library is imported here so
that the submission's process starts with nothing of the harness in it.

Usage (by the parent only): python child.py --fd N --submission DIR
"""
import gc
import importlib.util
import json
import operator
import os
import socket
import struct
import sys
import time
import traceback
from array import array

HEADER = struct.Struct("<cI")


class ContractError(Exception):
    pass


def _recv_exact(sock, n):
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _send(sock, tag, payload=b""):
    sock.sendall(HEADER.pack(tag, len(payload)) + payload)


def _send_error(sock, kind, message, tb):
    _send(sock, b"E", json.dumps({"kind": kind, "message": message, "traceback": tb[-60000:]}).encode())


def _ids(step, index, batch):
    """One yielded step -> array of int64. Accepts a list/tuple of ints (or of objects with
    __index__, such as numpy integers), or anything with .tolist() (a 1-D tensor or array)."""
    if type(step) is list and len(step) == batch:
        # Fast path (a plain list of ints): one C-level conversion, ~1 us for 32 ids. Floats,
        # nested lists and out-of-range values raise here and get the careful path's message.
        try:
            return array("q", step)
        except (TypeError, OverflowError):
            pass
    if not isinstance(step, (list, tuple)) and hasattr(step, "tolist"):
        step = step.tolist()
    if not isinstance(step, (list, tuple)):
        raise ContractError(f"step {index} is a {type(step).__name__}; expected a list of {batch} token ids (one per sequence)")
    if len(step) != batch:
        raise ContractError(f"step {index} has {len(step)} ids; expected {batch} (one per sequence)")
    out = array("q")
    for j, x in enumerate(step):
        if isinstance(x, (bool, float)) or isinstance(x, (list, tuple)):
            raise ContractError(f"step {index}, sequence {j}: {x!r} ({type(x).__name__}) is not a token id; yield a flat list of ints")
        try:
            out.append(operator.index(x))
        except (TypeError, OverflowError) as exc:
            raise ContractError(f"step {index}, sequence {j}: {x!r} ({type(x).__name__}) is not a token id: {exc}") from None
    return out


def _load_engine(submission, model_path):
    path = os.path.join(submission, "engine.py")
    if not os.path.isfile(path):
        raise ContractError("the submission has no engine.py at its root")
    spec = importlib.util.spec_from_file_location("engine", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["engine"] = module
    spec.loader.exec_module(module)
    cls = getattr(module, "Engine", None)
    if cls is None:
        raise ContractError("engine.py does not define class Engine")
    engine = cls(model_path)
    if not callable(getattr(engine, "generate", None)):
        raise ContractError("Engine has no generate(input_ids, max_new_tokens) method")
    return engine


def _generate(sock, engine, payload):
    head, _, body = payload.partition(b"\0")
    meta = json.loads(head)
    flat = array("i")
    flat.frombytes(body)
    batch, length, steps = meta["batch"], meta["length"], meta["maxNewTokens"]
    # Trusted engines only (the parent sends it to the reference engine): stop after this many
    # steps and close the generator (its shape stays that of maxNewTokens).
    stop = meta.get("stopAfter") or steps
    ids = flat.tolist()
    input_ids = [ids[i * length:(i + 1) * length] for i in range(batch)]
    gen = iter(engine.generate(input_ids, steps))
    own_ns = 0  # this side's framing cost, reported for the harness-overhead figure (untrusted, informative)
    for index in range(stop):
        try:
            step = next(gen)
        except StopIteration:
            _send(sock, b"D", json.dumps({"steps": index, "childOverheadNs": own_ns}).encode())
            return
        t = time.perf_counter_ns()
        data = _ids(step, index, batch).tobytes()
        sock.sendall(HEADER.pack(b"S", len(data)) + data)
        own_ns += time.perf_counter_ns() - t
    if stop < steps:
        # The engine's own cleanup (a reference engine waits there for the GPU work it queued ahead)
        # runs before "done", so nothing of this sample is still running when the next one starts.
        close = getattr(gen, "close", None)
        if close is not None:
            close()
        _send(sock, b"D", json.dumps({"steps": stop, "childOverheadNs": own_ns}).encode())
        return
    # Exactly max_new_tokens: the generator must now be exhausted (the parent's clock already
    # stopped at the last step, so this check costs the engine nothing).
    try:
        next(gen)
    except StopIteration:
        _send(sock, b"D", json.dumps({"steps": steps, "childOverheadNs": own_ns}).encode())
        return
    raise ContractError(f"generate yielded more than max_new_tokens={steps} steps")


def main():
    argv = sys.argv[1:]
    fd = int(argv[argv.index("--fd") + 1])
    submission = os.path.abspath(argv[argv.index("--submission") + 1])
    # The submission's folder is the import root (engine.py and its sibling modules), not ours.
    sys.path[0] = submission
    sock = socket.socket(fileno=fd)
    engine = None
    while True:
        try:
            tag, size = HEADER.unpack(_recv_exact(sock, HEADER.size))
            payload = _recv_exact(sock, size)
        except EOFError:
            return
        if tag == b"Q":
            return
        try:
            if tag == b"L":
                engine = _load_engine(submission, json.loads(payload)["modelPath"])
                # Objects made while loading (a model's modules, weights' wrappers) live for the
                # whole run: move them out of the collector's way so a full collection in the
                # middle of a timed step does not walk them. Same for every engine.
                gc.collect()
                gc.freeze()
                _send(sock, b"R", json.dumps({"pid": os.getpid()}).encode())
            elif tag == b"P":
                # Barrier before a timed sample: garbage of the previous sample is collected
                # now, untimed, instead of at a random step of the next one.
                gc.collect()
                _send(sock, b"K")
            elif tag == b"G":
                if engine is None:
                    raise ContractError("generate before the engine was loaded")
                _generate(sock, engine, payload)
            else:
                raise ContractError(f"unknown command {tag!r}")
        except ContractError as exc:
            _send_error(sock, "contract", str(exc), "")
        except BaseException as exc:  # the engine raised: the team sees the traceback
            _send_error(sock, "exception", f"{type(exc).__name__}: {exc}", traceback.format_exc())
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                return


if __name__ == "__main__":
    main()
