"""Data for the MNIST example.

Two sources, chosen by the experiment config's `data.dataset`:

- `digits` (default): scikit-learn's bundled 8x8 handwritten digits (1,797 images, no download),
  split 1,497 training / 300 validation. Small enough that a const run takes seconds on a CPU.
- `mnist`: the real 28x28 MNIST from the four IDX files (`train-images-idx3-ubyte.gz`, ...) in
  `data.data_dir` (default `data/`), downloaded first from `data.url` when given and missing; the
  URL may name the IDX files' directory or a .tar.gz holding them.

Both return a `TensorDataset` of (float image [1, H, W], int64 label), normalised per source.
"""

import gzip
import pathlib
import shutil
import struct
import tarfile
import urllib.request
from typing import Any, Dict, Optional, Tuple

import numpy as np
import torch
from torch.utils.data import TensorDataset

MNIST_FILES = {
    True: ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    False: ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
MNIST_MEAN, MNIST_STD = 0.1307, 0.3081
DIGITS_VALIDATION = 300
DIGITS_SPLIT_SEED = 0


def image_size(data_config: Dict[str, Any]) -> int:
    return 28 if dataset_name(data_config) == "mnist" else 8


def dataset_name(data_config: Dict[str, Any]) -> str:
    name = str(data_config.get("dataset", "digits"))
    if name not in ("digits", "mnist"):
        raise ValueError(f"data.dataset must be 'digits' or 'mnist', not {name!r}")
    return name


def get_dataset(data_config: Dict[str, Any], train: bool) -> TensorDataset:
    if dataset_name(data_config) == "mnist":
        data_dir = pathlib.Path(data_config.get("data_dir", "data"))
        images, labels = load_mnist(data_dir, train, data_config.get("url"))
        images = (images / 255.0 - MNIST_MEAN) / MNIST_STD
    else:
        images, labels = load_digits(train)
    return TensorDataset(
        torch.from_numpy(images.astype(np.float32)).unsqueeze(1),
        torch.from_numpy(labels.astype(np.int64)),
    )


def load_digits(train: bool) -> Tuple[np.ndarray, np.ndarray]:
    """8x8 digits scaled to zero mean and unit variance (statistics of the training split)."""
    from sklearn.datasets import load_digits as sklearn_digits

    digits = sklearn_digits()
    order = np.random.default_rng(DIGITS_SPLIT_SEED).permutation(len(digits.target))
    images, labels = digits.images[order], digits.target[order]
    train_images = images[DIGITS_VALIDATION:]
    mean, std = train_images.mean(), train_images.std()
    split = slice(DIGITS_VALIDATION, None) if train else slice(0, DIGITS_VALIDATION)
    return (images[split] - mean) / std, labels[split]


def load_mnist(data_dir: pathlib.Path, train: bool, url: Optional[str]) -> Tuple[np.ndarray, np.ndarray]:
    image_file, label_file = MNIST_FILES[train]
    if url and not all((data_dir / f).exists() for f in MNIST_FILES[train]):
        download_mnist(data_dir, url)
    missing = [f for f in (image_file, label_file) if not (data_dir / f).exists()]
    if missing:
        raise FileNotFoundError(
            f"MNIST files {missing} not found in {data_dir.resolve()}: put the IDX files there, set "
            "data.url to download them, or use data.dataset: digits"
        )
    return read_idx(data_dir / image_file).astype(np.float64), read_idx(data_dir / label_file)


def read_idx(path: pathlib.Path) -> np.ndarray:
    """Reads an (optionally gzipped) IDX file: magic (0, 0, dtype 0x08 = uint8, ndim), then sizes."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        zero, dtype, ndim = struct.unpack(">HBB", f.read(4))
        if zero != 0 or dtype != 0x08:
            raise ValueError(f"{path} is not an unsigned-byte IDX file")
        shape = struct.unpack(">" + "I" * ndim, f.read(4 * ndim))
        return np.frombuffer(f.read(), dtype=np.uint8).reshape(shape)


def download_mnist(data_dir: pathlib.Path, url: str) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    if url.endswith((".tar.gz", ".tgz")):
        archive = data_dir / "mnist.tar.gz"
        with urllib.request.urlopen(url) as resp, open(archive, "wb") as out:
            shutil.copyfileobj(resp, out)
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                name = pathlib.Path(member.name).name
                if member.isfile() and any(name in files for files in MNIST_FILES.values()):
                    source = tar.extractfile(member)
                    if source is not None:
                        (data_dir / name).write_bytes(source.read())
        return
    for files in MNIST_FILES.values():
        for name in files:
            with urllib.request.urlopen(url.rstrip("/") + "/" + name) as resp, open(data_dir / name, "wb") as out:
                shutil.copyfileobj(resp, out)
