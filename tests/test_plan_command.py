"""`sparkpar plan`: the command, its JSON, its errors, profiles and job files."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkpar_lint.plan.command import plan
from sparkpar_lint.plan.operators import ModelError, Operator
from sparkpar_lint.plan.profile import apply_profile, load_profile

DATA = Path(__file__).parent / "data" / "plan"


def _run(*args):
    return CliRunner().invoke(plan, [str(a) for a in args])


def test_model_json_has_a_top_level_throughput():
    result = _run("--model", DATA / "chain.json", "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert isinstance(report["throughput"], float) and report["throughput"] > 0
    assert report["speedup"] > 1
    assert [r["operators"] for r in report["regions"]][0][:3] == ["parse", "clean", "agg"]
    assert report["regions"][0]["key"] == ["user"]
    assert report["regions"][-1]["strategy"] == "not parallel"  # rank is stateful


def test_brute_force_is_at_least_as_good_as_the_heuristic():
    heuristic = json.loads(_run("--model", DATA / "chain.json", "--format", "json").output)
    exact = json.loads(_run("--model", DATA / "chain.json", "--format", "json", "--brute-force").output)
    assert exact["method"] == "brute-force"
    assert heuristic["throughput"] >= 0.95 * exact["throughput"]


def test_cores_option_overrides_the_model():
    one = json.loads(_run("--model", DATA / "chain.json", "--format", "json", "--cores", "1").output)
    assert one["cores"] == 1 and one["speedup"] == pytest.approx(1.0, abs=0.05)


def test_rich_output_shows_regions_and_advice():
    result = _run("--model", DATA / "chain.json")
    assert result.exit_code == 0
    assert "bottleneck" in result.output and "Advice" in result.output
    assert "repartition(" in result.output


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{", "not valid JSON"),
        ('{"operators": [{"name": "a", "kind": "nope"}]}', '"kind" must be one of'),
    ],
)
def test_bad_model_is_one_message_and_exit_2(tmp_path, content, problem):
    path = tmp_path / "chain.json"
    path.write_text(content)
    result = _run("--model", path)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert str(path) in result.output and problem in result.output


def test_missing_model_file(tmp_path):
    result = _run("--model", tmp_path / "absent.json")
    assert result.exit_code == 2 and "no such file" in result.output


def test_usage_errors_exit_2():
    assert _run().exit_code == 2
    assert _run(DATA / "job_events.py", "--model", DATA / "chain.json").exit_code == 2
    assert _run("--model", DATA / "chain.json", "--profile", DATA / "x.json").exit_code == 2


def test_brute_force_refuses_long_chains(tmp_path):
    ops = [{"name": f"o{i}", "cost": 1.0} for i in range(20)]
    path = tmp_path / "long.json"
    path.write_text(json.dumps({"operators": ops}))
    result = _run("--model", path, "--brute-force")
    assert result.exit_code == 2 and "too many" in result.output


def test_job_file_with_profile():
    result = _run(
        DATA / "job_events.py", "--profile", DATA / "job_events.profile.json", "--cores", "4", "--format", "json"
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    keyed = [r for r in report["regions"] if r["key"] == ["user"]]
    assert keyed and keyed[0]["replicas"] > 1
    assert any('spark.conf.set("spark.sql.shuffle.partitions", ' in a for a in report["advice"])
    assert any("repartition(" in a and "'user'" in a for a in report["advice"])
    assert all(len(r["pipelines"]) == 1 for r in report["regions"])  # Spark: fission only


def test_job_file_that_does_not_parse(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("def job(:\n")
    result = _run(path)
    assert result.exit_code == 2 and "cannot parse" in result.output


def test_profile_applies_by_name_and_stage_id():
    ops = (Operator("json:5", origin="0"), Operator("filter:7", origin="2"), Operator("other:9", origin="7"))
    costed, notes = apply_profile(ops, load_profile(DATA / "job_events.profile.json"))
    assert costed[0].cost == pytest.approx(0.60 / 300000)
    assert costed[1].selectivity == pytest.approx(0.5)  # matched by stage id 2
    assert costed[2].cost == 1.0 and any("other:9" in n for n in notes)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"operators": [{"rows_in": 1, "rows_out": 1, "seconds": 1}]}', '"name" or a "stage_id"'),
        ('{"operators": [{"name": "a", "rows_in": -1, "rows_out": 1, "seconds": 1}]}', "rows_in"),
        ('{"operators": [{"name": "a", "rows_in": 1, "rows_out": 1, "seconds": "x"}]}', "seconds"),
        ('{"sparkpar_profile": 9, "operators": []}', "unsupported profile version"),
        ("[1]", "JSON object"),
    ],
)
def test_bad_profiles(tmp_path, content, problem):
    path = tmp_path / "p.json"
    path.write_text(content)
    with pytest.raises(ModelError, match=problem):
        load_profile(path)
    result = _run(DATA / "job_events.py", "--profile", path)
    assert result.exit_code == 2 and str(path) in result.output
