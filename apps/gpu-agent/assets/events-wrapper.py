"""Trusted wrapper between the agent and the harness: gives the harness its --events-fd.

node-pty starts a process with only the terminal (fds 0-2). The agent listens on a Unix socket in
the run's private folder; this wrapper connects to it, puts the connection on the requested fd
(inheritable, so the harness gets it across exec) and execs the harness. The agent accepts only
this first connection. Usage: events-wrapper.py SOCKET FD COMMAND...
"""
import os
import socket
import sys


def main() -> None:
    path, fd, command = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    sock.shutdown(socket.SHUT_RD)  # the channel is one-way: harness -> agent
    raw = sock.detach()
    if raw != fd:
        os.dup2(raw, fd, inheritable=True)
        os.close(raw)
    else:
        os.set_inheritable(fd, True)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
