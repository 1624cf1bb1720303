"""Shared inputs: a few hundred readings over a handful of keys, distinct timestamps."""

READINGS_SCHEMA = "k int, ts int, v int"


def readings(n: int = 300, keys: int = 7) -> list[tuple]:
    return [(i % keys, i, (i * 37) % 101) for i in range(n)]


SENSOR_SCHEMA = "sensor int, ts int, v double"


def sensor_readings(n: int = 300, sensors: int = 5) -> list[tuple]:
    # Every third value is missing, so a forward fill depends on which row comes first.
    return [(i % sensors, i, None if i % 3 else float(i * 7 % 53)) for i in range(n)]
