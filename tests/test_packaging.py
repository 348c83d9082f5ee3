"""The package as a user installs it: build the sdist and the wheel, install the wheel without extras
into a fresh virtualenv, and run the ``kafkasec`` command and the README's embedding example from
there. CI otherwise only ever sees the checkout installed in editable mode, where a file left out
of the wheel (py.typed, a plugin, report.js) or a dependency that only an extra brings would go
unnoticed.

The dependencies come from whatever index pip is configured with, as for any user; pip's cache
makes a second run quick.
"""

import importlib.util
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STEP_TIMEOUT_S = 120  # a hung build or pip is a failure, not a stuck CI job

pytestmark = pytest.mark.slow


def run(argv, **options):
    answer = subprocess.run([str(part) for part in argv], capture_output=True, text=True, timeout=STEP_TIMEOUT_S,
                            **options)
    return answer


def check(argv, **options):
    answer = run(argv, **options)
    assert answer.returncode == 0, f"{' '.join(map(str, argv))}\n{answer.stdout}\n{answer.stderr}"
    return answer


def readme_embedding_example():
    """The Python block under the README's "Embedding the authorizer" heading."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Embedding the authorizer", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


@pytest.fixture(scope="module")
def distributions(tmp_path_factory):
    """The sdist and the wheel, built as a release would be (the wheel from the sdist)."""
    if importlib.util.find_spec("build") is None:
        pytest.skip("the 'build' package (in the dev extra) is not installed")
    outdir = tmp_path_factory.mktemp("dist")
    check([sys.executable, "-m", "build", "--outdir", outdir, ROOT])
    (wheel,) = outdir.glob("kafkasec-*.whl")
    (sdist,) = outdir.glob("kafkasec-*.tar.gz")
    return wheel, sdist


@pytest.fixture(scope="module")
def virtualenv(distributions, tmp_path_factory):
    """A fresh virtualenv with the wheel installed and no extras; its bin directory."""
    wheel, _ = distributions
    home = tmp_path_factory.mktemp("venv")
    # No pip of its own (ensurepip would cost seconds): this interpreter's pip installs into it.
    check([sys.executable, "-m", "venv", "--without-pip", home])
    bin_directory = home / "bin"
    check([sys.executable, "-m", "pip", "--python", bin_directory / "python", "install", "--quiet",
           "--disable-pip-version-check", wheel])
    return bin_directory


@pytest.fixture
def user_environment(tmp_path):
    """The environment of a user who has only that virtualenv: no PYTHONPATH into the checkout."""
    return {key: value for key, value in os.environ.items()
            if key not in ("PYTHONPATH", "VIRTUAL_ENV", "KAFKASEC_LOAD_PLUGINS", "PYTHONHOME")}


def test_the_wheel_and_the_sdist_carry_the_package_data(distributions):
    wheel, sdist = distributions
    shipped = set(zipfile.ZipFile(wheel).namelist())
    assert {"kafkasec/py.typed", "spark_udfs/report.js", "kafkasec_tenant/__init__.py"} <= shipped
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"kafkasec/py.typed", "README.md", "pyproject.toml"} <= names


def test_the_installed_command_works_on_a_state_file_without_extras(virtualenv, user_environment, tmp_path):
    kafkasec = virtualenv / "kafkasec"
    probe = run([virtualenv / "python", "-c", "import kio"], env=user_environment)
    assert probe.returncode != 0, "kio came with a plain install: this test no longer checks the no-extra case"
    state = tmp_path / "acls.db"
    check([kafkasec, "acls", "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders",
           "--state", state], env=user_environment, cwd=tmp_path)
    listed = check([kafkasec, "acls", "--list", "--state", state], env=user_environment, cwd=tmp_path)
    assert "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in listed.stdout


def test_the_installed_command_names_the_extra_a_cluster_needs(virtualenv, user_environment, tmp_path):
    answer = run([virtualenv / "kafkasec", "acls", "--list", "--bootstrap-server", "127.0.0.1:1"],
                 env=user_environment, cwd=tmp_path)
    assert answer.returncode == 1
    assert answer.stderr.count("\n") == 1 and "pip install 'kafkasec[wire]'" in answer.stderr, answer.stderr


def test_the_readme_embedding_example_runs_from_the_installed_wheel(virtualenv, user_environment, tmp_path):
    example = tmp_path / "embedding.py"
    example.write_text(readme_embedding_example(), encoding="utf-8")
    answer = check([virtualenv / "python", example], env=user_environment, cwd=tmp_path)
    assert answer.stdout.strip(), "the example prints the rule that decided"
    imported = check([virtualenv / "python", "-c", "import kafkasec; print(kafkasec.__file__)"],
                     env=user_environment, cwd=tmp_path)
    assert str(virtualenv.parent) in imported.stdout, "the example ran against the checkout, not the wheel"
