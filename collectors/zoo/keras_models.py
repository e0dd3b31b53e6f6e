"""The zoo in Keras 3: the same architectures as zoo.torch_models, channels-last, seeded random weights.

Three things keep the two frameworks' models identical, not merely similar:
- every layer that has weights is named after its torchvision module (`features.3.squeeze`,
  `layer2.0.downsample.0`), so copy_torch_weights_to_keras pairs layers by name, not by order;
- padding reproduces torch's output grid exactly: 'same' only where it pads symmetrically (stride
  1, odd kernel); elsewhere ZeroPadding2D + 'valid', because for stride 2 on an even input Keras'
  'same' pads (0, 1) where torch pads (1, 1) and the windows shift by a pixel;
- weights are drawn from torchvision's distributions with fans computed the torch way (a depthwise
  kernel's fan_in is k*k, not k*k*C as Keras computes it), so untrained models run in the same
  numeric range in both frameworks.
BatchNorm uses torch's epsilon; its moving statistics are non-trainable weights in Keras as they
are buffers in torch, so trainable parameter counts match exactly.
"""

from __future__ import annotations

import math
from typing import Any

import keras
import numpy as np
from keras import layers

from edgestats.collectors.zoo.arch import (
    MOBILENET_V2_CFG,
    MOBILENET_V3_CFG,
    MOBILENET_V3_LAST,
    SQUEEZENET_CFG,
    VGG16_CFG,
    make_divisible,
)
from edgestats.collectors.zoo.catalog import is_zoo_model, zoo_model

V3_EPS = 0.001  # MobileNetV3's BatchNorm epsilon in torchvision (1e-5 elsewhere)


def _seed_for(*parts: int) -> int:
    """A distinct, reproducible seed per initialiser: (model seed, layer index, which) hashed, so
    seeds 0 and 1 do not share layer streams shifted by one."""
    return int(np.random.SeedSequence(list(parts)).generate_state(1)[0])


class _Net:
    """Functional-API helpers that name layers torchvision's way and initialise like torchvision.

    conv_rule / dense_rule pick the initialisation scheme:
      "default"  PyTorch's layer default: weight and bias U(+-1/sqrt(fan_in))
      "kaiming"  weight N(0, sqrt(2/fan_out)), bias 0      (ResNet, VGG, MobileNet convs)
      "kaiming_uniform"  weight U(+-sqrt(6/fan_in)), bias 0 (SqueezeNet convs)
      "normal"   weight N(0, 0.01), bias 0                 (VGG / MobileNet classifiers)
      "glorot"   Keras' default: Glorot uniform, bias 0    (cnn9, a Keras model in seed 004)
    """

    def __init__(self, seed: int, conv_rule: str = "default", dense_rule: str = "default"):
        self.seed, self.count = seed, 0
        self.conv_rule, self.dense_rule = conv_rule, dense_rule

    def _inits(self, rule: str, fan_in: int, fan_out: int) -> tuple[Any, Any]:
        self.count += 1
        s = _seed_for(self.seed, self.count)
        if rule == "default":
            b = 1.0 / math.sqrt(fan_in)
            return (
                keras.initializers.RandomUniform(-b, b, seed=s),
                keras.initializers.RandomUniform(-b, b, seed=_seed_for(self.seed, self.count, 1)),
            )
        if rule == "kaiming":
            return keras.initializers.RandomNormal(0.0, math.sqrt(2.0 / fan_out), seed=s), "zeros"
        if rule == "kaiming_uniform":
            b = math.sqrt(6.0 / fan_in)
            return keras.initializers.RandomUniform(-b, b, seed=s), "zeros"
        if rule == "glorot":
            b = math.sqrt(6.0 / (fan_in + fan_out))
            return keras.initializers.RandomUniform(-b, b, seed=s), "zeros"
        if rule == "normal":
            return keras.initializers.RandomNormal(0.0, 0.01, seed=s), "zeros"
        raise ValueError(f"unknown init rule {rule!r}")

    def conv(
        self,
        x,
        name: str,
        cout: int,
        k: int,
        stride: int = 1,
        pad: int = 0,
        depthwise: bool = False,
        bias: bool = True,
        activation: str | None = None,
        rule: str | None = None,
    ):
        cin = x.shape[-1]
        if pad and not (stride == 1 and 2 * pad == k - 1):
            x = layers.ZeroPadding2D(pad)(x)
            padding = "valid"
        else:
            padding = "same" if pad else "valid"
        # torch fans: weight (cout, cin/groups, k, k) -> fan_in = cin/groups*k*k, fan_out = cout*k*k
        fan_in, fan_out = (k * k, cin * k * k) if depthwise else (cin * k * k, cout * k * k)
        kinit, binit = self._inits(rule or self.conv_rule, fan_in, fan_out)
        if depthwise:
            return layers.DepthwiseConv2D(
                k,
                stride,
                padding,
                use_bias=bias,
                activation=activation,
                name=name,
                depthwise_initializer=kinit,
                bias_initializer=binit,
            )(x)
        return layers.Conv2D(
            cout,
            k,
            stride,
            padding,
            use_bias=bias,
            activation=activation,
            name=name,
            kernel_initializer=kinit,
            bias_initializer=binit,
        )(x)

    def dense(self, x, name: str, units: int, activation: str | None = None):
        kinit, binit = self._inits(self.dense_rule, x.shape[-1], units)
        return layers.Dense(
            units, activation=activation, name=name, kernel_initializer=kinit, bias_initializer=binit
        )(x)

    @staticmethod
    def bn(x, name: str, eps: float = 1e-5):
        # torch momentum 0.1 is Keras momentum 0.9 (only training uses it)
        return layers.BatchNormalization(epsilon=eps, momentum=0.9, name=name)(x)

    def conv_bn_act(
        self,
        x,
        prefix: str,
        cout: int,
        k: int,
        stride: int = 1,
        depthwise: bool = False,
        act: str | None = "relu6",
        eps: float = 1e-5,
    ):
        """torchvision's Conv2dNormActivation: <prefix>.0 conv (no bias), <prefix>.1 BN, activation."""
        x = self.conv(x, f"{prefix}.0", cout, k, stride, (k - 1) // 2, depthwise, bias=False)
        x = self.bn(x, f"{prefix}.1", eps)
        return _activate(x, act)


def _activate(x, act: str | None):
    if act is None:
        return x
    if act == "relu6":
        return layers.ReLU(max_value=6.0)(x)
    return layers.Activation({"relu": "relu", "hs": "hard_swish", "hsig": "hard_sigmoid"}[act])(x)


def max_pool(x, k: int, stride: int, pad: int = 0, ceil_mode: bool = False):
    """torch.nn.MaxPool2d's output grid. Padding with zeros stands in for torch's -inf padding,
    which is exact here because every max-pool in the zoo follows a ReLU (inputs >= 0)."""
    if pad:
        x = layers.ZeroPadding2D(pad)(x)
    if ceil_mode:
        extra = [_ceil_extra(n, k, stride) for n in x.shape[1:3]]
        if any(extra):
            x = layers.ZeroPadding2D(((0, extra[0]), (0, extra[1])))(x)
    return layers.MaxPooling2D(k, stride, "valid")(x)


def _ceil_extra(n: int, k: int, stride: int) -> int:
    """Bottom/right padding that makes a 'valid' pool give torch's ceil_mode output size."""
    out = -(-(n - k) // stride) + 1
    if (out - 1) * stride >= n:  # torch: the last window must start inside the input
        out -= 1
    return max((out - 1) * stride + k - n, 0)


# -- the architectures ----------------------------------------------------------------------------


def _cnn9(x, net: _Net, num_classes: int):
    for i, cout in enumerate((16, 16, 32, 32, 64, 64, 1)):
        x = net.conv(x, f"features.{2 * i}", cout, 3, activation="relu")
    return net.dense(layers.Flatten()(x), "classifier", num_classes)


def _mnist_cnn(x, net: _Net, num_classes: int):
    x = max_pool(net.conv(x, "features.0", 32, 5, pad=2, activation="relu"), 2, 2)
    x = max_pool(net.conv(x, "features.3", 64, 5, pad=2, activation="relu"), 2, 2)
    x = layers.Dropout(0.5)(net.dense(layers.Flatten()(x), "classifier.0", 1024, "relu"))
    return net.dense(x, "classifier.3", num_classes)


@keras.saving.register_keras_serializable(package="edgestats")
class LocalResponseNorm(layers.Layer):
    """torch.nn.LocalResponseNorm over the channel axis (last, channels-last): x / (k + alpha/size *
    sum of x^2 over `size` neighbouring channels)^beta, the window zero-padded at the edges as
    torch pads it (size // 2 before, (size - 1) // 2 after). Keras 3 has no LRN layer; this one
    uses keras.ops only, so it saves, loads (once this module is imported) and converts to TFLite."""

    def __init__(self, size: int = 9, alpha: float = 0.001, beta: float = 0.75, k: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def call(self, x):
        ops = keras.ops
        channels = x.shape[-1]
        padded = ops.pad(ops.square(x), [[0, 0], [0, 0], [0, 0], [self.size // 2, (self.size - 1) // 2]])
        window = padded[..., 0:channels]
        for i in range(1, self.size):
            window = window + padded[..., i : i + channels]
        return x / ops.power(self.k + (self.alpha / self.size) * window, self.beta)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "size": self.size,
            "alpha": self.alpha,
            "beta": self.beta,
            "k": self.k,
        }


def _cifar_cnn(x, net: _Net, num_classes: int):
    x = max_pool(net.conv(x, "features.0", 64, 5, pad=2, activation="relu"), 3, 2, pad=1)
    x = LocalResponseNorm(name="features.3")(x)
    x = LocalResponseNorm(name="features.6")(net.conv(x, "features.4", 64, 5, pad=2, activation="relu"))
    x = max_pool(x, 3, 2, pad=1)  # zero padding is exact: LRN of ReLU output is >= 0
    x = net.dense(layers.Flatten()(x), "classifier.0", 384, "relu")
    x = net.dense(x, "classifier.2", 192, "relu")
    return net.dense(x, "classifier.4", num_classes)


def _alexnet(x, net: _Net, num_classes: int):
    x = net.conv(x, "features.0", 64, 11, 4, 2, activation="relu")
    x = max_pool(x, 3, 2)
    x = net.conv(x, "features.3", 192, 5, pad=2, activation="relu")
    x = max_pool(x, 3, 2)
    x = net.conv(x, "features.6", 384, 3, pad=1, activation="relu")
    x = net.conv(x, "features.8", 256, 3, pad=1, activation="relu")
    x = net.conv(x, "features.10", 256, 3, pad=1, activation="relu")
    x = max_pool(x, 3, 2)
    return _classifier(x, net, (6, 6), ("classifier.1", "classifier.4", "classifier.6"), num_classes, True)


def _vgg16(x, net: _Net, num_classes: int):
    i = 0
    for v in VGG16_CFG:
        if v == "M":
            x, i = max_pool(x, 2, 2), i + 1
        else:
            x, i = net.conv(x, f"features.{i}", v, 3, pad=1, activation="relu"), i + 2
    return _classifier(x, net, (7, 7), ("classifier.0", "classifier.3", "classifier.6"), num_classes, False)


def _classifier(
    x, net: _Net, grid: tuple[int, int], names: tuple[str, ...], num_classes: int, dropout_first: bool
):
    """AlexNet/VGG head. torch's AdaptiveAvgPool2d(grid) is the identity on the grid a 224 input
    gives, so it is left out; the flatten order differs from torch's (HWC vs CHW), which
    copy_torch_weights_to_keras corrects in the first Dense kernel."""
    assert tuple(x.shape[1:3]) == grid, f"this head expects a {grid} feature map (a 224x224 input)"
    x = layers.Flatten()(x)
    for name in names[:-1]:
        if dropout_first:  # AlexNet: Dropout, Linear, ReLU; VGG: Linear, ReLU, Dropout
            x = layers.Dropout(0.5)(x)
        x = net.dense(x, name, 4096, "relu")
        if not dropout_first:
            x = layers.Dropout(0.5)(x)
    return net.dense(x, names[-1], num_classes)


def _squeezenet(x, net: _Net, num_classes: int):
    x = net.conv(x, "features.0", 96, 7, 2, activation="relu")
    for i, v in enumerate(SQUEEZENET_CFG, start=2):
        if v == "M":
            x = max_pool(x, 3, 2, ceil_mode=True)
            continue
        _, squeeze, e1, e3 = v
        s = net.conv(x, f"features.{i}.squeeze", squeeze, 1, activation="relu")
        x = layers.Concatenate()(
            [
                net.conv(s, f"features.{i}.expand1x1", e1, 1, activation="relu"),
                net.conv(s, f"features.{i}.expand3x3", e3, 3, pad=1, activation="relu"),
            ]
        )
    x = layers.Dropout(0.5)(x)
    x = net.conv(x, "classifier.1", num_classes, 1, activation="relu", rule="normal")
    return layers.GlobalAveragePooling2D()(x)


def _mobilenet_v2(x, net: _Net, num_classes: int):
    x = net.conv_bn_act(x, "features.0", 32, 3, 2)
    i = 1
    for t, c, n, s in MOBILENET_V2_CFG:
        for r in range(n):
            x, i = _inverted_residual_v2(x, net, f"features.{i}.conv", c, s if r == 0 else 1, t), i + 1
    x = net.conv_bn_act(x, f"features.{i}", 1280, 1)
    x = layers.Dropout(0.2)(layers.GlobalAveragePooling2D()(x))
    return net.dense(x, "classifier.1", num_classes)


def _inverted_residual_v2(x, net: _Net, prefix: str, cout: int, stride: int, expand: int):
    cin = x.shape[-1]
    hidden = round(cin * expand)
    y, j = x, 0
    if expand != 1:
        y, j = net.conv_bn_act(y, f"{prefix}.0", hidden, 1), 1
    y = net.conv_bn_act(y, f"{prefix}.{j}", hidden, 3, stride, depthwise=True)
    y = net.bn(net.conv(y, f"{prefix}.{j + 1}", cout, 1, bias=False), f"{prefix}.{j + 2}")
    return layers.Add()([x, y]) if stride == 1 and cin == cout else y


def _mobilenet_v3(variant: str):
    def build(x, net: _Net, num_classes: int):
        cfg = MOBILENET_V3_CFG[variant]
        x = net.conv_bn_act(x, "features.0", 16, 3, 2, act="hs", eps=V3_EPS)
        for i, c in enumerate(cfg, start=1):
            x = _inverted_residual_v3(x, net, f"features.{i}.block", *c)
        x = net.conv_bn_act(x, f"features.{len(cfg) + 1}", 6 * cfg[-1][3], 1, act="hs", eps=V3_EPS)
        x = layers.GlobalAveragePooling2D()(x)
        x = layers.Dropout(0.2)(net.dense(x, "classifier.0", MOBILENET_V3_LAST[variant], "hard_swish"))
        return net.dense(x, "classifier.3", num_classes)

    return build


def _inverted_residual_v3(
    x, net: _Net, prefix: str, cin: int, k: int, exp: int, cout: int, se: bool, act: str, stride: int
):
    act = "hs" if act == "HS" else "relu"
    y, j = x, 0
    if exp != cin:
        y, j = net.conv_bn_act(y, f"{prefix}.0", exp, 1, act=act, eps=V3_EPS), 1
    y, j = net.conv_bn_act(y, f"{prefix}.{j}", exp, k, stride, depthwise=True, act=act, eps=V3_EPS), j + 1
    if se:
        y, j = _squeeze_excite(y, net, f"{prefix}.{j}", make_divisible(exp // 4)), j + 1
    y = net.conv_bn_act(y, f"{prefix}.{j}", cout, 1, act=None, eps=V3_EPS)
    return layers.Add()([x, y]) if stride == 1 and cin == cout else y


def _squeeze_excite(x, net: _Net, prefix: str, squeeze: int):
    s = layers.GlobalAveragePooling2D(keepdims=True)(x)
    s = net.conv(s, f"{prefix}.fc1", squeeze, 1, activation="relu")
    s = _activate(net.conv(s, f"{prefix}.fc2", x.shape[-1], 1), "hsig")
    return layers.Multiply()([x, s])


def _resnet(bottleneck: bool, repeats: tuple[int, ...]):
    def build(x, net: _Net, num_classes: int):
        x = layers.ReLU()(net.bn(net.conv(x, "conv1", 64, 7, 2, 3, bias=False), "bn1"))
        x = max_pool(x, 3, 2, pad=1)
        for li, (planes, n) in enumerate(zip((64, 128, 256, 512), repeats), start=1):
            for b in range(n):
                stride = 2 if li > 1 and b == 0 else 1
                x = _res_block(x, net, f"layer{li}.{b}", planes, stride, bottleneck)
        return net.dense(layers.GlobalAveragePooling2D()(x), "fc", num_classes)

    return build


def _res_block(x, net: _Net, prefix: str, planes: int, stride: int, bottleneck: bool):
    cout = planes * (4 if bottleneck else 1)
    identity = x
    if stride != 1 or x.shape[-1] != cout:
        identity = net.bn(
            net.conv(x, f"{prefix}.downsample.0", cout, 1, stride, bias=False), f"{prefix}.downsample.1"
        )
    if bottleneck:  # v1.5: 1x1, 3x3 with the stride, 1x1 x4
        convs = ((planes, 1, 1, 0), (planes, 3, stride, 1), (cout, 1, 1, 0))
    else:
        convs = ((planes, 3, stride, 1), (planes, 3, 1, 1))
    for i, (c, k, s, p) in enumerate(convs, start=1):
        x = net.bn(net.conv(x, f"{prefix}.conv{i}", c, k, s, p, bias=False), f"{prefix}.bn{i}")
        if i < len(convs):
            x = layers.ReLU()(x)
    return layers.ReLU()(layers.Add()([x, identity]))


# name -> (architecture function, conv init rule, dense init rule): torchvision's schemes
BUILDERS: dict[str, tuple[Any, str, str]] = {
    "cnn9": (_cnn9, "glorot", "glorot"),
    "mnist_cnn": (_mnist_cnn, "default", "default"),
    "cifar_cnn": (_cifar_cnn, "default", "default"),
    "alexnet": (_alexnet, "default", "default"),
    "vgg16": (_vgg16, "kaiming", "normal"),
    "squeezenet": (_squeezenet, "kaiming_uniform", "normal"),
    "mobilenet_v2": (_mobilenet_v2, "kaiming", "normal"),
    "mobilenet_v3_small": (_mobilenet_v3("small"), "kaiming", "normal"),
    "mobilenet_v3_large": (_mobilenet_v3("large"), "kaiming", "normal"),
    "resnet18": (_resnet(False, (2, 2, 2, 2)), "kaiming", "default"),
    "resnet50": (_resnet(True, (3, 4, 6, 3)), "kaiming", "default"),
}


def build_keras(name: str, seed: int = 0, num_classes: int | None = None) -> keras.Model:
    """A zoo model taking channels-last (N, H, W, C) input and returning logits (N, classes).
    Layer initialisers carry their own seeds, so the same seed gives identical weights without
    touching Keras' global random state."""
    if name not in BUILDERS:
        raise KeyError(f"no keras builder for {name!r}; known: {', '.join(sorted(BUILDERS))}")
    arch, conv_rule, dense_rule = BUILDERS[name]
    if is_zoo_model(name):
        m = zoo_model(name)
        shape, default_classes = (*m.input_hw, m.channels), m.num_classes
    else:  # a builder not (yet) in the registry: ImageNet's input and head
        shape, default_classes = (224, 224, 3), 1000
    inputs = keras.Input(shape=shape)
    outputs = arch(inputs, _Net(seed, conv_rule, dense_rule), num_classes or default_classes)
    return keras.Model(inputs, outputs, name=name)


def count_params_keras(model: keras.Model) -> int:
    """Trainable parameters (BatchNormalization's moving statistics are not trainable)."""
    return int(sum(np.prod(w.shape) for w in model.trainable_weights))


# -- torch -> keras weights -----------------------------------------------------------------------


def copy_torch_weights_to_keras(torch_model: Any, keras_model: keras.Model) -> None:
    """Give a Keras zoo model the weights of the torch one, so both compute the same function.

    Layers pair by name (the Keras layers carry the torch module names); every weighted layer on
    both sides must pair, or ValueError. Conv kernels go OIHW -> HWIO (depthwise: HWC1), Linear
    (out, in) -> Dense (in, out), BatchNorm weight/bias/running stats -> gamma/beta/moving stats.
    A Dense fed by Flatten of a (H, W, C) map gets its input rows reordered from torch's CHW
    flatten order to Keras' HWC. torch is imported here only: this module stays torch-free.
    """
    from torch import nn

    pending = {layer.name: layer for layer in keras_model.layers if layer.weights}
    for name, module in torch_model.named_modules():
        if not isinstance(module, (nn.Conv2d, nn.Linear, nn.BatchNorm2d)):
            continue
        if name not in pending:
            raise ValueError(f"torch module {name!r} has no Keras layer of that name")
        layer = pending.pop(name)
        weights = _converted(module, layer, nn)
        expected = [tuple(w.shape) for w in layer.weights]
        if [w.shape for w in weights] != expected:
            raise ValueError(f"{name}: torch gives shapes {[w.shape for w in weights]}, Keras has {expected}")
        layer.set_weights(weights)
    if pending:
        raise ValueError(f"Keras layers with no torch counterpart: {sorted(pending)}")


def _converted(module: Any, layer: Any, nn: Any) -> list[np.ndarray]:
    def arr(t) -> np.ndarray:
        return t.detach().cpu().numpy()

    if isinstance(module, nn.BatchNorm2d):
        return [arr(module.weight), arr(module.bias), arr(module.running_mean), arr(module.running_var)]
    bias = [arr(module.bias)] if module.bias is not None else []
    if isinstance(module, nn.Conv2d):
        w = arr(module.weight)
        kernel = (
            w.transpose(2, 3, 0, 1) if isinstance(layer, layers.DepthwiseConv2D) else w.transpose(2, 3, 1, 0)
        )
        return [kernel, *bias]
    w = arr(module.weight)  # (out, in)
    grid = _flatten_source_shape(layer)
    if grid is not None:  # rows CHW -> HWC
        h, wd, c = grid
        w = w.reshape(w.shape[0], c, h, wd).transpose(0, 2, 3, 1).reshape(w.shape[0], -1)
    return [w.T, *bias]


def _flatten_source_shape(dense: Any) -> tuple[int, int, int] | None:
    """(H, W, C) when the Dense's input is Flatten of a feature map (Dropouts in between), else None.
    Walks the functional graph back through `_keras_history` (KerasTensor's producing layer; a
    private Keras 3 attribute, so a Keras that drops it fails here loudly, not silently)."""
    op = dense.input._keras_history[0]
    while isinstance(op, layers.Dropout):
        op = op.input._keras_history[0]
    if isinstance(op, layers.Flatten) and len(op.input.shape) == 4:
        return tuple(op.input.shape[1:])
    return None
