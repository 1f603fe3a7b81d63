"""`xegen run`: arguments from .npy files and numbers, outputs printed or saved, errors as
one line with status 2."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tests.emit.corpus import BUILDS
from xegen.cli import main


def xegen(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xegen", *args], capture_output=True, text=True, cwd=cwd)


def xegen_here(capsys, *args: str) -> subprocess.CompletedProcess:
    """The command run in this process (much faster than a new interpreter; a traceback still
    fails the test, as the exception escapes `main`)."""
    code = main(list(args))
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, captured.out, captured.err)


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
    result = xegen(
        "run",
        str(saxpy_zebin),
        "--kernel",
        "saxpy",
        "--global",
        "1024",
        "--local",
        "64",
        "--arg",
        str(tmp_path / "y.npy"),
        "--arg",
        str(tmp_path / "x.npy"),
        "--arg",
        "1.75",
        "--arg",
        "1000",
        "--out",
        str(tmp_path / "out"),
    )
    assert result.returncode == 0, result.stderr
    assert "saxpy on XeHPG: SIMD32, 16 group(s), 32 thread(s)" in result.stdout
    np.testing.assert_allclose(np.load(tmp_path / "out" / "y.npy"), np.float32(1.75) * x + y, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), y)  # the input file is not touched


def test_run_prints_outputs_and_new_buffers(saxpy_zebin, tmp_path):
    np.save(tmp_path / "x.npy", np.arange(8, dtype=np.float32))
    result = xegen(
        "run",
        str(saxpy_zebin),
        "-k",
        "saxpy",
        "--global",
        "8",
        "--local",
        "8",
        "--arg",
        "zeros:8:float32",
        "--arg",
        str(tmp_path / "x.npy"),
        "--arg",
        "2",
        "--arg",
        "8",
    )
    assert result.returncode == 0, result.stderr
    assert "arg 0 (arg0.npy, float32[8]): [ 0.  2.  4.  6.  8. 10. 12. 14.]" in result.stdout


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--arg", "zeros:8:float32"], "takes 4 argument(s), got 1"),
        (["--arg", "zeros:8"], "is not zeros:SHAPE:DTYPE"),
        (["--arg", "banana"], "is not a .npy file, a number"),
        (
            ["--arg", "zeros:8:float32", "--arg", "zeros:8:float32", "--arg", "1", "--arg", "8", "--hw", "pvc"],
            "built for XeHPG",
        ),
    ],
)
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


@pytest.fixture
def inputs(tmp_path):
    """x.npy (8 floats) and a few malformed files."""
    np.save(tmp_path / "x.npy", np.arange(8, dtype=np.float32))
    np.save(tmp_path / "doubles.npy", np.zeros(8, np.float64))
    np.save(tmp_path / "objects.npy", np.array([None, 1], dtype=object), allow_pickle=True)
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        np.save(tmp_path / folder / "v.npy", np.zeros(8, np.float32))
    return tmp_path


@pytest.mark.parametrize(
    "first, words",
    [
        ("DIR/doubles.npy", "argument 0 (y) is float*: pass a float32 array, not float64"),
        ("zeros:8:bool", "pass a float32 array, not bool"),
        ("zeros:8:int32", "pass a float32 array, not int32"),
        ("DIR/objects.npy", "objects.npy is not a numpy array file we can read"),
        ("DIR/junk.npy", "junk.npy is not a numpy array file we can read"),
        ("DIR/missing.npy", "missing.npy does not exist"),
        ("zeros:-1:float32", "every dimension of the shape must be positive"),
        ("zeros:0:float32", "every dimension of the shape must be positive"),
        ("zeros:8:object", "holds object, not numbers"),
        ("zeros:8:U3", "holds <U3, not numbers"),
        ("zeros:99999999999999:float32", "at most 4294967296 are allowed"),
        ("local:-5", "needs a positive number of bytes"),
    ],
)
def test_bad_buffers_are_one_line_errors(capsys, saxpy_zebin, inputs, first, words):
    result = xegen_here(
        capsys,
        "run",
        str(saxpy_zebin),
        "-k",
        "saxpy",
        "--global",
        "8",
        "--local",
        "8",
        "--arg",
        first.replace("DIR", str(inputs)),
        "--arg",
        str(inputs / "x.npy"),
        "--arg",
        "2",
        "--arg",
        "8",
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("xegen: error:") and words in lines[0], result.stderr


@pytest.mark.parametrize(
    "sizes, scalar, words",
    [
        (["--global", "8", "--local", "8,2"], "8", "the local size has 2 dimension(s) but the global size has 1"),
        (["--global", "99999999999", "--local", "8"], "8", "each dimension must be below 2^32"),
        (["--global", "999999999", "--local", "8"], "8", "needs 125000000 SIMD32 threads"),
        (["--global", "8", "--local", "8"], "4294967295", "4294967295 is outside the range of int"),
        (["--global", "8", "--local", "8"], "-2147483649", "outside the range of int (-2147483648 to 2147483647)"),
    ],
)
def test_bad_sizes_are_one_line_errors(capsys, saxpy_zebin, inputs, sizes, scalar, words):
    result = xegen_here(
        capsys,
        "run",
        str(saxpy_zebin),
        "-k",
        "saxpy",
        *sizes,
        "--arg",
        "zeros:8:float32",
        "--arg",
        str(inputs / "x.npy"),
        "--arg",
        "2",
        "--arg",
        scalar,
    )
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and words in lines[0], result.stderr


def test_two_outputs_with_one_name_are_an_error(capsys, saxpy_zebin, inputs):
    out = inputs / "out"
    result = xegen_here(
        capsys,
        "run",
        str(saxpy_zebin),
        "-k",
        "saxpy",
        "--global",
        "8",
        "--local",
        "8",
        "--arg",
        str(inputs / "a" / "v.npy"),
        "--arg",
        str(inputs / "b" / "v.npy"),
        "--arg",
        "2",
        "--arg",
        "8",
        "--out",
        str(out),
    )
    assert result.returncode == 2 and "would save both" in result.stderr and "v.npy" in result.stderr
    assert not out.exists()
    # an unsigned int buffer for a signed int* is the same bytes: accepted
    result = xegen_here(
        capsys,
        "run",
        str(saxpy_zebin),
        "-k",
        "saxpy",
        "--global",
        "8",
        "--local",
        "8",
        "--arg",
        str(inputs / "a" / "v.npy"),
        "--arg",
        str(inputs / "x.npy"),
        "--arg",
        "2",
        "--arg",
        "8",
        "--out",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(np.load(out / "v.npy"), 2 * np.arange(8, dtype=np.float32))
