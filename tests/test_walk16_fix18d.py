"""walk16 rows fixed by fix18d: sizes without their unit, a spec's mistakes in one round, and one field's
"accepted" said the same by every check that reaches it. Each test fails on the code before its fix."""

from __future__ import annotations

import pytest

from nodeweave.spec import parse_spec
from nodeweave.spec.nodes import SpecErrors

BASE = "name: job\nimage: {variant: cpu}\nlauncher: {script: t.py}\n"


def refused(text: str) -> "dict":
    """The refusal's FieldErrors of a spec, by field."""
    with pytest.raises(SpecErrors) as caught:
        parse_spec(BASE + text, "s.yaml")
    return {error.field: error for error in caught.value.fields}


# -- A8, A9: a size without its unit, which Kubernetes reads as bytes -------------------------------------------

def test_every_size_field_refuses_a_bare_number_naming_the_unit_to_add():
    errors = refused("nodes: 1\nresources: {requests: {memory: 256}, limits: {memory: '16'}, hugepages: {2Mi: 512}}\n"
                     "kubernetes: {storage_size: 500}\ncache: {size: 200}\n"
                     "volumes: [{name: scratch, path: /scratch, cache: 10}]\n")
    for field, number in (("resources.requests.memory", "256"), ("resources.limits.memory", "16"),
                          ("kubernetes.storage_size", "500"), ("cache.size", "200"), ("volumes[0].cache", "10")):
        assert errors[field].problem.startswith(f"{number} has no unit"), errors[field]
        assert f"write {number}Gi or {number}Mi" in errors[field].accepted
    # huge pages: the doc's "amount" is their total size; a count of pages is told the size it comes to
    pages = errors["resources.hugepages.2Mi"]
    assert "not pages" in pages.problem and "512 pages of 2Mi is 1Gi" in pages.accepted
    assert "is not a whole number" not in str(pages)
    # written with their units, the same values are taken
    spec = parse_spec(BASE + "resources: {requests: {memory: 256Gi}, hugepages: {2Mi: 1Gi}}\n"
                      "kubernetes: {storage_size: 500Gi}\ncache: {size: 200G}\n", "s.yaml")
    assert spec.resources.requests["memory"] == "256Gi" and spec.kubernetes.storage_size == "500Gi"
    assert spec.resources.hugepages["2Mi"] == "1Gi"


# -- A10: a field whose range depends on another said its type error only once the other was fixed ---------------

@pytest.mark.parametrize("nodes, enabled", [('"2"', "true"), ("two", "true"), ('"1:2"', "true"), ("2", "yes")])
def test_a_field_ranged_by_a_refused_one_says_its_own_mistake_in_the_same_round(nodes, enabled):
    errors = refused(f"nodes: {nodes}\nrecovery: {{enabled: {enabled}, min_nodes: \"1\"}}\n")
    assert ("recovery.enabled" if enabled == "yes" else "nodes") in errors, errors
    assert errors["recovery.min_nodes"].problem == "got the string '1'; write 1 without quotes", errors


# -- A20: one field's "accepted" said alike by its range check and its type check; a number shown as one --------

def test_every_check_of_a_field_says_the_same_accepted_and_shows_a_number_bare():
    for field, wrong in (("gpus_per_node", ("-1", '"1"', "lots", "2000")), ("nodes", ("0", '"2"', "3000", '"2:1"'))):
        accepted = {refused(f"{field}: {value}\n")[field].accepted for value in wrong}
        assert len(accepted) == 1, accepted
    assert "auto" in refused("gpus_per_node: -1\n")["gpus_per_node"].accepted
    assert refused("gpus_per_node: -1\n")["gpus_per_node"].problem == "got -1"
    assert refused("kubernetes: {grace_period: -5}\n")["kubernetes.grace_period"].problem == "got -5"


# -- B13: the entrypoint's node count: MIN:MAX the wrong way round was the one refusal with no accepted ----------

def test_every_refusal_of_a_node_count_variable_says_what_is_accepted():
    from nodeweave.entrypoint.errors import UsageError
    from nodeweave.entrypoint.planning.topology import _read_nproc, _NoGpus, normalize_nnodes

    said = set()
    for text in ("2:1", "0:2", "1-2", "1:", "3000"):
        with pytest.raises(UsageError) as caught:
            normalize_nnodes(text, "NODEWEAVE_NNODES")
        problem, _, accepted = str(caught.value).partition("; accepted: ")
        said.add(accepted.replace("1:2", "2:4").split(" (a typed count")[0])
    assert len(said) == 1 and "MIN <= MAX" in said.pop()
    with pytest.raises(UsageError) as caught:
        _read_nproc(_NoGpus())("2000", "processes per node", "NODEWEAVE_NPROC_PER_NODE")
    assert "got '2000'" in str(caught.value) and "accepted: a whole number from 1 to 1024" in str(caught.value)
