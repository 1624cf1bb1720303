"""Streaming dropDuplicates keeps whichever duplicate is processed first, so the kept `v`
depends on the micro-batch boundaries and the order of rows inside a batch."""

from pytest_sparkpar.orders import bag

INPUTS = {"events": ([(i % 6, i, (i * 13) % 29) for i in range(60)], "k int, ts int, v int")}
STREAMING = True
OUTPUT = bag()


def job(events):
    return events.dropDuplicates(["k"])
