"""The importer against 71 real published manifests (`corpus/`, byte-exact; `corpus/SOURCES.yaml`).

Each file is imported, its folder rendered again by the real pipeline, and each job compared
with its manifest (`corpus_kit`). A job is either the same job after the round trip, or
refused for a reason of `corpus_kit.ACCEPTED`, each of which says why a user accepts it.
The tally is issue 45's goal: at least 90% of the jobs round-trip equal, the imported spec is
at most 0.6x the manifest's lines (median), and at most a quarter of the specs need podTemplate.
"""

from __future__ import annotations

import hashlib

import pytest
from corpus_kit import CORPUS, accepted, all_verdicts, sources, tally, verdicts

ENTRIES = sources()


def test_the_corpus_is_the_collected_one():
    """SOURCES.yaml names every manifest of the folder and no other (the files stay byte-exact:
    git holds them; this catches a file added or lost without its provenance)."""
    files = sorted(p.name for p in CORPUS.glob("*.yaml") if p.name != "SOURCES.yaml")

    assert [e["file"] for e in ENTRIES] == files
    assert all(len(hashlib.sha256((CORPUS / f).read_bytes()).hexdigest()) == 64 for f in files)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"].removesuffix(".yaml") for e in ENTRIES])
def test_each_manifest_round_trips_or_is_refused_for_a_reason_a_user_accepts(entry):
    for verdict in verdicts(entry["file"]):
        if verdict.equal:
            assert verdict.spec_lines > 0
        else:
            assert verdict.reasons, verdict
            assert all(accepted(reason) for reason in verdict.reasons), (verdict.title, verdict.reasons)


# What the tally reached at this commit: a floor that a change of the importer must not lower.
REACHED = {"equal": 56, "median_ratio": 0.69, "with_template": 34}
# issue 45's goal, not met with the spec's fields as they are (docs/import.md, "What the corpus says"):
# a pull policy that is not the default, volumes other than claims with their mounts, a container's
# securityContext, pod-only labels and hostNetwork have no field
GOAL_GAP = ("issue 45's goal is not met: the spec has no field for what keeps most imported specs in"
            " podTemplate (imagePullPolicy, configMap and hostPath volumes and their mounts, a container's"
            " securityContext, pod labels, hostNetwork)")


def _figures(found):
    equal = [v for v in found if v.equal]
    ratios = sorted(v.spec_lines / v.manifest_lines for v in equal)
    return equal, ratios[len(ratios) // 2], sum(1 for v in equal if v.kept)


def test_the_tally_holds_what_it_reached(capsys):
    found = all_verdicts()
    with capsys.disabled():
        print("\n" + tally(found))
    equal, median, with_template = _figures(found)

    assert len(equal) >= REACHED["equal"], tally(found)
    assert median <= REACHED["median_ratio"], tally(found)
    assert with_template <= REACHED["with_template"], tally(found)


@pytest.mark.xfail(strict=True, reason=GOAL_GAP)
def test_the_tally_meets_the_goal():
    """At least 90% round-trip equal, the spec at most 0.6x the manifest's lines (median), podTemplate
    in at most a quarter of the specs. Strict: when it passes, the mark goes."""
    found = all_verdicts()
    equal, median, with_template = _figures(found)

    assert len(equal) >= 0.9 * len(found)
    assert median <= 0.6
    assert with_template <= len(equal) / 4
