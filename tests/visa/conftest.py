"""The vISA back end's tests need IGC's finalizer, GenX_IR (Debian's libigc-tools)."""

from __future__ import annotations

import pytest

from ..conftest import require_tool


@pytest.fixture
def genx_ir() -> None:
    require_tool("GenX_IR")
