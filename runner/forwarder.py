"""Inside a sandbox: the loopback proxy port of an agent or a check, handed to the egress proxy.

    python -I -S forwarder.py SOCKET PORT -- COMMAND...

The sandbox has a network namespace of its own (loopback only). This wrapper listens on
127.0.0.1:PORT there, connects once to the egress proxy's Unix socket (bound into the sandbox),
starts COMMAND, and passes each accepted connection's file descriptor to the proxy
(SCM_RIGHTS): the proxy, in the runner's namespace, then reads and writes the connection
itself, so nothing is copied in here. Lines the proxy sends back (a blocked connection, one
sentence) are printed on stderr, into the agent's or the check's log. It exits with COMMAND's
status.

It starts with every step, so it imports only what the interpreter has built in or frozen
(``_socket``, ``_thread``, ``_signal``, ``os``: about 5 ms, where ``socket`` and ``threading``
cost 25 ms more), and nothing of Ratchet's: it runs isolated (``-I -S``) with whatever
interpreter the host has, whatever the sandbox hides.
"""

import _signal
import _socket
import _thread
import os
import sys

# Signals passed on to the command (the sandbox's own teardown kills everything anyway).
FORWARDED = (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP)


def _serve(listener, control):
    while True:
        try:
            fd, _ = listener._accept()
        except OSError:
            return
        try:
            control.sendmsg([b"c"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS,
                                      fd.to_bytes(4, sys.byteorder))])
        except OSError:
            return  # the proxy is gone: the step is over
        finally:
            os.close(fd)


def _report(control):
    pending = b""
    while True:
        try:
            data = control.recv(4096)
        except OSError:
            return
        if not data:
            return
        *lines, pending = (pending + data).split(b"\n")
        for line in lines:
            os.write(2, b"ratchet: " + line[:1000] + b"\n")
        pending = pending[-1000:]


def main(argv):
    if len(argv) < 4 or argv[2] != "--":
        os.write(2, b"usage: forwarder.py SOCKET PORT -- COMMAND...\n")
        return 2
    path, port, command = argv[0], int(argv[1]), argv[3:]
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    control = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    control.connect(path)
    try:
        pid = os.posix_spawnp(command[0], command, os.environ)
    except OSError as exc:
        os.write(2, f"ratchet: cannot start {command[0]!r}: {exc.strerror or exc}\n".encode())
        return 127
    for number in FORWARDED:
        _signal.signal(number, lambda received, _frame: os.kill(pid, received))
    _thread.start_new_thread(_serve, (listener, control))
    _thread.start_new_thread(_report, (control,))
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))
