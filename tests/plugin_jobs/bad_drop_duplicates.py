"""dropDuplicates on a subset of columns keeps an arbitrary row's other columns."""

from tests.plugin_jobs._data import READINGS_SCHEMA, readings

INPUTS = {"df": (readings(), READINGS_SCHEMA)}


def job(df):
    return df.dropDuplicates(["k"])
