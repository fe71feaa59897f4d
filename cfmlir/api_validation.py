"""The checks of the arguments of each public function of :mod:`cfmlir.api`: one validator per function,
called first in it.  The kinds of the objects the API passes between its functions (a compiled
certifier, a loaded network, a property that fits the network) are checked here; the values (eps,
device, dtype, ...) by :mod:`cfmlir.api_args`, whose checks and messages ``cf-run`` shares.  A bad
argument is an :class:`~cfmlir.api_args.ArgumentError`."""

from __future__ import annotations

import os

from cfmlir.api_args import (
    DATASET_NAMES, ENGINES, FLATTEN_ORDERS, LAYOUTS, ArgumentError, check_bool, check_callable,
    check_choice, check_choice_type, check_device, check_dtype, check_eps, check_interpreter_options, check_path,
    check_positive_int, check_timeout, check_values, check_widen, described, shown,
)
from cfmlir.engines import COMPUTED, check_certifier, network_of


def _network_name(network) -> str:
    path = getattr(network, "path", None) if not isinstance(network, (str, os.PathLike)) else None
    return f"the network {os.path.basename(str(path))}" if path is not None else "the network"


def check_property(prop, network) -> None:
    """``prop`` is a robustness or VNN-LIB property whose boxes and outputs fit ``network``."""
    from cfruntime.properties import RobustnessProperty, VnnlibProperty

    net = network_of(network)
    where = _network_name(network)
    if isinstance(prop, VnnlibProperty):
        if (prop.num_inputs, prop.num_outputs) != (net.input_size, net.output_size):
            raise ArgumentError(f"the property {prop.source} has {prop.num_inputs} inputs and {prop.num_outputs} outputs, "
                                f"{where} {net.input_size} and {net.output_size}")
        return
    if not isinstance(prop, RobustnessProperty):
        raise ArgumentError(f"prop must be what cfmlir.robustness_property or cfmlir.load_vnnlib returns, got "
                            f"{described(prop)}")
    size = int(prop.lb[0].numel()) if len(prop) else net.input_size
    if size != net.input_size:
        raise ArgumentError(f"the property's boxes have {size} values, but {where} takes inputs of shape "
                            f"{tuple(net.input_shape)} ({net.input_size} values): make the property for this network")
    if prop.C.shape[-1] != net.output_size:
        raise ArgumentError(f"the property compares {prop.C.shape[-1]} classes, but {where} has {net.output_size} "
                            "outputs: make the property for this network")


# -- one validator per public function of cfmlir.api ---------------------------------------------------
def compile_args(spec, rewrite) -> None:
    if not isinstance(spec, (str, os.PathLike)):
        raise ArgumentError(f"compile() takes a shipped certifier's name, a path to a .cf file or .cf source text, "
                            f"got {described(spec)}")
    if not os.fspath(spec).strip():
        raise ArgumentError("compile() takes a shipped certifier's name, a path to a .cf file or .cf source text, "
                            "got an empty string")
    check_bool(rewrite, "rewrite")


def load_network_args(path, mean, std, layout, flatten_order, manifest) -> None:
    check_path(path, "path")
    check_values(mean, "mean")
    check_values(std, "std")
    for value, name, choices in ((layout, "layout", LAYOUTS), (flatten_order, "flatten_order", FLATTEN_ORDERS)):
        if value is not None:
            check_choice(value.strip().upper() if isinstance(value, str) else value, name, choices)
    if manifest is not None:
        check_path(manifest, "manifest")


def robustness_property_args(network, images_or_csv, eps, n, dataset) -> None:
    from cfruntime.properties import EranImages

    network_of(network)
    if not isinstance(images_or_csv, EranImages):
        check_path(images_or_csv, "images_or_csv")
    check_eps(eps, "eps")
    if n is not None:
        check_positive_int(n, "n")
    if dataset is not None:
        from cfruntime.errors import PropertyError
        from cfruntime.properties import normalize_dataset_name

        try:  # the names cfruntime reads (cifar, CIFAR-10, ...)
            normalize_dataset_name(check_choice_type(dataset, "dataset"))
        except PropertyError:
            raise ArgumentError(f"dataset must be one of {', '.join(DATASET_NAMES)}, got {shown(dataset)}") from None


def load_vnnlib_args(path, network) -> None:
    check_path(path, "path")
    network_of(network)


def certify_args(certifier, network, prop, *, engine, device, dtype, batch_size, widen, layer_bounds, sparse, check,
                 on_batch, on_shrink, ray, require_proof=False, proof_timeout=None) -> None:
    if isinstance(engine, str):
        check_choice(engine, "engine", ENGINES)
        check_certifier(certifier)
    elif not callable(getattr(engine, "bounds", None)):
        raise ArgumentError(f"engine must be 'compiled', 'interpreter' or an object with a bounds() method, got "
                            f"{described(engine)}")
    elif certifier is not None:  # an engine object runs its own certifier
        check_certifier(certifier)
    check_property(prop, network)
    device = check_device(device, "device")
    dtype = check_dtype(dtype, "dtype")
    if engine == "interpreter":
        check_interpreter_options(engine, device, dtype)
    check_positive_int(batch_size, "batch_size")
    check_widen(widen, "widen")
    if not (isinstance(layer_bounds, bool) or layer_bounds == COMPUTED):
        raise ArgumentError(f"layer_bounds must be True, False or '{COMPUTED}', got {shown(layer_bounds)}")
    check_bool(sparse, "sparse")
    for value, name in ((check, "check"), (on_batch, "on_batch"), (on_shrink, "on_shrink")):
        check_callable(value, name)
    if not (ray is None or isinstance(ray, (bool, str))):
        raise ArgumentError(f"ray must be None, True or a cluster address (str), got {described(ray)}")
    check_bool(require_proof, "require_proof")
    if proof_timeout is not None:
        check_timeout(proof_timeout, "proof_timeout")
