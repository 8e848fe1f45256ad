"""What goes wrong on the private channel between the trusted parent and an untrusted child.

Decode (`decode/channel.py`, binary frames) and training (`training/protocol.py`, JSON headers) frame
their messages differently, but a child's bad bytes and a child's closed end mean the same thing to
both parents, so both raise these.
"""
from __future__ import annotations


class ProtocolError(Exception):
    """The child sent something that is not a valid message (its fault, never the harness's)."""


class ChannelClosed(ProtocolError):
    """End of file: the child exited or closed its end."""
