"""Exporters: the run model and tuiprof's analysis written as files for other tools.

* :mod:`~tui_prof.export.parquet`: every model table and the analysis tables as Parquet
  files in a folder, with a README.md of their columns and units (pandas, polars, DuckDB);
* :mod:`~tui_prof.export.perfetto`: a Chrome trace-event JSON (``.json`` or ``.json.gz``)
  that the Perfetto UI and ``chrome://tracing`` open, with tuiprof's gaps and findings as
  extra tracks.

The layer sits beside :mod:`tui_prof.render` (both turn the model and analysis results into
output; neither computes a number of its own) and below the TUI and the CLI, which call it.
An exporter never writes into the run directory (:func:`~tui_prof.export.common.check_destination`)
and never overwrites a file it did not write.
"""
