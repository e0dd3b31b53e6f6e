"""A report DB with the training runs of two models beside the inference runs of two others:
make_report_db's DB (inference cnn9 and squeezenet, training mnist_cnn on jetson-nano), plus a
copy of its training runs as model lenet5 (twice the training time, the same device), and
runtimes on the training runs that differ within a model (iterations 1000 ran on `xla`, the others
on `tensorflow`), so that some figure rows pool several runtimes."""

from __future__ import annotations

from pathlib import Path

import duckdb
from report_builders import make_report_db

INFERENCE_MODELS = ("cnn9", "squeezenet")
TRAINING_MODELS = ("lenet5", "mnist_cnn")
TRAINING_RUNTIMES = ("tensorflow", "xla")


def make_training_models_db(path: Path) -> Path:
    make_report_db(path, device_names=("jetson-nano", "pi5"), with_power=False)
    with duckdb.connect(str(path)) as con:
        con.execute(
            "UPDATE runs SET runtime = CASE WHEN iterations = 1000 THEN 'xla' ELSE 'tensorflow' END "
            "WHERE kind = 'training'"
        )
        con.execute(
            "CREATE TEMP TABLE copies AS SELECT run_id AS old, uuid() AS new FROM runs "
            "WHERE kind = 'training' AND model = 'mnist_cnn'"
        )
        con.execute(
            "INSERT INTO runs SELECT r.* REPLACE (c.new AS run_id, 'lenet5' AS model) "
            "FROM runs r JOIN copies c ON r.run_id = c.old"
        )
        con.execute(
            "INSERT INTO run_results SELECT s.* REPLACE (c.new AS run_id, "
            "2 * s.training_time_s AS training_time_s) FROM run_results s JOIN copies c ON s.run_id = c.old"
        )
    return path
