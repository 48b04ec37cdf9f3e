"""Helpers for the experiment end-to-end tests: configs derived from the examples, waiting on
experiment and trial state through the upstream SDK, and reading metrics and logs."""

import re
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, TypeVar

from determined.common.api import bindings
from determined.common.experimental.metrics import TrialMetrics
from determined.experimental import client
from ruamel import yaml

from conftest import REPO, DetCli, Master

EXAMPLES = REPO / "examples"
IRIS = EXAMPLES / "iris"
MNIST = EXAMPLES / "mnist_pytorch"
# The seed notebook's three unlabelled flowers: setosa, versicolor, virginica.
IRIS_NEW = [[5, 3.9, 2, 0.5], [5, 2.5, 3, 1], [6.9, 3.1, 5.4, 2.1]]

ExpState = client.ExperimentState
TERMINAL = {ExpState.COMPLETED, ExpState.CANCELED, ExpState.ERROR, ExpState.DELETED}
T = TypeVar("T")


def merge(base: Dict[str, Any], changes: Dict[str, Any]) -> Dict[str, Any]:
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value
    return base


def write_config(example_config: Path, dest: Path, storage: Path, **changes: Any) -> Path:
    """The example's config with shared_fs checkpoint storage under `storage` (a host path the SDK
    can read checkpoints from) and `changes` merged in; written to `dest`."""
    config = yaml.YAML(typ="safe", pure=True).load(example_config.read_text())
    storage.mkdir(parents=True, exist_ok=True)
    config["checkpoint_storage"] = {"type": "shared_fs", "host_path": str(storage)}
    merge(config, changes)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with dest.open("w") as f:
        yaml.YAML(typ="safe", pure=True).dump(config, f)
    return dest


def created_id(cli_output: str) -> int:
    match = re.search(r"Created experiment (\d+)", cli_output)
    assert match, f"no 'Created experiment N' in:\n{cli_output}"
    return int(match.group(1))


def create(det: DetCli, config: Path, model_dir: Path, *flags: str, timeout: float = 60) -> int:
    return created_id(det.ok("experiment", "create", str(config), str(model_dir), *flags, timeout=timeout))


def sdk(master: Master) -> client.Determined:
    return client.Determined(master=master.url, user="determined", password="")


def wait_for(what: str, probe: Callable[[], Optional[T]], timeout: float, interval: float = 0.5) -> T:
    """Polls `probe` until it returns something truthy; fails naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    last: Optional[T] = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


def wait_state(exp: client.Experiment, states: set, timeout: float, context: str = "") -> ExpState:
    def probe() -> Optional[ExpState]:
        exp.reload()
        if exp.state in states:
            return exp.state
        assert exp.state not in TERMINAL, f"experiment {exp.id} ended {exp.state} {context}"
        return None

    return wait_for(f"experiment {exp.id} to reach {sorted(s.name for s in states)} {context}", probe, timeout)


def only_trial(exp: client.Experiment, timeout: float = 60) -> client.Trial:
    trials = wait_for(f"a trial of experiment {exp.id}", lambda: exp.list_trials(), timeout)
    assert len(trials) == 1, [t.id for t in trials]
    return trials[0]


def metrics(trial: client.Trial, group: str) -> List[TrialMetrics]:
    return list(trial.iter_metrics(group))


def restarts(d: client.Determined, trial_id: int) -> int:
    return int(bindings.get_GetTrial(d._session, trialId=trial_id).trial.restarts)


def trial_logs(det: DetCli, trial_id: int) -> str:
    return det.ok("trial", "logs", str(trial_id), timeout=60)
