"""Framing between the trusted parent and the untrusted child: length-prefixed JSON + raw bytes.

No pickle: the parent never unpickles anything the child sends (that would run the child's code
in the parent). A message is a 4-byte big-endian header length, a UTF-8 JSON header, and, when the
header has ``payloadBytes``, that many raw bytes (tensors travel as little-endian int32 arrays).
"""
from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Optional, Tuple

from ..channel_errors import ChannelClosed, ProtocolError

MAX_HEADER_BYTES = 1 << 20


def send(fd: int, header: dict, payload: bytes = b"") -> None:
    if payload:
        header = dict(header, payloadBytes=len(payload))
    body = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    data = struct.pack(">I", len(body)) + body + payload
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class Reader:
    """Reads messages from a pipe with a deadline, so the parent's clock always wins."""

    def __init__(self, fd: int, max_payload: int) -> None:
        self.fd = fd
        self.max_payload = max_payload
        self._buf = bytearray()

    def _fill(self, n: int, deadline: Optional[float]) -> bool:
        while len(self._buf) < n:
            timeout = None if deadline is None else deadline - time.monotonic()
            if timeout is not None and timeout <= 0:
                return False
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                return False
            chunk = os.read(self.fd, max(65536, n - len(self._buf)))
            if not chunk:
                raise ChannelClosed("the child closed its channel")
            self._buf += chunk
        return True

    def recv(self, deadline: Optional[float]) -> Optional[Tuple[dict, bytes]]:
        """The next message, or ``None`` when ``deadline`` (monotonic) passes first."""
        if not self._fill(4, deadline):
            return None
        (hlen,) = struct.unpack(">I", bytes(self._buf[:4]))
        if hlen > MAX_HEADER_BYTES:
            raise ProtocolError(f"message header of {hlen} bytes is too large")
        if not self._fill(4 + hlen, deadline):
            return None
        try:
            header = json.loads(bytes(self._buf[4 : 4 + hlen]).decode("utf-8"))
        except ValueError as exc:
            raise ProtocolError(f"malformed message header: {exc}") from None
        if not isinstance(header, dict):
            raise ProtocolError("message header is not an object")
        plen = header.get("payloadBytes", 0)
        if not isinstance(plen, int) or plen < 0 or plen > self.max_payload:
            raise ProtocolError(f"message payload of {plen!r} bytes is not allowed")
        if not self._fill(4 + hlen + plen, deadline):
            return None
        payload = bytes(self._buf[4 + hlen : 4 + hlen + plen])
        del self._buf[: 4 + hlen + plen]
        return header, payload
