"""The client's callbacks, driven the way Hugging Face's and Lightning's trainers drive callbacks.

Neither library is installed here (the module must not import them), so each test runs a
minimal stand-in of the library's loop that calls the hooks as the library does: transformers'
`CallbackHandler.call_event` calls `getattr(callback, event)(args, state, control, **kwargs)` for
every event of its loop, each callback having every event; Lightning's trainer calls
`getattr(callback, hook)(trainer, pl_module, *args)` and keys callback state by `state_key`.
The reports go to a recorder standing in for `Reporter`; the real protocol, end to end, is
`tests/controller/test_progress_endpoint.py` (these callbacks included) and `tests/e2e`.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

import trainforge_progress as tp

# transformers 4.5x's TrainerCallback events, in the order its Trainer.train() calls them
HF_EVENTS = ("on_init_end", "on_train_begin", "on_epoch_begin", "on_step_begin", "on_pre_optimizer_step",
             "on_optimizer_step", "on_substep_end", "on_step_end", "on_log", "on_evaluate", "on_save",
             "on_epoch_end", "on_train_end", "on_prediction_step", "on_predict")


class Recorder:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def report(self, progress=None, eta=None, metrics=None, *, force=False) -> bool:
        self.calls.append({"progress": progress, "eta": eta, "metrics": dict(metrics or {}), "force": force})
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def hf_train(callback: Any, clock: Clock, *, steps: int = 10, world_zero: bool = True) -> None:
    """transformers' loop in miniature: every event reaches every callback, keyword arguments as the library passes them."""
    args, control = SimpleNamespace(logging_steps=1), SimpleNamespace()
    state = SimpleNamespace(global_step=0, max_steps=steps, epoch=0.0, num_train_epochs=1,
                            is_world_process_zero=world_zero, log_history=[])

    def call(event: str, **kwargs: Any) -> None:
        getattr(callback, event)(args, state, control, model=None, processing_class=None, optimizer=None,
                                 lr_scheduler=None, train_dataloader=None, eval_dataloader=None, **kwargs)

    call("on_init_end")
    call("on_train_begin")
    call("on_epoch_begin")
    for step in range(1, steps + 1):
        clock.now += 2.0
        call("on_step_begin")
        call("on_pre_optimizer_step")
        call("on_optimizer_step")
        state.global_step, state.epoch = step, step / steps
        call("on_step_end")
        call("on_log", logs={"loss": 1.0 / step, "learning_rate": 5e-5, "grad_norm": float("nan")})
    call("on_evaluate", metrics={"eval_loss": 0.25, "eval_accuracy": 0.91})
    call("on_epoch_end")
    call("on_train_end")


def test_the_hugging_face_callback_reports_steps_eta_and_metrics_through_every_hook():
    rec, clock = Recorder(), Clock()
    hf_train(tp.HuggingFaceProgress(rec, clock=clock), clock)
    last = rec.calls[-1]
    assert last["force"] and last["progress"] == 100.0 and last["eta"] == 0.0
    assert last["metrics"]["eval_accuracy"] == 0.91 and last["metrics"]["loss"] == pytest.approx(0.1)
    assert "grad_norm" not in last["metrics"]  # NaN has no text the protocol accepts
    half = next(c for c in rec.calls if c["progress"] == 50.0)
    assert half["eta"] == pytest.approx(10.0)  # 2 s a step since the first step seen, 5 steps left
    assert all(not c["force"] for c in rec.calls[:-1])


def test_only_the_world_process_zero_reports():
    rec, clock = Recorder(), Clock()
    hf_train(tp.HuggingFaceProgress(rec, clock=clock), clock, world_zero=False)
    assert rec.calls == []


def test_an_event_a_later_library_adds_is_a_no_op():
    callback = tp.HuggingFaceProgress(Recorder())
    assert callback.on_something_new(None, None, None) is None
    with pytest.raises(AttributeError):
        callback.not_a_hook  # noqa: B018


def lightning_fit(callback: Any, clock: Clock, *, batches: int = 8, rank_zero: bool = True) -> None:
    """Lightning's fit loop in miniature: hooks called as `hook(trainer, pl_module, *args)`."""
    trainer = SimpleNamespace(global_step=0, max_steps=-1, estimated_stepping_batches=batches, current_epoch=0,
                              is_global_zero=rank_zero, callback_metrics={})
    module = object()
    assert isinstance(callback.state_key, str) and callback.state_dict() == {}
    callback.load_state_dict({})
    for hook in ("setup", "on_fit_start", "on_train_start", "on_train_epoch_start"):
        (getattr(callback, hook)(trainer, module, "fit") if hook == "setup" else getattr(callback, hook)(trainer, module))
    for i in range(batches):
        clock.now += 1.0
        callback.on_train_batch_start(trainer, module, {"x": i}, i)
        trainer.global_step = i + 1
        trainer.callback_metrics = {"train_loss": Tensorish(0.5 / (i + 1))}
        callback.on_train_batch_end(trainer, module, {"loss": 0.1}, {"x": i}, i)
    trainer.callback_metrics["val_acc"] = Tensorish(0.88)
    callback.on_validation_end(trainer, module)
    callback.on_train_epoch_end(trainer, module)
    callback.on_train_end(trainer, module)
    callback.teardown(trainer, module, "fit")


class Tensorish:
    """A 0-d tensor as Lightning keeps metrics: `.item()` gives the number."""

    def __init__(self, value: float) -> None:
        self.value = value

    def item(self) -> float:
        return self.value


def test_the_lightning_callback_reports_batches_eta_and_callback_metrics():
    rec, clock = Recorder(), Clock()
    lightning_fit(tp.LightningProgress(rec, clock=clock), clock)
    last = rec.calls[-1]
    assert last["force"] and last["progress"] == 100.0
    assert set(last["metrics"]) == {"train_loss", "val_acc", "epoch"}
    quarter = next(c for c in rec.calls if c["progress"] == 25.0)
    assert quarter["eta"] == pytest.approx(6.0)  # 1 s a batch, 6 left


def test_only_global_rank_zero_reports():
    rec, clock = Recorder(), Clock()
    lightning_fit(tp.LightningProgress(rec, clock=clock), clock, rank_zero=False)
    assert rec.calls == []


@pytest.mark.parametrize("value, text", [
    (0.25, "0.25"), (1234567.0, "1.23457e+06"), (3, "3"), (True, "true"), ("bf16", "bf16"), (Tensorish(0.5), "0.5"),
    (float("inf"), None), (None, None), ("", None), ("x" * 80, "x" * 64),
], ids=lambda v: repr(v)[:20])
def test_a_metric_value_becomes_the_text_the_protocol_carries(value, text):
    assert tp._text(value) == text


def test_the_body_keeps_the_protocols_limits():
    body = tp.body(progress=104.6, eta=-3, metrics={f"m{i}": i for i in range(300)}, when="2026-01-01T00:00:00Z")
    status = body["trainerStatus"]
    assert status["progressPercentage"] == 100 and status["estimatedRemainingSeconds"] == 0
    assert len(status["metrics"]) == 256 and status["lastUpdatedTime"] == "2026-01-01T00:00:00Z"


def test_without_the_environment_every_call_is_a_no_op(monkeypatch):
    for name in (tp.ENV_URL, tp.ENV_CA_CERT, tp.ENV_TOKEN):
        monkeypatch.delenv(name, raising=False)
    reporter = tp.Reporter()
    assert not reporter.enabled and reporter.report(progress=5) is False and reporter.flush() is False


def test_reports_within_the_interval_are_held_and_flushed(tmp_path):
    clock = Clock()
    reporter = tp.Reporter("https://127.0.0.1:1/x", ca_file="", token_file=str(tmp_path / "token"), clock=clock)
    sent: list[dict] = []
    reporter._send = lambda payload: sent.append(payload) or True  # type: ignore[method-assign]
    assert reporter.report(progress=1)
    reporter._sent_at = clock.now
    assert not reporter.report(progress=2) and not reporter.report(progress=3)
    clock.now += 5.0
    assert reporter.report(progress=4)
    assert [s["trainerStatus"]["progressPercentage"] for s in sent] == [1, 4]
    reporter._sent_at = clock.now
    reporter.report(progress=5)
    assert reporter.flush() and sent[-1]["trainerStatus"]["progressPercentage"] == 5
