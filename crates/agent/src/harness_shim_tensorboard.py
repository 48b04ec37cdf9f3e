
# --- TensorBoard writer fallback (crates/agent/src/harness_shim_tensorboard.py) ---------------
# The upstream harness's core.init() builds a TensorBoard metric writer: TensorFlow's, else
# PyTorch's (torch.utils.tensorboard). In a venv with neither, the import of the PyTorch writer
# fails and the trial dies before training. Upstream's images always have one; a process
# runtime's venv often has neither. Then this module stands in a writer that writes nothing, and
# the trial's log says why no event files appear. Metrics still reach the master as usual.
_RESOLUTE_TORCH_WRITER = "determined.tensorboard.metric_writers.pytorch"


def _resolute_noop_writer(module, cause):
    from determined import tensorboard as det_tensorboard

    print(
        "resolute: no TensorBoard event files will be written for this trial: neither TensorFlow "
        "nor PyTorch with TensorBoard can be imported by %s (%s). Metrics still reach the master; "
        "install tensorflow, or torch and tensorboard, in this Python to get event files."
        % (sys.executable, cause),
        file=sys.stderr,
        flush=True,
    )

    class _TorchWriter(det_tensorboard.MetricWriter):
        def add_scalar(self, name, value, step):
            pass

        def reset(self):
            pass

        def flush(self):
            pass

    _TorchWriter.__module__ = module.__name__
    module._TorchWriter = _TorchWriter


class _ResoluteWriterLoader:
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        try:
            self._loader.exec_module(module)
        except ImportError as e:
            _resolute_noop_writer(module, "%s: %s" % (type(e).__name__, e))

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _ResoluteWriterFinder:
    def find_spec(self, fullname, path=None, target=None):
        if fullname != _RESOLUTE_TORCH_WRITER:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _ResoluteWriterLoader(spec.loader)
                return spec
        return None


sys.meta_path.insert(0, _ResoluteWriterFinder())
