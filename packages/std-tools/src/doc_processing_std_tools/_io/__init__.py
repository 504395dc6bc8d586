"""The one way std-tools opens a file inside a root folder, reads it under a size limit,
and writes it atomically.

How a path is followed: `locate` opens the root once and walks the relative path one name
at a time, each folder opened relative to the one before it with ``O_NOFOLLOW``. The kernel
never follows a symbolic link for us: a link's target is read (``readlink``) and walked in
turn by the same rules, so a link may lead anywhere inside the root and nowhere outside it.
The walk ends with an open descriptor of the last folder and the file's name in it (a
`Location`).

Reading (`read_at`, `read_bytes`) opens that name relative to the folder descriptor, again
with ``O_NOFOLLOW``, checks the open file with ``fstat`` (a regular file, not over the
limit) and reads at most limit + 1 bytes; `open_at` hands the checked descriptor to a
reader that needs the open file itself (the document libraries). Writing
(`write_atomically`) fills a temporary file created through the folder descriptor, then
renames it over the name, descriptor to descriptor. A link swapped in while a call runs
is therefore either walked like any other (and refused when it leads out) or makes the
``O_NOFOLLOW`` open fail: the file checked is the file read, and nothing is ever created
outside the root.

Writers of one file are serialised (`locked`): a lock per file within the process and an
advisory ``flock`` on the file's folder across processes sharing it. Temporary files carry
a pattern of their own (``.<name>.dpt-<host>-<pid>-<random>.tmp``); a write sweeps those
of dead writers from its folder (`sweep_stale_temporaries`), nothing else.

A reader of many small files (the skills catalog) first tries `read_plain`: the same
descriptor walk and checks in a few system calls, for the common case where nothing is
unusual; anything else (a link on the way, a missing or odd file, one over the limit)
makes it step aside, and `read_bytes` then follows the links or words the refusal.

The refusals every reader shares are worded once, in `refusals`: `too_large`,
`not_regular`, `decode_utf8`. Needs POSIX descriptor-relative calls (``dir_fd``), as
Linux and macOS have.

The submodules: `locating` (the walk), `reading`, `writing`, `refusals` (the shared
wording); every name is importable from `_io` itself.
"""

from __future__ import annotations

from .locating import Location, locate, open_folder, stat_at
from .reading import open_at, read_at, read_bytes, read_plain
from .refusals import SNIFF_BYTES, decode_utf8, human_size, is_binary, not_regular, too_large
from .writing import (
    STALE_AFTER_SECONDS,
    locked,
    new_file_mode,
    sweep_stale_temporaries,
    temporary_name,
    write_atomically,
)

__all__ = [
    "SNIFF_BYTES",
    "STALE_AFTER_SECONDS",
    "Location",
    "decode_utf8",
    "human_size",
    "is_binary",
    "locate",
    "locked",
    "new_file_mode",
    "not_regular",
    "open_at",
    "open_folder",
    "read_at",
    "read_bytes",
    "read_plain",
    "stat_at",
    "sweep_stale_temporaries",
    "temporary_name",
    "too_large",
    "write_atomically",
]
