"""A small, generated stand-in for Fashion-MNIST: 28x28 grayscale images in [0, 1] of ten
garment silhouettes (the dataset's ten classes), each drawn from a fixed template, shifted by up
to two pixels and overlaid with noise. Deterministic for a given seed, so no download is needed
and every run sees the same data. Real Fashion-MNIST has the same shapes and label set."""

from typing import Tuple

import numpy as np

CLASS_NAMES = [
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
]
SIDE = 28


def _template(label: int) -> np.ndarray:
    img = np.zeros((SIDE, SIDE), dtype="float32")

    def box(r0: int, r1: int, c0: int, c1: int, value: float = 1.0) -> None:
        img[r0:r1, c0:c1] = value

    if label == 0:  # T-shirt: body and short sleeves
        box(6, 24, 9, 19), box(6, 11, 3, 25)
    elif label == 1:  # Trouser: two legs
        box(4, 26, 8, 13), box(4, 26, 15, 20), box(4, 8, 8, 20)
    elif label == 2:  # Pullover: body and long sleeves
        box(6, 24, 9, 19), box(6, 22, 4, 8), box(6, 22, 20, 24)
    elif label == 3:  # Dress: widening skirt
        for r in range(4, 26):
            half = 3 + (r - 4) // 3
            box(r, r + 1, 14 - half, 14 + half)
    elif label == 4:  # Coat: long body, sleeves, a dark zip line
        box(4, 26, 8, 20), box(4, 24, 4, 8), box(4, 24, 20, 24), box(4, 26, 13, 15, 0.3)
    elif label == 5:  # Sandal: straps
        for r in (14, 18, 22):
            box(r, r + 2, 3, 25)
    elif label == 6:  # Shirt: body, sleeves, collar gap
        box(6, 24, 8, 20), box(6, 18, 4, 8), box(6, 18, 20, 24), box(6, 10, 12, 16, 0.0)
    elif label == 7:  # Sneaker: low wedge
        box(17, 23, 3, 25), box(13, 17, 12, 25)
    elif label == 8:  # Bag: box with a handle
        box(11, 25, 5, 23), box(5, 7, 10, 18), box(5, 11, 9, 11), box(5, 11, 17, 19)
    else:  # Ankle boot: shaft and foot
        box(5, 23, 14, 22), box(17, 23, 4, 22)
    return img


def generate(count: int, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """`count` images (count, 28, 28) float32 and their labels (count,) int64, classes balanced."""
    rng = np.random.default_rng(seed)
    labels = np.arange(count, dtype="int64") % len(CLASS_NAMES)
    rng.shuffle(labels)
    templates = [_template(k) for k in range(len(CLASS_NAMES))]
    images = np.empty((count, SIDE, SIDE), dtype="float32")
    for i, label in enumerate(labels):
        shifted = np.roll(templates[label], tuple(rng.integers(-2, 3, size=2)), axis=(0, 1))
        noisy = shifted * rng.uniform(0.6, 1.0) + rng.normal(0.0, 0.15, size=(SIDE, SIDE))
        images[i] = np.clip(noisy, 0.0, 1.0)
    return images, labels


def load_training_data() -> Tuple[np.ndarray, np.ndarray]:
    return generate(600, seed=1)


def load_validation_data() -> Tuple[np.ndarray, np.ndarray]:
    return generate(200, seed=2)
