"""Spark SQL in Python strings and `%sql` cells, parsed with sqlglot's Spark dialect and turned
into stage-graph nodes, so every order rule reads SQL the way it reads DataFrame chains."""
