"""Writing a file so that no reader ever sees part of it: :func:`atomic_write`."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", **open_args):
    """Write ``path`` all at once: yields a temporary file beside it, opened with ``mode``
    ("w", "wb", ...) and ``open_args`` (encoding, newline), which replaces ``path`` when the
    block ends without an exception (a rename within one directory is atomic) and is removed
    otherwise. An interrupted write leaves the old file, or none, never a truncated one.

    The file gets the permissions a newly created file gets (``0o666`` less the umask):
    :func:`tempfile.mkstemp` would leave it private, and results files, figures and FMUs are
    meant to be shared.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **open_args) as file:
            yield file
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    """The process's umask (reading it means setting it; it is set straight back)."""
    umask = os.umask(0)
    os.umask(umask)
    return umask
