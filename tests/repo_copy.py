"""A copy of the repository to change in a test, and the package tree that makes Python import the
copy: the plug-in guide's recipes and the options-declared-once check edit a copy, then run the CLI
or tests there, never this checkout."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

REPO = Path(__file__).parents[1]


def source_files() -> list[str]:
    """The repository's files as a fresh clone has them (git's list; a walk where there is no git)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=False,
    )
    if listed.returncode == 0 and listed.stdout:
        return [name for name in listed.stdout.decode().split("\0") if name and (REPO / name).is_file()]
    return sorted(snapshot(REPO))


def snapshot(root: Path) -> dict[str, str]:
    """path -> content hash of every file under root, leaving out dot-folders and caches."""
    hashes = {}
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [d for d in subfolders if not d.startswith(".") and d != "__pycache__"]
        subfolders[:] = [d for d in subfolders if not d.endswith(".egg-info")]
        for name in names:
            path = Path(folder) / name
            hashes[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def copy_repository(copy: Path) -> Path:
    """Every source file of the repository copied under `copy`."""
    for name in source_files():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, copy / name)
    return copy


def package_tree(copy: Path, where: Path) -> Path:
    """`edgestats` laid out as installed (pyproject's package-dir: collectors/ is edgestats.collectors,
    and so on), made of links into the copy: put first on sys.path, it wins over the editable install."""
    mapping = tomllib.loads((copy / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    package = where / "edgestats"
    package.mkdir(parents=True)
    for entry in (copy / mapping["edgestats"]).iterdir():
        (package / entry.name).symlink_to(entry)
    for name, folder in mapping.items():
        if name != "edgestats":
            (package / Path(*name.split(".")[1:])).symlink_to(copy / folder)
    return where


def copy_env(packages: Path) -> dict[str, str]:
    """The environment of a process that imports the copy's edgestats (from `packages`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    # PYTHONSAFEPATH: `python -m pytest` and the tests' own `python -c` would put the working folder
    # (the copy, whose edgestats/ lacks collectors/ and reports/) ahead of the package tree
    env.update(PYTHONPATH=str(packages), PYTHONSAFEPATH="1", PYTHONDONTWRITEBYTECODE="1")
    return env
