"""Resolute's TensorBoard launcher, sent by the master with every TensorBoard task.

Reads the sources the master resolved (tensorboard_sources.json: each trial's event-file directory
in checkpoint storage, or for storage in a bucket its storage config and key prefix, and, for
trials whose directory held no event files when the master looked, their stored metrics), syncs
bucket event files into ./bucket with the harness's own fetcher (as upstream's TensorBoard task
does), writes TF event files from the stored metrics with TensorBoard's own writer into
./metrics/<trial> for every trial that still has no event files, then execs TensorBoard over all
of them, serving under the task's proxy path on the port the agent chose.
"""

import json
import os
import sys

SOURCES = "tensorboard_sources.json"


def has_event_files(directory):
    if not directory or not os.path.isdir(directory):
        return False
    return any("tfevents" in name for _, _, names in os.walk(directory) for name in names)


def tag(group, name):
    # The harness's own writer (determined.tensorboard.metric_writers.callback) names scalars so.
    if group == "training":
        return "Determined/" + name
    if group == "validation":
        return "Determined/" + (name if name.startswith("val") else "val_" + name)
    return "Determined/%s/%s" % (group, name)


def write_events(directory, metrics):
    """metrics: {group: {name: [[steps_completed, unix time, value], ...]}}."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    os.makedirs(directory, exist_ok=True)
    writer = EventFileWriter(directory)
    for group, series in sorted(metrics.items()):
        for name, points in sorted(series.items()):
            for step, wall_time, value in points:
                value = summary_pb2.Summary.Value(tag=tag(group, name), simple_value=float(value))
                event = event_pb2.Event(wall_time=float(wall_time), step=int(step), summary=summary_pb2.Summary(value=[value]))
                writer.add_event(event)
    writer.close()


def sync_bucket(trial):
    """Downloads the trial's event files from its bucket; returns the local directory holding
    them, or None (and says why) when there are none or the bucket cannot be read."""
    events = trial.get("bucketEvents")
    if not events:
        return None
    storage, key_prefix = events["storage"], events["keyPrefix"].rstrip("/") + "/"
    local = os.path.join(os.getcwd(), "bucket", str(trial["trialId"]))
    try:
        from determined.tensorboard import fetchers

        fetcher = fetchers.build(storage, [key_prefix], local)
        count = 0
        for key in fetcher.list_all_generator():
            fetcher._fetch(key, lambda: None)
            count += 1
    except Exception as e:  # the stored metrics still show
        print("trial %d: cannot sync event files from %s storage (bucket %s, prefix %s): %s" % (
            trial["trialId"], storage.get("type"), storage.get("bucket"), key_prefix, e), flush=True)
        return None
    print("trial %d: synced %d file(s) from %s bucket %s, prefix %s" % (
        trial["trialId"], count, storage.get("type"), storage.get("bucket"), key_prefix), flush=True)
    # The fetchers keep the bucket's layout: <local>/<bucket>/<key>.
    directory = os.path.join(local, str(storage.get("bucket", "")), key_prefix)
    return directory if has_event_files(directory) else None


def main():
    with open(SOURCES) as f:
        sources = json.load(f)
    specs = []
    for trial in sources.get("trials", []):
        name = "experiment_%d_trial_%d" % (trial["experimentId"], trial["trialId"])
        event_dir = trial.get("eventDir") or sync_bucket(trial)
        if has_event_files(event_dir):
            specs.append("%s:%s" % (name, event_dir))
        elif trial.get("metrics"):
            out = os.path.join(os.getcwd(), "metrics", str(trial["trialId"]))
            write_events(out, trial["metrics"])
            print("trial %d wrote no event files; showing its %d stored metric group(s) from %s" % (
                trial["trialId"], len(trial["metrics"]), out), flush=True)
            specs.append("%s:%s" % (name, out))
        else:
            print("trial %d has neither event files nor stored metrics yet" % trial["trialId"], flush=True)
    if not specs:
        empty = os.path.join(os.getcwd(), "metrics")
        os.makedirs(empty, exist_ok=True)
        specs.append("none:%s" % empty)
    argv = [
        sys.executable, "-m", "tensorboard.main",
        "--logdir_spec", ",".join(specs),
        "--host", os.environ.get("DET_SERVICE_HOST", "127.0.0.1"),
        "--port", os.environ["DET_SERVICE_PORT"],
        "--path_prefix", sources["pathPrefix"],
        "--load_fast", "false",
    ] + sys.argv[1:]
    os.execv(sys.executable, argv)


if __name__ == "__main__":
    main()
