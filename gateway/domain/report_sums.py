"""The pilot report over many runs: a lineage's, or the tenant's filtered by tag and time. Pure.

Each run's report (gateway/domain/report.py) is built first; this adds them up. Money is summed
per currency (runs of one tenant may keep different ones), never converted. Review percentiles
are over every decided approval of the runs, not an average of each run's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.domain.lifecycle import RunStatus
from gateway.domain.recovery import CAUSES
from gateway.domain.report import TAGS, UNUSABLE_REASONS, Report, review_dict, review_of
from gateway.domain.units import format_money

UNTAGGED = "(untagged)"  # the cost of runs whose contract names no tag, in `cost.by_contract_tag`


def summarize(reports: Sequence[Report], *, truncated: bool) -> dict[str, Any]:
    """The sums of `reports` (oldest first) and one line per run."""
    by_currency: dict[str, dict[str, Any]] = {}
    for report in reports:
        money = by_currency.setdefault(
            report.run.currency,
            {"total": 0, "by_tag": dict.fromkeys(TAGS, 0), "by_contract_tag": {}, "recovery_spend": 0},
        )
        money["total"] += report.total
        money["recovery_spend"] += sum(e.spend for e in report.recovery.episodes)
        for tag in TAGS:
            money["by_tag"][tag] += report.by_tag[tag]
        for tag in report.tags or (UNTAGGED,):
            money["by_contract_tag"][tag] = money["by_contract_tag"].get(tag, 0) + report.total

    def fmt(values: dict[str, Any], currency: str) -> dict[str, Any]:
        return {
            "total": format_money(values["total"], currency),
            "by_tag": {t: format_money(v, currency) for t, v in values["by_tag"].items()},
            "by_contract_tag": {t: format_money(v, currency) for t, v in sorted(values["by_contract_tag"].items())},
            "episode_spend": format_money(values["recovery_spend"], currency),
        }

    episodes = [e for r in reports for e in r.recovery.episodes]
    waits = [w for r in reports for w in r.review.waits]
    return {
        "runs": len(reports),
        "truncated": truncated,
        "by_status": {s.value: sum(r.run.status is s for r in reports) for s in RunStatus},
        "usable": sum(r.usable for r in reports),
        "unusable_reasons": {reason: sum(reason in r.unusable_reasons for r in reports) for reason in UNUSABLE_REASONS},
        "review_time": review_dict(review_of(waits)),
        "recovery": {
            "episodes": len(episodes),
            "by_cause": {cause: sum(e.cause == cause for e in episodes) for cause in CAUSES},
            "open": sum(e.outcome == "open" for e in episodes),
            "seconds": round(sum(e.seconds(r.now) for r in reports for e in r.recovery.episodes), 3),
            "tool_calls": sum(e.tool_calls for e in episodes),
        },
        "duplicates_prevented": sum(r.duplicates.prevented for r in reports),
        "duplicate_effects": sum(r.duplicates.effects for r in reports),
        "cost": {currency: fmt(values, currency) for currency, values in sorted(by_currency.items())},
        "items": [
            {
                "run_id": r.run.run_id,
                "lineage_id": r.run.lineage_id,
                "status": r.run.status.value,
                "tags": list(r.tags),
                "usable": r.usable,
                "unusable_reasons": list(r.unusable_reasons),
                "currency": r.run.currency,
                "total": format_money(r.total, r.run.currency),
                "episodes": len(r.recovery.episodes),
                "duplicate_effects": r.duplicates.effects,
            }
            for r in reports
        ],
    }
