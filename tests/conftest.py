"""Shared fixtures: where the shipped datasets are, and small helpers to build policies."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import duckdb
import pytest
from hypothesis import settings

from sqlanon.experiments.common import ADULT_QIS  # docs/DESIGN.md section 6, in the paper's order

# CI (CI=true, .ci/run) draws the same examples at every run, so a red CI is a change's doing, not a new random
# draw's; elsewhere hypothesis explores new examples each run (and replays the failures it kept in .hypothesis/)
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI", "").strip().lower() == "true":
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT / "datasets"
ADULT = DATASETS / "adult"
HOSPITAL = DATASETS / "hospital"
# the hospital table's quasi-identifiers with its shipped hierarchies (nationality suppressed)
HOSPITAL_QIS = {"zip_code": {"hierarchy": str(HOSPITAL / "hierarchies" / "zip_code.csv")},
                "age": {"hierarchy": str(HOSPITAL / "hierarchies" / "age.csv")},
                "nationality": {"hierarchy": "suppress"}}

# Tests marked `slow` (pytest -m "not engines and not slow" is the quick path, README "Tests"): every test
# function one of whose cases took 1.5 s or more, or all of whose cases together took 3 s or more, in one
# run of the whole suite with --durations=0 on the shared 2-core development machine (seconds beside each,
# all cases summed); plus the tests that run the demo or an experiment, which need the installed package
# and were not timed. Listed by function here rather than decorated in each file; `tests/test_markers.py`
# checks that every name still names a test. tests/test_engines.py is marked `engines` as a whole, and so is
# every other test that needs PostgreSQL or Spark (`needs_an_engine`, below).
SLOW = {
    "tests/test_maxent_release.py::test_bucketize_publishes_one_text_per_value_whatever_the_threads",  # 3.0 s
    "tests/test_imports.py::test_every_module_imports_first_in_a_fresh_interpreter",  # about 15 s
    "tests/test_optimum.py::test_release_is_the_brute_force_optimum_for_every_metric",  # about 25 s
    "tests/test_optimum.py::test_adult_seven_configurations_equal_arx_optimum",  # about 15 s
    "tests/test_optimum.py::test_bounds_hold_for_every_node_above",  # about 10 s
    "tests/test_optimum.py::test_heuristic_with_time_to_spare_proves_the_exact_optimum",  # about 3 s
    "tests/test_rollup.py::test_every_node_and_subset_equals_the_database",  # about 4 s
    "tests/test_apply.py::test_apply_to_new_rows_releases_with_the_same_node",  # 1.6 s
    "tests/test_ownership.py::test_a_real_sigint_inside_the_swap_exits_130_and_writes_nothing",  # 5.4 s
    "tests/test_ownership.py::test_a_kill_after_the_commit_leaves_the_catalog_record",  # 2.4 s
    "tests/test_ownership.py::test_marginal_companions_follow_the_same_rule",  # 1.7 s
    "tests/test_attacks.py::test_adult_bottom_node_matches_pandas",  # 4.7 s
    "tests/test_bad_input.py::test_bad_input_subprocess",  # 22.9 s
    "tests/test_sources.py::test_memory_limit_with_temp_directory_spills_and_completes",  # about 20 s
    "tests/test_bad_input.py::test_schema_qualified_names",  # 6.8 s
    "tests/test_checker.py::test_distinct_bound_decides_k_and_distinct_l_without_per_value_counts",  # 1.8 s
    "tests/test_checker.py::test_min_block_size_is_a_necessary_condition",  # 4.2 s
    "tests/test_checker.py::test_sparse_counts_in_both_forms_equal_the_dense_counts",  # 8.1 s
    "tests/test_checker.py::test_two_stage_check_equals_dense_check_on_every_adult_node",  # 56.5 s
    "tests/test_checker.py::test_grouped_verdicts_equal_the_exact_ones",  # 31 s (36 cases, three forms)
    "tests/test_checker.py::test_grouped_verdicts_equal_the_exact_ones_on_random_tables",  # 11.9 s
    "tests/test_checker.py::test_a_node_the_witness_check_left_undecided_is_not_checked_again",  # 2.2 s
    "tests/test_cli.py::test_bad_policy_gives_one_line_and_exit_2",  # 12.2 s
    "tests/test_cli.py::test_check_exit_codes",  # 2.3 s
    "tests/test_cli.py::test_lattice_and_sql",  # 7.2 s
    "tests/test_cli.py::test_sql_from_a_manifest_is_the_released_transformation_without_a_search",  # 3.7 s
    "tests/test_datasets.py::test_landsend_cli_writes_parquet",  # 7.5 s
    "tests/test_datasets.py::test_landsend_exact_figure_8_domains_with_enough_rows",  # 5.6 s
    "tests/test_datasets.py::test_landsend_existing_table_is_not_replaced",  # 3.0 s
    "tests/test_datasets.py::test_landsend_schema",  # 12.6 s
    "tests/test_datasets.py::test_rebuild_from_raw_gives_the_committed_parquet",  # 5.1 s
    "tests/test_entity.py::test_search_with_entity_key_matches_brute_force_and_a_pandas_reference",  # 6.8 s
    "tests/test_search.py::test_presuming_search_equals_brute_force",  # 8.8 s, one case 2.1 s
    "tests/test_hierarchy_authoring.py::test_edge_table_levels_are_each_leafs_path_to_the_root",  # 4.1 s
    "tests/test_marginals.py::test_adding_a_marginal_never_raises_kl",  # 5.2 s
    "tests/test_marginals.py::test_closed_form_equals_ipf_on_decomposable_collections",  # 5.9 s
    "tests/test_marginals.py::test_dobra_bounds_are_sharp_against_every_consistent_table",  # 5.0 s
    "tests/test_marginals.py::test_k_link_is_the_smallest_non_sensitive_marginal_count",  # 3.1 s
    "tests/test_marginals.py::test_pruning_check_agrees_with_brute_force_on_random_cases",  # 23.9 s
    "tests/test_marginals.py::test_reduction_to_induced_attributes",  # 2.4 s
    "tests/test_marginals.py::test_single_table_kl_is_the_metric_of_design_section_5",  # 1.6 s
    "tests/test_marginals_release.py::test_adult_five_marginals_scored_and_checked_like_brute_force",  # 1.8 s
    "tests/test_marginals_release.py::test_cli_releases_policy_marginals_and_writes_the_manifest",  # 3.0 s
    "tests/test_marginals_release.py::test_cli_search_and_bad_input",  # 7.6 s
    "tests/test_marginals_release.py::test_cli_start_options",  # 3.1 s
    "tests/test_marginals_release.py::test_greedy_respects_max_steps_and_the_sensitive_limit",  # 3.2 s
    "tests/test_marginals_release.py::test_greedy_steps_lower_kl_and_stay_private_and_decomposable",  # 3.0 s
    "tests/test_marginals_release.py::test_release_tables_and_manifest",  # 5.0 s
    "tests/test_marginals_release.py::test_table_and_marginals_are_one_release",  # 3.9 s
    "tests/test_marginals_release.py::test_unknown_attribute_or_level_in_policy_marginals",  # 3.4 s
    "tests/test_marginals_release.py::test_unsupported_policies_are_refused",  # 5.2 s
    "tests/test_maxent.py::test_invariants_sound_complete_and_concise",  # 4.5 s
    "tests/test_maxent.py::test_solver_meets_constraints_and_is_optimal",  # 5.9 s
    "tests/test_maxent_release.py::test_cli_bucketize_then_maxent",  # 3.8 s
    "tests/test_maxent_release.py::test_cli_infeasible_knowledge_is_one_line_and_exit_2",  # 1.8 s
    "tests/test_maxent_release.py::test_generalized_release_makes_each_block_a_bucket",  # 3.2 s
    "tests/test_maxent_release.py::test_rules_need_the_original",  # 2.5 s
    "tests/test_models_properties.py::test_adjusted_entropy_monotone",  # 2.2 s
    "tests/test_models_properties.py::test_algorithm_1_is_the_supremum",  # 11.1 s
    "tests/test_models_properties.py::test_distinct_monotone",  # 2.2 s
    "tests/test_models_properties.py::test_emd_formulas_equal_the_transportation_lp",  # 5.3 s
    "tests/test_models_properties.py::test_entropy_monotone",  # 1.9 s
    "tests/test_models_properties.py::test_npd_recursive_monotone",  # 1.6 s
    "tests/test_models_properties.py::test_pd_recursive_monotone",  # 1.5 s
    "tests/test_models_pycanon.py::test_entropy_l_floors_to_pycanons_integer",  # 1.6 s
    "tests/test_models_pycanon.py::test_k_and_distinct_l_agree",  # 1.7 s
    "tests/test_models_search.py::test_incognito_equals_brute_force_for_every_model",  # 11.4 s
    "tests/test_release.py::test_adult_release_is_k_anonymous_and_keeps_every_unsuppressed_row",  # 2.3 s
    "tests/test_release.py::test_printed_select_gives_exactly_the_released_rows",  # 4.6 s
    "tests/test_report.py::test_bad_input_is_one_line_and_exit_2",  # 3.1 s
    "tests/test_report_chromium.py::test_external_report_renders_without_the_exposed_classes",  # 1.6 s
    "tests/test_report_chromium.py::test_hospital_report_renders_with_no_console_message",  # 1.9 s
    "tests/test_report_chromium.py::test_the_harness_sees_a_page_that_tries_to_fetch",  # 1.6 s
    "tests/test_search.py::test_adult_incognito_equals_brute_force",  # 4.3 s
    "tests/test_search.py::test_random_tables_incognito_equals_brute_force",  # 11.2 s
    # measured 2026-11-28 in the quick path (--durations=0, cases summed), after the engine tests left it
    "tests/test_dbt.py::test_dbt_duckdb_model_is_the_release_and_tests_catch_a_broken_model",  # 39.8 s
    "tests/test_dbt.py::test_dbt_tests_judge_the_live_source_as_sqlanon_does",  # 9.5 s a case (two dbt builds)
    "tests/test_experiments.py::test_a_partial_run_merges_into_a_report_of_the_same_options",  # the experiments' smoke run, set up for it
    "tests/test_experiments.py::test_an_interrupted_run_leaves_no_plot_that_blocks_the_next",  # 3.1 s
    "tests/test_views.py::test_duckdb_view_random_inserts_and_deletes",  # 21.1 s
    "tests/test_views.py::test_duckdb_view_ordered_emd_equals_the_exact_distance_of_every_class",  # 16.4 s
    "tests/test_checker.py::test_witness_checks_prove_only_failing_nodes_on_random_tables",  # 12.2 s
    "tests/test_checker.py::test_node_counts_from_sparse_counts_equal_the_pivot",  # 8.6 s
    "tests/test_checker.py::test_node_verdicts_equal_the_dense_judgement_on_random_tables",  # 8.6 s
    "tests/test_checker.py::test_witness_checks_prove_only_nodes_that_fail",  # 7.8 s
    "tests/test_models_policy.py::test_profile_from_chunks_of_blocks_equals_the_profile_of_all_blocks",  # 7.7 s
    "tests/test_search.py::test_same_blocks_through_the_engine",  # 7.5 s
    "tests/test_checker.py::test_search_judged_in_the_database_equals_brute_force_and_the_in_memory_choice",  # 7.2 s
    "tests/test_checker.py::test_batch_counts_in_both_forms_equal_the_dense_counts",  # 5.8 s
    "tests/test_optimum.py::test_bounded_search_releases_the_brute_force_optimum",  # 5.1 s
    "tests/test_checker.py::test_node_verdicts_in_the_database_equal_the_dense_judgement",  # 5.0 s
    "tests/test_bad_input.py::test_bad_input",  # 4.6 s
    "tests/test_views.py::test_duckdb_view_keeps_policy_through_adversarial_changes",  # 4.5 s
    "tests/test_models_risk.py::test_delta_presence_decisions_equal_pandas",  # 4.3 s
    "tests/test_checker.py::test_class_sizes_rolled_up_from_meets_equal_each_nodes_own_on_random_tables",  # 3.6 s
    "tests/test_checker.py::test_nodes_of_few_blocks_skip_the_size_pass_with_the_same_verdicts_and_stats",  # 3.5 s
    "tests/test_models_risk.py::test_decisions_equal_pandas_on_every_node",  # 3.1 s
    "tests/test_views.py::test_sql_prints_the_enforcing_view_the_release_creates",  # 2.9 s
    "tests/test_checker.py::test_search_with_witness_checks_equals_brute_force",  # 2.9 s
    "tests/test_rollup.py::test_search_is_the_same_with_and_without_rollup",  # 1.7 s
    "tests/test_marginals_walk.py::test_walk_is_seeded_private_and_never_worse_than_its_start",  # 1.6 s
    "tests/test_report.py::test_a_release_above_the_minimal_nodes_is_explained_not_warned_about",  # 1.6 s
    "tests/test_marginals_walk.py::test_optimum_is_at_least_as_good_as_every_start",  # 1.5 s
    "tests/test_cli.py::test_demo_runs_from_the_installed_entry_point",  # the demo / an experiment: not timed here
    "tests/test_experiments.py::test_report_folder",  # the demo / an experiment: not timed here
    "tests/test_experiments.py::test_homogeneity_numbers",  # the demo / an experiment: not timed here
    "tests/test_experiments.py::test_report_numbers_come_from_the_cli_code_path",  # the demo / an experiment: not timed here
    "tests/test_experiments.py::test_performance_numbers",  # the demo / an experiment: not timed here
    "tests/test_experiments.py::test_utility_numbers",  # the demo / an experiment: not timed here
    "tests/test_experiments.py::test_similarity_numbers",  # the demo / an experiment: not timed here
    "tests/test_experiments.py::test_facts_on_full_adult",  # the demo / an experiment: not timed here
    "tests/test_experiments.py::test_samples_are_seeded",  # the demo / an experiment: not timed here
    "tests/test_marginals_release.py::test_adult_experiment_on_a_sample",  # the demo / an experiment: not timed here
    "tests/test_maxent_release.py::test_experiment_on_a_sample",  # the demo / an experiment: not timed here
    "tests/test_report_chromium.py::test_adult_demo_report_renders_and_shows_the_lattice",  # the demo / an experiment: not timed here
}


# the session fixtures of tests/test_engines.py that start a PostgreSQL server or a Spark session: a test using
# either (itself, through another fixture, or as the `engine` it is parametrized with and asks for by name) is
# marked `engines`, so that the quick path starts neither
ENGINE_FIXTURES = {"postgres", "spark"}


def needs_an_engine(item) -> bool:
    params = getattr(getattr(item, "callspec", None), "params", {})
    return bool(ENGINE_FIXTURES & set(getattr(item, "fixturenames", ()))) or params.get("engine") in ENGINE_FIXTURES


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.split("[", 1)[0] in SLOW:
            item.add_marker(pytest.mark.slow)
        if needs_an_engine(item):
            item.add_marker(pytest.mark.engines)


def adult_policy(qis: list[str] | int = 8, privacy: dict | None = None, **extra) -> dict:
    """A policy dict over the shipped Adult data: the first `qis` attributes of docs/DESIGN.md section 6."""
    names = list(ADULT_QIS)[:qis] if isinstance(qis, int) else qis
    specs = {n: dict(ADULT_QIS[n]) for n in names}
    for spec in specs.values():
        if spec["hierarchy"].endswith(".csv"):
            spec["hierarchy"] = str(ADULT / spec["hierarchy"])
    policy = {
        "source": {"parquet": str(ADULT / "adult.parquet"), "table": "adult"},
        "quasi_identifiers": specs,
        "sensitive": ["occupation"],
        "privacy": privacy or {"k": 6},
        "utility": "discernibility",
        "release": {"name": "adult_release", "materialize": "table"},
    }
    policy.update(extra)
    return policy


@pytest.fixture
def hospital_dir(tmp_path) -> Path:
    """A private copy of datasets/hospital (tests write databases beside the policy)."""
    dst = tmp_path / "hospital"
    shutil.copytree(HOSPITAL, dst, ignore=shutil.ignore_patterns("__pycache__", "*.duckdb"))
    return dst


@pytest.fixture
def memdb():
    con = duckdb.connect()
    yield con
    con.close()


def assert_same_search(found, reference) -> None:
    """`found` (Incognito) agrees with `reference` (brute force, every node checked).

    The minimal nodes are equal. With a non-monotone predicate the search leaves `undecided` the nodes that
    lie above a satisfying one (none of them can be minimal): the nodes it says satisfy do, and every
    satisfying node is either found or undecided, and every undecided node lies above a found one.
    """
    assert found.minimal == reference.minimal
    assert found.satisfying <= reference.satisfying
    assert reference.satisfying <= found.satisfying | found.undecided
    assert not (found.satisfying & found.undecided)
    for node in found.undecided:
        assert any(all(a <= b for a, b in zip(s, node)) and s != node for s in found.satisfying), node
    assert reference.undecided == set()


def force_staged_route(monkeypatch) -> None:
    """Make every run stage its source, also a Parquet file or a DuckDB table that it would read directly
    (`FrequencySet.reads_source_directly`): for the tests of the staged route."""
    from sqlanon.frequency import FrequencySet
    monkeypatch.setattr(FrequencySet, "reads_source_directly", property(lambda self: False))
