"""What this device is: the facts that go into the `devices` table.

Everything is read from the files Linux exposes (/proc, /sys, /etc) under a `root` path, so
tests build fake trees of an x86 laptop, a Raspberry Pi or a Jetson under tmp_path and run
the real parsers. A file that is missing or unreadable gives None for its fact, never an
exception: `doctor` and `collect` must work on any board, however odd.

Facts that belong to the running system rather than to files (hostname, kernel, arch, NVML)
come from platform/os/NVML only when root is "/"; under a fake root they come from the
tree, so a test never mixes in the machine it runs on.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import socket
from pathlib import Path
from typing import Any

from edgestats.collectors.host.device_name import choose_name, named_facts, remember
from edgestats.contracts import device_uuid

SYSTEM_ROOT = Path("/")

# ARM "CPU implementer" / "CPU part" codes -> core names (from the kernel's cputype.h).
# aarch64 cpuinfo has no "model name", so this is the only way to name the core.
_ARM_PARTS = {
    ("0x41", "0xb76"): "ARM1176",
    ("0x41", "0xc07"): "Cortex-A7",
    ("0x41", "0xc08"): "Cortex-A8",
    ("0x41", "0xc09"): "Cortex-A9",
    ("0x41", "0xc0f"): "Cortex-A15",
    ("0x41", "0xd03"): "Cortex-A53",
    ("0x41", "0xd04"): "Cortex-A35",
    ("0x41", "0xd05"): "Cortex-A55",
    ("0x41", "0xd07"): "Cortex-A57",
    ("0x41", "0xd08"): "Cortex-A72",
    ("0x41", "0xd09"): "Cortex-A73",
    ("0x41", "0xd0a"): "Cortex-A75",
    ("0x41", "0xd0b"): "Cortex-A76",
    ("0x41", "0xd0c"): "Neoverse-N1",
    ("0x41", "0xd0d"): "Cortex-A77",
    ("0x41", "0xd41"): "Cortex-A78",
    ("0x41", "0xd42"): "Cortex-A78AE",
    ("0x41", "0xd4b"): "Cortex-A78C",
    ("0x4e", "0x003"): "NVIDIA Denver 2",
    ("0x4e", "0x004"): "NVIDIA Carmel",
}

# Jetson SoC (last "nvidia,tegraNNN" entry of the device-tree `compatible`) -> its GPU.
_TEGRA_GPUS = {
    "tegra210": "NVIDIA Maxwell iGPU (tegra210)",
    "tegra186": "NVIDIA Pascal iGPU (tegra186)",
    "tegra194": "NVIDIA Volta iGPU (tegra194)",
    "tegra234": "NVIDIA Ampere iGPU (tegra234)",
}


def named_device_facts(device_name: str | None) -> tuple[dict[str, Any], str | None]:
    """read_device_facts for a command that stores under this device (collect, baseline): a name
    given is remembered for this machine's next commands, so a baseline and the runs it serves are
    one device whichever names it first. Returns the facts and the note to show (a name that could
    not be remembered, or a remembered one not used), or None."""
    facts = read_device_facts(device_name=device_name)
    extra = facts["facts"]
    if extra.get("device_name_source") == "flag":
        extra["device_name_note"] = remember(facts["name"], extra["machine_device_id"])
    note = extra.get("device_name_note")
    return facts, note if note and extra.get("device_name_source") != "remembered" else None


def read_device_facts(root: Path = SYSTEM_ROOT, device_name: str | None = None) -> dict[str, Any]:
    """The columns of the `devices` table for the device whose filesystem is at `root`.

    `facts` holds everything else found (board, CPU governor, nvpmodel, L4T release, ...).
    Pass the result straight to `Store.register_device`. The name is `device_name`, else the one
    remembered for this machine (live system only), else the hostname (device_name.py).
    """
    root = Path(root)
    live = root == SYSTEM_ROOT
    cpu = parse_cpuinfo(read_text(root / "proc/cpuinfo"))
    meminfo = parse_meminfo(read_text(root / "proc/meminfo"))
    board = read_board_model(root, cpu)
    hostname = read_hostname(root)
    soc = read_tegra_soc(root)
    gpu, gpu_facts = read_gpu(root, board, soc)
    nvpmodel = read_nvpmodel(root)
    governor = read_text(root / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    os_release = parse_os_release(read_text(root / "etc/os-release"))
    device_id, id_source = device_id_for(root, hostname)
    named = choose_name(device_name, hostname or board or "unknown-device", device_id, live=live)
    facts = {
        "board": board,
        "cpu_hardware": cpu["hardware"],  # SoC family as the kernel names it, e.g. BCM2835
        "board_revision": cpu["revision"],  # Raspberry Pi revision code, e.g. c03114
        "cpu_governor": governor,
        "cpu_max_freq_khz": read_int(root / "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"),
        "cpus_online": read_text(root / "sys/devices/system/cpu/online"),
        "cpus_usable": len(os.sched_getaffinity(0)) if live and hasattr(os, "sched_getaffinity") else None,
        "swap_total_bytes": meminfo.get("SwapTotal"),
        "nvpmodel_id": nvpmodel["id"],
        "nvpmodel_name": nvpmodel["name"],
        "soc": soc,  # Jetson: tegra194 etc.
        "l4t_release": read_l4t_release(root),
        "os_id": os_release.get("ID"),
        "os_version_id": os_release.get("VERSION_ID"),
        "python": platform.python_version() if live else None,
        "device_id_source": id_source,
        **named_facts(named, device_id),
        **gpu_facts,
    }
    return {
        "device_id": named.device_id,
        "name": named.name,
        "hostname": hostname,
        "arch": (platform.machine() or None) if live else guess_arch(cpu),
        "cpu_model": cpu["model"],
        "cores": cpu["processors"] or (os.cpu_count() if live else None),
        "mem_total_bytes": meminfo.get("MemTotal"),
        "gpu": gpu,
        "os": os_release.get("PRETTY_NAME") or _join(os_release.get("NAME"), os_release.get("VERSION")),
        "kernel": (platform.release() or None) if live else read_text(root / "proc/sys/kernel/osrelease"),
        # The nvpmodel mode decides clocks and online cores on a Jetson, so it wins; elsewhere
        # the CPU governor is the setting that changes latency the most.
        "power_mode": nvpmodel["name"] or governor,
        "facts": facts,
    }


# -- file helpers ------------------------------------------------------------------------------


def read_cpu_frequency_state(root: Path = SYSTEM_ROOT) -> dict[str, Any]:
    """Per-run CPU frequency settings (they can change between runs): governor and cur/max kHz."""
    cpufreq = root / "sys/devices/system/cpu/cpu0/cpufreq"
    return {
        "cpu_governor": read_text(cpufreq / "scaling_governor"),
        "cpu_cur_khz": read_int(cpufreq / "scaling_cur_freq"),
        "cpu_max_khz": read_int(cpufreq / "scaling_max_freq"),
    }


def read_text(path: Path) -> str | None:
    """A small text file's content, stripped of whitespace and device-tree NULs; None if unreadable."""
    raw = read_bytes(path)
    if raw is None:
        return None
    text = raw.decode("utf-8", errors="replace").strip().strip("\0").strip()
    return text or None


def read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (OSError, ValueError):  # missing, permission, a directory, an odd sysfs node
        return None


def read_int(path: Path) -> int | None:
    text = read_text(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _join(*parts: str | None) -> str | None:
    joined = " ".join(p for p in parts if p)
    return joined or None


# -- parsers (pure: text in, dict out) ------------------------------------------------------------


def parse_cpuinfo(text: str | None) -> dict[str, Any]:
    """CPU model, logical CPU count and board fields from /proc/cpuinfo (x86 or ARM)."""
    fields: dict[str, str] = {}
    processors = 0
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "processor":
            processors += 1
        fields.setdefault(key, value)  # the first CPU's values stand for all
    core = _ARM_PARTS.get((fields.get("CPU implementer", "").lower(), fields.get("CPU part", "").lower()))
    # 32-bit ARM kernels write a generic "ARMv7 Processor rev 3 (v7l)" as model name: the
    # core name from the part code says more, so it goes first on ARM.
    model = core or fields.get("model name") or fields.get("Processor") or fields.get("Hardware")
    return {
        "model": model,
        "processors": processors or None,
        "hardware": fields.get("Hardware"),
        "board_model": fields.get("Model"),  # Raspberry Pi kernels name the board here
        "revision": fields.get("Revision"),
        "model_name": fields.get("model name"),
        "cpu_architecture": fields.get("CPU architecture"),
        "flags": fields.get("flags", "").split(),
        "x86": "vendor_id" in fields,
    }


def guess_arch(cpu: dict[str, Any]) -> str | None:
    """platform.machine()'s answer for a device known only from its cpuinfo (fake roots)."""
    if cpu["x86"]:
        return "x86_64" if "lm" in cpu["flags"] else "i686"
    if cpu["cpu_architecture"] == "8":
        return "aarch64"
    # 32-bit kernels end the model name with uname's suffix: "ARMv6-compatible processor rev 7 (v6l)".
    suffix = re.search(r"\((v\d+l)\)\s*$", cpu["model_name"] or "")
    if suffix:
        return "arm" + suffix.group(1)
    return {"7": "armv7l", "6": "armv6l"}.get(str(cpu["cpu_architecture"]))


def parse_meminfo(text: str | None) -> dict[str, int]:
    """/proc/meminfo in bytes (the file says kB but means KiB)."""
    values: dict[str, int] = {}
    for line in (text or "").splitlines():
        match = re.match(r"(\w+):\s+(\d+)(?:\s+kB)?", line)
        if match:
            scale = 1024 if line.rstrip().endswith("kB") else 1
            values[match.group(1)] = int(match.group(2)) * scale
    return values


def parse_os_release(text: str | None) -> dict[str, str]:
    """KEY=value lines of os-release, with shell quotes removed."""
    values: dict[str, str] = {}
    for line in (text or "").splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key and not key.startswith("#"):
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            values[key] = value
    return values


def parse_nvpmodel_conf(text: str | None) -> tuple[dict[int, str], int | None]:
    """Mode id -> name (`< POWER_MODEL ID=2 NAME=MODE_15W_6CORE >`) and the default mode id."""
    names = {int(i): n for i, n in re.findall(r"<\s*POWER_MODEL\s+ID=(\d+)\s+NAME=([^\s>]+)", text or "")}
    default = re.search(r"<\s*PM_CONFIG\s+DEFAULT=(\d+)", text or "")
    return names, int(default.group(1)) if default else None


# -- readers (one fact or group of facts each) -------------------------------------------------


def read_hostname(root: Path) -> str | None:
    if root == SYSTEM_ROOT:
        return socket.gethostname() or None
    return read_text(root / "etc/hostname") or read_text(root / "proc/sys/kernel/hostname")


def read_board_model(root: Path, cpu: dict[str, Any]) -> str | None:
    """The board's name: device-tree model (Pi, Jetson), cpuinfo "Model" (older Pi kernels),
    else DMI vendor + product (PCs)."""
    model = read_text(root / "proc/device-tree/model") or read_text(
        root / "sys/firmware/devicetree/base/model"
    )
    if model:
        return model
    if cpu["board_model"]:
        return cpu["board_model"]
    dmi = root / "sys/class/dmi/id"
    return _join(read_text(dmi / "sys_vendor"), read_text(dmi / "product_name"))


def read_tegra_soc(root: Path) -> str | None:
    """'tegra194' etc. from the device-tree `compatible` list (NUL-separated), if a Jetson."""
    raw = read_bytes(root / "proc/device-tree/compatible") or read_bytes(
        root / "sys/firmware/devicetree/base/compatible"
    )
    for entry in (raw or b"").decode("utf-8", errors="replace").split("\0"):
        if entry.startswith("nvidia,tegra"):
            return entry.split(",", 1)[1]
    return None


def read_nvpmodel(root: Path) -> dict[str, Any]:
    """The Jetson power mode: the current one from nvpmodel's status file, else the default."""
    names, default = parse_nvpmodel_conf(read_text(root / "etc/nvpmodel.conf"))
    status = read_text(root / "var/lib/nvpmodel/status")
    current = re.search(r"pmode:\s*(\d+)", status or "")
    mode = int(current.group(1)) if current else default
    if mode is None:
        return {"id": None, "name": None}
    return {"id": mode, "name": names.get(mode, f"nvpmodel {mode}")}


def read_l4t_release(root: Path) -> str | None:
    """Jetson Linux version ('R35.4.1') from /etc/nv_tegra_release: it fixes CUDA/TensorRT versions."""
    match = re.search(
        r"R(\d+)\s*\(release\),\s*REVISION:\s*([\d.]+)", read_text(root / "etc/nv_tegra_release") or ""
    )
    return f"R{match.group(1)}.{match.group(2)}" if match else None


def read_gpu(root: Path, board: str | None, soc: str | None) -> tuple[str | None, dict[str, Any]]:
    """The GPU's name and extra facts: Jetson iGPU, then NVML (live system only), then procfs."""
    if soc or (board and "jetson" in board.lower()):
        return _TEGRA_GPUS.get(soc or "", f"NVIDIA iGPU of {board or soc}"), {}
    names, facts = read_nvml_gpus() if root == SYSTEM_ROOT else ([], {})
    names = names or read_proc_nvidia_gpus(root)
    return (_gpu_label(names) if names else None), facts


def _gpu_label(names: list[str]) -> str:
    """'NVIDIA A100' for one GPU, '4 x NVIDIA A100' for four alike, else the names listed."""
    if len(set(names)) == 1:
        return names[0] if len(names) == 1 else f"{len(names)} x {names[0]}"
    return ", ".join(names)


def read_nvml_gpus() -> tuple[list[str], dict[str, Any]]:
    """GPU names and driver facts from NVML; ([], {reason}) where there is no driver or pynvml."""
    try:
        import pynvml  # optional (edgestats[nvidia]); imported here so a device without it works
    except ImportError:
        return [], {"nvml": "pynvml not installed"}
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return [], {"nvml": f"not usable: {exc}"}
    try:
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        names = [_as_str(pynvml.nvmlDeviceGetName(h)) for h in handles]
        memory = [int(pynvml.nvmlDeviceGetMemoryInfo(h).total) for h in handles]
        return names, {
            "nvml": "ok",
            "gpu_names": names,
            "gpu_mem_total_bytes": memory,
            "nvidia_driver": _as_str(pynvml.nvmlSystemGetDriverVersion()),
        }
    except Exception as exc:
        return [], {"nvml": f"query failed: {exc}"}
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def _as_str(value: Any) -> str:
    # Older pynvml returns bytes, newer str.
    return value.decode() if isinstance(value, bytes) else str(value)


def read_proc_nvidia_gpus(root: Path) -> list[str]:
    """GPU names from the NVIDIA driver's procfs ("Model:" lines), for when NVML is not usable."""
    names = []
    for info in sorted((root / "proc/driver/nvidia/gpus").glob("*/information")):
        match = re.search(r"^Model:\s*(.+)$", read_text(info) or "", re.MULTILINE)
        if match:
            names.append(match.group(1).strip())
    return names


def device_id_for(root: Path, hostname: str | None) -> tuple[str, str]:
    """A stable id: uuid5 of the machine-id (hostname if none) and which one was used.

    The machine-id itself is never stored: systemd asks applications to use a derived value.
    Containers built from one image may share a machine-id, or have none (then the hostname,
    which changes per container unless set with --hostname, is used).
    """
    machine_id = read_text(root / "etc/machine-id") or read_text(root / "var/lib/dbus/machine-id")
    if machine_id and machine_id != "uninitialized":  # systemd's placeholder before first boot completes
        return device_uuid(machine_id), "machine-id"
    if hostname:
        return device_uuid(hostname), "hostname"
    return device_uuid("unknown-device"), "none"
