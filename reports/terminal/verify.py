"""What `edgestats verify` prints. Per file or folder, whether it is whole, each part's finding,
and the steps to recover a damaged one (or all of it as JSON), from the Verifications returned by
edgestats/store/lake_verify.py."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


def verify_json(reports: Iterable[Any]) -> str:
    """--json: a list, one object per file or folder."""
    return json.dumps([r.as_dict() for r in reports], indent=2)


def verify_lines(report: Any) -> list[str]:
    """The verdict on one file or folder, then a line per part, the notes and the recovery steps."""
    damaged = [f for f in report.findings if not f.ok]
    verdict = f"damaged ({len(damaged)} of {len(report.findings)} parts)" if damaged else "whole"
    width = max((len(f.name) for f in report.findings), default=0)
    lines = [f"{report.path}: {verdict}"]
    lines += [
        f"  {'ok' if finding.ok else 'DAMAGED':<8} {finding.name:<{width}}  {finding.detail}"
        for finding in report.findings
    ]
    lines += [f"  note: {note}" for note in report.notes]
    if report.recovery:
        lines.append("  to recover:")
    lines += [f"    - {step}" for step in report.recovery]
    if report.mark:
        lines.append(f"  {report.mark}")
    return lines
