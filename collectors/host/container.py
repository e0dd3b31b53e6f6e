"""Per-run host facts: the OS image, the kernel, and whether the run was inside a container.

They are read under the facts root, so a fake tree tests them (collectors/host/facts.py).

A container is recognised by what its engine leaves: `/.dockerenv` (Docker), `/run/.containerenv`
(Podman), the cgroup paths of PID 1 naming docker, lxc, kubepods or containerd, or `container=`
in PID 1's environment (systemd-nspawn, LXC and Podman set it; reading it may need root). None of
these says "not in a container" for certain: the answer is what was found, with its evidence.
"""

from __future__ import annotations

import platform
import re
from pathlib import Path
from typing import Any

from edgestats.collectors.host.facts import SYSTEM_ROOT, parse_os_release, read_bytes, read_text

# A cgroup path's word -> the container kind it shows (cgroup v1 paths, and v2 under some engines).
_CGROUP_KINDS = (("kubepods", "kubernetes"), ("docker", "docker"), ("libpod", "podman"), ("lxc", "lxc"))
_CGROUP_CONTAINERD = re.compile(r"containerd|cri-containerd")


def read_container(root: Path = SYSTEM_ROOT) -> dict[str, Any]:
    """{"inside": bool, "kind": docker | podman | kubernetes | lxc | containerd | <container=>
    | None, "evidence": the file that said so, or None}."""
    if (root / ".dockerenv").exists():
        return {"inside": True, "kind": "docker", "evidence": "/.dockerenv"}
    if (root / "run/.containerenv").exists():
        return {"inside": True, "kind": "podman", "evidence": "/run/.containerenv"}
    cgroup = (read_text(root / "proc/1/cgroup") or "").lower()
    for word, kind in _CGROUP_KINDS:
        if word in cgroup:
            return {"inside": True, "kind": kind, "evidence": "/proc/1/cgroup"}
    if _CGROUP_CONTAINERD.search(cgroup):
        return {"inside": True, "kind": "containerd", "evidence": "/proc/1/cgroup"}
    environ = read_bytes(root / "proc/1/environ") or b""
    for entry in environ.split(b"\0"):
        if entry.startswith(b"container="):
            kind = entry.split(b"=", 1)[1].decode("utf-8", errors="replace").strip() or "unknown"
            return {"inside": True, "kind": kind[:64], "evidence": "/proc/1/environ"}
    return {"inside": False, "kind": None, "evidence": None}


def read_run_host(root: Path = SYSTEM_ROOT) -> dict[str, Any]:
    """What runs.environment records of the host for each run: os_image (os-release's
    PRETTY_NAME), kernel (the running one; under a fake root, proc/sys/kernel/osrelease) and
    container (read_container)."""
    os_release = parse_os_release(read_text(root / "etc/os-release"))
    live = root == SYSTEM_ROOT
    return {
        "os_image": os_release.get("PRETTY_NAME") or os_release.get("NAME"),
        "kernel": (platform.release() or None) if live else read_text(root / "proc/sys/kernel/osrelease"),
        "container": read_container(root),
    }
