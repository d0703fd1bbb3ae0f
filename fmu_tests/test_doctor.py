"""``belt-fmu doctor``: this machine against what an FMU needs in native hosts; and the ELF
reading it rests on, against the requirements PythonFMU 0.7.0's linux64 binary is known to
have (measured with objdump when the native-host issue was opened: GLIBC_2.32, GLIBCXX_3.4.30)."""
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from belt_fmu.build import native
from belt_fmu.build.fmu import shipped_levels
from belt_fmu.cli import main


def pythonfmu_binary() -> bytes:
    import pythonfmu

    return (Path(pythonfmu.__file__).parent / "resources" / "binaries" / "linux64" / "libpythonfmu-export.so").read_bytes()


def test_required_versions_of_pythonfmus_binary():
    needs = native.required_versions(pythonfmu_binary())
    assert native.newest(needs["libc.so.6"], "GLIBC_") == "GLIBC_2.32"
    assert native.newest(needs["libstdc++.so.6"], "GLIBCXX_") == "GLIBCXX_3.4.30"
    assert native.newest(["GLIBC_2.4", "GLIBC_2.34", "GLIBC_2.17", "GLIBC_PRIVATE"], "GLIBC_") == "GLIBC_2.34"
    with pytest.raises(ValueError, match="not a 64-bit little-endian ELF"):
        native.required_versions(b"MZ\x90\x00")


def test_doctor_passes_on_this_machine_for_the_built_fmu(fmu, capsys):
    assert main(["doctor", str(fmu)]) == 0
    out = capsys.readouterr().out
    assert "ok      platform: Linux x86_64: the FMU has a linux64 binary" in out
    assert "ok      native loader" in out
    assert "the FMU will use it" in out
    # built here: its kernels fit this machine and the Python it will use: its own, or, on a
    # processor without AVX-512, the portable ones that are all it compiles (shipped_levels)
    if "host" in shipped_levels():
        assert "ok      compiled kernels: its kernels were compiled for this processor" in out
    else:
        assert "ok      compiled kernels: its portable kernels (x86-64-v3) run on this processor" in out
    assert "the FMU starts without compiling" in out
    assert out.rstrip().endswith("this machine can run the FMU in native hosts")


def test_doctor_says_when_the_kernels_will_compile(fmu, tmp_path, capsys):
    """An FMU whose kernels are for another numba: doctor says its first load compiles
    them, and why (information: the FMU still runs)."""
    other = tmp_path / "Other.fmu"
    info_name = "resources/kernels/kernels.json"
    with zipfile.ZipFile(fmu) as src, zipfile.ZipFile(other, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == info_name:
                data = json.dumps({**json.loads(data), "numba": "0.0.1"}).encode()
            dst.writestr(item, data)
    assert main(["doctor", str(other)]) == 0
    out = capsys.readouterr().out
    assert "compiled kernels: its kernels are for Python" in out and "with numba 0.0.1" in out
    assert "the first load on this machine compiles them" in out


def test_doctor_names_what_is_missing(fmu, tmp_path, monkeypatch, capsys):
    """An FMU whose recorded interpreter is gone, no BELT_FMU_PYTHON and no Python on PATH:
    the missing Python is named with what to do, exit status 3."""
    broken = tmp_path / "Broken.fmu"
    with zipfile.ZipFile(fmu) as src, zipfile.ZipFile(broken, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == f"resources/{native.SETTINGS_RESOURCE}":
                data = b"python = /nowhere/bin/python3\npackages = numpy numba\n"
            dst.writestr(item, data)
    monkeypatch.delenv("BELT_FMU_PYTHON", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["doctor", str(broken)]) == 3
    out = capsys.readouterr().out
    assert "Python: the interpreter recorded when the FMU was built = /nowhere/bin/python3: cannot run it" in out
    assert "MISSING a Python for the FMU: none of the candidates fits: install numpy numba into one" in out
    assert "set BELT_FMU_PYTHON" in out
    assert out.rstrip().endswith("1 need not met (MISSING above)")


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_doctor_without_fmu_checks_a_build_here(capsys):
    assert main(["doctor"]) == 0
    assert "C compiler (to build FMUs with the native loader)" in capsys.readouterr().out
