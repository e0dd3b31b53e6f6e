"""The device's name: given, remembered for this machine, or else its host name
(docs/cli/collect.md, "Naming the device"). It is given by `collect --device-name NAME` or the sweep
key `device_name`, and remembered from an earlier collect on this machine that gave one.

A named device's id is the device-id rule applied to its name (edgestats/contracts.py
`device_uuid`), as for an imported table's device column: the same name is the same device on every
DB, after a re-imaging (a new machine-id) too, and rows imported under that name join it. An
unnamed device keeps the id of its machine-id (collectors/host/facts.py `device_id_for`).

The name is remembered in `$XDG_CONFIG_HOME/edgestats/device.json` (default ~/.config/edgestats:
a setting, not a cache file that may be rebuilt), with the id of the machine it was given on (the
machine-id's, never the machine-id itself); a second collect on that machine without the flag
reuses it. On another machine (a home folder shared over the network, a copied image with a new
machine-id) the file is not used, and doctor says why. Standard library only: the device reads
it without the analysis stack.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
from dataclasses import dataclass
from pathlib import Path

from edgestats.contracts import MAX_DEVICE_NAME_CHARS, device_name_problem, device_uuid
from edgestats.errors import EdgestatsError
from edgestats.store.userpaths import read_bounded, shorten

NAME_FILE = "device.json"
MAX_NAME_CHARS = MAX_DEVICE_NAME_CHARS
MAX_FILE_BYTES = 64 * 2**10  # the file edgestats writes is about 150 bytes: read no more than this


class DeviceNameError(EdgestatsError):
    """A --device-name (or sweep device_name) that cannot name a device."""


@dataclass(frozen=True)
class DeviceName:
    name: str
    source: str  # "flag", "remembered", "hostname", "board" or "none"
    device_id: str
    note: str | None = None  # why a remembered name was not used, or where it came from


def user_config_dir() -> Path:
    """`$XDG_CONFIG_HOME/edgestats`, by default ~/.config/edgestats (XDG base directories)."""
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "edgestats"


def name_file() -> Path:
    return user_config_dir() / NAME_FILE


def check_device_name(name: str) -> str:
    """The name without surrounding blanks; DeviceNameError when it is empty, too long or holds a
    control character (contracts.device_name_problem, the rule import's --device shares)."""
    why = device_name_problem(name)
    if why:
        raise DeviceNameError(
            f"--device-name {shorten(name)} {why}: give a printable name of 1 to {MAX_NAME_CHARS} "
            "characters, e.g. pi5-lab-3"
        )
    return name.strip()


def remembered(machine: str, path: Path | None = None) -> tuple[str | None, str | None]:
    """(the name remembered for `machine`, None) or (None, why none is used, in words; None if no
    file). The file is checked by stat first (a FIFO or /dev/zero there is said, never opened)."""
    path = path or name_file()
    try:
        data = _read_record(path)
    except FileNotFoundError:
        return None, None
    except _NotAFile as exc:  # its line names the path: "… is a FIFO, not a device file"
        return None, f"{exc}; give --device-name again"
    except _Unusable as exc:
        return None, f"{path} cannot be used ({exc}); give --device-name again"
    name, owner = data["name"], data["machine"]
    if owner != machine:
        return None, f"{path} names another machine's device ({name}); give --device-name to name this one"
    return name, f"remembered in {path} (set {data.get('set_at', '?')})"


class _Unusable(Exception):
    """Why the device file cannot be used, in words."""


class _NotAFile(_Unusable):
    """The device file's path is no regular file (a FIFO, /dev/zero), or too large: said by path."""


def _read_record(path: Path) -> dict:
    """The file's record, checked: FileNotFoundError when there is none, else _Unusable saying what
    is wrong with it (what the path is, not JSON, a key missing, a name collect would refuse)."""
    if not os.path.lexists(path):
        raise FileNotFoundError(path)
    try:
        data = json.loads(read_bounded(path, MAX_FILE_BYTES, _NotAFile, "device file").decode("utf-8"))
    except OSError as exc:
        raise _Unusable(f"cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise _Unusable("it is not UTF-8 text") from None
    except ValueError as exc:
        raise _Unusable(f"it is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise _Unusable(f"it holds a JSON {type(data).__name__}, not the object edgestats writes")
    missing = [key for key in ("name", "machine") if not isinstance(data.get(key), str)]
    if missing:
        raise _Unusable(f"it has no {' or '.join(repr(k) for k in missing)} text, which edgestats writes")
    why = device_name_problem(data["name"])
    if why:
        raise _Unusable(f"the name it holds, {shorten(data['name'])}, {why}")
    return data


def remember(name: str, machine: str, path: Path | None = None) -> str | None:
    """Keep `name` for this machine; the reason it could not be written, or None. Written through a
    temporary file, so a reader never sees half of it."""
    path = path or name_file()
    record = {
        "name": name,
        "machine": machine,
        "set_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
    try:
        current = _read_record(path)
        if current["name"] == name and current["machine"] == machine:
            return None  # already remembered: no write on every collect
    except (FileNotFoundError, _Unusable):
        pass  # replaced below (a FIFO or device there too: os.replace swaps the name, never opens it)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()  # half written, or never created (no folder)
        return (
            f"the device name {name!r} is not remembered ({path}: {exc.strerror}); give --device-name again"
        )
    return None


def choose_name(
    given: str | None, fallback: str, machine_id: str, *, live: bool = True, path: Path | None = None
) -> DeviceName:
    """The device's name and id: the name `given`, else (on the live system) the one remembered for
    this machine, whose unnamed id is `machine_id`, else `fallback` (the host name) with that id."""
    if given is not None:
        name = check_device_name(given)
        return DeviceName(name, "flag", device_uuid(name))
    name, note = remembered(machine_id, path) if live else (None, None)
    if name is not None:
        return DeviceName(name, "remembered", device_uuid(name), note)
    return DeviceName(fallback, "hostname", machine_id, note)


def named_facts(named: DeviceName, machine_id: str) -> dict[str, str]:
    """What devices.facts keeps of the choice: for a named device, that its id comes from the name,
    how the name was chosen and the machine's own id; else only why a remembered name was not used."""
    if named.source == "hostname":
        return {"device_name_note": named.note} if named.note else {}
    facts = {
        "device_id_source": "device-name",
        "device_name_source": named.source,
        "machine_device_id": machine_id,
    }
    return {**facts, **({"device_name_note": named.note} if named.note else {})}


def how_named(device: dict) -> str:
    """doctor's line for the name: the name and how it was chosen (flag, remembered, host name)."""
    facts = device.get("facts") or {}
    source, note = facts.get("device_name_source"), facts.get("device_name_note")
    how = {"flag": "--device-name", "remembered": "remembered"}.get(source, "host name")
    return f"{device.get('name')} ({how}{': ' + note if note else ''})"
