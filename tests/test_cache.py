"""The kernel cache (xegen/cache.py) and `xegen conv`'s use of it: the same bytes and summary
with and without it, entries whole under concurrent writers, a bounded directory, damaged
entries recompiled, keys that change with the compiler's rules."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xegen import cache
from xegen.cache import KernelCache, make_key
from xegen.cli import main
from xegen.conv import make_problem
from xegen.pipeline import compile_problem
from xegen.tune.database import Database

LAYER = "mb1ic16ih8oc32oh8kh3ph1"


def entries(directory: Path) -> list[Path]:
    return sorted(directory.glob(f"*{cache.SUFFIX}"))


def conv(capsys, *args: str) -> tuple[int, str]:
    status = main(["conv", LAYER, *args])
    return status, capsys.readouterr().out


# --- the store ----------------------------------------------------------------------------------


def test_an_entry_reads_back_as_written(tmp_path):
    store = KernelCache(tmp_path)
    assert store.get("k" * 64) is None
    store.put("k" * 64, b"\x7fELF zebin \n\x00 bytes", {"text": "line 1\nline 2", "report": {"b": 1, "a": [2.5]}})
    hit = store.get("k" * 64)
    assert hit.zebin == b"\x7fELF zebin \n\x00 bytes"
    assert hit.data == {"text": "line 1\nline 2", "report": {"b": 1, "a": [2.5]}}
    assert list(hit.data["report"]) == ["b", "a"]  # the summary's order, as --json prints it
    assert [p.name for p in tmp_path.iterdir()] == [f"{'k' * 64}{cache.SUFFIX}"]  # no temporary left


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty", "other key"])
def test_a_damaged_entry_is_a_miss_and_is_removed(tmp_path, damage):
    store = KernelCache(tmp_path)
    key = "a" * 64
    store.put(key, bytes(range(256)) * 4, {"text": "t"})
    path = store.path(key)
    content = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(content[:-1])
    elif damage == "flip":  # one bit of the zebin
        path.write_bytes(content[:-10] + bytes([content[-10] ^ 1]) + content[-9:])
    elif damage == "garbage":
        path.write_bytes(b"not an entry at all")
    elif damage == "empty":
        path.write_bytes(b"")
    else:  # a whole entry under another key's name
        store.put("b" * 64, b"zebin", {})
        shutil.copy(store.path("b" * 64), path)
    assert store.get(key) is None
    assert not path.exists()


def test_least_recently_used_entries_are_evicted_first(tmp_path):
    entry_size = len(cache._encode("0" * 64, b"z" * 1000, {}))
    store = KernelCache(tmp_path, max_bytes=3 * entry_size)
    keys = [str(n) * 64 for n in range(4)]
    for age, key in enumerate(keys[:3]):
        store.put(key, b"z" * 1000, {})
        os.utime(store.path(key), (1_000_000 + age, 1_000_000 + age))  # put in this order, long ago
    assert store.get(keys[0]) is not None  # the oldest, used again: now the most recent
    store.put(keys[3], b"z" * 1000, {})  # one too many: the least recently used goes
    assert [store.get(key) is not None for key in keys] == [True, False, True, True]
    assert sum(p.stat().st_size for p in entries(tmp_path)) <= store.max_bytes


def test_eviction_removes_a_dead_writers_temporary_files(tmp_path):
    old, new = tmp_path / ".dead.tmp", tmp_path / ".writing.tmp"
    old.write_bytes(b"x")
    new.write_bytes(b"x")
    os.utime(old, (1_000_000, 1_000_000))
    KernelCache(tmp_path).put("c" * 64, b"zebin", {})
    assert not old.exists() and new.exists()  # one still being written is left alone


def test_an_unwritable_directory_is_no_cache_not_an_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    store = KernelCache(blocker / "kernels")  # under a file: cannot be created
    store.put("d" * 64, b"zebin", {})
    assert store.get("d" * 64) is None


WRITER = """
import sys
from xegen.cache import KernelCache
store, me = KernelCache(sys.argv[1], max_bytes=int(sys.argv[2])), sys.argv[3]
for n in range(60):
    store.put("shared" + "0" * 58, me.encode() * 20000, {"writer": me})  # one key, both writers
    store.put(f"{me}{n:02d}".ljust(64, "0"), me.encode() * 20000, {"writer": me})  # keys of its own
    hit = store.get("shared" + "0" * 58)
    assert hit is None or hit.zebin == hit.data["writer"].encode() * 20000, "a torn entry"
"""


def test_concurrent_writers_leave_whole_entries(tmp_path):
    bound = 40 * 20_200  # about 40 entries: the writers also evict each other's
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(bound), me]) for me in ("a", "b")]
    assert [w.wait(timeout=600) for w in writers] == [0, 0]
    store = KernelCache(tmp_path, max_bytes=bound)
    found = entries(tmp_path)
    assert found and not list(tmp_path.glob("*.tmp"))
    for path in found:  # every entry left is one writer's whole entry
        hit = store.get(path.name.removesuffix(cache.SUFFIX))
        assert hit is not None and hit.zebin == hit.data["writer"].encode() * 20000
    assert sum(p.stat().st_size for p in entries(tmp_path)) <= bound + 2 * 20_200  # a racing writer's last


# --- the key ------------------------------------------------------------------------------------


def test_the_key_names_every_field():
    base = {"descriptor": LAYER, "hw": "xehpg", "config": []}
    assert make_key(base) == make_key(dict(reversed(base.items())))
    assert (
        len(
            {
                make_key(base),
                make_key({**base, "hw": "xelp"}),
                make_key({**base, "config": ["m_tile=8"]}),
                make_key({**base, "descriptor": LAYER + "n'x'"}),
            }
        )
        == 4
    )


def test_the_key_changes_when_a_rule_changes(tmp_path, monkeypatch):
    package = Path(cache.__file__).parent
    copy = tmp_path / "xegen"
    shutil.copytree(package / "rules", copy / "rules")
    (copy / "egraph").mkdir()
    shutil.copy(package / "egraph" / "language.egg", copy / "egraph")
    monkeypatch.setattr(cache, "PACKAGE", copy)
    for digest in (cache.code_digest, cache.rules_digest):
        monkeypatch.setattr(cache, digest.__name__, digest.__wrapped__)  # not remembered across the edit
    fields = {"descriptor": LAYER}
    before = (cache.rules_digest(), make_key(fields))
    rule = sorted((copy / "rules").glob("*.egg"))[0]
    rule.write_text(rule.read_text() + "\n; one more comment\n")
    after = (cache.rules_digest(), make_key(fields))
    assert before[0] != after[0] and before[1] != after[1]
    (copy / "rules" / "notes.txt").write_text("not a rule file")
    assert cache.rules_digest() == after[0]


def test_the_key_changes_with_the_versions_of_egglog_networkx_and_numpy(monkeypatch):
    import networkx
    import numpy

    found = cache.dependency_versions()
    assert found == (
        f"egglog-{_version('egglog')}.dist-info",
        f"networkx-{networkx.__version__}.dist-info",
        f"numpy-{numpy.__version__}.dist-info",
    )
    before = make_key({"descriptor": LAYER})
    monkeypatch.setattr(cache, "dependency_versions", lambda: (*found[:2], "numpy-0.0.1.dist-info"))
    assert make_key({"descriptor": LAYER}) != before


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def test_the_cache_directory_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("XEGEN_CACHE_DIR", str(tmp_path / "mine"))
    assert cache.default_directory() == tmp_path / "mine"
    monkeypatch.delenv("XEGEN_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.default_directory() == tmp_path / "xdg" / "xegen" / "kernels"


def test_the_tests_do_not_use_the_users_cache():
    assert Path(os.environ["XEGEN_CACHE_DIR"]) != Path.home() / ".cache" / "xegen" / "kernels"
    assert not entries(Path(os.environ["XEGEN_CACHE_DIR"]))  # and each test starts with an empty one


# --- xegen conv ---------------------------------------------------------------------------------


def test_a_hit_writes_the_same_bytes_and_summary_as_a_compile(capsys, tmp_path):
    directory = Path(os.environ["XEGEN_CACHE_DIR"])
    library = compile_problem(make_problem(LAYER, "FWD_B", "f32"), "xehpg").zebin()  # without the command
    cold = conv(capsys, "-o", str(tmp_path / "cold.zebin"))
    assert len(entries(directory)) == 1
    warm = conv(capsys, "-o", str(tmp_path / "warm.zebin"))
    uncached = conv(capsys, "-o", str(tmp_path / "uncached.zebin"), "--no-cache")
    assert (tmp_path / "cold.zebin").read_bytes() == library
    assert (tmp_path / "warm.zebin").read_bytes() == library
    assert (tmp_path / "uncached.zebin").read_bytes() == library
    assert cold[0] == warm[0] == uncached[0] == 0
    assert (
        cold[1].replace("cold.zebin", "X")
        == warm[1].replace("warm.zebin", "X")
        == uncached[1].replace("uncached.zebin", "X")
    )
    assert "modeled: " in warm[1] and "wrote " in warm[1]


def test_a_hit_gives_the_same_json_and_says_so(capsys):
    cold = json.loads(conv(capsys, "--json")[1])
    warm = json.loads(conv(capsys, "--json")[1])
    assert warm.pop("cache") == "hit" and "cache" not in cold
    assert warm == cold


def test_options_that_change_the_kernel_or_summary_are_other_entries(capsys):
    directory = Path(os.environ["XEGEN_CACHE_DIR"])
    conv(capsys)
    conv(capsys, "--no-model")
    conv(capsys, "--config", "m_tile=8")
    conv(capsys, "--lead")
    assert len(entries(directory)) == 4
    assert "modeled" not in conv(capsys, "--no-model")[1]  # its own entry, without the model


def test_options_the_cache_cannot_answer_bypass_it(capsys):
    directory = Path(os.environ["XEGEN_CACHE_DIR"])
    conv(capsys, "--no-cache")
    conv(capsys, "--print-config")
    assert not entries(directory)
    conv(capsys)
    status, out = conv(capsys, "--asm")  # compiles: the listing is not stored
    assert status == 0 and "mad" in out and len(entries(directory)) == 1


def test_a_damaged_entry_is_recompiled(capsys, tmp_path):
    directory = Path(os.environ["XEGEN_CACHE_DIR"])
    first = conv(capsys, "-o", str(tmp_path / "a.zebin"))
    [path] = entries(directory)
    path.write_bytes(path.read_bytes()[:-100])
    second = conv(capsys, "-o", str(tmp_path / "b.zebin"))
    assert second[0] == 0 and (tmp_path / "a.zebin").read_bytes() == (tmp_path / "b.zebin").read_bytes()
    assert first[1].replace("a.zebin", "X") == second[1].replace("b.zebin", "X")
    [again] = entries(directory)
    assert KernelCache(directory).get(again.name.removesuffix(cache.SUFFIX)) is not None  # stored whole again


def test_an_entry_without_the_summary_is_recompiled(capsys, tmp_path):
    directory = Path(os.environ["XEGEN_CACHE_DIR"])
    first = conv(capsys, "-o", str(tmp_path / "a.zebin"))
    [path] = entries(directory)
    key = path.name.removesuffix(cache.SUFFIX)
    KernelCache(directory).put(key, b"not the kernel", {"report": "not a summary"})  # whole, but not ours
    second = conv(capsys, "-o", str(tmp_path / "b.zebin"))
    assert (tmp_path / "a.zebin").read_bytes() == (tmp_path / "b.zebin").read_bytes()
    assert first[1].replace("a.zebin", "X") == second[1].replace("b.zebin", "X")


def test_a_batch_is_answered_from_the_cache(capsys, tmp_path):
    shapes = tmp_path / "shapes"
    shapes.write_text(f"{LAYER}\nmb1ic8ih6oc16oh6kh1\n")
    cold = main(["conv", "--batch", str(shapes), "-o", str(tmp_path / "cold")]), capsys.readouterr().out
    warm = main(["conv", "--batch", str(shapes), "-o", str(tmp_path / "warm")]), capsys.readouterr().out
    assert cold == warm and cold[0] == 0
    names = sorted(p.name for p in (tmp_path / "cold").iterdir())
    assert len(names) == 2 and names == sorted(p.name for p in (tmp_path / "warm").iterdir())
    for name in names:
        assert (tmp_path / "cold" / name).read_bytes() == (tmp_path / "warm" / name).read_bytes()


def test_a_tuners_write_misses_the_entry(capsys, monkeypatch, tmp_path):
    directory = Path(os.environ["XEGEN_CACHE_DIR"])
    database = tmp_path / "tuning.sqlite"
    monkeypatch.setenv("XEGEN_TUNING_DB", str(database))
    conv(capsys)
    Database(database).close()  # a tuner makes a database where there was none
    conv(capsys)
    assert len(entries(directory)) == 2


HIT_IMPORTS = """
import sys
from xegen.cli import main
main(["conv", sys.argv[1], "-o", sys.argv[2]])
print(sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "egglog", "networkx")
             or m in ("xegen.pipeline", "xegen.conv", "xegen.plan", "xegen.ir")))
"""


def test_a_hit_imports_none_of_the_compiler(tmp_path):
    def run(name: str) -> list[str]:
        argv = [sys.executable, "-c", HIT_IMPORTS, LAYER, str(tmp_path / name)]
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.splitlines()

    assert "'xegen.pipeline'" in run("cold.zebin")[-1]
    assert run("warm.zebin")[-1] == "[]"
    assert (tmp_path / "cold.zebin").read_bytes() == (tmp_path / "warm.zebin").read_bytes()


def test_workers_compile_the_misses_and_the_driver_reads_the_hits(capsys, tmp_path):
    shapes = tmp_path / "shapes"
    shapes.write_text(f"{LAYER}\nmb1ic8ih6oc16oh6kh1\n")
    one = main(["conv", "--batch", str(shapes), "--no-cache", "-o", str(tmp_path / "one")]), capsys.readouterr().out
    conv(capsys)  # the first line's kernel is in the cache, the second's is not
    [stored] = entries(Path(os.environ["XEGEN_CACHE_DIR"]))
    inode = stored.stat().st_ino
    mixed = main(["conv", "--batch", str(shapes), "-j", "2", "-o", str(tmp_path / "two")]), capsys.readouterr().out
    assert one == mixed and one[0] == 0
    assert stored.stat().st_ino == inode  # read, not compiled and stored again (a store renames a new file)
    assert len(entries(Path(os.environ["XEGEN_CACHE_DIR"]))) == 2  # the worker stored its kernel
    for path in sorted((tmp_path / "one").iterdir()):
        assert path.read_bytes() == (tmp_path / "two" / path.name).read_bytes()
