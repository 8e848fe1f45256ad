"""Framing of the private channel between the trusted parent and the untrusted child.

One AF_UNIX stream socket pair per child. A frame is a 1-byte tag, a 4-byte little-endian length
and the payload. Binary frames keep the per-step cost in the microseconds (a step of 32 ids is 261
bytes, parsed with `array.frombytes`), which matters because the parent's own cost per step must stay
far below 1% of a fast engine's time per token.

Tags, parent -> child:  L load {"modelPath"} (JSON) · P prepare (barrier) · G generate (JSON header, NUL, int32 ids) · Q quit
Tags, child -> parent:  R ready (JSON) · K prepared · S step (int64 ids) · D generator done · E error (JSON)
Everything the child sends is untrusted: the parent checks every frame (tag, size, contents).
"""
from __future__ import annotations

import json
import select
import socket
import struct
import time
from array import array
from typing import Optional

from ..channel_errors import ChannelClosed, ProtocolError

HEADER = struct.Struct("<cI")
# A traceback or a ready message is small; a step frame is 8 bytes per sequence. Anything larger
# is a child trying to make the parent allocate without bound.
MAX_FRAME = 8 * 1024 * 1024

assert array("q").itemsize == 8 and array("i").itemsize == 4


class Deadline(Exception):
    """No complete frame arrived before the deadline."""


def encode(tag: bytes, payload: bytes = b"") -> bytes:
    return HEADER.pack(tag, len(payload)) + payload


def encode_json(tag: bytes, obj) -> bytes:
    return encode(tag, json.dumps(obj, separators=(",", ":")).encode())


def encode_generate(input_ids: list[list[int]], max_new_tokens: int, stop_after: Optional[int] = None) -> bytes:
    """A generate command. stop_after (trusted engines only, runner.reference_steps): the child
    stops the engine's generator after that many steps and closes it, so a reference engine keeps
    the shape (its static cache and graphs) of max_new_tokens while its sample is shorter."""
    batch = len(input_ids)
    length = len(input_ids[0])
    flat = array("i")
    for row in input_ids:
        flat.extend(row)
    meta = {"batch": batch, "length": length, "maxNewTokens": max_new_tokens}
    if stop_after is not None:
        meta["stopAfter"] = stop_after
    head = json.dumps(meta).encode()
    return encode(b"G", head + b"\0" + flat.tobytes())


def decode_generate(payload: bytes) -> tuple[list[list[int]], int]:
    head, _, body = payload.partition(b"\0")
    meta = json.loads(head)
    flat = array("i")
    flat.frombytes(body)
    b, n = meta["batch"], meta["length"]
    ids = flat.tolist()
    return [ids[i * n:(i + 1) * n] for i in range(b)], meta["maxNewTokens"]


class Channel:
    """The parent's end. Every frame is stamped with time.perf_counter_ns() of the recv() that
    completed it: the parent's clock, which the child cannot touch."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sock.setblocking(True)
        self.fd = sock.fileno()
        self._buf = bytearray()
        self._poll = select.poll()
        self._poll.register(self.fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        self.closed = False

    def send(self, data: bytes) -> int:
        """Send a whole frame; returns perf_counter_ns taken just before the first byte left."""
        t = time.perf_counter_ns()
        self.sock.sendall(data)
        return t

    def _frame(self) -> Optional[tuple[bytes, bytes]]:
        buf = self._buf
        if len(buf) < HEADER.size:
            return None
        tag, size = HEADER.unpack_from(buf)
        if tag not in b"RSDEK":
            raise ProtocolError(f"unexpected bytes on the engine channel (tag {tag!r}): something in the engine process wrote to the harness's private socket")
        if size > MAX_FRAME:
            raise ProtocolError(f"frame of {size} bytes exceeds the {MAX_FRAME}-byte limit")
        end = HEADER.size + size
        if len(buf) < end:
            return None
        payload = bytes(buf[HEADER.size:end])
        del buf[:end]
        return tag, payload

    def recv(self, deadline_ns: int) -> tuple[bytes, bytes, int]:
        """Next frame as (tag, payload, receive time in ns). Raises Deadline, ChannelClosed, ProtocolError."""
        frame = self._frame()
        if frame is not None:
            return frame[0], frame[1], self._stamp
        while True:
            remaining = deadline_ns - time.perf_counter_ns()
            if remaining <= 0:
                raise Deadline()
            # poll() then recv(): poll's timeout carries the deadline, recv never blocks long.
            if not self._poll.poll(max(1, min(remaining // 1_000_000 + 1, 2_000_000_000))):
                continue
            try:
                chunk = self.sock.recv(1 << 16)
            except (ConnectionResetError, OSError):
                chunk = b""
            self._stamp = time.perf_counter_ns()
            if not chunk:
                self.closed = True
                if self._buf:
                    raise ProtocolError(f"engine process closed the channel in the middle of a frame ({len(self._buf)} stray bytes)")
                raise ChannelClosed()
            self._buf += chunk
            frame = self._frame()
            if frame is not None:
                return frame[0], frame[1], self._stamp

    _stamp = 0

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
