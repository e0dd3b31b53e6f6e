"""A run's place in a fleet: the device class, unit id and tags collect takes, checked, and the
runs columns they become (schema/0010_fleet.sql).

`--device-class pi5` groups identical units, `--unit-id SN123` names one unit, `--tag lab=b2`
(repeatable) adds labels; each is also a sweep file's key (`device_class`, `unit_id`,
`tags = { lab = "b2" }`). The class and the unit id follow the rule of a device's name
(contracts.device_name_problem); a tag's key is an identifier and its value printable text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from edgestats.collectors.core.sweep_limits import SweepError
from edgestats.contracts import MAX_DEVICE_NAME_CHARS, control_character, device_name_problem

FLEET_NAMES = {"device_class": "--device-class", "unit_id": "--unit-id"}
TAG_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_TAG_KEY_CHARS = 64
MAX_TAG_VALUE_CHARS = 256
MAX_TAGS = 64


def parse_tag_flags(items: Iterable[str] | Mapping[str, Any]) -> dict[str, Any]:
    """--tag KEY=VALUE (repeatable) as a table; a mapping (the Python API's tags={...}) as it is.
    The last value of a key given twice wins, as a flag given twice does."""
    if isinstance(items, Mapping):
        return dict(items)
    tags: dict[str, Any] = {}
    for item in items:
        key, sep, value = str(item).partition("=")
        if not sep:
            raise SweepError(f"--tag {item!r}: expected KEY=VALUE, e.g. --tag lab=b2")
        tags[key.strip()] = value.strip()
    return tags


def check_tags(raw: Any, where: str) -> dict[str, str]:
    """A table of string -> string, keys identifiers, values printable text of at most 256
    characters; SweepError naming the first thing wrong."""
    if not isinstance(raw, Mapping):
        raise SweepError(f'{where}tags: expected a table of text, e.g. tags = {{ lab = "b2" }}')
    if len(raw) > MAX_TAGS:
        raise SweepError(f"{where}tags: {len(raw)} tags; give at most {MAX_TAGS}")
    tags = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not TAG_KEY.match(key) or len(key) > MAX_TAG_KEY_CHARS:
            raise SweepError(
                f"{where}tags: the key {str(key)[:40]!r} is not an identifier (letters, digits and _, "
                f"not starting with a digit, at most {MAX_TAG_KEY_CHARS} characters), e.g. lab or rack_2"
            )
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise SweepError(f"{where}tags.{key}: expected text, got {type(value).__name__} {value!r}")
        text = str(value).strip()
        found = control_character(text)
        if found or len(text) > MAX_TAG_VALUE_CHARS:
            why = (
                f"contains a control character ({found})"
                if found
                else f"is too long ({len(text):,} characters)"
            )
            raise SweepError(
                f"{where}tags.{key}: the value {why}; give printable text of at most "
                f"{MAX_TAG_VALUE_CHARS} characters"
            )
        tags[key] = text
    return tags


def check_fleet_settings(settings: dict[str, Any], where: str) -> None:
    """The device class and unit id of a sweep's settings, checked as a device's name is and
    stripped of surrounding blanks, in place."""
    for key, flag in FLEET_NAMES.items():
        value = settings.get(key)
        if value is None:
            continue
        why = device_name_problem(value)
        if why:
            shown = value if len(value) <= 40 else value[:40] + "..."
            raise SweepError(
                f"{where}{key} ({flag}) {shown!r} {why}: give a printable name of 1 to "
                f"{MAX_DEVICE_NAME_CHARS} characters, e.g. pi5"
            )
        settings[key] = value.strip()


def fleet_columns(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The runs columns device_class, unit_id and tags of a run collected with these settings
    (NULL where not given; no tags is NULL, not an empty object)."""
    return {
        "device_class": settings.get("device_class"),
        "unit_id": settings.get("unit_id"),
        "tags": dict(settings["tags"]) if settings.get("tags") else None,
    }
