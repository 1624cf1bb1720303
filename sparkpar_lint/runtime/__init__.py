"""Small helpers that code rewritten by `sparkpar fix` imports at run time (on executors too).

Nothing here imports pyspark or pandas at import time: the linter never pays for them.
"""
