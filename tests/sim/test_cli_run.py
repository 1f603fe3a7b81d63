"""`xegen run`: arguments from .npy files and numbers, outputs printed or saved, errors as
one line with status 2."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tests.emit.corpus import BUILDS, corpus  # noqa: F401  (session fixture)


def xegen(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xegen", *args], capture_output=True, text=True, cwd=cwd)


@pytest.fixture
def saxpy_zebin(corpus, tmp_path):
    build = next(b for b in BUILDS if str(b) == "elementwise-dg2")
    path = tmp_path / "saxpy.zebin"
    path.write_bytes(corpus.zebin(build))
    return path


def test_run_saves_outputs(saxpy_zebin, tmp_path):
    rng = np.random.default_rng(0)
    y, x = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "x.npy", x)
    result = xegen("run", str(saxpy_zebin), "--kernel", "saxpy", "--global", "1024", "--local", "64",
                   "--arg", str(tmp_path / "y.npy"), "--arg", str(tmp_path / "x.npy"), "--arg", "1.75",
                   "--arg", "1000", "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert "saxpy on XeHPG: SIMD32, 16 group(s), 32 thread(s)" in result.stdout
    np.testing.assert_allclose(np.load(tmp_path / "out" / "y.npy"), np.float32(1.75) * x + y, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), y)  # the input file is not touched


def test_run_prints_outputs_and_new_buffers(saxpy_zebin, tmp_path):
    np.save(tmp_path / "x.npy", np.arange(8, dtype=np.float32))
    result = xegen("run", str(saxpy_zebin), "-k", "saxpy", "--global", "8", "--local", "8",
                   "--arg", "zeros:8:float32", "--arg", str(tmp_path / "x.npy"), "--arg", "2", "--arg", "8")
    assert result.returncode == 0, result.stderr
    assert "arg 0 (arg0.npy, float32[8]): [ 0.  2.  4.  6.  8. 10. 12. 14.]" in result.stdout


@pytest.mark.parametrize("extra, words", [
    (["--arg", "zeros:8:float32"], "takes 4 argument(s), got 1"),
    (["--arg", "zeros:8"], "is not zeros:SHAPE:DTYPE"),
    (["--arg", "banana"], "is not a .npy file, a number"),
    (["--arg", "zeros:8:float32", "--arg", "zeros:8:float32", "--arg", "1", "--arg", "8", "--hw", "pvc"],
     "built for XeHPG"),
])
def test_mistakes_are_one_line(saxpy_zebin, extra, words):
    result = xegen("run", str(saxpy_zebin), "-k", "saxpy", "--global", "8", "--local", "8", *extra)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("xegen: error:") and words in lines[0]


def test_missing_file_and_bad_sizes(tmp_path):
    result = xegen("run", str(tmp_path / "none.zebin"), "-k", "k", "--global", "8", "--local", "8")
    assert result.returncode == 2 and "none.zebin" in result.stderr
    (tmp_path / "junk.zebin").write_bytes(b"not an elf file at all")
    result = xegen("run", str(tmp_path / "junk.zebin"), "-k", "k", "--global", "8,x", "--local", "8")
    assert result.returncode == 2 and result.stderr.startswith("xegen: error:")
