"""On CI a skip for want of a tool that .ci/ installs is a failure naming the tool.

Off CI (a laptop, a fresh machine without podman, Slurm or kubectl) the
real-tool tests skip with their reasons. ``.ci/run`` installs every tool in
``CI_TOOLS``; with ``CI=true`` a skip of one of the tests listed for a tool
means that install is broken, and a green run would prove less than its test
names say. tests/conftest.py turns such a skip into a failure that names the
tool and keeps the skip's own reason.

``CI_TOOLS`` is the one table: tool (and what installs it) -> the tests that
skip without it, as node-id patterns (fnmatch; ``@MARK`` is every test with
that marker; ``!PATTERN`` takes tests out: skips that are not about a tool).
tests/test_ci_gate.py checks that every pattern still matches a test.
"""

from __future__ import annotations

import os
from fnmatch import fnmatchcase
from typing import Iterable, List, Optional, Tuple

CI_TOOLS = {
    "podman (.ci/setup-engine.sh)": (
        "@engine", "!tests/e2e/test_docker_path.py::*",
        "tests/test_compose.py::test_podman_compose_*",
        # it answers "not up" for containers that are not: these skip without it
        "tests/test_cli_not_up.py::test_nothing_up_is_one_answer_on_every_verb*",
        "tests/test_walk6_targets.py::test_local_sync_not_up_hint_leaves_sync_out_and_names_only_the_picked_nodes*",
        "tests/test_walk_cli_verbs.py::test_logs_since_with_nothing_up_is_the_one_not_up_answer",
        "tests/test_walk_classes.py::test_down_with_nothing_up_says_so_and_writes_nothing",
        "tests/test_walk7_c.py::test_a21_a_compose_project_with_nothing_up_is_exit_3_as_every_not_up",
        "tests/test_walk5_sync.py::test_the_preparing_verbs_hint_up_hold_when_nothing_is_up*",
        "tests/test_walk4_cli.py::test_up_refuses_a_state_file_that_is_not_its_own*",
        "tests/test_walk3_classes.py::test_image_build_dry_run_refuses_a_network_the_real_engine_lacks",
        "tests/test_walk4_verbs.py::test_every_sync_dry_run_with_nothing_there_exits_0_and_says_the_real_exit*",
    ),
    "dockerd (.ci/setup-docker.sh)": (
        "tests/e2e/test_docker_path.py::*",
        "!tests/e2e/test_docker_path.py::test_a_client_from_23_on_without_buildx_is_refused_with_the_reason",
    ),
    "the offline base image (.ci/make-base-image.sh)": (
        "tests/test_images.py::*", "tests/test_hosts.py::*", "tests/test_sync_ssh.py::*",
    ),
    "the wheelhouse (.ci/wheelhouse.sh)": (
        "tests/e2e/test_image_contents.py::*", "tests/test_plan_record.py::test_image_build_runs_the_steps_its_dry_run_prints",
    ),
    "Debian's mirror from a podman build, for the sshd test images (.ci/setup-tools.sh checks it)": (
        "tests/test_sync_ssh.py::*", "tests/e2e/test_cluster_ssh.py::*",
    ),
    "docker-registry (.ci/setup-engine.sh)": (
        "tests/e2e/test_push.py::*", "tests/e2e/test_docker_path.py::test_a_docker_push_records_the_digest*",
    ),
    "nft and nsenter (.ci/setup-engine.sh)": ("tests/e2e/test_exchange.py::*",),
    "kubectl with kustomize >= v4 (.ci/setup-tools.sh)": (
        "tests/test_manifests.py::*", "tests/test_cluster_targets.py::*",
        "tests/test_examples.py::test_kubernetes_objects_validate_and_every_folder_builds*",
        "tests/e2e/test_cluster_kube.py::*", "tests/e2e/test_kubectl_standin.py::test_down_*",
        "tests/e2e/test_kube_recovery.py::*", "tests/e2e/test_kube_held_spare.py::*",
        "tests/test_seed_loops.py::test_up_applies_an_overlay_folder_of_the_users_own",
        "tests/test_cluster_argv.py::test_kubernetes_up_pins_the_digest_the_last_push_recorded",
        "tests/test_scanners.py::test_checkov_*", "tests/test_scanners.py::test_the_default_pod_*",
        "tests/test_walk2_classes.py::test_a_kubernetes_dry_run_notes_an_unreachable_cluster*",
        "tests/test_walk5_targets.py::test_down_plan_says_what_it_keeps",
        "tests/test_walk7_f.py::test_a_mistyped_kube_context_is_exit_3_on_every_verb*",
        "tests/test_walk7_f.py::test_a_dry_run_foretells_the_mistyped_context*",
        "tests/test_walk5_targets.py::test_down_deletes_only_the_jobs_objects_of_every_folder*",
        "tests/test_up_plans.py::test_up_after_down_needs_no_flags_again",
        "tests/test_cluster_identity.py::test_kubernetes_refuses_a_statefulset_another_folder_applied",
        "tests/test_cluster_identity.py::test_kubernetes_refuses_a_claim_another_folders_down_kept",
        "tests/test_cluster_identity.py::test_kubernetes_namespace_changed_while_up",
        "tests/test_walk4_verbs.py::test_every_sync_dry_run_with_nothing_there_exits_0_and_says_the_real_exit*",
    ),
    "checkov in .venv/checkov (make install)": ("tests/test_scanners.py::test_checkov_*",),
    "Slurm: slurm-wlm (.ci/setup-tools.sh)": (
        "tests/test_slurm.py::test_slurm_accepts_the_directives*",
        "tests/test_slurm.py::test_a_rendered_script_runs_a_two_node_job_on_slurm*",
        "tests/test_slurm.py::test_slurm_reads_every_directive_the_spec_sets",
        "tests/test_slurm_target.py::test_up_run_status_a_failing_rank_and_down_on_slurm",
        "tests/test_slurm_target.py::test_check_on_the_slurm_allocation",
        "tests/test_slurm_target.py::test_the_accelerate_slurm_seed_loop_*",
        "tests/test_plan_record.py::test_up_run_stop_and_down_on_slurm_run_their_dry_runs_plan",
        "tests/test_slurm_runtimes.py::test_pyxis_up_run_status_stop_logs_down_on_slurm",
        "tests/test_slurm_runtimes.py::test_apptainer_up_run_status_down_on_slurm",
        "tests/test_slurm_recovery.py::*",
        "tests/test_walk5_targets.py::test_a_slurm_job_with_nothing_allocated_is_not_up_before_its_runtime_is_judged*",
    ),
    "shellcheck (.ci/setup-tools.sh)": (
        "tests/test_slurm.py::test_bash_parses_and_shellcheck_passes*", "tests/test_slurm.py::test_shellcheck_is_live",
        "tests/test_examples.py::test_the_slurm_script_parses_and_passes_shellcheck",
    ),
    "rsync and git (.ci/setup-engine.sh, .ci/setup-tools.sh)": ("tests/test_sync_filters.py::*",),
    "promtool and prometheus: Debian's prometheus (.ci/setup-tools.sh)": ("tests/test_metrics_prometheus.py::*",),
    "Chromium: Debian's chromium (.ci/setup-tools.sh)": (
        "tests/test_dashboard.py::test_the_page_*", "tests/test_dashboard.py::test_a_finished_runs_folder_is_the_same_page",
        "tests/e2e/test_dashboard_engine.py::*",
    ),
    "openssl (.ci/setup-tools.sh)": ("tests/test_entrypoint_topology.py::test_statefulset_replicas_over_tls*",),
    "ip: iproute2 (.ci/setup-engine.sh)": ("tests/test_sync_relay.py::test_an_agent_reports_addresses*",),
    "the Python test and launcher packages (make install: .[test,launchers])": (
        "tests/test_launcher_options.py::*", "tests/test_entrypoint_launchers.py::*",
        "tests/test_entrypoint_profile.py::*", "tests/test_properties.py::*",
        "tests/test_seed_loops.py::test_accelerates_rdzv_backend_is_the_users_and_its_parser_reads_it", "tests/test_compose.py::test_a_yaml_1_2*",
        "!tests/test_properties.py::test_accepted_specs_render_compose_files_the_compose_schema_accepts",  # ../shared
        "tests/test_bench.py::*", "!tests/test_bench.py::test_plot_*", "tests/e2e/test_docker_standin.py::*",
    ),
    "transformers and lightning (make install: .[saves])": (
        "tests/test_recovery_real_saves.py::test_a_real_trainer_*",
        "tests/test_recovery_real_saves.py::test_a_real_lightning_*",
    ),
}


# The xdist groups of the tests that drive the machine's real tools (tests/conftest.py): each group runs in
# turn in one worker, the groups beside each other. A test file is a group: its tests share the file's fixed
# container names, networks and module fixtures (a cluster brought up once per module); what files share
# is made safe across workers (unique names per file, tests/e2e/conftest.py's session image built once under
# a lock). What cannot be shared joins one group across files: GROUP_OF_TOOL.
TOOL_GROUP = "real-tools"
# The one local Slurm: the session fixture ``slurm`` starts a slurmctld and two slurmd per worker, so every
# Slurm test runs in one worker (and never two controllers at once).
SLURM_GROUP = TOOL_GROUP + "-slurm"
GROUP_OF_TOOL = {"Slurm: slurm-wlm (.ci/setup-tools.sh)": SLURM_GROUP}
# The tools of CI_TOOLS whose tests share the machine's state: the engines' images, networks and
# containers, the registry, network namespaces and nft rules, the one local Slurm. The others (kubectl's
# kustomize build, checkov, shellcheck, rsync in a temporary folder, openssl, the Python packages) read and
# write only their own test's files, so their tests spread over the workers like the pure ones.
SHARED_STATE = (
    "podman (.ci/setup-engine.sh)", "dockerd (.ci/setup-docker.sh)",
    "the offline base image (.ci/make-base-image.sh)", "the wheelhouse (.ci/wheelhouse.sh)",
    "Debian's mirror from a podman build, for the sshd test images (.ci/setup-tools.sh checks it)",
    "docker-registry (.ci/setup-engine.sh)", "nft and nsenter (.ci/setup-engine.sh)",
    "Slurm: slurm-wlm (.ci/setup-tools.sh)",
)


def on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _matches(pattern: str, nodeid: str, markers: Iterable[str]) -> bool:
    if pattern.startswith("@"):
        return pattern[1:] in markers
    return fnmatchcase(nodeid, pattern)


def tools_for(nodeid: str, markers: Iterable[str]) -> List[str]:
    """The tools of CI_TOOLS a test needs (in table order), by its node id and markers."""
    markers = set(markers)
    nodeid = without_group(nodeid)
    found = []
    for tool, patterns in CI_TOOLS.items():
        takes = [p for p in patterns if not p.startswith("!")]
        leaves = [p[1:] for p in patterns if p.startswith("!")]
        if any(_matches(p, nodeid, markers) for p in takes) and not any(_matches(p, nodeid, markers) for p in leaves):
            found.append(tool)
    return found


def shares_machine_state(nodeid: str, markers: Iterable[str]) -> bool:
    """Whether a test drives a tool whose state others share (its group runs in turn: group_of): the engine
    markers, tests/e2e/, a SHARED_STATE tool."""
    markers = set(markers)
    if markers & {"engine", "docker"} or nodeid.startswith("tests/e2e/"):
        return True
    return any(tool in SHARED_STATE for tool in tools_for(nodeid, markers))


def without_group(nodeid: str) -> str:
    """The node id without the ``@<group>`` xdist appends under ``--dist loadgroup`` (its own rule: an ``@``
    after the last ``]``, so a parameter holding ``@`` is kept)."""
    at = nodeid.rfind("@")
    return nodeid[:at] if at > nodeid.rfind("]") and nodeid[at + 1:].startswith(TOOL_GROUP) else nodeid


def group_of(nodeid: str, markers: Iterable[str], fixtures: Iterable[str] = ()) -> Optional[str]:
    """The xdist group of a test: None for a pure test; one group per file, one across files for a tool
    that cannot be shared (GROUP_OF_TOOL; a test taking the ``slurm`` fixture is a Slurm test)."""
    markers = set(markers)
    if "slurm" in set(fixtures):
        return SLURM_GROUP
    if not shares_machine_state(nodeid, markers):
        return None
    for tool in tools_for(nodeid, markers):
        if tool in GROUP_OF_TOOL:
            return GROUP_OF_TOOL[tool]
    path = without_group(nodeid).split("::", 1)[0]
    return f"{TOOL_GROUP}:{path.removeprefix('tests/').removesuffix('.py')}"


def skip_reason(longrepr) -> str:
    """The reason of a skip report (pytest keeps (file, line, "Skipped: reason"))."""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).replace("Skipped: ", "", 1)
    return str(longrepr)


def failure_text(nodeid: str, tools: List[str], reason: str) -> str:
    return (f"CI=true: {nodeid} skipped, but .ci/ installs what it needs: {'; '.join(tools)}. "
            f"That install is broken on this machine.\n  the skip's reason: {reason}")


def patterns() -> List[Tuple[str, str]]:
    """Every (tool, pattern) of the table, for the check that none is stale."""
    return [(tool, p.lstrip("!")) for tool, ps in CI_TOOLS.items() for p in ps]
