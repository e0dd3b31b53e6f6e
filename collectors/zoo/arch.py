"""Architecture tables of the zoo models, shared by zoo.torch_models and zoo.keras_models.

Framework-free on purpose: zoo_keras must not import torch, and one table per architecture means
the PyTorch and Keras builders cannot drift apart.
"""

# VGG-16, configuration D: channels per 3x3 conv, "M" = max-pool.
VGG16_CFG = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")

# (cin, squeeze, expand1x1, expand3x3) or "M" (max-pool); SqueezeNet 1.0's table.
SQUEEZENET_CFG = (
    "M",
    (96, 16, 64, 64),
    (128, 16, 64, 64),
    (128, 32, 128, 128),
    "M",
    (256, 32, 128, 128),
    (256, 48, 192, 192),
    (384, 48, 192, 192),
    (384, 64, 256, 256),
    "M",
    (512, 64, 256, 256),
)

# (expansion t, channels c, repeats n, first stride s), from the paper's Table 2.
MOBILENET_V2_CFG = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)

# (cin, kernel, expanded, cout, squeeze-excite, activation, stride): torchvision's bneck tables.
MOBILENET_V3_CFG = {
    "large": (
        (16, 3, 16, 16, False, "RE", 1),
        (16, 3, 64, 24, False, "RE", 2),
        (24, 3, 72, 24, False, "RE", 1),
        (24, 5, 72, 40, True, "RE", 2),
        (40, 5, 120, 40, True, "RE", 1),
        (40, 5, 120, 40, True, "RE", 1),
        (40, 3, 240, 80, False, "HS", 2),
        (80, 3, 200, 80, False, "HS", 1),
        (80, 3, 184, 80, False, "HS", 1),
        (80, 3, 184, 80, False, "HS", 1),
        (80, 3, 480, 112, True, "HS", 1),
        (112, 3, 672, 112, True, "HS", 1),
        (112, 5, 672, 160, True, "HS", 2),
        (160, 5, 960, 160, True, "HS", 1),
        (160, 5, 960, 160, True, "HS", 1),
    ),
    "small": (
        (16, 3, 16, 16, True, "RE", 2),
        (16, 3, 72, 24, False, "RE", 2),
        (24, 3, 88, 24, False, "RE", 1),
        (24, 5, 96, 40, True, "HS", 2),
        (40, 5, 240, 40, True, "HS", 1),
        (40, 5, 240, 40, True, "HS", 1),
        (40, 5, 120, 48, True, "HS", 1),
        (48, 5, 144, 48, True, "HS", 1),
        (48, 5, 288, 96, True, "HS", 2),
        (96, 5, 576, 96, True, "HS", 1),
        (96, 5, 576, 96, True, "HS", 1),
    ),
}
MOBILENET_V3_LAST = {"large": 1280, "small": 1024}


def make_divisible(v: float, divisor: int = 8) -> int:
    """torchvision's _make_divisible: round channels to a multiple of 8, losing at most 10%."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v
