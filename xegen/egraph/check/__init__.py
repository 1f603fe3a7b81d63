"""The rule checker: every rule proven at every type it applies to.

For each rule of `rules/` (and the language's own), at each type assignment it applies to:
1. a deterministic sweep of values through the IR interpreter (edges, zero, negatives, random);
2. a hypothesis search through the interpreter that shrinks any failure;
3. a z3 proof of the same claim with xegen's exact semantics, as bit-vectors or as mathematical
   integers (prove.py).
A rule is `sound` when every instance is proven and no sample fails, `unsound` with a
counterexample otherwise; `unproven` when z3 gave up within its effort (a count of z3's work, not
time; the samples passed, which proves nothing: `xegen rules check` fails on it unless told to
allow it).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..rules import RuleFile, check_unique_names, language_file, read_rule_file, rule_files, shipped_rule_files
from .cache import VerdictCache
from .guards import collect
from .model import Instance, Rule, RuleShapeError, instances, language_signatures, read_rules
from .prove import EFFORT, FIRST_ROUND, prove
from .sample import search, sweep

VERDICTS = ("sound", "unsound", "unproven", "error", "no comment")


@dataclass
class RuleVerdict:
    rule: Rule
    verdict: str
    instances: int = 0
    counterexample: str = ""
    detail: str = ""
    seconds: float = 0.0
    types: list[str] = field(default_factory=list)
    cached: bool = False  # read from the verdict cache, not checked in this run

    @property
    def ok(self) -> bool:
        return self.verdict == "sound"

    def to_json(self) -> dict:
        return {
            "name": self.rule.name,
            "file": self.rule.file,
            "rule": self.rule.summary,
            "comment": self.rule.comment,
            "verdict": self.verdict,
            "instances": self.instances,
            "counterexample": self.counterexample,
            "detail": self.detail,
            "seconds": round(self.seconds, 3),
            "cached": self.cached,
        }


def _format_assignment(instance: Instance, assignment: dict) -> str:
    parts = [f"{k}={v}" for k, v in instance.types.items()]
    parts += [f"{k} = {str(v).lower() if isinstance(v, bool) else v}" for k, v in assignment.items()]
    return ", ".join(parts)


def check_rule(rule: Rule, signatures, examples: int = 10, effort: int = EFFORT) -> RuleVerdict:
    start = time.perf_counter()
    verdict = RuleVerdict(rule, "sound")
    try:
        all_instances = list(instances(rule, signatures))
    except RuleShapeError as error:
        verdict.verdict, verdict.detail = "error", str(error)
        verdict.seconds = time.perf_counter() - start
        return verdict
    verdict.instances = len(all_instances)
    if not all_instances:
        verdict.verdict, verdict.detail = "error", "the rule applies to no type"
    for instance in all_instances:
        violation = sweep(instance)
        if examples > 0:
            # hypothesis looks further and shrinks what it finds to small values
            violation = search(instance, examples if violation is None else max(examples, 50)) or violation
        if violation is not None:
            verdict.verdict = "unsound"
            verdict.counterexample = _format_assignment(instance, violation.assignment)
            verdict.detail = f"interpreter: {violation.message}"
            break
        # a rule z3 could not decide at one type stays unproven: the other types get z3's first
        # round only (to find a counterexample), not the full effort each (which took a rule with
        # 64 type instances most of an hour)
        proof = prove(instance, effort if verdict.verdict == "sound" else min(effort, FIRST_ROUND))
        if proof.counterexample is not None:  # the verdict is "counterexample"
            verdict.verdict = "unsound"
            verdict.counterexample = _format_assignment(instance, proof.counterexample)
            verdict.detail = "z3 found this assignment"
            break
        if proof.verdict == "unknown":
            verdict.verdict = "unproven"
            verdict.types.append(instance.type_text)
            verdict.detail = f"{proof.detail} (at {', '.join(verdict.types)}); the samples passed"
            if len(verdict.types) > 1:
                verdict.detail += f"; z3 had its full effort at {verdict.types[0]}, its first round at the others"
    if verdict.verdict == "sound" and not rule.comment.strip():
        verdict.verdict, verdict.detail = "no comment", "every rule needs a comment above it saying why it holds"
    verdict.seconds = time.perf_counter() - start
    return verdict


def rule_sources(paths: Sequence[Path | str] | None = None) -> list[RuleFile]:
    """The files to check: the named ones, or the language and the shipped rules (their rule
    names unique together with the language's)."""
    if paths:
        files = [read_rule_file(p) for p in rule_files(paths)]
        check_unique_names([language_file(), *files])
        return files
    files = [language_file(), *(read_rule_file(p) for p in shipped_rule_files())]
    check_unique_names(files)
    return files


def read_all_rules(files: Sequence[RuleFile]) -> list[Rule]:
    """The rules of the files, each with the named guards of the language and all the files."""
    guards = collect([language_file(), *(f for f in files if f.path != language_file().path)])
    return [rule for f in files for rule in read_rules(f, guards)]


def check_rules(
    paths: Sequence[Path | str] | None = None,
    examples: int = 10,
    effort: int = EFFORT,
    jobs: int = 1,
    cache: VerdictCache | None = None,
) -> list[RuleVerdict]:
    """Check every rule of the files (default: the language and `rules/`), in `jobs` processes;
    the verdicts come back in file order.  With a `cache`, final verdicts of earlier runs are
    reused and new ones stored."""
    files = rule_sources(paths)
    signatures = language_signatures(files)
    rules = read_all_rules(files)
    verdicts: dict[int, RuleVerdict] = {}  # rule index -> its verdict
    keys = [cache.key(rule, signatures, examples) for rule in rules] if cache else []
    for i, rule in enumerate(rules):
        entry = cache.get(keys[i]) if cache else None
        if entry is not None:
            verdicts[i] = RuleVerdict(rule, **entry, cached=True)
    todo = [i for i in range(len(rules)) if i not in verdicts]
    if jobs <= 1 or len(todo) < 2:
        for i in todo:
            verdicts[i] = check_rule(rules[i], signatures, examples, effort)
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            # the slowest rules first, so that no job is left with a long one at the end
            order = sorted(todo, key=lambda i: -_instance_count(rules[i], signatures))
            futures = {i: pool.submit(check_rule, rules[i], signatures, examples, effort) for i in order}
            for i, future in futures.items():
                verdicts[i] = future.result()
    if cache:
        for i in todo:
            cache.put(keys[i], verdicts[i])
    return [verdicts[i] for i in range(len(rules))]


def _instance_count(rule: Rule, signatures) -> int:
    """How many type assignments the rule is checked at (a rough measure of its work)."""
    try:
        return sum(1 for _ in instances(rule, signatures))
    except RuleShapeError:
        return 0
