"""Shared test fixtures: access to Intel's tools, its OpenCL runtime and headless Chromium under the
project's skip rule, and the IGC kernel corpus.

A test that needs iga64, ocloc or chromium may skip only when it cannot install them (not root
on Debian), and then it says so.  As root on Debian a missing tool is a failure: scripts/test
installs them.
"""

from __future__ import annotations

import os
import shutil

import pytest

from xegen import oracles
from xegen.runtime import device_less


def require_tool(name: str) -> None:
    if oracles.have_tool(name):
        return
    if oracles.environment_can_install_tools():
        pytest.fail(f"{name} is missing although this is root on Debian: run scripts/test, which installs it")
    pytest.skip(f"{name} is not installed and this is not root on Debian, so it cannot be installed here")


@pytest.fixture
def iga64() -> None:
    require_tool("iga64")


@pytest.fixture
def ocloc() -> None:
    require_tool("ocloc")


@pytest.fixture(autouse=True, scope="session")
def no_tuning_database(tmp_path_factory):
    """`xegen conv` reads a tuning database by default: the tests get an empty one of their own,
    never the developer's ~/.cache/xegen/tuning.sqlite (whose tuned configurations would change
    what the tests compile)."""
    patch = pytest.MonkeyPatch()
    patch.setenv("XEGEN_TUNING_DB", str(tmp_path_factory.mktemp("tuning") / "none.sqlite"))
    yield
    patch.undo()


@pytest.fixture(autouse=True, scope="session")
def no_users_kernel_cache(tmp_path_factory):
    """`xegen conv` keeps its kernels in a cache: never the developer's ~/.cache/xegen/kernels
    (this one, for fixtures of a module or a session, which run before a test's own)."""
    patch = pytest.MonkeyPatch()
    patch.setenv("XEGEN_CACHE_DIR", str(tmp_path_factory.mktemp("kernels")))
    yield
    patch.undo()


@pytest.fixture(autouse=True)
def empty_kernel_cache(no_users_kernel_cache, tmp_path_factory, monkeypatch):
    """Each test gets an empty kernel cache of its own: a hit would skip the compile it means to run."""
    monkeypatch.setenv("XEGEN_CACHE_DIR", str(tmp_path_factory.mktemp("kernels")))


@pytest.fixture
def neo() -> None:
    """Intel's OpenCL runtime (NEO) and the ICD loader, which xegen.runtime drives."""
    if device_less.installed():
        return
    if oracles.environment_can_install_tools():
        pytest.fail(
            "Intel's OpenCL runtime is missing although this is root on Debian: run scripts/test, which installs it"
        )
    pytest.skip("Intel's OpenCL runtime is not installed and this is not root on Debian, so it cannot be installed")


@pytest.fixture
def chromium() -> str:
    require_tool("chromium")
    return shutil.which("chromium")


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    """The IGC kernel corpus's compiler (tests/emit/corpus), one per session; requires ocloc."""
    from tests.emit.corpus import Corpus

    require_tool("ocloc")
    base = tmp_path_factory.getbasetemp()
    # Under pytest-xdist each worker has its own base directory inside the run's directory.
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return Corpus(shared / "xegen-corpus")
