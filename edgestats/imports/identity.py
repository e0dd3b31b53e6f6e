"""The identity of an `edgestats import` and its write: the same file read with another --map,
--device or --long gives other runs, so a re-import is refused or, with --replace, replaces the
earlier one; never is a wrong mapping silently kept. docs/cli/import.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from edgestats.errors import ImportFileError
from edgestats.store.results import CHILD_TABLES, Store
from edgestats.store.run_extra import ExtraColumn, refresh_run_extra


def import_identity(
    maps: dict[str, str], device: str | None, long: bool = False, fmt: str | None = None
) -> dict:
    """What, besides the file's bytes, decides the runs an import makes: the same file read with
    another --map, --device, --long or --format gives other runs, so it must not pass for "already in"."""
    identity = {"map": dict(sorted(maps.items())), "device": device}
    if long:
        identity["long"] = True
    if fmt:
        identity["format"] = fmt
    return identity


def identity_key(identity: dict) -> str:
    """'' for an import with no --map and no --device, whose run ids stay those that earlier
    edgestats gave (file hash and row only), so DBs imported before stay idempotent."""
    if (
        not identity["map"]
        and identity["device"] is None
        and not identity.get("long")
        and not identity.get("format")
    ):
        return ""
    return json.dumps(identity, sort_keys=True, ensure_ascii=False)


def describe_identity(identity: dict | None) -> str:
    """'--map a=b --device X' as the user typed it, or 'no --map and no --device'."""
    if not identity or (
        not identity.get("map")
        and identity.get("device") is None
        and not identity.get("long")
        and not identity.get("format")
    ):
        return "no --map and no --device"
    parts = ["--long"] if identity.get("long") else []
    parts += [f"--format {identity['format']}"] if identity.get("format") else []
    parts += [f"--map '{src}={dst}'" for src, dst in (identity.get("map") or {}).items()]
    if identity.get("device") is not None:
        parts.append(f"--device '{identity['device']}'")
    return " ".join(parts)


def earlier_imports(store: Store, path: Path, file_hash: str, new_ids: list[str]) -> tuple[dict, dict]:
    """Runs of earlier imports of this file that are not these runs: {identity: run ids} for the
    same content read with another --map/--device, and {sha256: run ids} for other content
    imported from a file of the same name (a corrected table)."""
    found = store.con.execute(
        "SELECT CAST(run_id AS VARCHAR), config->>'sha256', config->'import' FROM runs "
        "WHERE starts_with(source, 'import:') AND (config->>'sha256' = ? OR source = ?) "
        "AND run_id NOT IN (SELECT unnest(?::UUID[]))",
        [file_hash, f"import:{path.name}", new_ids],
    ).fetchall()
    same_content: dict[str, list[str]] = {}
    same_name: dict[str, list[str]] = {}
    for run_id, sha, identity in found:
        if sha == file_hash:
            same_content.setdefault(describe_identity(json.loads(identity) if identity else None), []).append(
                run_id
            )
        else:
            same_name.setdefault(sha or "?", []).append(run_id)
    return same_content, same_name


def write_import(
    db_path: Path,
    runs: pa.Table,
    results: pa.Table,
    device_names: list[str],
    path: Path,
    *,
    file_hash: str,
    identity: dict,
    replace: bool,
    notes: list[str],
) -> tuple[set[str], int, list[ExtraColumn]]:
    """Write the new runs in one transaction: the run ids already present (left as they are),
    the number of earlier runs of this file replaced, and the columns of the view run_extra."""
    new_ids = runs["run_id"].to_pylist()
    with Store.open(db_path) as store:
        same_content, same_name = earlier_imports(store, path, file_hash, new_ids)
        if same_content and not replace:
            earlier = "; ".join(f"{len(ids)} runs with {how}" for how, ids in same_content.items())
            raise ImportFileError(
                f"{path}: {db_path.name} already holds this file imported with another mapping or device "
                f"({earlier}); this import has {describe_identity(identity)}. Pass --replace to replace that "
                f"import with this one; nothing was imported"
            )
        if replace:
            doomed = [rid for ids in [*same_content.values(), *same_name.values()] for rid in ids]
            # --replace makes this import the file's only one: its own earlier runs go too, so that
            # a changed reading of the file (not only of --map) is never kept beside the new one.
            doomed += _stored_run_ids(store, new_ids)
            present: set[str] = set()
        else:
            doomed, present = [], set(_stored_run_ids(store, new_ids))
            if same_name:
                n = sum(len(ids) for ids in same_name.values())
                notes.append(
                    f"{db_path.name} also holds {n} runs imported earlier from another file named "
                    f"{path.name} (other content); they are kept beside these: pass --replace to replace them"
                )
        keep = pa.array([rid not in present for rid in new_ids])
        with store.transaction():
            if doomed:
                for table in ("runs", "run_results", *CHILD_TABLES):
                    store.con.execute(
                        f"DELETE FROM {table} WHERE run_id IN (SELECT unnest(?::UUID[]))", [doomed]
                    )
            for name in device_names:
                store.register_device({"name": name, "facts": {"registered_by": f"import:{path.name}"}})
            store.insert_rows("runs", runs.filter(keep))
            store.insert_rows("run_results", results.filter(keep))
            extra = refresh_run_extra(store.con)
    return present, len(set(doomed)), extra


def _stored_run_ids(store: Store, run_ids: list[str]) -> list[str]:
    """Those of `run_ids` the DB already holds."""
    return [
        str(r[0])
        for r in store.con.execute(
            "SELECT run_id FROM runs WHERE run_id IN (SELECT unnest(?::UUID[]))", [run_ids]
        ).fetchall()
    ]
