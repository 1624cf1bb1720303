"""`--sparkpar-master sc://...`: the plugin's checks through a real Spark Connect server started
from the installed PySpark (tests/spark_servers.py), batch and streaming.

Where the machine allows it (root: a new mount namespace), the server runs with an empty tmpfs over
the client's directory (its project and its TMPDIR), so nothing the client writes there is visible
to the server; `test_server_cannot_read_the_clients_files` proves it through Connect, and the
streaming checks then show the permuted runs need no file system shared with the driver."""

from __future__ import annotations

import pytest
from spark_servers import Servers, hiding_prefix, run_checks, start_connect
from test_plugin import outcomes

from pytest_sparkpar import compat

pytestmark = [
    pytest.mark.spark,
    pytest.mark.slow,
    # Connect runs place rows with DataFrame.repartitionById; older PySparks are told so (compat).
    pytest.mark.skipif(compat.spark_major_minor() < (4, 1), reason="Spark Connect runs need PySpark 4.1+"),
]

# The batch pair is the standalone test's, for the reason given there (tests/test_plugin_standalone.py).
CHECKS = """
import os
import tempfile
from pathlib import Path

from tests.plugin_jobs import (
    bad_drop_duplicates, bad_stream_dedup, fixed_drop_duplicates, fixed_stream_dedup,
)


def check(sparkpar, m):
    return sparkpar.check(m.job, m.INPUTS, output=getattr(m, "OUTPUT", None), streaming=getattr(m, "STREAMING", False),
                          output_mode=getattr(m, "OUTPUT_MODE", "append"))


def test_bad_batch(sparkpar):
    check(sparkpar, bad_drop_duplicates)


def test_fixed_batch(sparkpar):
    assert sorted(r.k for r in check(sparkpar, fixed_drop_duplicates)) == list(range(7))


def test_bad_streaming(sparkpar):
    check(sparkpar, bad_stream_dedup)


def test_fixed_streaming(sparkpar):
    assert len(check(sparkpar, fixed_stream_dedup)) == 6


def test_server_cannot_read_the_clients_files(spark):
    marker = Path(tempfile.mkdtemp()) / "client-only.txt"
    marker.write_text("written by the client\\n")
    try:
        spark.read.text(str(marker)).collect()
    except Exception as error:
        assert "PATH_NOT_FOUND" in str(error), error
        seen = False
    else:
        seen = True
    assert seen is (os.environ["SERVER_SHARES_CLIENT_DIR"] == "1"), (seen, str(marker))
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    servers = Servers(tmp_path_factory.mktemp("connect"))
    client = tmp_path_factory.mktemp("connect_client")  # the client's project and temporary files
    prefix = hiding_prefix(client)
    try:
        # The server's own driver on local-cluster: shuffle blocks cross executor JVMs.
        yield start_connect(servers, "local-cluster[2,1,1024]", prefix), client, bool(prefix)
    finally:
        servers.stop()


@pytest.fixture(scope="module")
def checked(server):
    url, client, isolated = server
    (client / "tmp").mkdir()
    env = {"TMPDIR": str(client / "tmp"), "SERVER_SHARES_CLIENT_DIR": "0" if isolated else "1"}
    result = run_checks(
        client / "project",
        CHECKS,
        "--sparkpar-determinism",
        f"--sparkpar-master={url}",
        "--sparkpar-seed=7",
        "--sparkpar-runs=5",
        "--sparkpar-shrink-seconds=0",
        env=env,
    )
    return url, isolated, result


def test_buggy_checks_fail_and_correct_ones_pass_through_connect(checked, record_property):
    url, isolated, result = checked
    record_property("server_hides_client_dir", isolated)
    print(f"Connect server cannot see the client's directory (no shared file system): {isolated}")
    assert outcomes(result.stdout) == {
        "test_bad_batch": "FAILED",
        "test_fixed_batch": "PASSED",
        "test_bad_streaming": "FAILED",
        "test_fixed_streaming": "PASSED",
        "test_server_cannot_read_the_clients_files": "PASSED",
    }, result.stdout[-5000:] + result.stderr[-3000:]
    assert f"master: {url}" in result.stdout


def test_streaming_report_shows_the_servers_micro_batches(checked):
    _, _, result = checked
    report = result.stdout[result.stdout.index("_ test_bad_streaming _") :]
    assert "micro-batch outputs (batch id: rows): {0: " in report, report
