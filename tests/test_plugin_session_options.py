"""Which Python worker daemon the plugin's session asks for (pytest_sparkpar.session.local_confs);
tests/test_plugin.py checks on real executors that their workers come from it."""

from __future__ import annotations

import sys

from pytest_sparkpar import session

DAEMON = {"spark.python.daemon.module": "pytest_sparkpar.worker_daemon"}


def test_local_executors_running_this_python_use_the_plugins_daemon(monkeypatch):
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    assert session.local_confs("local-cluster[2,1,1024]") == DAEMON
    assert session.local_confs("local[2]") == DAEMON
    assert session.local_confs("spark://127.0.0.1:7077") == {}


def test_workers_of_another_python_keep_pysparks_daemon(monkeypatch):
    # that interpreter may not have the plugin installed, and then no Python task could start
    monkeypatch.setenv("PYSPARK_PYTHON", "/usr/bin/python3")
    assert session.local_confs("local[2]") == {}
