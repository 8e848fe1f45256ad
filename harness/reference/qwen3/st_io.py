"""Minimal safetensors reader/writer on torch alone, for machines without the `safetensors` package
(Debian 12 has none). Where the package is installed it is used instead.

Format: 8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}},
then the raw little-endian tensor bytes.
"""
from __future__ import annotations

import json
import mmap
import os
import struct

import torch

DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8, "BOOL": torch.bool,
}
NAMES = {v: k for k, v in DTYPES.items()}


def _have_package() -> bool:
    try:
        import safetensors.torch  # noqa: F401

        return True
    except Exception:
        return False


def load_file(path: str, device: str = "cpu", use_package: bool | None = None) -> dict:
    if use_package is None:
        use_package = _have_package()
    if use_package:
        from safetensors.torch import load_file as st_load

        return st_load(path, device=device)
    out = {}
    with open(path, "rb") as fh:
        (n,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(n))
        base = 8 + n
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        for name, info in header.items():
            if name == "__metadata__":
                continue
            start, end = info["data_offsets"]
            dtype = DTYPES[info["dtype"]]
            shape = info["shape"]
            if end == start:
                t = torch.empty(shape, dtype=dtype)
            else:
                # copy out of the mapping so the file can be closed
                t = torch.frombuffer(bytearray(mm[base + start:base + end]), dtype=dtype).reshape(shape)
            out[name] = t.to(device)
    finally:
        mm.close()
    return out


def save_file(tensors: dict, path: str, metadata: dict | None = None, use_package: bool | None = None) -> None:
    if use_package is None:
        use_package = _have_package()
    if use_package:
        from safetensors.torch import save_file as st_save

        st_save({k: v.contiguous() for k, v in tensors.items()}, path, metadata=metadata)
        return
    header: dict = {}
    if metadata:
        header["__metadata__"] = metadata
    blobs = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        raw = t.view(torch.uint8).numpy().tobytes() if t.numel() else b""  # bytes of any dtype
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(head)))
        fh.write(head)
        for raw in blobs:
            fh.write(raw)


def load_checkpoint(model_dir: str, device: str = "cpu") -> dict:
    """All tensors of an HF checkpoint directory: model.safetensors or the sharded index."""
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as fh:
            shards = sorted(set(json.load(fh)["weight_map"].values()))
    elif os.path.exists(os.path.join(model_dir, "model.safetensors")):
        shards = ["model.safetensors"]
    else:
        raise FileNotFoundError(f"{model_dir} holds neither model.safetensors nor model.safetensors.index.json")
    out = {}
    for shard in shards:
        out.update(load_file(os.path.join(model_dir, shard), device=device))
    return out
