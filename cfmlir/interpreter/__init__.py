"""The neuron-level reference interpreter of ConstraintFlow certifiers (the semantic oracle).

Entry points are in :mod:`cfmlir.interpreter.run` (``load_certifier``, ``analyze``,
``certify_sample``).  Modules: ``values`` (PolyExp/SymExp as sparse maps),
``evaluator`` (expressions compiled to closures), ``traverse`` (``map``/``traverse``), ``flow``
(network view, rule bindings, the flow), ``input_shape`` (member roles from the shape constraints),
``errors``.
"""
