"""egglog's Rust bindings (`egglog.bindings`), loaded without the egglog package's Python layer.

`import egglog.bindings` first runs the package's `__init__`, which builds egglog's high-level
Python API (and imports black to pretty-print it): about 0.45 s of every compile's start-up,
for an API xegen does not use (it speaks egglog's language as text).  `bindings()` loads the
extension module from the package's folder under its own name, once per process, and registers
it where the import system looks, so a later `import egglog` shares it (a PyO3 module may be
initialized only once).  Where the extension is not a file beside the package's `__init__`, it
is imported the ordinary way.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import threading
from pathlib import Path
from types import ModuleType

NAME = "egglog.bindings"
_LOCK = threading.Lock()


def bindings() -> ModuleType:
    with _LOCK:
        module = sys.modules.get(NAME)
        if module is None:
            module = _load_extension() or importlib.import_module(NAME)
        return module


def _load_extension() -> ModuleType | None:
    package = importlib.util.find_spec("egglog")  # the package's folder, without running its __init__
    if package is None or not package.submodule_search_locations:
        return None
    for folder in package.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder, f"bindings{suffix}")
            if path.is_file():
                loader = importlib.machinery.ExtensionFileLoader(NAME, str(path))
                spec = importlib.util.spec_from_file_location(NAME, path, loader=loader)
                assert spec is not None  # None only when no loader can be found, and one is given
                module = importlib.util.module_from_spec(spec)
                sys.modules[NAME] = module
                try:
                    loader.exec_module(module)
                except BaseException:
                    del sys.modules[NAME]
                    raise
                return module
    return None
