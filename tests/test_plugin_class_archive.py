"""The class-data archive of the plugin's JVMs (pytest_sparkpar.class_archive): which options a
session starts with, and, on a real JVM, that a first run leaves an archive the next run maps."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_sparkpar import class_archive

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKPAR_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SPARKPAR_CLASS_ARCHIVE", raising=False)
    return tmp_path


def test_a_first_run_records_its_classes_for_the_archive(cache):
    confs, directory = class_archive.java_options("local-cluster[2,1,1024]")
    assert directory is not None and directory.is_relative_to(cache)
    driver, executor = confs["spark.driver.extraJavaOptions"], confs["spark.executor.extraJavaOptions"]
    assert driver.startswith(f"-XX:DumpLoadedClassList={directory / 'lists'}/driver-")
    # one list per executor JVM: Spark fills in the ids
    assert executor.endswith("-{{APP_ID}}-{{EXECUTOR_ID}}.classlist")


def test_later_runs_start_from_the_archive(cache):
    _, directory = class_archive.java_options("local[2]")
    (directory / "spark.jsa").write_bytes(b"archive")
    confs, to_build = class_archive.java_options("local[2]")
    assert to_build is None
    assert confs["spark.driver.extraJavaOptions"].startswith(f"-XX:SharedArchiveFile={directory / 'spark.jsa'} ")
    assert "-Xlog:cds=off" in confs["spark.executor.extraJavaOptions"]


def test_no_archive_for_remote_masters_a_failed_build_or_when_turned_off(cache, monkeypatch):
    assert class_archive.java_options("spark://localhost:7077") == ({}, None)
    assert class_archive.java_options("sc://localhost:15002") == ({}, None)
    _, directory = class_archive.java_options("local[1]")
    (directory / "failed").touch()
    assert class_archive.java_options("local[1]") == ({}, None)
    monkeypatch.setenv("SPARKPAR_CLASS_ARCHIVE", "off")
    assert class_archive.java_options("local-cluster[2,1,1024]") == ({}, None)


def test_archives_are_apart_per_master_kind(cache):
    kinds = {class_archive.java_options(m)[1] for m in ("local[1]", "local[2]", "local-cluster[2,1,1024]")}
    assert len(kinds) == 2


def test_a_spark_installed_again_at_the_same_path_gets_an_archive_of_its_own(cache, tmp_path, monkeypatch):
    import pyspark.find_spark_home

    home = tmp_path / "spark"
    (home / "jars").mkdir(parents=True)
    monkeypatch.setattr(pyspark.find_spark_home, "_find_spark_home", lambda: str(home))
    _, first = class_archive.java_options("local[2]")
    (first / "spark.jsa").write_bytes(b"archive")
    shutil.rmtree(home / "jars")
    (home / "jars").mkdir()  # new jar files, the archive's JVM would not map
    os.utime(home / "jars", ns=(0, 1))
    confs, again = class_archive.java_options("local[2]")
    assert again is not None and again != first
    assert "SharedArchiveFile" not in confs["spark.driver.extraJavaOptions"]


def test_merged_lists_keep_each_class_once_and_drop_a_cut_line(tmp_path):
    (tmp_path / "a.classlist").write_text("# header\njava/lang/Object\norg/x/A\n@lambda-proxy x y\n")
    (tmp_path / "b.classlist").write_text("java/lang/Object\norg/x/B\norg/x/Cu")  # killed mid-write
    assert class_archive._merged(tmp_path) == ["java/lang/Object", "org/x/A", "@lambda-proxy x y", "org/x/B"]


START = """
import sys, time
from pyspark import SparkContext
from pytest_sparkpar.session import start
spark = start("local[1]")
pid = spark.sparkContext._jvm.ProcessHandle.current().pid()
with open(f"/proc/{pid}/maps") as maps:
    print("mapped" if any(line.rstrip().endswith("spark.jsa") for line in maps) else "not mapped")
spark.stop()
"""


@pytest.mark.spark
@pytest.mark.slow
def test_a_first_run_leaves_an_archive_that_the_next_run_maps(cache):
    if not Path("/proc/self/maps").exists():
        pytest.skip("reads the driver JVM's memory map from /proc (Linux)")
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def run() -> str:
        done = subprocess.run([sys.executable, "-c", START], env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.strip().splitlines()[-1]

    assert run() == "not mapped"
    _, directory = class_archive.java_options("local[1]")
    deadline = time.monotonic() + 900
    while not (directory / "spark.jsa").exists():  # built by a detached process once the first exits
        assert not (directory / "failed").exists(), "the archive could not be made"
        assert time.monotonic() < deadline, "no archive after 15 minutes"
        time.sleep(2)
    assert not (directory / "lists").exists()
    assert run() == "mapped"


def test_a_builder_whose_cache_vanishes_gives_up_quietly(tmp_path, monkeypatch):
    directory = tmp_path / "key"
    (directory / "lists").mkdir(parents=True)

    def cache_removed(lists):  # as a CI run's trap removes its temporary cache mid-build
        shutil.rmtree(directory)
        return []

    monkeypatch.setattr(class_archive, "_merged", cache_removed)
    driver = subprocess.Popen([sys.executable, "-c", "pass"])  # a driver JVM that has ended
    driver.wait()
    assert class_archive.build(directory, "java", "", driver.pid) is False
    assert not directory.exists()
