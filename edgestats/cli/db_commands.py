"""merge, import, sql, migrate. (Being written.)"""

import typer


def register(app: typer.Typer) -> None:
    pass
