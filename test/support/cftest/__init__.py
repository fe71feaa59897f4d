"""Helpers shared by the unit tests (``test/support`` is on pytest's ``pythonpath``): small networks
(:mod:`cftest.nets`, :mod:`cftest.interp`), the ONNX reference evaluator (:mod:`cftest.onnx_reference`),
g-BSCR tensor strategies (:mod:`cftest.gbscr_strategies`), certifier mutants (:mod:`cftest.mutants`) and
generated VNN-COMP cases (:mod:`cftest.vnnlib_cases`, :mod:`cftest.instances_folder`)."""

from pathlib import Path

#: the repository's root folder
REPO = Path(__file__).resolve().parents[3]
