"""The zoo in PyTorch: torchvision-identical architectures built from code (torchvision is not a
dependency), with seeded random weights.

Module names mirror torchvision's exactly (`features.0`, `layer1.0.downsample.1`, ...), so a
torchvision state_dict loads into these models unchanged, and zoo.keras_models names its layers the
same way, which is what lets zoo.keras_models.copy_torch_weights_to_keras pair the layers by name. Weight
initialisation follows torchvision's per-model scheme: it is not part of the architecture, but it
sets the activation magnitudes of an untrained model, and zoo.keras_models draws from the same
distributions so both frameworks run their random-weight models in the same numeric range.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from edgestats.collectors.zoo.arch import (
    MOBILENET_V2_CFG,
    MOBILENET_V3_CFG,
    MOBILENET_V3_LAST,
    SQUEEZENET_CFG,
    VGG16_CFG,
    make_divisible,
)
from edgestats.collectors.zoo.catalog import is_zoo_model, zoo_model


def conv_norm_act(
    cin: int,
    cout: int,
    k: int = 3,
    stride: int = 1,
    groups: int = 1,
    act: type[nn.Module] | None = nn.ReLU6,
    eps: float = 1e-5,
    momentum: float = 0.1,
) -> nn.Sequential:
    """torchvision's Conv2dNormActivation: conv (no bias, the BN has one), BN, activation."""
    layers: list[nn.Module] = [
        nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout, eps=eps, momentum=momentum),
    ]
    if act is not None:
        layers.append(act(inplace=True))
    return nn.Sequential(*layers)


# -- cnn9 (seed 004) ------------------------------------------------------------------------------


class CNN9(nn.Module):
    """Seed 004: seven 3x3 'valid' convs with ReLU (32 -> 18 px), flatten 18*18*1, dense."""

    WIDTHS = (16, 16, 32, 32, 64, 64, 1)

    def __init__(self, num_classes: int = 10):
        super().__init__()
        widths = (3, *self.WIDTHS)
        self.features = nn.Sequential(
            *(
                m
                for cin, cout in zip(widths, widths[1:])
                for m in (nn.Conv2d(cin, cout, 3), nn.ReLU(inplace=True))
            )
        )
        self.classifier = nn.Linear(18 * 18 * 1, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.features(x), 1))


# -- the DLaaS study's default nets (seed 002, Tables IV-V: TensorFlow's) ------------------------


class MnistCNN(nn.Module):
    """TensorFlow's default MNIST net ('Deep MNIST'): two 5x5 'same' convs with ReLU and 2x2
    max-pooling (28 -> 14 -> 7 px), fc 1024 + ReLU, dropout 0.5, fc to the classes."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2, 2),
            nn.Conv2d(32, 64, 5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2, 2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(7 * 7 * 64, 1024), nn.ReLU(inplace=True), nn.Dropout(0.5), nn.Linear(1024, num_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.features(x), 1))


def tf_lrn() -> nn.LocalResponseNorm:
    """The cifar10 tutorial's tf.nn.lrn(depth_radius=4, bias=1, alpha=0.001/9, beta=0.75). torch
    divides alpha by the window size, so the same normalisation is size 9, alpha 0.001."""
    return nn.LocalResponseNorm(9, alpha=0.001, beta=0.75, k=1.0)


class CifarCNN(nn.Module):
    """TensorFlow's default CIFAR-10 net (the cifar10 tutorial, 24x24 input): conv 5x5x64 + ReLU,
    max-pool 3x3/2, LRN, conv 5x5x64 + ReLU, LRN, max-pool 3x3/2 (24 -> 12 -> 6 px), fc 384 +
    ReLU, fc 192 + ReLU, fc to the classes. The tutorial's 'SAME' pools give 12 and 6 px, as
    torch's padding 1 does."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, 1),
            tf_lrn(),
            nn.Conv2d(64, 64, 5, padding=2),
            nn.ReLU(inplace=True),
            tf_lrn(),
            nn.MaxPool2d(3, 2, 1),
        )
        self.classifier = nn.Sequential(
            nn.Linear(6 * 6 * 64, 384),
            nn.ReLU(inplace=True),
            nn.Linear(384, 192),
            nn.ReLU(inplace=True),
            nn.Linear(192, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.features(x), 1))


# -- AlexNet --------------------------------------------------------------------------------------


class _FeaturesPoolClassifier(nn.Module):
    """AlexNet and VGG: features, adaptive average pool (the identity at 224x224), flatten, MLP."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


class AlexNet(_FeaturesPoolClassifier):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 11, 4, 2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2),
            nn.Conv2d(64, 192, 5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2),
            nn.Conv2d(192, 384, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))  # identity for a 224 input
        self.classifier = nn.Sequential(
            nn.Dropout(0.5),
            nn.Linear(256 * 6 * 6, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(0.5),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )


# -- VGG-16 ---------------------------------------------------------------------------------------


class VGG(_FeaturesPoolClassifier):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        layers: list[nn.Module] = []
        cin = 3
        for v in VGG16_CFG:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(cin, v, 3, padding=1), nn.ReLU(inplace=True)]
                cin = v
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))  # identity for a 224 input
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096),
            nn.ReLU(True),
            nn.Dropout(0.5),
            nn.Linear(4096, 4096),
            nn.ReLU(True),
            nn.Dropout(0.5),
            nn.Linear(4096, num_classes),
        )


# -- SqueezeNet 1.0 -------------------------------------------------------------------------------


class Fire(nn.Module):
    def __init__(self, cin: int, squeeze: int, e1: int, e3: int):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, squeeze, 1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze, e1, 1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze, e3, 3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.squeeze_activation(self.squeeze(x))
        return torch.cat(
            [self.expand1x1_activation(self.expand1x1(x)), self.expand3x3_activation(self.expand3x3(x))], 1
        )


class SqueezeNet(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, 96, 7, 2), nn.ReLU(inplace=True)]
        for v in SQUEEZENET_CFG:
            layers.append(nn.MaxPool2d(3, 2, ceil_mode=True) if v == "M" else Fire(*v))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Dropout(0.5),
            nn.Conv2d(512, num_classes, 1),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((1, 1)),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(self.classifier(self.features(x)), 1)


# -- MobileNetV2 ----------------------------------------------------------------------------------


class InvertedResidualV2(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = round(cin * expand)
        self.use_res_connect = stride == 1 and cin == cout
        layers: list[nn.Module] = [conv_norm_act(cin, hidden, 1)] if expand != 1 else []
        layers += [
            conv_norm_act(hidden, hidden, 3, stride, groups=hidden),
            nn.Conv2d(hidden, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        layers: list[nn.Module] = [conv_norm_act(3, 32, 3, 2)]
        cin = 32
        for t, c, n, s in MOBILENET_V2_CFG:
            for i in range(n):
                layers.append(InvertedResidualV2(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(conv_norm_act(cin, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


# -- MobileNetV3 ----------------------------------------------------------------------------------


class SqueezeExcitation(nn.Module):
    """torchvision.ops.SqueezeExcitation with MobileNetV3's hard-sigmoid gate."""

    def __init__(self, channels: int, squeeze: int):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)
        self.activation = nn.ReLU()
        self.scale_activation = nn.Hardsigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x)))))


V3_BN = {"eps": 0.001, "momentum": 0.01}  # MobileNetV3's BatchNorm settings in torchvision


class InvertedResidualV3(nn.Module):
    def __init__(self, cin: int, k: int, exp: int, cout: int, se: bool, act: str, stride: int):
        super().__init__()
        act_cls = nn.Hardswish if act == "HS" else nn.ReLU
        self.use_res_connect = stride == 1 and cin == cout
        layers: list[nn.Module] = [conv_norm_act(cin, exp, 1, act=act_cls, **V3_BN)] if exp != cin else []
        layers.append(conv_norm_act(exp, exp, k, stride, groups=exp, act=act_cls, **V3_BN))
        if se:
            layers.append(SqueezeExcitation(exp, make_divisible(exp // 4)))
        layers.append(conv_norm_act(exp, cout, 1, act=None, **V3_BN))
        self.block = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x) if self.use_res_connect else self.block(x)


class MobileNetV3(nn.Module):
    def __init__(self, variant: str, num_classes: int = 1000):
        super().__init__()
        cfg = MOBILENET_V3_CFG[variant]
        layers: list[nn.Module] = [conv_norm_act(3, 16, 3, 2, act=nn.Hardswish, **V3_BN)]
        layers += [InvertedResidualV3(*c) for c in cfg]
        last_conv = 6 * cfg[-1][3]
        layers.append(conv_norm_act(cfg[-1][3], last_conv, 1, act=nn.Hardswish, **V3_BN))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(last_conv, MOBILENET_V3_LAST[variant]),
            nn.Hardswish(inplace=True),
            nn.Dropout(0.2),
            nn.Linear(MOBILENET_V3_LAST[variant], num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


# -- ResNet (v1.5: the stride sits on the 3x3 conv, as in torchvision) ----------------------------


class ResBlock(nn.Module):
    """torchvision's BasicBlock (3x3, 3x3) or Bottleneck (1x1, 3x3 carrying the stride, 1x1 to 4x
    the planes), with its attribute names conv1/bn1/... so state_dict keys match."""

    def __init__(
        self, cin: int, planes: int, stride: int, bottleneck: bool, downsample: nn.Module | None = None
    ):
        super().__init__()
        specs = (
            ((cin, planes, 1, 1), (planes, planes, 3, stride), (planes, 4 * planes, 1, 1))
            if bottleneck
            else ((cin, planes, 3, stride), (planes, planes, 3, 1))
        )
        for i, (a, b, k, s) in enumerate(specs, start=1):
            setattr(self, f"conv{i}", nn.Conv2d(a, b, k, s, k // 2, bias=False))
            setattr(self, f"bn{i}", nn.BatchNorm2d(b))
        self.depth = len(specs)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        for i in range(1, self.depth + 1):
            x = getattr(self, f"bn{i}")(getattr(self, f"conv{i}")(x))
            if i < self.depth:  # the last BN's output joins the shortcut before its ReLU
                x = self.relu(x)
        return self.relu(x + identity)


class ResNet(nn.Module):
    def __init__(self, bottleneck: bool, repeats: tuple[int, ...], num_classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        expansion, cin = (4 if bottleneck else 1), 64
        for i, (planes, n) in enumerate(zip((64, 128, 256, 512), repeats)):
            stride, cout = (1 if i == 0 else 2), planes * expansion
            downsample = None
            if stride != 1 or cin != cout:
                downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            blocks = [ResBlock(cin, planes, stride, bottleneck, downsample)]
            blocks += [ResBlock(cout, planes, 1, bottleneck) for _ in range(1, n)]
            setattr(self, f"layer{i + 1}", nn.Sequential(*blocks))
            cin = cout
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * expansion, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# -- initialisation (torchvision's per-model schemes) ---------------------------------------------


def _init_modern(model: nn.Module, linear_std: float | None) -> None:
    """Conv: kaiming normal (fan_out), bias 0; BN: 1, 0; Linear: N(0, linear_std), bias 0, or
    PyTorch's default when linear_std is None (ResNet's fc)."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear) and linear_std is not None:
            nn.init.normal_(m.weight, 0, linear_std)
            nn.init.zeros_(m.bias)


def _init_squeezenet(model: SqueezeNet) -> None:
    """Final conv N(0, 0.01), other convs kaiming uniform (fan_in), biases 0."""
    final = model.classifier[1]
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            if m is final:
                nn.init.normal_(m.weight, 0.0, 0.01)
            else:
                nn.init.kaiming_uniform_(m.weight)
            nn.init.zeros_(m.bias)


def _init_glorot(model: nn.Module) -> None:
    """cnn9 is a Keras model (seed 004), so Keras' defaults: Glorot uniform, zero bias. PyTorch's
    defaults would shrink the signal so far that its single-channel last conv + ReLU outputs all
    zeros, and the model would compute a constant."""
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)


# name -> (constructor taking num_classes, initialiser)
BUILDERS: dict[str, tuple[Callable[[int], nn.Module], Callable[[nn.Module], None]]] = {
    "cnn9": (CNN9, _init_glorot),
    "mnist_cnn": (MnistCNN, lambda m: None),  # PyTorch's layer defaults, in both frameworks
    "cifar_cnn": (CifarCNN, lambda m: None),
    "alexnet": (AlexNet, lambda m: None),  # PyTorch's layer defaults: U(+-1/sqrt(fan_in))
    "vgg16": (VGG, lambda m: _init_modern(m, 0.01)),
    "squeezenet": (SqueezeNet, _init_squeezenet),
    "mobilenet_v2": (MobileNetV2, lambda m: _init_modern(m, 0.01)),
    "mobilenet_v3_small": (lambda n: MobileNetV3("small", n), lambda m: _init_modern(m, 0.01)),
    "mobilenet_v3_large": (lambda n: MobileNetV3("large", n), lambda m: _init_modern(m, 0.01)),
    "resnet18": (lambda n: ResNet(False, (2, 2, 2, 2), n), lambda m: _init_modern(m, None)),
    "resnet50": (lambda n: ResNet(True, (3, 4, 6, 3), n), lambda m: _init_modern(m, None)),
}


def build_torch(name: str, seed: int = 0, num_classes: int | None = None) -> nn.Module:
    """A zoo model in eval mode; the same seed gives bit-identical weights. The global torch RNG is
    forked, so building a model does not disturb the caller's random stream."""
    if name not in BUILDERS:
        raise KeyError(f"no torch builder for {name!r}; known: {', '.join(sorted(BUILDERS))}")
    make, init = BUILDERS[name]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        # a builder not (yet) in the registry gets the ImageNet head
        model = make(num_classes or (zoo_model(name).num_classes if is_zoo_model(name) else 1000))
        init(model)
    return model.eval()


def count_params(module: nn.Module) -> int:
    """Trainable parameters (BN running statistics are buffers, so not counted)."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def calibrate_batchnorm(model: nn.Module, input_shape_nchw: tuple[int, ...], seed: int = 0) -> nn.Module:
    """Set every BatchNorm's running statistics to those of one seeded N(0, 1) batch, as a
    trained network's would be for its data. Untrained torchvision MobileNets (fresh statistics:
    mean 0, var 1) shrink activations to ~1e-9 in eval mode, so their logits barely depend on the
    input and a cross-framework comparison with an absolute tolerance would pass vacuously; after
    calibration activations are unit-scale. Only the BN layers run in train mode (no dropout)."""
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    if not bns:
        return model
    was_training, momenta = model.training, [m.momentum for m in bns]
    model.eval()
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average: after one batch, exactly its statistics
        m.train()
    try:
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            model(torch.randn(input_shape_nchw, generator=gen))
    finally:
        for m, momentum in zip(bns, momenta):
            m.momentum = momentum
        model.train(was_training)
    return model


def count_flops(module: nn.Module, input_shape_nchw: tuple[int, ...]) -> int:
    """FLOPs of one inference of ONE sample, a multiply-add counting as 2 FLOPs, over the Conv2d
    and Linear layers (forward hooks on a traced batch-1 forward):

        Conv2d: 2 * (cin / groups) * kh * kw * cout * hout * wout
        Linear: 2 * in_features * out_features

    Biases, BatchNorm (folded into the conv at inference), activations, pooling and residual
    adds are not counted: a few percent at most (the MobileNets), under 1% for the rest.
    Published figures mix conventions: ResNet's "1.8 GFLOPs" and torchvision's "GFLOPS" column
    are multiply-adds, so divide this count by 2 to compare (AlexNet: 1.43 GFLOPs = 0.71 GMACs).
    `input_shape_nchw` may be (C, H, W) or (N, C, H, W); the batch size is ignored.
    """
    shape = tuple(input_shape_nchw)[-3:]
    total = 0

    def hook(m: nn.Module, _inp, out: torch.Tensor) -> None:
        nonlocal total
        if isinstance(m, nn.Conv2d):  # multiply-adds per output element
            per_output = (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1]
        else:
            per_output = m.in_features
        total += 2 * per_output * out[0].numel()

    hooks = [m.register_forward_hook(hook) for m in module.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    was_training = module.training
    try:
        module.eval()  # a traced forward in train mode would update the BN running stats
        param = next(module.parameters(), None)
        device = param.device if param is not None else "cpu"
        with torch.no_grad():
            module(torch.zeros((1, *shape), device=device))
    finally:
        module.train(was_training)
        for h in hooks:
            h.remove()
    return total
