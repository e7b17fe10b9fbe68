"""Inside a sandbox: the loopback proxy port of an agent or a check, handed to the egress proxy.

    python -I -S forwarder.py SOCKET PORT -- COMMAND...

The sandbox has a network namespace of its own (loopback only). This wrapper listens on
127.0.0.1:PORT there, connects once to the egress proxy's Unix socket (bound into the sandbox),
starts COMMAND, and passes each accepted connection's file descriptor to the proxy
(SCM_RIGHTS): the proxy, in the runner's namespace, then reads and writes the connection
itself, so nothing is copied in here. Lines the proxy sends back (a blocked connection, one
sentence) are printed on stderr, into the agent's or the check's log. It exits with COMMAND's
status.

Standard library only and no Ratchet import: it runs isolated (``-I -S``) with whatever
interpreter the host has, whatever the sandbox hides.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading

# Signals passed on to the command (the sandbox's own teardown kills everything anyway).
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _serve(listener: socket.socket, control: socket.socket) -> None:
    while True:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        try:
            socket.send_fds(control, [b"c"], [connection.fileno()])
        except OSError:
            return  # the proxy is gone: the step is over
        finally:
            connection.close()


def _report(control: socket.socket) -> None:
    with control.makefile("rb") as lines:
        for line in lines:
            os.write(2, b"ratchet: " + line.rstrip(b"\n")[:1000] + b"\n")


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        os.write(2, b"usage: forwarder.py SOCKET PORT -- COMMAND...\n")
        return 2
    path, port, command = argv[0], int(argv[1]), argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    control.connect(path)
    for sock in (listener, control):
        sock.set_inheritable(False)
    try:
        pid = os.posix_spawnp(command[0], command, os.environ)
    except OSError as exc:
        os.write(2, f"ratchet: cannot start {command[0]!r}: {exc.strerror or exc}\n".encode())
        return 127
    for number in FORWARDED:
        signal.signal(number, lambda received, _frame: os.kill(pid, received))
    threading.Thread(target=_serve, args=(listener, control), daemon=True).start()
    threading.Thread(target=_report, args=(control,), daemon=True).start()
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.stdout.flush()
    os._exit(main(sys.argv[1:]))
