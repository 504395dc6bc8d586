"""A skill script cannot make a set-user-ID or set-group-ID file, with or without
bubblewrap: the supervisor's system-call filter answers EPERM (no-new-privileges alone
only keeps the script from *gaining* privileges through such a file; a set-user-ID copy
of a shell left where other users can run it would hand them the server's user).

The filter itself is also checked instruction by instruction, for every system-call table
it knows (the 32-bit and x32 tables of a 64-bit kernel included: a script may call the
kernel through them)."""

from __future__ import annotations

import errno
import json
import struct
from pathlib import Path

import pytest
from script_user_access import without_bwrap_as_root

from doc_processing_std_tools.skills.scripts import _seccomp
from doc_processing_std_tools.skills.scripts.policy import ScriptPolicy
from doc_processing_std_tools.skills.scripts.run import run_script
from doc_processing_std_tools.skills.scripts.sandbox import sandbox_status

ALLOW = "allow"
EPERM = f"errno {errno.EPERM}"
ENOSYS = f"errno {errno.ENOSYS}"


def _run_filter(arch: int, nr: int, args: tuple[int, ...] = ()) -> str:
    """Run the filter on one system call, as the kernel would (classic BPF)."""
    code = _seccomp.program()
    padded = (*args, *([0] * (6 - len(args))))
    data = struct.pack("=iIQ6Q", nr, arch, 0, *padded)
    pc, acc = 0, 0
    while True:
        op, jt, jf, k = struct.unpack_from("=HBBI", code, pc * 8)
        pc += 1
        if op == 0x20:  # ld [k]
            acc = struct.unpack_from("=I", data, k)[0]
        elif op == 0x54:  # and #k
            acc &= k
        elif op == 0x15:  # jeq #k
            pc += jt if acc == k else jf
        elif op == 0x45:  # jset #k
            pc += jt if acc & k else jf
        elif op == 0x05:  # ja
            pc += k
        elif op == 0x06:  # ret #k
            if k == 0x7FFF0000:
                return ALLOW
            assert k >> 16 == 0x0005, hex(k)
            return f"errno {k & 0xFFFF}"
        else:
            raise AssertionError(f"unexpected instruction {op:#x}")


X86_64, I386, AARCH64, ARM, RISCV64 = 0xC000003E, 0x40000003, 0xC00000B7, 0x40000028, 0xC00000F3
X32 = 0x40000000
O_CREAT = 0o100


@pytest.mark.parametrize(
    ("arch", "nr", "args", "verdict"),
    [
        # chmod, fchmod, fchmodat, fchmodat2 on x86-64
        (X86_64, 90, (0, 0o4755), EPERM),
        (X86_64, 90, (0, 0o2755), EPERM),
        (X86_64, 90, (0, 0o4111), EPERM),
        (X86_64, 90, (0, 0o755), ALLOW),
        (X86_64, 91, (3, 0o6755), EPERM),
        (X86_64, 268, (-100 & 0xFFFFFFFF, 0, 0o4700), EPERM),
        (X86_64, 452, (-100 & 0xFFFFFFFF, 0, 0o2700, 0), EPERM),
        # the x32 numbers of the same calls
        (X86_64, X32 | 90, (0, 0o4755), EPERM),
        (X86_64, X32 | 257, (0, 0, O_CREAT, 0o4755), EPERM),
        # creating a file with a set-ID mode; opening one without creating is left alone
        (X86_64, 2, (0, O_CREAT, 0o4755), EPERM),
        (X86_64, 2, (0, 0, 0o4755), ALLOW),
        (X86_64, 257, (0, 0, O_CREAT | 1, 0o644), ALLOW),
        (X86_64, 257, (0, 0, 0o20200000, 0o2755), EPERM),  # O_TMPFILE
        (X86_64, 85, (0, 0o4755), EPERM),
        # mknod: pipes and sockets only, never with set-ID bits
        (X86_64, 133, (0, 0o010644), ALLOW),
        (X86_64, 259, (0, 0, 0o140644), ALLOW),
        (X86_64, 133, (0, 0o100755), EPERM),
        (X86_64, 133, (0, 0o014644), EPERM),
        (X86_64, 259, (0, 0, 0o020644), EPERM),  # a character device
        # calls whose mode the filter cannot see
        (X86_64, 437, (), ENOSYS),
        (X86_64, 425, (), ENOSYS),
        # unrelated calls
        (X86_64, 0, (0, 0o4755), ALLOW),
        (X86_64, 59, (), ALLOW),
        # the i386 table of a 64-bit kernel (int 0x80)
        (I386, 15, (0, 0o4755), EPERM),
        (I386, 94, (0, 0o2755), EPERM),
        (I386, 306, (0, 0, 0o4755), EPERM),
        (I386, 5, (0, O_CREAT, 0o4755), EPERM),
        (I386, 295, (0, 0, O_CREAT, 0o6755), EPERM),
        (I386, 297, (0, 0, 0o104755), EPERM),
        (I386, 90, (0, 0o4755), ALLOW),  # old mmap on i386, not chmod
        # AArch64 and RISC-V share the generic table; 32-bit ARM has its own
        (AARCH64, 52, (3, 0o4755), EPERM),
        (AARCH64, 53, (0, 0, 0o2755), EPERM),
        (AARCH64, 56, (0, 0, O_CREAT, 0o4755), EPERM),
        (AARCH64, 33, (0, 0, 0o010600), ALLOW),
        (AARCH64, 53, (0, 0, 0o755), ALLOW),
        (RISCV64, 52, (3, 0o4755), EPERM),
        (ARM, 333, (0, 0, 0o4755), EPERM),
        (ARM, 322, (0, 0, O_CREAT, 0o4755), EPERM),
        (ARM, 15, (0, 0o6000), EPERM),
        # an architecture the filter does not know is left alone
        (0x12345678, 90, (0, 0o4755), ALLOW),
    ],
)
def test_the_filter_answers_each_call(
    arch: int, nr: int, args: tuple[int, ...], verdict: str
) -> None:
    assert _run_filter(arch, nr, args) == verdict


_ATTEMPTS = r"""
import json, os, stat, subprocess, tempfile
os.chdir(tempfile.mkdtemp())
found = {}

def attempt(name, action):
    try:
        action()
        found[name] = "ok"
    except OSError as exc:
        found[name] = f"errno {exc.errno}"

open("plain", "w").close()
attempt("chmod 0755", lambda: os.chmod("plain", 0o755))
attempt("chmod 4755", lambda: os.chmod("plain", 0o4755))
attempt("chmod 2755", lambda: os.chmod("plain", 0o2755))
attempt("chmod 4111", lambda: os.chmod("plain", 0o4111))
attempt("create 4755", lambda: os.close(os.open("made", os.O_CREAT | os.O_WRONLY, 0o4755)))
attempt("mknod setuid", lambda: os.mknod("node", 0o104755))
attempt("mkfifo", lambda: os.mkfifo("pipe"))
os.mkdir("folder", 0o700)
attempt("chmod folder 2775", lambda: os.chmod("folder", 0o2775))
shell = subprocess.run(
    ["/bin/sh", "-c", "cp /bin/sh ./sh && chmod u+s ./sh"], capture_output=True, text=True
)
found["shell chmod u+s"] = shell.returncode
found["setid files"] = sorted(
    name for name in os.listdir(".") if os.lstat(name).st_mode & (stat.S_ISUID | stat.S_ISGID)
)
print(json.dumps(found))
"""

MODES = [
    pytest.param("none", id="none", marks=without_bwrap_as_root),
    pytest.param(
        "bwrap",
        id="bwrap",
        marks=pytest.mark.skipif(
            sandbox_status().bwrap is None, reason=f"no bubblewrap: {sandbox_status().problem}"
        ),
    ),
]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_script_cannot_make_a_setid_file(tmp_path: Path, mode: str) -> None:
    skill = tmp_path / "skills" / "setid"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: setid\ndescription: Tries.\n---\n")
    script = skill / "scripts" / "attempt.py"
    script.write_text(_ATTEMPTS, encoding="utf-8")
    result = await run_script(
        script,
        [],
        time_limit=30,
        output_limit=20_000,
        policy=ScriptPolicy(sandbox=mode),  # type: ignore[arg-type]
        skill_dir=skill,
    )
    assert result.exit_code == 0, result.stderr
    found = json.loads(result.stdout)
    for name in ("chmod 4755", "chmod 2755", "chmod 4111", "create 4755", "mknod setuid"):
        assert found[name] == EPERM, (name, found)
    assert found["chmod folder 2775"] == EPERM
    assert found["shell chmod u+s"] != 0
    assert found["setid files"] == []
    # Ordinary modes and named pipes still work.
    assert found["chmod 0755"] == "ok"
    assert found["mkfifo"] == "ok"
