"""The layer ops people's networks bring (issue 16) through every shipped certifier: on the small
models of :data:`cfruntime.network.builders.LAYER_OP_MODELS` (LeakyRelu, Elu, Softplus, Abs, the
Clip forms, Concat over one layer and over several, Slice and Split, a rank-1 input) the compiled
engine gives the reference interpreter's bounds on every layer in every mode, and those bounds contain
every concrete value the soundness checker finds (samples, box vertices, PGD).

A certifier without a rule for a layer kind a model has is skipped for that model, with the rule it
lacks as the reason (the engine refuses such a pair in one line)."""

from functools import lru_cache

import pytest
import torch

from cfmlir.certifiers import BASE_CERTIFIERS
from cfruntime import contract
from cfruntime.network import network_from_model
from cfruntime.network.builders import LAYER_OP_MODELS, layer_op_model
from cftest.activation_nets import assert_bounds_are_values
from cftest.nets import boxes

CERTIFIERS = list(BASE_CERTIFIERS) + ["deeppoly_0", "deeppoly_2"]
MODES = [("planned", True), ("gbscr", True), ("planned", False)]


@lru_cache(maxsize=None)
def network(name):
    return network_from_model(layer_op_model(name))


def missing_rules(cert, net) -> list[str]:
    return sorted({contract.OPERATOR_OF_KIND[l.kind] for l in net.layers[1:]} - set(cert.rules))


@pytest.mark.parametrize("net_name", sorted(LAYER_OP_MODELS))
@pytest.mark.parametrize("name", CERTIFIERS)
def test_compiled_equals_interpreter_and_is_sound(name, net_name, compiled_matches_interpreter, shipped):
    net = network(net_name)
    missing = missing_rules(shipped.compiled(name, True), net)
    if missing:
        pytest.skip(f"{name} has no rule for {', '.join(missing)}")
    lb, ub = boxes(net.input_size, batch=3, seed=11, radius=0.5)
    compiled_matches_interpreter(f"{name} on {net_name}", net, lb, ub, shipped.interpreted(name),
                                 lambda rewrite: shipped.compiled(name, rewrite), MODES,
                                 {"n_samples": 256, "n_vertices": 64, "pgd_steps": 20})


@pytest.mark.parametrize("name", ["ibp", "deeppoly", "deepz"])
def test_bounds_on_a_point_are_the_values(name, shipped):
    """On a box that is one point, the bounds of every layer are its value (the activations' rules
    are exact there), for every model the certifier has the rules of."""
    cert = shipped.compiled(name, True)
    x_gen = torch.Generator().manual_seed(3)
    ran = 0
    for net_name in sorted(LAYER_OP_MODELS):
        net = network(net_name)
        if missing_rules(cert, net):
            continue
        x = torch.rand(1, net.input_size, dtype=torch.float64, generator=x_gen) * 2 - 1
        assert_bounds_are_values(cert, net, x, f"{name} on {net_name}")
        ran += 1
    if not ran:
        pytest.skip(f"{name} has the rules of none of the models yet")
