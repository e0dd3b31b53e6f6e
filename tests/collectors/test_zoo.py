"""The model zoo: the same architectures in PyTorch and Keras, held to the published parameter
counts, to each other (same function once weights are copied) and to hand-computed FLOPs.

torch and Keras are imported inside the tests (the fast lane collects this file without paying
for them), never through importorskip: a missing framework is a failure here, not a skip.
Each model is built once per framework for the whole module (the big Keras models take seconds
on a small CPU); tests that mutate weights say so.
Cost: about 30 s of test time in make test's parallel lane (measured from a fresh clone on 2 cores).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest

from edgestats.collectors.zoo.catalog import ZOO

# One xdist worker runs this whole module: its module-scoped fixtures (framework imports, built
# models, converted files) are built once instead of once per worker that gets one of its tests.
pytestmark = pytest.mark.xdist_group("zoo")

if TYPE_CHECKING:
    import keras
    import torch

# Published trainable parameters of models the builders have but the registry may not list (yet):
# torchvision's model cards. The registry's own figure wins for the models it lists.
EXTRA_PUBLISHED = {
    "resnet50": 25_557_032,
    "vgg16": 138_357_544,
    "mobilenet_v3_small": 2_542_856,
    "mobilenet_v3_large": 5_483_032,
}
PUBLISHED = {**EXTRA_PUBLISHED, **{name: m.published_params for name, m in ZOO.items()}}
# Every model with a published count; test_every_registered_model_has_both_builders proves these are
# exactly the builders' models (listing them here needs no torch at collection).
ALL = sorted(PUBLISHED)

# torchvision's model cards give "GFLOPS" that are in fact GMACs (1 multiply-add = 1), rounded to
# two decimals; count_flops counts a multiply-add as 2.
TORCHVISION_GMACS = {
    "alexnet": 0.71,
    "squeezenet": 0.82,
    "mobilenet_v2": 0.30,
    "resnet18": 1.81,
    "resnet50": 4.09,
    "vgg16": 15.47,
    "mobilenet_v3_small": 0.06,
    "mobilenet_v3_large": 0.22,
}


def input_hw(name: str) -> tuple[int, int]:
    return ZOO[name].input_hw if name in ZOO else (224, 224)


def channels(name: str) -> int:
    return ZOO[name].channels if name in ZOO else 3


@pytest.fixture(scope="module")
def zoo_torch():
    from edgestats.collectors.zoo import torch_models

    return torch_models


@pytest.fixture(scope="module")
def zoo_keras():
    from edgestats.collectors.zoo import keras_models

    return keras_models


@pytest.fixture(scope="module")
def built(zoo_torch, zoo_keras):
    """name -> (torch model, keras model), seed 0, built on first use."""
    cache: dict[str, tuple[torch.nn.Module, keras.Model]] = {}

    def get(name: str):
        if name not in cache:
            cache[name] = (zoo_torch.build_torch(name, seed=0), zoo_keras.build_keras(name, seed=0))
        return cache[name]

    return get


@pytest.mark.frameworks
def test_every_registered_model_has_both_builders(zoo_torch, zoo_keras):
    assert set(ZOO) <= set(zoo_torch.BUILDERS)
    assert set(zoo_torch.BUILDERS) == set(zoo_keras.BUILDERS)
    assert set(ALL) <= set(PUBLISHED)
    assert set(zoo_torch.BUILDERS) == set(ALL), "ALL must list every builder's model"


def test_make_divisible_rounds_like_torchvision():
    from edgestats.collectors.zoo.arch import make_divisible

    assert [make_divisible(v) for v in (8, 12, 16, 20, 60, 100)] == [8, 16, 16, 24, 64, 104]


@pytest.mark.frameworks
@pytest.mark.parametrize("name", ALL)
def test_trainable_params_match_published_in_both_frameworks(built, zoo_torch, zoo_keras, name):
    tm, km = built(name)
    assert zoo_torch.count_params(tm) == PUBLISHED[name]
    assert zoo_keras.count_params_keras(km) == PUBLISHED[name]


@pytest.mark.frameworks
@pytest.mark.parametrize("name", ["cnn9", "squeezenet"])
def test_num_classes_override(zoo_torch, zoo_keras, name):
    import torch

    h, w = input_hw(name)
    with torch.no_grad():
        assert tuple(zoo_torch.build_torch(name, num_classes=7)(torch.zeros(2, 3, h, w)).shape) == (2, 7)
    assert tuple(zoo_keras.build_keras(name, num_classes=7)(np.zeros((2, h, w, 3), "float32")).shape) == (
        2,
        7,
    )


# -- seeds: one code path for every model (fork_rng + manual_seed; per-layer seeded Keras
# initialisers), so a set covering every initialisation rule is tested, not the slow big ones.
SEED_MODELS = ["cnn9", "squeezenet", "mobilenet_v2", "mobilenet_v3_small", "resnet18"]


def torch_weights(m: torch.nn.Module) -> list[np.ndarray]:
    return [t.numpy().copy() for t in m.state_dict().values()]


def same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.frameworks
@pytest.mark.parametrize("name", SEED_MODELS)
def test_torch_seed_determines_weights(zoo_torch, name):
    a, b, c = (torch_weights(zoo_torch.build_torch(name, seed=s)) for s in (0, 0, 1))
    assert same(a, b)
    assert not same(a, c)
    assert not np.array_equal(a[0], c[0]), "the first conv's kernel should change with the seed"


@pytest.mark.frameworks
@pytest.mark.parametrize("name", SEED_MODELS)
def test_keras_seed_determines_weights(zoo_keras, name):
    a, b, c = (zoo_keras.build_keras(name, seed=s).get_weights() for s in (0, 0, 1))
    assert same(a, b)
    assert not same(a, c)
    assert not np.array_equal(a[0], c[0])


@pytest.mark.frameworks
def test_building_leaves_the_global_torch_rng_alone(zoo_torch):
    import torch

    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    zoo_torch.build_torch("cnn9", seed=7)
    assert torch.equal(torch.rand(3), expected)


# -- the two frameworks compute the same function once weights are copied -----------------------


def randomise_batchnorm(zoo_torch, model: torch.nn.Module, h: int, w: int) -> None:
    """Fresh BN layers are identities and leave untrained MobileNets' logits ~1e-10 and nearly
    input-independent; calibrated statistics plus a random affine make the copy of all four BN
    tensors (and the epsilon) matter, and the outputs unit-scale."""
    # BN nets here are fully convolutional with a global pool: a small batch at half size
    # calibrates them at an eighth of the cost
    import torch

    zoo_torch.calibrate_batchnorm(model, (2, 3, h // 2, w // 2), seed=1)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.copy_(0.5 + torch.rand(m.num_features, generator=g))
                m.bias.copy_(0.1 * torch.randn(m.num_features, generator=g))


@pytest.mark.frameworks
@pytest.mark.parametrize("name", ALL)
def test_batch_2_outputs_have_the_right_shape_and_agree_across_frameworks(built, zoo_torch, zoo_keras, name):
    """Copies the torch weights into Keras, then one seeded batch of 2 through both. Mutates the
    cached models (BN statistics, Keras weights); later tests only count and trace."""
    import torch

    tm, km = built(name)
    h, w = input_hw(name)
    c = channels(name)
    classes = ZOO[name].num_classes if name in ZOO else 1000
    assert not tm.training
    assert tuple(km.input_shape) == (None, h, w, c)
    randomise_batchnorm(zoo_torch, tm, h, w)
    zoo_keras.copy_torch_weights_to_keras(tm, km)
    x = np.random.default_rng(0).standard_normal((2, c, h, w)).astype("float32")
    with torch.no_grad():
        expected = tm(torch.from_numpy(x)).numpy()
    got = km(x.transpose(0, 2, 3, 1), training=False).numpy()
    assert expected.shape == got.shape == (2, classes)
    scale = max(1.0, float(np.abs(expected).max()))  # relative where logits exceed 1
    assert np.abs(got - expected).max() < 1e-4 * scale
    # the check means something only if the output depends on the input
    assert np.abs(expected[0] - expected[1]).max() > 1e-3 * float(np.abs(expected).max())


@pytest.mark.frameworks
def test_copy_refuses_a_different_architecture(built, zoo_keras):
    with pytest.raises(ValueError, match="features.0: torch gives shapes"):
        zoo_keras.copy_torch_weights_to_keras(built("squeezenet")[0], built("cnn9")[1])
    with pytest.raises(ValueError, match="torch module 'conv1' has no Keras layer"):
        zoo_keras.copy_torch_weights_to_keras(built("resnet18")[0], built("cnn9")[1])


# -- FLOPs --------------------------------------------------------------------------------------


@pytest.mark.frameworks
def test_cnn9_flops_by_hand(built, zoo_torch):
    # seven 3x3 valid convs on 32x32: output side 30, 28, ..., 18; then dense 324 -> 10
    widths = [3, 16, 16, 32, 32, 64, 64, 1]
    convs = sum(
        2 * 3 * 3 * cin * cout * (30 - 2 * i) ** 2 for i, (cin, cout) in enumerate(zip(widths, widths[1:]))
    )
    expected = convs + 2 * 324 * 10
    assert expected == 68_950_224
    assert zoo_torch.count_flops(built("cnn9")[0], (1, 3, 32, 32)) == expected
    assert zoo_torch.count_flops(built("cnn9")[0], (3, 32, 32)) == expected  # batch is ignored


@pytest.mark.frameworks
def test_dlaas_default_nets_flops_by_hand(built, zoo_torch):
    """MACs of TensorFlow's default MNIST and CIFAR-10 nets (DLaaS Tables IV-V):
    mnist_cnn  conv1 32*1*5*5*28*28 = 627,200; conv2 64*32*5*5*14*14 = 10,035,200;
               fc 3136*1024 = 3,211,264; fc 1024*10 = 10,240           -> 13,883,904 MACs
    cifar_cnn  conv1 64*3*5*5*24*24 = 2,764,800; conv2 64*64*5*5*12*12 = 14,745,600;
               fc 2304*384 = 884,736; 384*192 = 73,728; 192*10 = 1,920 -> 18,470,784 MACs"""
    mnist = 32 * 1 * 25 * 28 * 28 + 64 * 32 * 25 * 14 * 14 + 3136 * 1024 + 1024 * 10
    cifar = 64 * 3 * 25 * 24 * 24 + 64 * 64 * 25 * 12 * 12 + 2304 * 384 + 384 * 192 + 192 * 10
    assert (mnist, cifar) == (13_883_904, 18_470_784)
    assert zoo_torch.count_flops(built("mnist_cnn")[0], (1, 1, 28, 28)) == 2 * mnist
    assert zoo_torch.count_flops(built("cifar_cnn")[0], (1, 3, 24, 24)) == 2 * cifar


@pytest.mark.frameworks
def test_keras_lrn_saves_and_loads(tmp_path, built):
    """cifar_cnn's LocalResponseNorm is a layer of edgestats' own: a saved model must load back."""
    import keras

    _, km = built("cifar_cnn")
    path = tmp_path / "cifar_cnn.keras"
    km.save(str(path))
    loaded = keras.models.load_model(str(path), compile=False)
    x = np.random.default_rng(1).standard_normal((2, 24, 24, 3)).astype("float32")
    assert np.allclose(km(x, training=False).numpy(), loaded(x, training=False).numpy(), atol=1e-6)


@pytest.mark.frameworks
def test_alexnet_flops(built, zoo_torch):
    """MACs, torchvision's AlexNet at 224x224 (conv: cout*cin*k*k*hout*wout; linear: in*out):
        conv1  64*3*11*11*55*55   =  70,276,800
        conv2  192*64*5*5*27*27   = 223,948,800
        conv3  384*192*3*3*13*13  = 112,140,288
        conv4  256*384*3*3*13*13  = 149,520,384
        conv5  256*256*3*3*13*13  =  99,680,256
        fc6    9216*4096          =  37,748,736
        fc7    4096*4096          =  16,777,216
        fc8    4096*1000          =   4,096,000
        total                       714,188,480 MACs = 1,428,376,960 FLOPs
    i.e. the well-known 0.71 GMACs / ~1.43 GFLOPs."""
    macs = (
        64 * 3 * 121 * 55 * 55
        + 192 * 64 * 25 * 27 * 27
        + 384 * 192 * 9 * 169
        + 256 * 384 * 9 * 169
        + 256 * 256 * 9 * 169
        + 9216 * 4096
        + 4096 * 4096
        + 4096 * 1000
    )
    assert macs == 714_188_480
    assert zoo_torch.count_flops(built("alexnet")[0], (1, 3, 224, 224)) == 2 * macs == 1_428_376_960


@pytest.mark.frameworks
@pytest.mark.parametrize("name", sorted(TORCHVISION_GMACS))
def test_flops_match_torchvision_model_cards(built, zoo_torch, name):
    flops = zoo_torch.count_flops(built(name)[0], (1, 3, 224, 224))
    assert abs(flops / 2e9 - TORCHVISION_GMACS[name]) < 0.005


@pytest.mark.frameworks
def test_count_flops_leaves_the_model_as_it_was(zoo_torch):
    model = zoo_torch.build_torch("mobilenet_v3_small").train()
    before = torch_weights(model)
    zoo_torch.count_flops(model, (3, 224, 224))
    assert model.training
    assert same(before, torch_weights(model)), "a traced forward must not update BN statistics"
