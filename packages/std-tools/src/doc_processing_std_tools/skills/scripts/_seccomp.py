"""A system-call filter for skill scripts: no set-user-ID or set-group-ID file, ever (Linux).

No-new-privileges keeps a script from *gaining* privileges through a set-user-ID file,
but not from *making* one: a script that runs as the server's user could leave a
set-user-ID copy of a shell anywhere that user can write, and any other user of the
machine who runs it acts as the server's user. The filter, installed by the supervisor in
the script's process right before it starts the script (and inherited by everything the
script starts, under bubblewrap too), makes the kernel answer ``EPERM`` to

- ``chmod``, ``fchmod``, ``fchmodat`` and ``fchmodat2`` with a mode that has the
  set-user-ID or set-group-ID bit;
- ``open``, ``openat`` and ``creat`` that create a file (``O_CREAT``, ``O_TMPFILE``) with
  such a mode;
- ``mknod`` and ``mknodat``, except for a named pipe or a socket without those bits;

and ``ENOSYS`` (as a kernel without them would) to ``openat2``, whose mode the filter
cannot read, and to ``io_uring_setup``, ``io_uring_enter`` and ``io_uring_register``,
whose operations no filter sees. Every other call is left alone.

The filter is a classic BPF program built here and installed with
``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)`` (the process must have no-new-privileges
set already). It knows the system-call numbers of x86-64 (with its i386 and x32 ABIs),
AArch64 (with 32-bit ARM) and RISC-V 64; `supported()` says whether this machine is one
of them. This module uses the standard library only, since the supervisor loads it by
path, without the package.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys

__all__ = ["install", "program", "supported"]

_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2

_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JSET_K = 0x45
_JA = 0x05
_AND_K = 0x54
_RET_K = 0x06

_NR = 0
_ARCH = 4


def _arg(index: int) -> int:
    """Offset of the low 32 bits of argument `index` in ``struct seccomp_data``."""
    return 16 + 8 * index


_SETID = 0o6000
_CREATING = 0o100 | 0o20000000  # O_CREAT | __O_TMPFILE
_TYPE = 0o170000
_FIFO = 0o010000
_SOCKET = 0o140000

# Handlers: ("mode", arg), ("create", flags_arg, mode_arg), ("node", arg), ("nosys",).
_Handler = tuple[str | int, ...]
_IO_URING: dict[int, _Handler] = {
    425: ("nosys",),
    426: ("nosys",),
    427: ("nosys",),
    437: ("nosys",),
}
_X86_64: dict[int, _Handler] = {
    2: ("create", 1, 2),
    85: ("mode", 1),
    257: ("create", 2, 3),
    90: ("mode", 1),
    91: ("mode", 1),
    268: ("mode", 2),
    452: ("mode", 2),
    133: ("node", 1),
    259: ("node", 2),
    **_IO_URING,
}
_I386_OR_ARM: dict[int, _Handler] = {
    5: ("create", 1, 2),
    8: ("mode", 1),
    15: ("mode", 1),
    94: ("mode", 1),
    452: ("mode", 2),
    14: ("node", 1),
    **_IO_URING,
}
_I386: dict[int, _Handler] = {
    **_I386_OR_ARM,
    295: ("create", 2, 3),
    306: ("mode", 2),
    297: ("node", 2),
}
_ARM: dict[int, _Handler] = {
    **_I386_OR_ARM,
    322: ("create", 2, 3),
    333: ("mode", 2),
    324: ("node", 2),
}
_GENERIC: dict[int, _Handler] = {
    56: ("create", 2, 3),
    52: ("mode", 1),
    53: ("mode", 2),
    452: ("mode", 2),
    33: ("node", 2),
    **_IO_URING,
}

_ARCHES: dict[int, tuple[dict[int, _Handler], bool]] = {
    0xC000003E: (_X86_64, True),  # x86-64; True: clear the x32 bit of the number
    0x40000003: (_I386, False),
    0xC00000B7: (_GENERIC, False),  # AArch64
    0x40000028: (_ARM, False),
    0xC00000F3: (_GENERIC, False),  # RISC-V 64
}
_MACHINES = ("x86_64", "amd64", "aarch64", "arm64", "riscv64")


def supported() -> bool:
    """Whether the filter knows this machine's system calls (Linux, little-endian)."""
    return (
        sys.platform.startswith("linux")
        and sys.byteorder == "little"
        and os.uname().machine.lower() in _MACHINES
    )


class _Program:
    """A BPF program with forward jumps to labels, resolved by `encode`."""

    def __init__(self) -> None:
        self.code: list[tuple[int, object, object, int]] = []
        self.labels: dict[str, int] = {}

    def add(self, code: int, k: int = 0, jt: object = 0, jf: object = 0) -> None:
        self.code.append((code, jt, jf, k))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def encode(self) -> bytes:
        out = bytearray()
        for index, (code, jt, jf, k) in enumerate(self.code):

            def offset(target: object, index: int = index) -> int:
                if isinstance(target, int):
                    return target
                jump = self.labels[str(target)] - index - 1
                if not 0 <= jump <= 255:
                    raise ValueError(f"jump to {target} out of reach")
                return jump

            if code == _JA and isinstance(jt, str):
                k, jt = offset(jt), 0
            out += struct.pack("=HBBI", code, offset(jt), offset(jf), k & 0xFFFFFFFF)
        return bytes(out)


def program() -> bytes:
    """The filter as ``struct sock_filter`` records."""
    prog = _Program()
    prog.add(_LD_W_ABS, _ARCH)
    for number, arch in enumerate(_ARCHES):
        prog.add(_JEQ_K, arch, jt=f"arch{number}")
    prog.add(_RET_K, _RET_ALLOW)
    handlers: set[_Handler] = set()
    for number, (table, x32) in enumerate(_ARCHES.values()):
        prog.label(f"arch{number}")
        prog.add(_LD_W_ABS, _NR)
        if x32:
            prog.add(_AND_K, 0xBFFFFFFF)
        for call, handler in table.items():
            prog.add(_JEQ_K, call, jt=_name(handler))
            handlers.add(handler)
        prog.add(_RET_K, _RET_ALLOW)
    for handler in sorted(handlers, key=repr):
        prog.label(_name(handler))
        kind = handler[0]
        if kind == "nosys":
            prog.add(_RET_K, _RET_ERRNO | errno.ENOSYS)
            continue
        if kind == "create":
            prog.add(_LD_W_ABS, _arg(int(handler[1])))
            prog.add(_JSET_K, _CREATING, jt=0, jf="allow")
            prog.add(_LD_W_ABS, _arg(int(handler[2])))
            prog.add(_JSET_K, _SETID, jt="deny", jf="allow")
        elif kind == "mode":
            prog.add(_LD_W_ABS, _arg(int(handler[1])))
            prog.add(_JSET_K, _SETID, jt="deny", jf="allow")
        else:  # "node": a pipe or a socket without set-ID bits only
            prog.add(_LD_W_ABS, _arg(int(handler[1])))
            prog.add(_JSET_K, _SETID, jt="deny")
            prog.add(_AND_K, _TYPE)
            prog.add(_JEQ_K, _FIFO, jt="allow")
            prog.add(_JEQ_K, _SOCKET, jt="allow", jf="deny")
    prog.label("deny")
    prog.add(_RET_K, _RET_ERRNO | errno.EPERM)
    prog.label("allow")
    prog.add(_RET_K, _RET_ALLOW)
    return prog.encode()


def _name(handler: _Handler) -> str:
    return "-".join(str(part) for part in handler)


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install() -> bool:
    """Install the filter in this process (no-new-privileges must be set): True when it
    is in force, False on a machine it does not know (`supported`).

    Raises:
        OSError: the kernel refused it on a machine it knows.
    """
    if not supported():
        return False
    code = program()
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = _Fprog(len(code) // 8, ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        code_ = ctypes.get_errno()
        raise OSError(code_, f"the system-call filter was refused: {os.strerror(code_)}")
    return True
