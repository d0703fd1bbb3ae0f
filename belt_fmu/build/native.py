"""The native loader in front of PythonFMU's binary (``belt_fmu/build/native_loader/loader.c``).

:func:`install_loader` takes a PythonFMU FMU and makes its linux64 binary the loader: the
loader is compiled here with the machine's C compiler (``$CC``, else ``cc``), PythonFMU's
library moves beside it as ``pythonfmu-export.so``, and ``resources/native.cfg`` records
what the loader needs to find a Python (the interpreter running the build, the packages the
slave imports, the FMU's GUID, the value reference of the fast path's exchange variable when
the FMU has one: :mod:`belt_fmu.fast_path`), and ``resources/native_probe.py`` (probe.py) is what the
loader asks each candidate Python. What the loader does and why: the comment at the top of
``loader.c`` and docs/native-hosts.md.

It works for any PythonFMU FMU (the SSP example's power-unit and water-pump FMUs use it
too). Without a C compiler the FMU keeps PythonFMU's own binary; :class:`NoCompiler` says
so and the caller decides (``belt-fmu build`` warns and carries on).
"""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

from ..fast_path import EXCHANGE_VARIABLE

LOADER_SOURCE = Path(__file__).resolve().parent / "native_loader" / "loader.c"
PROBE_SOURCE = Path(__file__).resolve().parent / "native_loader" / "probe.py"
PROBE_RESOURCE = "native_probe.py"  # the name loader.c runs it by, in the FMU's resources
PYTHONFMU_LIBRARY = "pythonfmu-export.so"  # the name loader.c opens beside itself
SETTINGS_RESOURCE = "native.cfg"  # read by loader.c
PLATFORM = "linux64"


class NoCompiler(RuntimeError):
    """No working C compiler: the FMU keeps PythonFMU's binary (needs LD_PRELOAD of libpython
    in native hosts)."""


def compiler() -> str | None:
    """The C compiler to use: ``$CC`` if set, else ``cc``, ``gcc`` or ``clang`` on PATH."""
    if os.environ.get("CC"):
        return shutil.which(os.environ["CC"].split()[0]) and os.environ["CC"]
    return next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)


def compile_loader(output: Path) -> Path:
    """Compile loader.c into the shared library ``output``; NoCompiler if that fails."""
    cc = compiler()
    if cc is None:
        raise NoCompiler("no C compiler found (set CC, or install cc: Debian/Ubuntu `apt install gcc`, "
                         "Fedora `dnf install gcc`)")
    command = [*cc.split(), "-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-o", str(output),
               str(LOADER_SOURCE), "-ldl", "-lpthread"]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        raise NoCompiler(f"the C compiler {cc!r} failed on {LOADER_SOURCE.name}: {run.stderr.strip()}")
    return output


def settings_text(guid: str, packages: tuple[str, ...], python: str = sys.executable,
                  fast_path_vr: int | None = None) -> str:
    return ("# native loader settings (belt_fmu/build/native_loader/loader.c), written by belt_fmu's FMU build\n"
            f"python = {python}\n"
            f"packages = {' '.join(packages)}\n"
            f"guid = {guid}\n"
            + (f"fast_path_vr = {fast_path_vr}\n" if fast_path_vr is not None else ""))


def install_loader(source: Path, target: Path, packages: tuple[str, ...]) -> None:
    """Write ``target``: the FMU ``source`` with the native loader as its linux64 binary.
    ``packages``: the modules the slave imports (the loader chooses a Python that has them).
    NoCompiler if there is no working C compiler (``target`` is then not written)."""
    with zipfile.ZipFile(source) as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
    identifier = root.find("CoSimulation").get("modelIdentifier")
    exchange = next((v for v in root.iter("ScalarVariable") if v.get("name") == EXCHANGE_VARIABLE), None)
    binary = f"binaries/{PLATFORM}/{identifier}.so"
    with tempfile.TemporaryDirectory(prefix="belt_fmu_loader_") as tmp:
        loader = compile_loader(Path(tmp) / f"{identifier}.so").read_bytes()
        with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
            for item in src.infolist():
                content = src.read(item.filename)
                if item.filename == binary:
                    dst.writestr(_renamed(item, f"binaries/{PLATFORM}/{PYTHONFMU_LIBRARY}"), content)
                    dst.writestr(_renamed(item, binary), loader)
                else:
                    dst.writestr(item, content)
            exchange_vr = None if exchange is None else int(exchange.get("valueReference"))
            dst.writestr(f"resources/{SETTINGS_RESOURCE}", settings_text(root.get("guid"), packages, fast_path_vr=exchange_vr))
            dst.writestr(f"resources/{PROBE_RESOURCE}", PROBE_SOURCE.read_text())


def _renamed(item: zipfile.ZipInfo, name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=item.date_time)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o755 << 16  # an executable shared library
    return info


def required_versions(library: bytes) -> dict[str, list[str]]:
    """Symbol versions an ELF64 little-endian shared library needs, by library
    (``{"libc.so.6": ["GLIBC_2.2.5", ...], "libstdc++.so.6": ["GLIBCXX_3.4.30", ...]}``), read
    from its .gnu.version_r section (the ELF gABI and the LSB's symbol versioning)."""
    if library[:4] != b"\x7fELF" or library[4] != 2 or library[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", library, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", library, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", library, shoff + i * shentsize) for i in range(shnum)]
    SHT_GNU_VERNEED = 0x6FFFFFFE
    needs: dict[str, list[str]] = {}
    for name, kind, _, _, offset, size, link, info, _, _ in sections:
        if kind != SHT_GNU_VERNEED:
            continue
        strings = sections[link][4]

        def text(at):
            end = library.index(b"\0", strings + at)
            return library[strings + at:end].decode()

        entry = offset
        for _ in range(info):
            _, count, file_name, aux, next_entry = struct.unpack_from("<HHIII", library, entry)
            versions = needs.setdefault(text(file_name), [])
            at = entry + aux
            for _ in range(count):
                _, _, _, version_name, next_aux = struct.unpack_from("<IHHII", library, at)
                versions.append(text(version_name))
                at += next_aux
            entry += next_entry
    return needs


def newest(versions: list[str], prefix: str) -> str | None:
    """The highest of the versions named ``prefix`` + dotted numbers (GLIBC_2.34 > GLIBC_2.4)."""
    numbered = [v for v in versions if v.startswith(prefix) and v[len(prefix):].replace(".", "").isdigit()]
    return max(numbered, key=lambda v: tuple(int(x) for x in v[len(prefix):].split(".")), default=None)
