"""cfmlir: compile ConstraintFlow certifiers to tensor code and run them (see :mod:`cfmlir.api`).

::

    import cfmlir
    cert = cfmlir.compile("deeppoly")
    net = cfmlir.load_network("net.onnx")
    prop = cfmlir.robustness_property(net, "images.csv", eps=0.005)
    res = cfmlir.certify(cert, net, prop)

Importing this package is cheap: the API's names are loaded on first use, and torch/xDSL only by the
functions that need them.
"""

_API = ("Certifier", "Network", "Result", "VnnlibResult", "compile", "load_network", "robustness_property",
        "load_vnnlib", "certify", "engine_for", "BoundedNetwork", "BoundsError")

#: branch and bound (:mod:`cfmlir.bab`)
_BAB = ("verify_property", "BabOptions", "BabOutcome")

__all__ = list(_API) + list(_BAB)


#: the auto_LiRPA-style API (:mod:`cfmlir.bounded`)
_BOUNDED = ("BoundedNetwork", "BoundsError")


def __getattr__(name):
    if name in _BOUNDED:
        from cfmlir import bounded

        return getattr(bounded, name)
    if name in _API:
        from cfmlir import api

        return getattr(api, name)
    if name in _BAB:
        from cfmlir import bab

        return getattr(bab, name)
    raise AttributeError(f"module 'cfmlir' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_API) + list(_BAB))
