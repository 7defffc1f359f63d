"""The workshop's predictions through the room: a learner's exercise sends its prediction with
its measurement to the room's scheduler, and the teacher reads them all back as one
table, each prediction beside the measurement it was checked against.

    send("../../room.json", "06", "ann", my_work, measured)   # the learner's exercise
    collect("room.json")                                         # the teacher's table

The values sit in the scheduler's metadata, under KEY: they live as long as the room is
served, and a learner who sends twice replaces the first value.
"""
from __future__ import annotations

import math

import pandas as pd

from labkit.errors import ParameterError

KEY = "labkit-workshop"
COLUMNS = ["exercise", "name", "prediction", "measured", "low", "high", "what", "match"]


def _client(room_file):
    from distributed import Client

    from labkit.lab.room.tls import read_room, security

    room = read_room(room_file)
    return Client(room["address"], security=security(room, "client"), timeout="20s")


def _text(param, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ParameterError(param, f"must be a non-empty str; got {value!r}")
    return value.strip()


def record(exercise, name, prediction, measured, check=None) -> dict:
    """What is sent: the prediction, the measured value with its spread (a Measured), or
    the choice the measurement supports (a str), and whether the check matched."""
    exercise, name = _text("exercise", exercise), _text("name", name)
    if isinstance(measured, str):
        value, low, high, what = measured, None, None, "the choice the measurement supports"
    else:
        value, low, high, what = (float(measured.value), float(measured.low),
                                  float(measured.high), measured.what)
        low, high = (x if math.isfinite(x) else None for x in (low, high))
    if prediction is not None and not isinstance(prediction, (int, float, str)):
        raise ParameterError("prediction", f"must be a number or a choice; got {prediction!r}")
    return {"exercise": exercise, "name": name, "prediction": prediction, "measured": value,
            "low": low, "high": high, "what": what,
            "match": None if check is None else check.ok}


def send(room_file, exercise, name, prediction, measured, check=None) -> dict:
    """Send one exercise's prediction and measurement to the room; returns what was sent.
    Without a room file (None) nothing is sent, and the record is returned all the same."""
    rec = record(exercise, name, prediction, measured, check)
    if room_file is None:
        return rec
    with _client(room_file) as client:
        client.set_metadata([KEY, rec["exercise"], rec["name"]], rec)
    return rec


def collect(room_file, exercise=None):
    """Every prediction sent to the room (or one exercise's): one row per learner and
    exercise, the prediction beside the measurement, sorted by exercise and name."""
    with _client(room_file) as client:
        got = client.get_metadata([KEY], default={})
    rows = [r for ex, by_name in sorted(got.items()) if exercise in (None, ex)
            for _, r in sorted(by_name.items())]
    return pd.DataFrame(rows, columns=COLUMNS)
