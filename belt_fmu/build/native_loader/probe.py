"""What a Python interpreter is, for the FMU's native loader and ``belt-fmu doctor``.

    python -E probe.py [module ...]

Prints ``key=value`` lines: the interpreter's version, executable, the shared libpython it
was built with (empty if none was found: a Python built without --enable-shared) and the
given modules it cannot import. The native loader (loader.c) runs it, shipped in the FMU's
resources as native_probe.py, for each candidate Python; ``-E`` because the loader starts
the chosen interpreter ignoring PYTHON* environment variables too. Standard library only,
any Python 3.
"""
import importlib.util
import os
import sys
import sysconfig

var = sysconfig.get_config_var
print("version=%d.%d.%d" % sys.version_info[:3])
print("executable=" + (sys.executable or ""))
folders = [var("LIBDIR") or "", os.path.join(var("LIBDIR") or "", var("MULTIARCH") or ""), var("LIBPL") or "",
           os.path.join(sys.base_prefix, "lib")]
names = [name for name in (var("INSTSONAME"), var("LDLIBRARY")) if name and ".so" in name]
found = [os.path.join(d, n) for n in names for d in folders if d and os.path.isfile(os.path.join(d, n))]
print("libpython=" + (found[0] if found else ""))
print("missing=" + " ".join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))
