"""cfmlir/typing: the frontend's type checker (:mod:`cfmlir.typing.checker`).

The semantic type lattice and the ConstraintFlow typing rules the checker applies belong to the
``cf`` dialect (``cfmlir.dialects.cf_type_lattice``, ``cfmlir.dialects.cf_typing_rules``), whose
verifiers apply the same rules: the frontend depends on the dialect, never the reverse.
"""
