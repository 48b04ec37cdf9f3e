"""Webhooks through the upstream 0.38.1 bindings (`post_PostWebhook`, `get_GetWebhooks`,
`patch_PatchWebhook`, `post_TestWebhook`, `delete_DeleteWebhook`) against Resolute, and delivery
to a receiver on loopback: a real trial's experiment reaching COMPLETED and a task-log pattern,
signed as upstream signs (hex HMAC-SHA256 of "timestamp,body")."""

import hashlib
import hmac
import http.server
import json
import threading
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from determined.common.api import bindings, errors
from determined.experimental import client

from conftest import Agent, DetCli, Master
from experiments import IRIS, ExpState, create, sdk, wait_for, wait_state, write_config


class Receiver:
    """An HTTP server on loopback recording every POST (path, headers, JSON body)."""

    def __init__(self) -> None:
        self.got: List[Tuple[str, Dict[str, str], Dict[str, Any], bytes]] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                # Header names are case-insensitive: kept lower-cased.
                headers = {k.lower(): v for k, v in self.headers.items()}
                receiver.got.append((self.path, headers, json.loads(raw), raw))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def at(self, path: str) -> List[Tuple[str, Dict[str, str], Dict[str, Any], bytes]]:
        return [g for g in self.got if g[0] == path]

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def admin_session(master: Master):
    return client.Determined(master=master.url, user="admin", password="")._session


def state_hook(name: str, url: str, state: str = "COMPLETED", kind=bindings.v1WebhookType.DEFAULT) -> bindings.v1Webhook:
    return bindings.v1Webhook(
        name=name,
        url=url,
        webhookType=kind,
        mode=bindings.v1WebhookMode.WORKSPACE,
        triggers=[
            bindings.v1Trigger(triggerType=bindings.v1TriggerType.EXPERIMENT_STATE_CHANGE, condition={"state": state})
        ],
    )


def test_bindings_create_list_patch_test_delete(master: Master, receiver: Receiver, unique: str) -> None:
    session = admin_session(master)
    created = bindings.post_PostWebhook(session, body=state_hook(f"sdk{unique}", receiver.url + "/first")).webhook
    assert created.id is not None and created.name == f"sdk{unique}"
    assert created.webhookType == bindings.v1WebhookType.DEFAULT
    assert created.triggers[0].triggerType == bindings.v1TriggerType.EXPERIMENT_STATE_CHANGE
    assert created.triggers[0].condition == {"state": "COMPLETED"}

    listed = {w.id: w for w in bindings.get_GetWebhooks(session).webhooks}
    assert listed[created.id].url == receiver.url + "/first"

    bindings.patch_PatchWebhook(session, id=created.id, body=bindings.v1PatchWebhook(url=receiver.url + "/moved"))
    assert {w.id: w for w in bindings.get_GetWebhooks(session).webhooks}[created.id].url == receiver.url + "/moved"

    assert bindings.post_TestWebhook(session, id=created.id).completed is True
    _, headers, body, _ = wait_for("the test event", lambda: receiver.at("/moved"), timeout=15)[0]
    assert body["event_type"] == "EXPERIMENT_STATE_CHANGE" and body["event_data"] == {"data": "test"}
    assert len(headers["x-determined-ai-signature"]) == 64

    # Not an admin: the SDK raises upstream's exception for a 403.
    user = client.Determined(master=master.url, user="determined", password="")._session
    with pytest.raises(errors.ForbiddenException):
        bindings.post_PostWebhook(user, body=state_hook("nope", receiver.url))
    # A bad trigger: 400 naming the field.
    bad = state_hook("bad", receiver.url, state="FINISHED")
    with pytest.raises(errors.APIException, match=r"triggers\[0\]\.condition\.state"):
        bindings.post_PostWebhook(session, body=bad)

    bindings.delete_DeleteWebhook(session, id=created.id)
    assert created.id not in {w.id for w in bindings.get_GetWebhooks(session).webhooks}
    with pytest.raises(errors.NotFoundException):
        bindings.delete_DeleteWebhook(session, id=created.id)


@pytest.mark.experiments
def test_completed_experiment_and_log_pattern_reach_the_receiver(
    master: Master, agent: Agent, det: DetCli, receiver: Receiver, tmp_path: Path, unique: str
) -> None:
    session = admin_session(master)
    hooks = [
        bindings.post_PostWebhook(session, body=state_hook(f"done{unique}", receiver.url + f"/done{unique}")).webhook,
        bindings.post_PostWebhook(
            session,
            body=state_hook(f"slack{unique}", receiver.url + f"/slack{unique}", kind=bindings.v1WebhookType.SLACK),
        ).webhook,
        bindings.post_PostWebhook(
            session,
            body=bindings.v1Webhook(
                name=f"log{unique}",
                url=receiver.url + f"/log{unique}",
                webhookType=bindings.v1WebhookType.DEFAULT,
                mode=bindings.v1WebhookMode.WORKSPACE,
                triggers=[
                    bindings.v1Trigger(
                        triggerType=bindings.v1TriggerType.TASK_LOG, condition={"regex": "starting from scratch"}
                    )
                ],
            ),
        ).webhook,
    ]
    try:
        config = write_config(
            IRIS / "const.yaml",
            tmp_path / "const.yaml",
            tmp_path / "checkpoints",
            name=f"hooked{unique}",
            searcher={"max_length": {"batches": 200}},
            min_validation_period={"batches": 100},
        )
        exp_id = create(det, config, IRIS)
        wait_state(sdk(master).get_experiment(exp_id), {ExpState.COMPLETED}, timeout=180)

        _, headers, body, _ = wait_for("the COMPLETED event", lambda: receiver.at(f"/done{unique}"), timeout=30)[0]
        assert body["event_type"] == "EXPERIMENT_STATE_CHANGE"
        assert body["condition"] == {"state": "COMPLETED"}
        experiment = body["event_data"]["experiment"]
        assert (experiment["id"], experiment["state"], experiment["name"]) == (exp_id, "COMPLETED", f"hooked{unique}")
        assert experiment["slots_per_trial"] == 1 and experiment["workspace"] == "Uncategorized"
        assert headers["x-determined-ai-signature-timestamp"].isdigit()

        slack = wait_for("the Slack message", lambda: receiver.at(f"/slack{unique}"), timeout=30)[0][2]
        assert slack["blocks"][0]["text"]["text"] == "Your experiment completed successfully 🎉"
        assert slack["attachments"][0]["blocks"][0]["text"]["text"] == f"✅ hooked{unique} (#{exp_id})"

        log_events = wait_for("the task-log event", lambda: receiver.at(f"/log{unique}"), timeout=30)
        assert len(log_events) == 1
        log_body = log_events[0][2]
        assert log_body["event_type"] == "TASK_LOG"
        assert log_body["condition"] == {"regex": "starting from scratch"}
        assert "starting from scratch" in log_body["event_data"]["task_log"]["triggering_log"]
        assert log_body["event_data"]["task_log"]["node_name"]
        # Exactly one COMPLETED event per webhook.
        assert len(receiver.at(f"/done{unique}")) == 1
    finally:
        for h in hooks:
            bindings.delete_DeleteWebhook(session, id=h.id)


def test_signature_verifies_with_the_configured_key(fresh_master_with_key: Master, receiver: Receiver) -> None:
    session = admin_session(fresh_master_with_key)
    created = bindings.post_PostWebhook(session, body=state_hook("signed", receiver.url + "/signed")).webhook
    assert bindings.post_TestWebhook(session, id=created.id).completed is True
    _, headers, _, raw = wait_for("the test event", lambda: receiver.at("/signed"), timeout=15)[0]
    timestamp = headers["x-determined-ai-signature-timestamp"]
    expected = hmac.new(b"compat-signing-key", f"{timestamp},".encode() + raw, hashlib.sha256).hexdigest()
    assert headers["x-determined-ai-signature"] == expected


@pytest.fixture
def fresh_master_with_key(tmp_path: Path):
    workdir = tmp_path / "keyed-master"
    workdir.mkdir()
    m = Master(workdir, config_yaml="webhooks:\n  signing_key: compat-signing-key\n")
    yield m
    m.close()
