"""`edgestats doctor`. (Being written.)"""

import typer


def register(app: typer.Typer) -> None:
    pass
