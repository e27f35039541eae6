"""The run model: columnar tables with int64 nanosecond timestamps and interned names.

Pure data: nothing here imports textual or rich.
"""

from tui_prof.model.run import Agent, LoadIssue, Run, RunMeta, RunSet
from tui_prof.model.schema import TABLES, TableSpec, empty_table, make_table

__all__ = [
    "TABLES",
    "Agent",
    "LoadIssue",
    "Run",
    "RunMeta",
    "RunSet",
    "TableSpec",
    "empty_table",
    "make_table",
]
