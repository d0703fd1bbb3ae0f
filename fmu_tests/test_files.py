"""belt_fmu.files.atomic_write: a file is replaced whole or not at all."""
import os
import stat

import pytest

from belt_fmu.files import atomic_write


def test_replaces_the_file_whole_with_the_umask_permissions(tmp_path):
    path = tmp_path / "table.csv"
    path.write_text("old\n")
    with atomic_write(path) as f:
        f.write("new\n")
        assert path.read_text() == "old\n"  # nothing visible before the block ends
    assert path.read_text() == "new\n"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    assert [p.name for p in tmp_path.iterdir()] == ["table.csv"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "figure.png"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_write(path, "wb") as f:
            f.write(b"half")
            raise RuntimeError("interrupted")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["figure.png"]
