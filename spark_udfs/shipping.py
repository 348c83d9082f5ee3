"""Ship what the grids' Python UDFs need to a Spark cluster's executors, by Spark's own mechanism.

A platform team's workers have Python with pyspark, pyarrow and numpy (Spark's Arrow UDFs need
them) but not kafkasec. Executors unpickle the UDF, which imports :mod:`spark_udfs.spark` and,
through it, kafkasec and its dependencies, some of them compiled (cryptography, immutables). A
zip of sources (``addPyFile``) cannot carry compiled modules, so :func:`ship_to_executors` packs
every module the UDF imports, beyond the Python standard library and what the workers are
expected to have (:data:`WORKER_PROVIDED`), into an archive that ``SparkContext.addArchive``
unpacks in each executor's working directory, and puts that directory on the Python workers'
``PYTHONPATH``. The workers' Python must be the driver's version on the same platform: Spark
already refuses a different minor version, and compiled modules need the same platform.

Local masters (``local``, ``local[N]``) run the workers beside the driver, but not always on its
Python (``PYSPARK_PYTHON`` may name another, with pyspark, pyarrow and numpy and no kafkasec), so
the archive goes there too; it is unpacked in the driver's SparkFiles directory, not in the
workers' working directory (the driver's), so that directory goes on their ``PYTHONPATH``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

from pyspark import SparkFiles

ARCHIVE_NAME = "kafkasec_grid_modules"
"""The directory each executor unpacks the archive into (relative to its working directory)."""
WORKER_PROVIDED = frozenset({"pyspark", "py4j", "numpy", "pyarrow"})
"""What a worker's Python must have itself: Spark's Python side and the Arrow UDFs' needs."""
_ENTRY_MODULE = "spark_udfs.spark"
_SHIPPED_FLAG = "_kafkasec_grid_archive"

# What the UDF imports is found by importing it in a fresh interpreter and listing what that
# added to sys.modules: exactly what an executor will import, however kafkasec's imports change.
_LIST_MODULES = f"""
import json, sys
at_startup = set(sys.modules)  # what site's .pth files import: not the UDF's needs
import {_ENTRY_MODULE}
found = {{}}
for name in set(sys.modules) - at_startup:
    top = name.partition(".")[0]
    location = getattr(sys.modules.get(top), "__file__", None) or next(iter(getattr(sys.modules.get(top), "__path__", []) or []), None)
    if location and top not in found:
        found[top] = location
print(json.dumps(found))
"""


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def modules_to_ship() -> dict[str, Path]:
    """Top-level module -> its file or package directory: what the UDF imports beyond the
    standard library and :data:`WORKER_PROVIDED`."""
    answer = subprocess.run([sys.executable, "-c", _LIST_MODULES], capture_output=True, text=True, timeout=120)
    if answer.returncode != 0:
        raise RuntimeError(f"could not list the modules {_ENTRY_MODULE} imports: {answer.stderr.strip()[-500:]}")
    paths = sysconfig.get_paths()
    standard = {Path(paths[key]).resolve() for key in ("stdlib", "platstdlib")}
    shipped = {}
    for name, location in json.loads(answer.stdout).items():
        path = Path(location).resolve()
        # Installed packages live in a site-packages (or Debian's dist-packages) directory, which
        # may be inside the standard library's (a base interpreter's, seen from a virtualenv).
        installed = {"site-packages", "dist-packages"} & set(path.parts)
        is_standard = name in sys.stdlib_module_names or (set(path.parents) & standard and not installed)
        if name in WORKER_PROVIDED or is_standard:
            continue
        # A package's __file__ is its __init__.py: ship the whole directory.
        shipped[name] = path.parent if path.name == "__init__.py" else path
    return shipped


def build_archive(directory: str | os.PathLike) -> Path:
    """A zip of :func:`modules_to_ship` (with each package's vendored ``<name>.libs`` directory,
    where manylinux wheels keep shared libraries) in ``directory``; named by its content, so a
    second build of the same modules is the same file."""
    entries: list[tuple[Path, str]] = []
    for name, path in sorted(modules_to_ship().items()):
        roots = [path] + [sibling for sibling in path.parent.glob(f"{name}.libs") if sibling.is_dir()]
        for root in roots:
            if root.is_file():
                entries.append((root, root.name))
                continue
            for file in sorted(root.rglob("*")):
                if file.is_file() and "__pycache__" not in file.parts:
                    entries.append((file, str(Path(root.name) / file.relative_to(root))))
    digest = hashlib.sha256()
    for file, name in entries:
        digest.update(name.encode())
        digest.update(str(file.stat().st_mtime_ns).encode())
    archive = Path(directory) / f"{ARCHIVE_NAME}-{digest.hexdigest()[:16]}.zip"
    if not archive.exists():
        partial = archive.with_suffix(".partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as bundle:
            for file, name in entries:
                bundle.write(file, name)
        os.replace(partial, archive)
    return archive


def ship_to_executors(spark) -> Path:
    """Make the executors of ``spark`` able to run the grids' UDFs (see the module docstring);
    the archive shipped. Once per SparkContext."""
    context = spark.sparkContext
    shipped = getattr(context, _SHIPPED_FLAG, None)
    if shipped is not None:
        return shipped
    archive = build_archive(tempfile.gettempdir())
    context.addArchive(f"{archive}#{ARCHIVE_NAME}")
    # An executor's Python workers start in its working directory, where the archive is
    # unpacked; a local master unpacks it in the driver's SparkFiles directory. The UDFs made
    # from now on carry this environment to the workers.
    if is_local(context.master):
        unpacked = os.path.join(SparkFiles.getRootDirectory(), ARCHIVE_NAME)
    else:
        unpacked = f"./{ARCHIVE_NAME}"
    paths = [path for path in context.environment.get("PYTHONPATH", "").split(os.pathsep) if path]
    context.environment["PYTHONPATH"] = os.pathsep.join([unpacked, *paths])
    setattr(context, _SHIPPED_FLAG, archive)
    return archive
