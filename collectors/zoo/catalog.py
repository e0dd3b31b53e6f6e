"""The model zoo: the same architectures in PyTorch (zoo.torch_models) and Keras (zoo.keras_models),
built from code. Their weights are seeded random ones — nothing is downloaded.

This module is the framework-free registry: names, input shapes and the published parameter
counts the tests hold both builders to. The builders live in zoo/torch_models.py /
zoo/keras_models.py and are imported only by the adapters that need them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ZooModel:
    name: str
    input_hw: tuple[int, int]  # image height, width
    channels: int
    num_classes: int
    published_params: int | None  # trainable parameters as published, None if no source
    source: str  # where published_params comes from

    def input_shape_nchw(self, batch: int) -> tuple[int, int, int, int]:
        return (batch, self.channels, *self.input_hw)

    def input_shape_nhwc(self, batch: int) -> tuple[int, int, int, int]:
        return (batch, *self.input_hw, self.channels)


ZOO: dict[str, ZooModel] = {
    m.name: m
    for m in (
        ZooModel("alexnet", (224, 224), 3, 1000, 61_100_840, "pCAMP (seed 000) §2.2: 61,100,840 parameters"),
        ZooModel(
            "squeezenet",
            (224, 224),
            3,
            1000,
            1_248_424,
            "pCAMP (seed 000) §2.2: SqueezeNet 1.0, 1,248,424 parameters",
        ),
        ZooModel("cnn9", (32, 32), 3, 10, 75_907, "seed 004, Keras summary: 75,907 trainable parameters"),
        ZooModel(
            "mnist_cnn",
            (28, 28),
            1,
            10,
            3_274_634,
            "DLaaS study (seed 002) Table IV, TensorFlow's default MNIST net (its 'Deep MNIST' tutorial): "
            "conv5x5x32, max-pool, conv5x5x64, max-pool, fc1024 + ReLU, dropout, fc10: 3,274,634 parameters",
        ),
        ZooModel(
            "cifar_cnn",
            (24, 24),
            3,
            10,
            1_068_298,
            "DLaaS study (seed 002) Table V, TensorFlow's default CIFAR-10 net "
            "(its cifar10 tutorial, 24x24 input): "
            "conv5x5x64, max-pool, LRN, conv5x5x64, LRN, max-pool, fc384, fc192, fc10: 1,068,298 parameters",
        ),
        ZooModel(
            "mobilenet_v2",
            (224, 224),
            3,
            1000,
            3_504_872,
            "MobileNetV2 (Sandler et al. 2018), 1.0x, 224: 3,504,872 (torchvision / Keras applications)",
        ),
        ZooModel(
            "resnet18",
            (224, 224),
            3,
            1000,
            11_689_512,
            "ResNet-18 (He et al. 2016): 11,689,512 (torchvision)",
        ),
        ZooModel(
            "resnet50",
            (224, 224),
            3,
            1000,
            25_557_032,
            "ResNet-50 v1.5 (He et al. 2016; stride on the 3x3): 25,557,032 (torchvision)",
        ),
        ZooModel(
            "vgg16",
            (224, 224),
            3,
            1000,
            138_357_544,
            "VGG-16 (Simonyan & Zisserman 2015), configuration D: 138,357,544 (torchvision)",
        ),
        ZooModel(
            "mobilenet_v3_small",
            (224, 224),
            3,
            1000,
            2_542_856,
            "MobileNetV3-Small (Howard et al. 2019): 2,542,856 "
            "(torchvision; Keras applications' variant differs)",
        ),
        ZooModel(
            "mobilenet_v3_large",
            (224, 224),
            3,
            1000,
            5_483_032,
            "MobileNetV3-Large (Howard et al. 2019): 5,483,032 "
            "(torchvision; Keras applications' variant differs)",
        ),
    )
}


# Zoo models whose Keras version has a layer of edgestats' own (zoo.keras_models.LocalResponseNorm): a
# .keras file of one loads only after zoo.keras_models has registered that layer.
KERAS_CUSTOM_LAYER_MODELS = frozenset({"cifar_cnn"})


def zoo_model(name: str) -> ZooModel:
    if name not in ZOO:
        raise KeyError(f"no zoo model {name!r}; known: {', '.join(sorted(ZOO))}")
    return ZOO[name]


def is_zoo_model(name: str) -> bool:
    return name in ZOO
