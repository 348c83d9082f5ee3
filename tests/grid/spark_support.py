"""What the Spark tests share: a Python like a platform team's Spark workers have."""

import sys
from pathlib import Path

import pyspark

WORKER_PACKAGES = ("pyspark", "py4j", "numpy", "numpy.libs", "pyarrow")
"""What a platform team's worker Python has (as the issue found it): no kafkasec, no attrs."""


def worker_python(directory: Path) -> Path:
    """A Python for the workers that sees only WORKER_PACKAGES beside the standard library."""
    site = directory / "worker-site"
    site.mkdir()
    installed = Path(pyspark.__file__).parent.parent
    for name in WORKER_PACKAGES:
        if (installed / name).exists():
            (site / name).symlink_to(installed / name)
    wrapper = directory / "worker-python"
    # -S: no site-packages, no .pth files (so no editable kafkasec); Spark's PYTHONPATH is kept.
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}" exec {sys.executable} -S "$@"\n')
    wrapper.chmod(0o755)
    return wrapper
