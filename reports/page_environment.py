"""The page's environment section: what the figures were measured on, from the DB.

Two tables from edgestats.analysis.load.environment: each device's facts (CPU, cores, memory, GPU,
OS, kernel, power mode, accelerators and whatever else the device reported) and each framework
and runtime version used, with the other library, Python and edgestats versions the runs
recorded. Columns that no device has a value in are left out; a column with one value in every
row is said once under its table. Rows carry the page's filter fields. A page written without
the environment loaded (`compare --out`) lists the devices of its header's overview instead.
"""

from __future__ import annotations

import polars as pl

from edgestats.analysis.load.overview import Overview
from edgestats.reports.page_tables import Footnotes, csv_link, esc, page_table, table_markup

TITLE = "Environment: devices and software"
CAPTIONS = {
    "devices": "Devices: what each one reported",
    "software": "Software: framework and runtime versions per device",
}
OVERVIEW_SCHEMA = {"device": pl.String, "arch": pl.String, "cpu_model": pl.String, "cores": pl.Int64}


def overview_environment(overview: Overview) -> dict[str, pl.DataFrame]:
    """The devices the header's overview knows: name, architecture, CPU, cores and runs."""
    rows = [
        {"device": d.name, "arch": d.arch, "cpu_model": d.cpu_model, "cores": d.cores, "n_runs": d.n_runs}
        for d in overview.devices
    ]
    return {"devices": pl.DataFrame(rows, schema={**OVERVIEW_SCHEMA, "n_runs": pl.Int64})}


def plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def summary_sentence(environment: dict[str, pl.DataFrame]) -> str:
    devices, software = environment.get("devices"), environment.get("software")
    said = plural(devices.height if devices is not None else 0, "device")
    if software is None:
        return f"{said}; the software versions were not loaded for this page."
    versions = software.filter(pl.col("framework_version").is_not_null()).height
    return (
        f"{said}; {plural(software.height, 'device × framework/runtime pair')}, "
        f"{versions:,} of them with a recorded framework version; a dash is a fact the device "
        "(or the imported table) did not report."
    )


def environment_html(environment: dict[str, pl.DataFrame], notes: Footnotes, max_rows: int) -> str:
    """The section (id "environment"): a sentence, the devices' table, the software's table."""
    parts = [f'<section id="environment"><h2>{esc(TITLE)}</h2>']
    parts.append(f"<p class=sentence>{esc(summary_sentence(environment))}</p>")
    for key in ("devices", "software"):
        frame = environment.get(key)
        if frame is None:
            continue
        if frame.height == 0:
            parts.append(f"<p class=note>{esc(CAPTIONS[key])}: none recorded.</p>")
            continue
        table = page_table(f"environment-{key}", CAPTIONS[key], frame, notes)
        parts.append(
            f"<div class=tablehead><span class=cap>{esc(table.caption)}</span> {csv_link(table)}</div>"
            + table_markup(table, max_rows)
        )
    parts.append("</section>")
    return "\n".join(parts)
