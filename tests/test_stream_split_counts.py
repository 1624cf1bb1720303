"""How pytest_sparkpar.streams splits a file stream (no Spark): the files it counts under a path,
and the files per micro-batch it draws from them."""

from __future__ import annotations

from pytest_sparkpar.streams import Split, data_files


def test_counts_the_files_spark_reads_not_its_metadata(tmp_path):
    (tmp_path / "part-0.json").write_text("{}\n")
    (tmp_path / "day=1").mkdir()
    (tmp_path / "day=1" / "part-1.json").write_text("{}\n")
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / ".part-0.json.crc").write_text("")
    (tmp_path / "_spark_metadata").mkdir()
    (tmp_path / "_spark_metadata" / "0").write_text("v1\n")
    assert data_files(str(tmp_path)) == 2
    assert data_files(f"file:{tmp_path}") == 2
    assert data_files(str(tmp_path / "*.json")) == 1
    assert data_files(str(tmp_path / "missing")) == 0
    assert data_files("s3a://bucket/events") == 0  # not on this machine: not counted


def test_files_per_batch_always_leaves_at_least_two_batches():
    for files in range(3, 12):
        drawn = {Split(fraction / 100).files_per_batch(files) for fraction in range(100)}
        assert drawn == set(range(1, files)), files  # every split from one file a batch to files-1
    # Two files or fewer (or none yet, for a stream defined before its files): one file a batch.
    assert {Split(0.99).files_per_batch(files) for files in (0, 1, 2)} == {1}
