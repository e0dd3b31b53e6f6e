"""Power sources `collect --power` and `baseline --power` can read: one entry per source.

Adding a power source: a module under collectors/power/ (a subclass of
`edgestats.collectors.power.base.PowerSource`), one entry here, its section in
docs/power-sources.md and its test (docs/architecture.md §8 lists every file). The `--power`
choices, `auto`'s order and doctor's list read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgestats.registry import names_text, resolve


@dataclass(frozen=True)
class PowerSourceEntry:
    name: str  # --power value (a source that reads a file takes NAME:PATH)
    title: str
    source: str  # "module:Class" of its PowerSource subclass
    help: str  # one line: what it reads (CLI help, docs)
    doc: str  # "docs/FILE.md#anchor" of its section
    auto: bool = True  # tried by --power auto, in list order
    takes_path: bool = False  # --power NAME:PATH (an external meter's log)

    def source_class(self) -> type:
        return resolve(self.source)

    @property
    def spec(self) -> str:
        return f"{self.name}:PATH" if self.takes_path else self.name


# Order is auto's order. A device rarely has more than one of these; where it does
# (x86 + NVIDIA GPU) RAPL wins and the GPU's energy needs --power nvml in a second sweep.
# Hardware counters come first, then on-board monitors whose power is sampled and integrated.
POWER_SOURCES: tuple[PowerSourceEntry, ...] = (
    PowerSourceEntry(
        "rapl",
        "Intel/AMD RAPL",
        "edgestats.collectors.power.rapl:RaplSource",
        "x86 CPU package and DRAM energy counters (powercap sysfs)",
        "docs/power-sources.md#rapl",
    ),
    PowerSourceEntry(
        "nvml",
        "NVIDIA NVML",
        "edgestats.collectors.power.nvml:NvmlSource",
        "NVIDIA GPU energy counter or power (nvidia-ml-py)",
        "docs/power-sources.md#nvml",
    ),
    PowerSourceEntry(
        "jetson",
        "Jetson INA3221 rails",
        "edgestats.collectors.power.jetson:JetsonSource",
        "Jetson on-board power monitor rails (hwmon sysfs)",
        "docs/power-sources.md#jetson",
    ),
    PowerSourceEntry(
        "rpi-pmic",
        "Raspberry Pi 5 PMIC",
        "edgestats.collectors.power.rpi_pmic:RpiPmicSource",
        "Raspberry Pi 5 power-management IC rails (vcgencmd pmic_read_adc)",
        "docs/power-sources.md#rpi-pmic",
    ),
    PowerSourceEntry(
        "csv",
        "External meter log",
        "edgestats.collectors.power.meter_csv:CsvMeterSource",
        "an external meter's CSV log, aligned by timestamp",
        "docs/power-sources.md#csv",
        auto=False,
        takes_path=True,
    ),
)
_BY_NAME = {entry.name: entry for entry in POWER_SOURCES}
AUTO_ORDER: tuple[str, ...] = tuple(e.name for e in POWER_SOURCES if e.auto)


def power_source_names() -> tuple[str, ...]:
    """Every registered source's --power name, in registry order (read now: a test or a plug-in
    that extends POWER_SOURCES is seen)."""
    return tuple(entry.name for entry in POWER_SOURCES)


def power_source(name: str) -> PowerSourceEntry:
    """The entry of a --power name (without ":PATH"); KeyError for an unknown one."""
    return _BY_NAME[name]


def spec_help(*, with_none: bool = True) -> str:
    """ "auto, none, rapl, nvml, jetson or csv:PATH": every --power value (`baseline` needs a
    source, so its help leaves out none)."""
    return names_text(["auto", *(["none"] if with_none else []), *(e.spec for e in POWER_SOURCES)])


def file_specs() -> tuple[str, ...]:
    """("csv:PATH",): the --power values of the sources that read a file rather than this device."""
    return tuple(e.spec for e in POWER_SOURCES if e.takes_path)
