"""The analysis' public door: what the TUI, the CLI and the exporters use of the analysis.

The summary document (:func:`build_summary` with :class:`SummaryOptions`, or
:func:`summarise` for the per-run gap sets and launch links behind it) is the main entry;
the rest are the typed helpers the views need beside it (run inputs, groupings, lanes,
rank records, the statistics tables, the run diff). Modules behind this door may be
reorganised; names exported here keep their meaning.
"""

from __future__ import annotations

from tui_prof.analysis.counterdict import UnknownArch
from tui_prof.analysis.counterdict import load as counter_dictionary
from tui_prof.analysis.counterplan import default_metrics as counter_defaults
from tui_prof.analysis.counterplan import plan as counter_plan
from tui_prof.analysis.counterplan import run_plan as counter_run_plan
from tui_prof.analysis.diff import (
    DEFAULT_NOISE_PCT,
    DEFAULT_NOISE_PP,
    KERNEL_DIFF_COLUMNS,
    MATCH_MODES,
    DiffResult,
    diff_runsets,
    inconclusive,
    rank_diff,
    regressions,
    rematch,
)
from tui_prof.analysis.diff import SCHEMA as DIFF_SCHEMA
from tui_prof.analysis.diff import comparable as judged_metrics
from tui_prof.analysis.findings import FindingCode
from tui_prof.analysis.hostapi import CorrIndex, api_classes, link_launches, sync_mask
from tui_prof.analysis.hostops import DominantOp, dominant_op, host_markers, nesting_depth, ops_overlapping
from tui_prof.analysis.hotspots import all_kernels, group_key, hotspots, process_order, run_codes
from tui_prof.analysis.integrity import CHECKS as INTEGRITY_CHECKS
from tui_prof.analysis.integrity import (
    CheckReport,
    Issue,
    RecordingChoice,
    RecordingPick,
    check_document,
    check_run,
    choose_recording,
    pick_recording,
    recording_runset,
    recordings,
    split_recordings,
)
from tui_prof.analysis.memory import API as MEMORY_FROM_API
from tui_prof.analysis.memory import allocated_levels
from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES, CategoryRules, load_category_rules
from tui_prof.analysis.occupancy import nvidia_hint, nvidia_occupancy, occupancy
from tui_prof.analysis.operators import (
    NOT_LINKED,
    categories_per_process,
    has_module_scopes,
    has_operators,
    kernel_categories_of,
    link_operators,
    module_key,
    operator_key,
    operator_links,
    operators_section,
    process_categories,
)
from tui_prof.analysis.partial_codec import PARTIAL_CACHE_KIND, partial_settings, partials_doc, partials_of_doc, paths_doc, paths_of_doc
from tui_prof.analysis.partials import (
    MERGED_SECTIONS,
    CheckPartial,
    PartialMerge,
    RankPartial,
    StepOptions,
    StepsNotMerged,
    check_partial,
    check_partials,
    comparable,
    median_of,
    merge_partials,
    merged_check,
    merged_counts,
    merged_sections,
    percentile_of,
    rank_partials,
    value_counts,
)
from tui_prof.analysis.pathpartials import PATH_CACHE_KIND, PathMerge, PathPartial, PathPlan, PathSettings, identity, path_partials, path_plan
from tui_prof.analysis.processes import log_paths
from tui_prof.analysis.ranks import (
    RankAlignment,
    RankCore,
    communication_mask,
    instances,
    rank_cores,
    rank_numbers,
    rank_offsets,
    rank_records,
    ranks_sections,
    sections_of_cores,
)
from tui_prof.analysis.runinput import RunInput, run_inputs, run_label, time_range, wall_ns
from tui_prof.analysis.savings import edit_of
from tui_prof.analysis.sections import CommunicationSection, Finding, MemorySection, RankRecord, StepRecord, StepsSection, StragglerSection, Summary
from tui_prof.analysis.stats import COPY_STATS, DOMAIN_OF, KERNEL_STATS, source_label, tables_with, tool_of, trace_recorded
from tui_prof.analysis.stats import combine as combine_stats
from tui_prof.analysis.stepdiff import STEPS_VERSION, StepChoice, StepChoiceError, StepDiff, StepSide, diff_steps
from tui_prof.analysis.steps import PROFILER_STEP, steps_section
from tui_prof.analysis.summary import SCHEMA, Progress, SummaryOptions, SummaryResult, build_summary, summarise
from tui_prof.analysis.timeline import CAUSES, DEFAULT_GAP_THRESHOLD_NS, GAP_COLUMNS, GapSet, copy_agents, gpu_timeline
from tui_prof.analysis.whatif import Edits, WhatIfError, path_segments, run_what_if
from tui_prof.threads import Lane, inline_lane, threaded_lane

__all__ = [
    "CAUSES",
    "COPY_STATS",
    "DEFAULT_CATEGORY_RULES",
    "DEFAULT_GAP_THRESHOLD_NS",
    "DEFAULT_NOISE_PCT",
    "DEFAULT_NOISE_PP",
    "DIFF_SCHEMA",
    "DOMAIN_OF",
    "GAP_COLUMNS",
    "INTEGRITY_CHECKS",
    "KERNEL_DIFF_COLUMNS",
    "KERNEL_STATS",
    "MATCH_MODES",
    "MEMORY_FROM_API",
    "MERGED_SECTIONS",
    "NOT_LINKED",
    "PARTIAL_CACHE_KIND",
    "PATH_CACHE_KIND",
    "PROFILER_STEP",
    "SCHEMA",
    "STEPS_VERSION",
    "CategoryRules",
    "CheckPartial",
    "CheckReport",
    "CommunicationSection",
    "CorrIndex",
    "DiffResult",
    "DominantOp",
    "Edits",
    "Finding",
    "FindingCode",
    "GapSet",
    "Issue",
    "Lane",
    "MemorySection",
    "PartialMerge",
    "PathMerge",
    "PathPartial",
    "PathPlan",
    "PathSettings",
    "Progress",
    "RankAlignment",
    "RankCore",
    "RankPartial",
    "RankRecord",
    "RecordingChoice",
    "RecordingPick",
    "RunInput",
    "StepChoice",
    "StepChoiceError",
    "StepDiff",
    "StepOptions",
    "StepRecord",
    "StepSide",
    "StepsNotMerged",
    "StepsSection",
    "StragglerSection",
    "Summary",
    "SummaryOptions",
    "SummaryResult",
    "UnknownArch",
    "WhatIfError",
    "all_kernels",
    "allocated_levels",
    "api_classes",
    "build_summary",
    "categories_per_process",
    "check_document",
    "check_partial",
    "check_partials",
    "check_run",
    "choose_recording",
    "combine_stats",
    "communication_mask",
    "comparable",
    "copy_agents",
    "counter_defaults",
    "counter_dictionary",
    "counter_plan",
    "counter_run_plan",
    "diff_runsets",
    "diff_steps",
    "dominant_op",
    "edit_of",
    "gpu_timeline",
    "group_key",
    "has_module_scopes",
    "has_operators",
    "host_markers",
    "hotspots",
    "identity",
    "inconclusive",
    "inline_lane",
    "instances",
    "judged_metrics",
    "kernel_categories_of",
    "link_launches",
    "link_operators",
    "load_category_rules",
    "log_paths",
    "median_of",
    "merge_partials",
    "merged_check",
    "merged_counts",
    "merged_sections",
    "module_key",
    "nesting_depth",
    "nvidia_hint",
    "nvidia_occupancy",
    "occupancy",
    "operator_key",
    "operator_links",
    "operators_section",
    "ops_overlapping",
    "partial_settings",
    "partials_doc",
    "partials_of_doc",
    "path_partials",
    "path_plan",
    "path_segments",
    "paths_doc",
    "paths_of_doc",
    "percentile_of",
    "pick_recording",
    "process_categories",
    "process_order",
    "rank_cores",
    "rank_diff",
    "rank_numbers",
    "rank_offsets",
    "rank_partials",
    "rank_records",
    "ranks_sections",
    "recording_runset",
    "recordings",
    "regressions",
    "rematch",
    "run_codes",
    "run_inputs",
    "run_label",
    "run_what_if",
    "sections_of_cores",
    "source_label",
    "split_recordings",
    "steps_section",
    "summarise",
    "sync_mask",
    "tables_with",
    "threaded_lane",
    "time_range",
    "tool_of",
    "trace_recorded",
    "value_counts",
    "wall_ns",
]
