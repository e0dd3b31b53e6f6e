"""Reading users' text files (sweep files, CSV tables), where bytes that are not UTF-8 are a
one-line error. That line names the file, the line and the byte; never a UnicodeDecodeError. Stdlib
only: collectors use it."""

from __future__ import annotations

from pathlib import Path


def decode_utf8(
    data: bytes, path: Path, error: type[Exception], advice: str, *, encoding: str = "utf-8"
) -> str:
    """`data` as text, or `error` saying which line of `path` is not UTF-8, followed by `advice`."""
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(
            f"{path}: line {line} is not UTF-8 text (byte 0x{data[exc.start]:02x}); {advice}"
        ) from None
