"""Peer kernels' numbers for the network report, read from the JSON `python bench/e2e/run.py` writes.

The bench measures, per platform case and layer, xegen's kernel and its peers' (oneDNN's
production kernels and the naive OpenCL kernel with `--peer onednn`, the naive one alone with
`--peer igc`), each priced by the same cost model.  `load_peers` indexes those rows by problem: a
layer of the report gets a bench row's peers when both are the same problem (direction, data
types, post-ops, layout tags and shape; names aside) on the same platform.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from ..conv import Problem, make_problem
from ..errors import Error


@dataclass(frozen=True)
class PeerKernel:
    """One peer kernel of a layer: its modeled numbers when it ran and verified, else why not."""

    label: str
    device_cycles: float | None = None
    bound: str | None = None
    roofline_fraction: float | None = None
    instructions: int | None = None
    why_not: str = ""  # "" when verified, else "not run: ...", "error: ..." or "did not verify"

    @property
    def measured(self) -> bool:
        return self.device_cycles is not None

    @property
    def cycles(self) -> float:
        """The device cycles of a measured kernel."""
        assert self.device_cycles is not None, f"{self.label} was not measured"
        return self.device_cycles


def problem_key(hw: str, problem: Problem) -> str:
    """What identifies a layer across runs: the platform and the whole problem, without its name."""
    return f"{hw} {replace(problem, desc=replace(problem.desc, name=''))}"


def _kernel(label: str, side: dict) -> PeerKernel:
    if "unsupported" in side:
        return PeerKernel(label, why_not=f"not run: {side['unsupported']}")
    if "error" in side:
        return PeerKernel(label, why_not=f"error: {side['error']}")
    if not side.get("verified"):
        return PeerKernel(label, why_not="did not verify")
    return PeerKernel(
        label, float(side["device_cycles"]), side["bound"], side["roofline_fraction"], int(side["instructions"])
    )


def load_peers(path: str) -> dict[str, tuple[PeerKernel, ...]]:
    """The peers of every layer the bench JSON at `path` measured, by `problem_key`."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
        cases = document["cases"]
        peers: dict[str, tuple[PeerKernel, ...]] = {}
        for case in cases:
            labels = {side: label for side, label in case["kernels"].items() if side != "xegen"}
            for row in case["layers"]:
                if "problem" not in row:  # the layer's problem did not parse: nothing to match
                    continue
                problem = make_problem(row["problem"], case["direction"], case["dt"])
                peers[problem_key(case["hw"], problem)] = tuple(
                    _kernel(label, row.get(side, {"error": row.get("error", "not measured")}))
                    for side, label in labels.items()
                )
    except OSError as error:
        raise Error(f"--report-peers {path}: {error.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise Error(f"--report-peers {path}: not JSON ({error})") from None
    except (KeyError, TypeError, AttributeError, ValueError, Error) as error:
        raise Error(
            f"--report-peers {path}: not the JSON of python bench/e2e/run.py (this version: each case "
            f"with 'kernels', each layer with 'problem'): {type(error).__name__} {error}"
        ) from None
    return peers
