"""The same fill, after sorting each group by time."""

from tests.plugin_jobs._data import SENSOR_SCHEMA, sensor_readings

INPUTS = {"df": (sensor_readings(), SENSOR_SCHEMA)}
OUT_SCHEMA = "sensor int, ts int, v double, first_ts int"


def fill(pdf):
    pdf = pdf.sort_values("ts").reset_index(drop=True)
    pdf["v"] = pdf["v"].ffill()
    pdf["first_ts"] = pdf["ts"].iloc[0]
    return pdf


def job(df):
    return df.groupBy("sensor").applyInPandas(fill, OUT_SCHEMA)
