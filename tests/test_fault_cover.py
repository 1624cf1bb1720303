"""Which executors a reading-side fault kills: enough to lose map output of every stage the
reading stage reads. In a salted join the random side's map tasks may all have run on one
executor and the repeatable side's on both; killing the other executor alone makes Spark
recompute only the repeatable side, and the fault shows nothing."""

from __future__ import annotations

import random

import pytest

from pytest_sparkpar.faults import Fault, cover


@pytest.mark.parametrize("seed", range(20))
def test_one_executor_holding_some_output_of_every_parent_is_enough(seed):
    assert cover(set(), [{"0"}, {"0", "1"}], random.Random(seed)) == {"0"}


@pytest.mark.parametrize("seed", range(20))
def test_parents_held_on_different_executors_lose_both(seed):
    assert cover(set(), [{"0"}, {"1"}], random.Random(seed)) == {"0", "1"}


def test_the_running_executor_chosen_first_is_kept_and_completed():
    # All remaining tasks run: the one on "2" must be killed (its retry reads again), and "2"
    # holds none of the first parent's output.
    assert cover({"2"}, [{"0"}, {"1", "2"}], random.Random(0)) == {"0", "2"}


def test_ties_are_drawn_among_the_executors_holding_most():
    drawn = {frozenset(cover(set(), [{"0", "1"}, {"0", "1"}], random.Random(seed))) for seed in range(40)}
    assert drawn == {frozenset({"0"}), frozenset({"1"})}


def test_a_fault_names_each_executor_it_killed():
    one = Fault(stage=5, finished=2, tasks=6, pids=[101]).describe()
    two = Fault(stage=5, finished=2, tasks=6, pids=[101, 202]).describe()
    assert one.startswith("executor process 101 killed (SIGKILL) in stage 5 after 2 of its 6 tasks had finished")
    assert two.startswith("executor processes 101 and 202 killed (SIGKILL) in stage 5")
