"""The progress protocol's rules (Trainer v2.3's), the report paths, and the words status and plan use."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from foundation.progress import endpoint
from foundation.progress.protocol import MAX_BODY_BYTES, InvalidReport, validate
from foundation.progress.reading import headline, price, progress_of

WHEN = "2026-01-23T10:30:45.123456Z"


def body(**status) -> bytes:
    return json.dumps({"trainerStatus": {"lastUpdatedTime": WHEN, **status}}).encode()


def test_a_whole_report_is_stored_as_the_trainer_stores_it():
    report = validate(body(progressPercentage=45, estimatedRemainingSeconds=795649,
                           metrics=[{"name": "loss", "value": "0.2347", "unit": "ignored"}], extra=1))
    assert report.status == {"progressPercentage": 45, "estimatedRemainingSeconds": 795649,
                             "metrics": [{"name": "loss", "value": "0.2347"}], "lastUpdatedTime": "2026-01-23T10:30:45Z"}
    assert report.observed == datetime(2026, 1, 23, 10, 30, 45, 123456, tzinfo=timezone.utc).timestamp()


def test_no_trainer_status_is_a_no_op():
    assert validate(b"{}").status is None and validate(b'{"trainerStatus": null}').status is None


@pytest.mark.parametrize("raw, field", [
    (body(progressPercentage=101), "progressPercentage"),
    (body(progressPercentage=-1), "progressPercentage"),
    (body(progressPercentage=45.0), "progressPercentage"),  # Go's decoder refuses a fraction for an int32
    (body(progressPercentage=True), "progressPercentage"),
    (body(estimatedRemainingSeconds=2**31), "estimatedRemainingSeconds"),
    (body(metrics=[{"name": "loss", "value": 0.5}]), "metrics[0].value"),
    (body(metrics=[{"name": "", "value": "1"}]), "metrics[0].name"),
    (body(metrics=[{"name": "x" * 65, "value": "1"}]), "metrics[0].name"),
    (body(metrics=[{"name": "a", "value": "1"}] * 257), "257 metrics"),
    (body(metrics={"loss": "1"}), "metrics"),
    (json.dumps({"trainerStatus": {"progressPercentage": 3}}).encode(), "lastUpdatedTime"),
    (body(lastUpdatedTime="yesterday"), "lastUpdatedTime"),
    (b"[1]", "JSON object"),
    (b"{nope", "not JSON"),
    (b'{"trainerStatus": 3}', "must be an object"),
    (b" " * (MAX_BODY_BYTES + 1), "bytes"),
], ids=["a percentage past 100", "a negative percentage", "a percentage with a fraction", "a boolean percentage",
        "an ETA past int32", "a metric value as a number", "an empty metric name", "a metric name of 65 characters",
        "257 metrics", "metrics as a map", "no lastUpdatedTime", "an unreadable time", "a list", "not JSON",
        "trainerStatus not an object", "a body past 64 KiB"])
def test_what_the_trainer_refuses_is_refused_with_the_field(raw, field):
    with pytest.raises(InvalidReport, match=field.replace("[", r"\[").replace("]", r"\]")):
        validate(raw)


def test_a_report_path_names_namespace_kind_and_job():
    path = endpoint.path("nlp", "pytorchjobs", "bert")
    assert path == "/apis/kubeflow.org/v1/namespaces/nlp/pytorchjobs/bert/status"
    assert endpoint.parse_path(path + "?x=1") == ("nlp", "pytorchjobs", "bert")
    for bad in ("/apis/kubeflow.org/v1/namespaces/nlp/pytorchjobs/bert", "/apis/trainer.kubeflow.org/v1alpha1/"
                "namespaces/nlp/trainjobs/bert/status", "/", "/apis/kubeflow.org/v1/namespaces//pytorchjobs/x/status"):
        assert endpoint.parse_path(bad) is None, bad


NOW = datetime(2026, 1, 23, 14, 0, tzinfo=timezone.utc)


def job(**status) -> dict:
    return {"status": {"trainerStatus": {"lastUpdatedTime": "2026-01-23T13:58:00Z", **status},
                       "startTime": (NOW - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%SZ")}}


def test_status_and_the_plan_read_one_shape():
    found = progress_of(job(progressPercentage=62, estimatedRemainingSeconds=11400,
                            metrics=[{"name": "loss", "value": "0.2"}]))
    assert found is not None and headline(found) == "62%, 3 h 10 min left"
    assert found.to_json() == {"percentage": 62, "etaSeconds": 11400, "metrics": [{"name": "loss", "value": "0.2"}],
                               "updated": "2026-01-23T13:58:00Z"}
    assert progress_of({"status": {}}) is None and progress_of(None) is None


@pytest.mark.parametrize("status, gpus, words", [
    ({"progressPercentage": 62, "estimatedRemainingSeconds": 11400}, 32, "at 62%, 3 h 10 min left, 96 GPU-hours of progress"),
    ({"progressPercentage": 5}, 2, "at 5%, 6.0 GPU-hours of progress"),
    ({"estimatedRemainingSeconds": 90}, 0, "at 1 min 30 s left"),
    ({}, 8, "reported, no percentage or ETA, 24 GPU-hours of progress"),
], ids=["percentage, ETA and GPU-hours", "no ETA, few GPU-hours", "no GPUs", "nothing but metrics"])
def test_the_price_of_stopping_a_run(status, gpus, words):
    assert price(job(**status), gpus, NOW) == words


def test_a_job_that_never_reported_has_no_price():
    assert price({"status": {"startTime": "2026-01-23T10:00:00Z"}}, 8, NOW) is None
