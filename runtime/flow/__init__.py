"""The compiled engine's runtime (``cfruntime.flow``): what code emitted by cfmlir runs against.

* :mod:`.values`  — PolyExp/SymExp values (coefficients + constant) and neuron/noise sets;
* :mod:`.ops`     — the tensor API the emitted rules call as ``rt.*`` (g-BSCR or dense torch);
* :mod:`.store`   — the shape members of every layer computed so far;
* :mod:`.context` — one rule invocation's view of the network (``ctx.*`` in emitted code);
* :mod:`.engine`  — runs a compiled certifier over a network for a batch of input boxes.

No xDSL here: emitted modules run without the compiler installed.
"""


