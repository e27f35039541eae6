"""``tuiprof sql``: DuckDB over a run's model and analysis tables (docs/sql.md).

:mod:`~tui_prof.query.tables` builds the tables (Arrow, on first use),
:mod:`~tui_prof.query.engine` runs queries on a sandboxed, read-only connection,
:mod:`~tui_prof.query.output` writes results as text, CSV, JSON or Markdown and
:mod:`~tui_prof.query.repl` is the interactive prompt. DuckDB is the optional ``sql``
extra: nothing here imports it before a query is run.
"""
