"""Example jobs for the plugin's tests and bench: each `bad_X.py` has a reorder bug and its twin
`fixed_X.py` computes the intended answer deterministically.

Convention (also used for `fixtures/**/bad_*.py`): a module-level `job(...)` taking one DataFrame
per input, and `INPUTS = {param_name: (rows, ddl_schema)}`; optional `INPUT_ORDER` and `OUTPUT`
(from `pytest_sparkpar.orders`, default `bag()`), `STREAMING` (default False), `OUTPUT_MODE`.
"""
