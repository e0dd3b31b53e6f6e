"""Analyses `edgestats analyze` runs and the report draws: one entry per analysis.

Adding an analysis: its module under edgestats/analysis/ (an `analyse(data, options)`
function returning an AnalysisResult), its section module under reports/sections/ (`figures`,
`sentence` and `DRAWN`), one entry here, its section in docs/cli/analyze.md, and its tests
(docs/architecture.md §8 lists every file).
"""

from __future__ import annotations

from dataclasses import dataclass

from edgestats.registry import names_text

# The frames of AnalysisData an analysis can ask for (edgestats.analysis.load.frames.Needs).
FRAMES = ("latencies", "phases", "phase_energy", "epochs", "generation")


@dataclass(frozen=True)
class AnalysisEntry:
    name: str  # --only value, key of the JSON document and of the report section
    title: str  # the report section's heading
    help: str  # one line: what it estimates (CLI help, docs)
    analyse: str  # "module:function": (AnalysisData, AnalysisOptions) -> AnalysisResult
    section: str  # module under reports/sections/ with figures(result) and sentence(result)
    doc: str  # "docs/FILE.md#anchor" of its section
    needs: tuple[str, ...] = ()  # FRAMES it reads besides the runs


ANALYSES: tuple[AnalysisEntry, ...] = (
    AnalysisEntry(
        "answers",
        "Answers: which is fastest, by how much, how sure",
        "per device, model, batch size and precision: the fastest candidate and every other one's "
        "ratio to it, with its interval, Holm's p and a verdict",
        "edgestats.analysis.answers.analysis:analyse",
        "edgestats.reports.sections.answers",
        "docs/cli/analyze.md#answers--which-is-fastest-by-how-much-how-sure",
        needs=("latencies",),
    ),
    AnalysisEntry(
        "summary",
        "Latency, throughput, memory and energy per configuration",
        "latency, throughput, memory and energy per configuration",
        "edgestats.analysis.summary.analysis:analyse",
        "edgestats.reports.sections.summary",
        "docs/cli/analyze.md#summary--per-configuration",
        needs=("latencies",),
    ),
    AnalysisEntry(
        "breakdown",
        "Where the time goes: import, model load, inference (pCAMP Table 3)",
        "load vs inference: seconds per phase and load / steady ratios",
        "edgestats.analysis.breakdown.analysis:analyse",
        "edgestats.reports.sections.breakdown",
        "docs/cli/analyze.md#breakdown--load-vs-inference-pcamp-table-3-insight-1",
        needs=("phases",),
    ),
    AnalysisEntry(
        "energy",
        "Time and energy",
        "time-energy correlation and energy per phase above idle",
        "edgestats.analysis.energy.analysis:analyse",
        "edgestats.reports.sections.energy",
        "docs/cli/analyze.md#energy--timeenergy-correlation-and-energy-per-phase-pcamp-figure-3-insight-3",
        needs=("phase_energy",),
    ),
    AnalysisEntry(
        "tradeoff",
        "Memory–latency trade-off and winners",
        "memory vs latency (Pareto front) and the best framework per metric, Holm-corrected",
        "edgestats.analysis.tradeoff.analysis:analyse",
        "edgestats.reports.sections.tradeoff",
        "docs/cli/analyze.md#tradeoff--memory-vs-latency-and-no-single-winner",
        needs=("latencies",),
    ),
    AnalysisEntry(
        "fleet",
        "Fleets: are identical boards identical?",
        "per device class and configuration: the SD between units (with its interval) beside "
        "between-run and within-run, and each unit against its class, flagged slower or faster (Holm)",
        "edgestats.analysis.fleet.analysis:analyse",
        "edgestats.reports.sections.fleet",
        "docs/cli/analyze.md#fleet--are-identical-boards-identical",
        needs=("latencies",),
    ),
    AnalysisEntry(
        "generation",
        "Generation: time to first token, tokens per second, energy per token",
        "generation runs: time to first token, prefill and decode tokens/s, inter-token p50/p90/p99, "
        "energy per token by phase, memory, and decode time against context depth",
        "edgestats.analysis.generation.analysis:analyse",
        "edgestats.reports.sections.generation",
        "docs/cli/analyze.md#generation--time-to-first-token-tokens-per-second-energy-per-token",
        needs=("latencies", "generation"),
    ),
    AnalysisEntry(
        "hyperparams",
        "Hyperparameters: main effects on accuracy and training time",
        "OLS/ANOVA of a response on hyperparameters, and the best configuration",
        "edgestats.analysis.hyperparams.analysis:analyse",
        "edgestats.reports.sections.hyperparams",
        "docs/cli/analyze.md#hyperparams--ols--anova-of-a-response-on-factors-the-dlaas-tables",
    ),
    AnalysisEntry(
        "pipeline",
        "Data pipeline: fetch stalls, CPU and memory",
        "data-loading stalls vs workers, resources vs batch size",
        "edgestats.analysis.pipeline.analysis:analyse",
        "edgestats.reports.sections.pipeline",
        "docs/cli/analyze.md#pipeline--data-loading-stalls-and-resources-vs-batch-size-jetson-study-dlaas-table-xxii",
        needs=("epochs",),
    ),
)


# Read ANALYSES at each call, not into a dict at import: a test (or a plug-in) that extends the
# tuple is then seen by the options check, the loop and the report alike.
def analysis_names() -> tuple[str, ...]:
    return tuple(entry.name for entry in ANALYSES)


def analysis(name: str) -> AnalysisEntry:
    """The entry of an --only name; KeyError for an unknown one."""
    for entry in ANALYSES:
        if entry.name == name:
            return entry
    raise KeyError(name)


def choices_text() -> str:
    return names_text(analysis_names())
