"""Custom webhook triggers and shipped task logs, through the upstream 0.38.1 harness and bindings:
a trial's `core.alert(...)` reaches a webhook with a TRIGGER_TYPE_CUSTOM trigger (default and Slack
shapes); lines posted through `POST /api/v1/task/logs` (the SDK/harness shipping path) fire a
task-log trigger like the agent's lines do; bad triggers and alerts are 400s naming the field."""

import textwrap
from pathlib import Path

import pytest
from determined.common.api import bindings, errors

from conftest import Agent, DetCli, Master
from experiments import ExpState, create, only_trial, sdk, wait_for, wait_state
from test_webhooks import Receiver, admin_session, receiver  # noqa: F401 (fixture)

ALERT_PY = textwrap.dedent(
    """
    import determined as det

    with det.core.init() as core:
        core.train.report_training_metrics(steps_completed=1, metrics={"loss": 1.0})
        core.alert(title="loss exploded", description="nan at step 7", level="warn")
        print("alert sent")
    """
)


def custom_hook(name: str, url: str, kind=bindings.v1WebhookType.DEFAULT, condition=None) -> bindings.v1Webhook:
    return bindings.v1Webhook(
        name=name,
        url=url,
        webhookType=kind,
        mode=bindings.v1WebhookMode.WORKSPACE,
        triggers=[bindings.v1Trigger(triggerType=bindings.v1TriggerType.CUSTOM, condition=condition or {})],
    )


@pytest.mark.experiments
def test_core_alert_and_shipped_logs_reach_the_receiver(
    master: Master, agent: Agent, receiver: Receiver, tmp_path: Path, unique: str  # noqa: F811
) -> None:
    session = admin_session(master)
    shipped_pattern = f"shipped-{unique}: disk full"
    hooks = [
        bindings.post_PostWebhook(session, body=custom_hook(f"alert{unique}", receiver.url + f"/alert{unique}")).webhook,
        bindings.post_PostWebhook(
            session, body=custom_hook(f"slackalert{unique}", receiver.url + f"/slack{unique}", kind=bindings.v1WebhookType.SLACK)
        ).webhook,
        bindings.post_PostWebhook(
            session,
            body=bindings.v1Webhook(
                name=f"shipped{unique}",
                url=receiver.url + f"/shipped{unique}",
                webhookType=bindings.v1WebhookType.DEFAULT,
                mode=bindings.v1WebhookMode.WORKSPACE,
                triggers=[bindings.v1Trigger(triggerType=bindings.v1TriggerType.TASK_LOG, condition={"regex": shipped_pattern})],
            ),
        ).webhook,
    ]
    assert hooks[0].triggers[0].triggerType == bindings.v1TriggerType.CUSTOM and hooks[0].triggers[0].condition == {}
    try:
        (tmp_path / "model").mkdir()
        (tmp_path / "model" / "alert.py").write_text(ALERT_PY)
        (tmp_path / "exp.yaml").write_text(
            f"name: alert{unique}\nentrypoint: python3 alert.py\nmax_restarts: 0\n"
            "searcher: {name: single, metric: loss, max_length: 1}\n"
            f"checkpoint_storage: {{type: shared_fs, host_path: {tmp_path / 'ckpt'}}}\n"
        )
        det = DetCli(master.url, tmp_path / "det-config")
        exp_id = create(det, tmp_path / "exp.yaml", tmp_path / "model")
        exp = sdk(master).get_experiment(exp_id)
        trial = only_trial(exp)
        try:
            wait_state(exp, {ExpState.COMPLETED}, timeout=180)
        except AssertionError as e:
            raise AssertionError(f"{e}; trial log:\n{det.ok('trial', 'logs', str(trial.id))[-3000:]}") from e

        _, headers, body, _ = wait_for("the custom event", lambda: receiver.at(f"/alert{unique}"), timeout=30)[0]
        assert body["event_type"] == "CUSTOM", body
        assert body["event_data"]["custom_data"] == {
            "title": "loss exploded",
            "description": "nan at step 7",
            "level": "LOG_LEVEL_WARNING",
            "trial_id": trial.id,
        }, body
        assert body["event_data"]["experiment"]["id"] == exp_id, body
        assert len(headers["x-determined-ai-signature"]) == 64
        _, _, slack, _ = wait_for("the Slack message", lambda: receiver.at(f"/slack{unique}"), timeout=30)[0]
        text = slack["blocks"][0]["text"]["text"]
        assert "loss exploded" in text and "nan at step 7" in text and f"Trial ID `{trial.id}`" in text, slack

        # Lines shipped through POST /api/v1/task/logs are matched like the agent's.
        wire_trial = bindings.get_GetTrial(session, trialId=trial.id).trial
        task_id = wire_trial.taskId or (wire_trial.taskIds or [""])[0]
        assert not receiver.at(f"/shipped{unique}")
        bindings.post_PostTaskLogs(
            session,
            body=bindings.v1PostTaskLogsRequest(
                logs=[
                    bindings.v1TaskLog(taskId=task_id, log="an ordinary line\n", agentId="shipper"),
                    bindings.v1TaskLog(taskId=task_id, log=f"ERROR {shipped_pattern} on /data\n", agentId="shipper"),
                ]
            ),
        )
        _, _, shipped, _ = wait_for("the shipped line's event", lambda: receiver.at(f"/shipped{unique}"), timeout=30)[0]
        assert shipped["event_type"] == "TASK_LOG", shipped
        assert shipped["event_data"]["task_log"]["triggering_log"] == f"ERROR {shipped_pattern} on /data", shipped
        assert shipped["event_data"]["task_log"]["node_name"] == "shipper", shipped
    finally:
        for h in hooks:
            bindings.delete_DeleteWebhook(session, id=h.id)


def test_bad_custom_triggers_and_alerts(master: Master, receiver: Receiver, unique: str) -> None:  # noqa: F811
    session = admin_session(master)
    with pytest.raises(errors.APIException, match=r"triggers\[0\]\.condition: a custom trigger takes no condition"):
        bindings.post_PostWebhook(session, body=custom_hook(f"bad{unique}", receiver.url, condition={"regex": "x"}))
    data = bindings.v1CustomWebhookEventData(title="t", description="d", level=bindings.v1LogLevel.INFO)
    with pytest.raises(errors.APIException, match="experimentId"):
        bindings.post_PostWebhookEventData(session, body=bindings.v1PostWebhookEventDataRequest(data=data, experimentId=0))
    with pytest.raises(errors.NotFoundException):
        bindings.post_PostWebhookEventData(session, body=bindings.v1PostWebhookEventDataRequest(data=data, experimentId=987654))
    with pytest.raises(errors.NotFoundException):
        bindings.post_PostWebhookEventData(
            session, body=bindings.v1PostWebhookEventDataRequest(data=data, experimentId=1, trialId=987654)
        )
